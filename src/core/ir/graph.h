/* The graph IR: tensors (values) and nodes in topological order. Nodes refer
 * to tensors by index. The graph owns every string, array and constant buffer
 * reachable from it; wq_graph_free releases them all. */
#ifndef WQ_IR_GRAPH_H
#define WQ_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decision.h"
#include "dtype.h"
#include "status.h"
#include "value.h"

struct wq_graph;
struct wq_op;
struct wq_qparams;

typedef struct {
  char *name;
  wq_dtype dtype;
  int rank;                      /* -1 unknown */
  int64_t dims[WQ_MAX_RANK];     /* -1 for a dim not known statically */
  char *dim_params[WQ_MAX_RANK]; /* symbolic dim names ("batch"), or NULL */
  void *data;                    /* constant contents (owned), or NULL */
  size_t nbytes;
  bool is_constant; /* initializer, Constant output or folded value */
  bool is_input;    /* graph input fed at run time */
  bool is_output;
  struct wq_qparams *qparams; /* owned; NULL when the tensor is not quantized */
  /* Memory layout, chosen by the layout pass; dims stay logical. */
  wq_layout layout;
} wq_tensor;

typedef enum {
  WQ_ATTR_UNDEFINED = 0,
  WQ_ATTR_FLOAT = 1,
  WQ_ATTR_INT = 2,
  WQ_ATTR_STRING = 3,
  WQ_ATTR_TENSOR = 4,
  WQ_ATTR_GRAPH = 5,
  WQ_ATTR_FLOATS = 6,
  WQ_ATTR_INTS = 7,
  WQ_ATTR_STRINGS = 8,
  WQ_ATTR_TENSORS = 9,
  WQ_ATTR_GRAPHS = 10
} wq_attr_type;

typedef struct {
  char *name;
  wq_attr_type type;
  float f;
  int64_t i;
  char *s; /* NUL-terminated copy (also for binary strings) */
  size_t s_len;
  float *floats;
  int64_t *ints;
  char **strings;
  size_t count;             /* length of floats/ints/strings/tensors/graphs */
  wq_tensor *t;             /* WQ_ATTR_TENSOR: one tensor with data */
  wq_tensor *tensors;       /* WQ_ATTR_TENSORS */
  struct wq_graph *g;       /* WQ_ATTR_GRAPH */
  struct wq_graph **graphs; /* WQ_ATTR_GRAPHS */
} wq_attr;

typedef struct {
  char *name; /* never NULL; the importer names unnamed nodes "<op>_<index>" */
  char *op_type;
  char *domain; /* "" for ai.onnx */
  int opset;    /* version of `domain` imported by the model */
  int *inputs;  /* tensor indices; -1 for an omitted optional input */
  int n_inputs;
  int *outputs; /* -1 for an omitted optional output */
  int n_outputs;
  wq_attr *attrs;
  int n_attrs;
  const struct wq_op *op; /* registry entry, resolved by wq_graph_resolve_ops */
  void *op_state;         /* op->prepare's parsed attributes, freed by op->free_state */
  wq_decision rec;        /* what the pipeline decided for it (ir/decision.h) */
} wq_node;

typedef struct {
  char *domain;
  int64_t version;
} wq_opset_import;

typedef struct wq_graph {
  char *name;
  wq_tensor *tensors;
  int n_tensors, cap_tensors;
  wq_node *nodes;
  int n_nodes, cap_nodes;
  int *inputs; /* graph inputs that are not constants, in declaration order */
  int n_inputs;
  int *outputs;
  int n_outputs;
  /* The kernel variants plan hooks pack with (kernels/config.h; owned by
   * the model loading the graph), NULL: the build's default. */
  const struct wq_kernel_set *kernels;
} wq_graph;

typedef struct {
  int64_t ir_version;
  char *producer_name;
  char *producer_version;
  wq_opset_import *opsets;
  int n_opsets;
  wq_graph *graph;
} wq_model_ir;

wq_graph *wq_graph_new(void);
void wq_graph_free(wq_graph *g);
void wq_model_ir_free(wq_model_ir *m);

/* Index of the tensor named `name`, or -1. */
int wq_graph_find_tensor(const wq_graph *g, const char *name);
/* Appends a tensor (name copied, shape unknown, no data) and returns its index,
 * or -1 on allocation failure. Does not check for duplicates. */
int wq_graph_add_tensor(wq_graph *g, const char *name);
/* Appends a tensor named base + suffix, made unique with "_2", "_3"...
 * when taken (passes adding tensors); -1 on allocation failure. */
int wq_graph_add_unique_tensor(wq_graph *g, const char *base, const char *suffix);
/* Same as a constant of `dtype`/`dims` owning `data` (nbytes), which is
 * freed on failure too. */
int wq_graph_add_constant(wq_graph *g, const char *base, const char *suffix, wq_dtype dtype,
                          int rank, const int64_t *dims, void *data, size_t nbytes);
/* Appends an empty node and returns a pointer to it (valid until the next
 * add), or NULL on allocation failure. */
wq_node *wq_graph_add_node(wq_graph *g);
/* Removes node i (frees its contents) keeping order. */
void wq_graph_remove_node(wq_graph *g, int i);
void wq_node_clear(wq_node *n);
/* Sets the decision record's detail sentence (a copy, replacing any). */
wq_status wq_node_set_detail(wq_node *node, const char *detail, wq_error *err);
void wq_tensor_clear(wq_tensor *t);
void wq_attr_clear(wq_attr *a);

/* A value view of tensor t (dtype, static shape, constant data or NULL). */
wq_value wq_tensor_value(const wq_tensor *t);
/* in[0..n) = the values of node's first n inputs as the graph holds them
 * (an absent input: dtype undefined, rank -1). */
void wq_node_input_values(const wq_graph *g, const wq_node *node, wq_value *in, int n);

/* Attribute lookup; NULL when absent. */
const wq_attr *wq_node_attr(const wq_node *n, const char *name);

/* Typed attribute accessors. Each returns WQ_OK with the default when the
 * attribute is absent, and fails naming the node when it has the wrong type. */
wq_status wq_attr_int(const wq_node *n, const char *name, int64_t dflt, int64_t *out,
                      wq_error *err);
wq_status wq_attr_float(const wq_node *n, const char *name, float dflt, float *out, wq_error *err);
/* *out points into the node (not a copy); "" default gives dflt. */
wq_status wq_attr_string(const wq_node *n, const char *name, const char *dflt, const char **out,
                         wq_error *err);
/* out and count point into the node; absent gives NULL and 0. */
wq_status wq_attr_ints(const wq_node *n, const char *name, const int64_t **out, size_t *count,
                       wq_error *err);
wq_status wq_attr_floats(const wq_node *n, const char *name, const float **out, size_t *count,
                         wq_error *err);

char *wq_strdup(const char *s);

/* strstr for short texts (messages, node notes): the first occurrence of sub
 * in s, or NULL. A plain scan; libc's two-way strstr is 1.6 KB of wasm. */
const char *wq_strfind(const char *s, const char *sub);

#endif
