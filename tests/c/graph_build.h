/* Building small graphs by hand in the native tests: tensors (optionally
 * constant), nodes resolved through the op registry and prepared, with int,
 * int-list, string and float attributes. Include after wq_test.h. */
#ifndef WQ_TEST_GRAPH_BUILD_H
#define WQ_TEST_GRAPH_BUILD_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/graph.h"
#include "ops/op.h"
#include "wq_test.h"

static inline int add_tensor(wq_graph *g, const char *name, wq_dtype dt, int rank,
                             const int64_t *dims, void *data /* moved; NULL: not a constant */) {
  int t = wq_graph_add_tensor(g, name);
  wq_tensor *tt = &g->tensors[t];
  tt->dtype = dt;
  tt->rank = rank;
  memcpy(tt->dims, dims, (size_t)rank * sizeof *dims);
  tt->data = data;
  tt->is_constant = data != NULL;
  wq_value v = wq_tensor_value(tt);
  tt->nbytes = data ? wq_value_nbytes(&v) : 0;
  return t;
}

typedef struct {
  const char *name;
  int64_t i;
  const int64_t *ints;
  int n_ints;
  const char *s;
  float f;
  bool is_float;
} attr_spec;
#define AI(name, v)                                                                                \
  { name, v, NULL, 0, NULL, 0.0f, false }
#define AL(name, arr, n)                                                                           \
  { name, 0, arr, n, NULL, 0.0f, false }
#define AF(name, v)                                                                                \
  { name, 0, NULL, 0, NULL, v, true }
#define AEND                                                                                       \
  { NULL, 0, NULL, 0, NULL, 0.0f, false }

/* Appends a node (op resolved, prepared) and returns its index; -1 when
 * prepare fails (err filled). */
static inline int add_node(wq_graph *g, const char *domain, const char *op, const int *in, int n_in,
                           int out, const attr_spec *attrs, int opset, wq_error *err) {
  wq_node *n = wq_graph_add_node(g);
  char name[64];
  snprintf(name, sizeof name, "%s_%d", op, g->n_nodes);
  n->name = wq_strdup(name);
  n->op_type = wq_strdup(op);
  n->domain = wq_strdup(domain);
  n->opset = opset;
  n->inputs = malloc((size_t)n_in * sizeof(int));
  memcpy(n->inputs, in, (size_t)n_in * sizeof(int));
  n->n_inputs = n_in;
  n->outputs = malloc(sizeof(int));
  n->outputs[0] = out;
  n->n_outputs = 1;
  int n_attrs = 0;
  while (attrs && attrs[n_attrs].name)
    n_attrs++;
  n->attrs = calloc((size_t)n_attrs + 1, sizeof(wq_attr));
  for (int k = 0; k < n_attrs; k++) {
    wq_attr *a = &n->attrs[k];
    a->name = wq_strdup(attrs[k].name);
    if (attrs[k].s) {
      a->type = WQ_ATTR_STRING;
      a->s = wq_strdup(attrs[k].s);
      a->s_len = strlen(a->s);
    } else if (attrs[k].is_float) {
      a->type = WQ_ATTR_FLOAT;
      a->f = attrs[k].f;
    } else if (attrs[k].ints) {
      a->type = WQ_ATTR_INTS;
      a->ints = malloc((size_t)attrs[k].n_ints * sizeof(int64_t));
      memcpy(a->ints, attrs[k].ints, (size_t)attrs[k].n_ints * sizeof(int64_t));
      a->count = (size_t)attrs[k].n_ints;
    } else {
      a->type = WQ_ATTR_INT;
      a->i = attrs[k].i;
    }
  }
  n->n_attrs = n_attrs;
  const wq_op *o = wq_op_find(domain, op);
  CHECK_MSG(o != NULL, "op %s.%s missing", domain, op);
  if (!o)
    return -1;
  if (o->prepare && o->prepare(n, err) != WQ_OK)
    return -1; /* op stays NULL: nothing to free */
  n->op = o;
  return g->n_nodes - 1;
}

/* Runs the op's plan step (int8 ops read qparams and weights there). */
static inline wq_status plan(wq_graph *g, int node, wq_error *err) {
  wq_node *n = &g->nodes[node];
  wq_op_kernel k = {NULL, NULL};
  wq_status st = n->op->plan ? n->op->plan(n, g, &k, err) : WQ_OK;
  n->rec.kernel = k.name;
  n->rec.kernel_isa = k.isa;
  return st;
}

#endif
