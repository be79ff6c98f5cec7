#include "onnx_import.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ir/subgraph.h"
#include "../ir/topo.h"
#include "onnx_tensor.h"
#include "pb_reader.h"

/* Field numbers from onnx.proto. */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_PRODUCER_VERSION = 3 };
enum { MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11 };
enum { GRAPH_OUTPUT = 12, GRAPH_VALUE_INFO = 13, GRAPH_SPARSE_INITIALIZER = 15 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
enum { NODE_DOMAIN = 7 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_S = 4, ATTR_T = 5, ATTR_G = 6 };
enum { ATTR_FLOATS = 7, ATTR_INTS = 8, ATTR_STRINGS = 9, ATTR_TENSORS = 10, ATTR_GRAPHS = 11 };
enum { ATTR_TP = 14, ATTR_TYPE_PROTOS = 15, ATTR_TYPE = 20, ATTR_REF_ATTR_NAME = 21 };
enum { ATTR_SPARSE_TENSOR = 22, ATTR_SPARSE_TENSORS = 23 };
enum { VI_NAME = 1, VI_TYPE = 2 };
enum { TYPE_TENSOR = 1, TYPE_SEQUENCE = 4, TYPE_MAP = 5, TYPE_SPARSE = 8, TYPE_OPTIONAL = 9 };
enum { TTYPE_ELEM_TYPE = 1, TTYPE_SHAPE = 2 };
enum { SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };
/* AttributeProto.AttributeType values we cannot represent. */
enum { ATTRT_SPARSE_TENSOR = 11, ATTRT_SPARSE_TENSORS = 12, ATTRT_TYPE_PROTO = 13 };
enum { ATTRT_TYPE_PROTOS = 14 };

/* ---- small containers ---------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
} span;

typedef struct {
  span *items;
  size_t count, cap;
} span_list;

static wq_status oom(wq_error *err) {
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory while importing the model");
}

static wq_status span_push(span_list *l, const uint8_t *p, size_t n, wq_error *err) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    span *items = realloc(l->items, cap * sizeof *items);
    if (!items)
      return oom(err);
    l->items = items;
    l->cap = cap;
  }
  l->items[l->count].p = p;
  l->items[l->count].n = n;
  l->count++;
  return WQ_OK;
}

static void span_list_free(span_list *l) {
  free(l->items);
  l->items = NULL;
  l->count = l->cap = 0;
}

static bool span_eq(span s, const char *c) {
  size_t n = strlen(c);
  return s.n == n && (n == 0 || memcmp(s.p, c, n) == 0);
}

/* NUL-terminated copy of a protobuf string; names with an embedded NUL byte
 * cannot round-trip through C strings and are rejected. */
static wq_status copy_string(span s, const char *what, char **out, wq_error *err) {
  *out = NULL;
  if (s.n && memchr(s.p, '\0', s.n))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "%s contains a NUL byte", what);
  char *c = malloc(s.n + 1);
  if (!c)
    return oom(err);
  if (s.n)
    memcpy(c, s.p, s.n);
  c[s.n] = '\0';
  *out = c;
  return WQ_OK;
}

static bool is_default_domain(span d) { return d.n == 0 || span_eq(d, "ai.onnx"); }

/* ---- name -> tensor index hash map --------------------------------------- */

typedef struct {
  int *slots; /* tensor index + 1; 0 = empty */
  size_t cap; /* power of two */
  size_t used;
} name_map;

static uint64_t hash_name(const uint8_t *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 1099511628211ull;
  return h;
}

static int map_find(const name_map *m, const wq_graph *g, const uint8_t *s, size_t n) {
  if (!m->cap)
    return -1;
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)hash_name(s, n) & mask;; i = (i + 1) & mask) {
    int slot = m->slots[i];
    if (!slot)
      return -1;
    const char *name = g->tensors[slot - 1].name;
    if (strlen(name) == n && memcmp(name, s, n) == 0)
      return slot - 1;
  }
}

static void map_place(int *slots, size_t cap, const char *name, int idx) {
  size_t mask = cap - 1;
  size_t i = (size_t)hash_name((const uint8_t *)name, strlen(name)) & mask;
  while (slots[i])
    i = (i + 1) & mask;
  slots[i] = idx + 1;
}

static wq_status map_insert(name_map *m, const wq_graph *g, int idx, wq_error *err) {
  if ((m->used + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    int *slots = calloc(cap, sizeof *slots);
    if (!slots)
      return oom(err);
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i])
        map_place(slots, cap, g->tensors[m->slots[i] - 1].name, m->slots[i] - 1);
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
  }
  map_place(m->slots, m->cap, g->tensors[idx].name, idx);
  m->used++;
  return WQ_OK;
}

/* ---- graph builder --------------------------------------------------------- */

typedef struct {
  const wq_opset_import *opsets;
  int n_opsets;
} import_ctx;

typedef struct {
  int node;
  int tensor;
} implicit_dep;

/* Per-graph state while building; subgraph builders point at their parent
 * so names from enclosing graphs resolve (ONNX's outer-scope values). */
typedef struct graph_builder {
  wq_graph *g;
  name_map names;
  int *producer;  /* per tensor: index of the producing node, -1 */
  bool *captured; /* per tensor: resolved from an enclosing graph */
  int meta_cap;
  /* Outer-scope tensors a node's subgraphs read: ordering edges. */
  implicit_dep *implicit;
  size_t n_implicit, cap_implicit;
  struct graph_builder *parent;
  const import_ctx *ctx;
  int depth; /* protobuf depth of this GraphProto */
} graph_builder;

static void builder_free(graph_builder *b) {
  free(b->names.slots);
  free(b->producer);
  free(b->captured);
  free(b->implicit);
}

/* Appends `t` (moved: the caller's copy must not be freed) as a new tensor. */
static wq_status add_tensor_moved(graph_builder *b, wq_tensor *t, int *idx, wq_error *err) {
  if (b->g->n_tensors == INT_MAX - 1)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "too many tensors");
  int i = wq_graph_add_tensor(b->g, "");
  if (i < 0)
    return oom(err);
  if (i >= b->meta_cap) {
    int cap = b->meta_cap ? b->meta_cap * 2 : 64;
    int *producer = realloc(b->producer, (size_t)cap * sizeof *producer);
    if (!producer)
      return oom(err);
    b->producer = producer;
    bool *captured = realloc(b->captured, (size_t)cap * sizeof *captured);
    if (!captured)
      return oom(err);
    b->captured = captured;
    b->meta_cap = cap;
  }
  b->producer[i] = -1;
  b->captured[i] = false;
  wq_tensor_clear(&b->g->tensors[i]);
  b->g->tensors[i] = *t;
  memset(t, 0, sizeof *t);
  *idx = i;
  return map_insert(&b->names, b->g, i, err);
}

/* New tensor with only a name (unknown dtype and shape). */
static wq_status add_named_tensor(graph_builder *b, span name, int *idx, wq_error *err) {
  wq_tensor t;
  memset(&t, 0, sizeof t);
  t.rank = -1;
  WQ_TRY(copy_string(name, "tensor name", &t.name, err));
  wq_status st = add_tensor_moved(b, &t, idx, err);
  free(t.name); /* NULL unless the move failed before taking it */
  return st;
}

static bool visible_in_ancestors(const graph_builder *b, span name) {
  for (const graph_builder *p = b->parent; p; p = p->parent)
    if (map_find(&p->names, p->g, name.p, name.n) >= 0)
      return true;
  return false;
}

/* Index of the tensor `name` as seen from this graph. A name defined only in
 * an enclosing graph becomes a local tensor marked captured. With `create`,
 * unknown names become new (still dangling) tensors; otherwise -1. */
static wq_status resolve_name(graph_builder *b, span name, bool create, int *idx, wq_error *err) {
  *idx = map_find(&b->names, b->g, name.p, name.n);
  if (*idx >= 0)
    return WQ_OK;
  bool outer = visible_in_ancestors(b, name);
  if (!outer && !create)
    return WQ_OK;
  WQ_TRY(add_named_tensor(b, name, idx, err));
  b->captured[*idx] = outer;
  return WQ_OK;
}

static wq_status add_implicit(graph_builder *b, int node, int tensor, wq_error *err) {
  if (b->n_implicit == b->cap_implicit) {
    size_t cap = b->cap_implicit ? b->cap_implicit * 2 : 8;
    implicit_dep *d = realloc(b->implicit, cap * sizeof *d);
    if (!d)
      return oom(err);
    b->implicit = d;
    b->cap_implicit = cap;
  }
  b->implicit[b->n_implicit].node = node;
  b->implicit[b->n_implicit].tensor = tensor;
  b->n_implicit++;
  return WQ_OK;
}

/* A tensor has a value before any node of this graph runs, or gets one. */
static bool tensor_defined(const graph_builder *b, int idx) {
  const wq_tensor *t = &b->g->tensors[idx];
  return t->is_constant || t->is_input || b->producer[idx] >= 0 || b->captured[idx];
}

/* ---- ValueInfoProto ------------------------------------------------------- */

typedef struct {
  span name;
  bool has_type;
  bool not_tensor; /* sequence, map, optional or sparse type */
  int32_t elem_type;
  int rank;             /* -1 when no shape is given */
  size_t declared_rank; /* may exceed WQ_MAX_RANK (then dims are not kept) */
  int64_t dims[WQ_MAX_RANK];
  span dim_params[WQ_MAX_RANK];
} value_info;

static wq_status parse_dim(wq_pb_reader *r, value_info *vi, wq_error *err) {
  int64_t value = -1;
  span param = {NULL, 0};
  while (!wq_pb_at_end(r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(r, &f, err));
    if (f.number == DIM_VALUE) {
      WQ_TRY(wq_pb_get_int64(r, &f, "dim_value", &value, err));
      param.n = 0;
    } else if (f.number == DIM_PARAM) {
      WQ_TRY(wq_pb_get_bytes(r, &f, "dim_param", &param.p, &param.n, err));
      value = -1;
    } else {
      WQ_TRY(wq_pb_skip(r, &f, err));
    }
  }
  size_t k = vi->declared_rank++;
  if (k < WQ_MAX_RANK) {
    /* Some exporters write -1 for a dynamic dim: treat any negative as unknown. */
    vi->dims[k] = value < 0 ? -1 : value;
    vi->dim_params[k] = param;
  }
  return WQ_OK;
}

static wq_status parse_tensor_type(wq_pb_reader *r, value_info *vi, wq_error *err) {
  while (!wq_pb_at_end(r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(r, &f, err));
    if (f.number == TTYPE_ELEM_TYPE) {
      WQ_TRY(wq_pb_get_int32(r, &f, "elem_type", &vi->elem_type, err));
    } else if (f.number == TTYPE_SHAPE) {
      wq_pb_reader shape;
      WQ_TRY(wq_pb_get_message(r, &f, "shape", "TensorShapeProto", &shape, err));
      vi->declared_rank = 0;
      while (!wq_pb_at_end(&shape)) {
        wq_pb_field df;
        WQ_TRY(wq_pb_next_field(&shape, &df, err));
        if (df.number != SHAPE_DIM) {
          WQ_TRY(wq_pb_skip(&shape, &df, err));
          continue;
        }
        wq_pb_reader dim;
        WQ_TRY(wq_pb_get_message(&shape, &df, "dim", "TensorShapeProto.Dimension", &dim, err));
        WQ_TRY(parse_dim(&dim, vi, err));
      }
      vi->rank = vi->declared_rank <= WQ_MAX_RANK ? (int)vi->declared_rank : -1;
    } else {
      WQ_TRY(wq_pb_skip(r, &f, err));
    }
  }
  return WQ_OK;
}

static wq_status parse_value_info(span bytes, int depth, value_info *vi, wq_error *err) {
  memset(vi, 0, sizeof *vi);
  vi->rank = -1;
  wq_pb_reader r;
  wq_pb_init(&r, bytes.p, bytes.n, "ValueInfoProto");
  r.depth = depth;
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(&r, &f, err));
    if (f.number == VI_NAME) {
      WQ_TRY(wq_pb_get_bytes(&r, &f, "name", &vi->name.p, &vi->name.n, err));
    } else if (f.number == VI_TYPE) {
      wq_pb_reader type;
      WQ_TRY(wq_pb_get_message(&r, &f, "type", "TypeProto", &type, err));
      vi->has_type = true;
      while (!wq_pb_at_end(&type)) {
        wq_pb_field tf;
        WQ_TRY(wq_pb_next_field(&type, &tf, err));
        if (tf.number == TYPE_TENSOR) {
          wq_pb_reader tt;
          WQ_TRY(wq_pb_get_message(&type, &tf, "tensor_type", "TypeProto.Tensor", &tt, err));
          WQ_TRY(parse_tensor_type(&tt, vi, err));
        } else {
          if (tf.number == TYPE_SEQUENCE || tf.number == TYPE_MAP || tf.number == TYPE_SPARSE ||
              tf.number == TYPE_OPTIONAL)
            vi->not_tensor = true;
          WQ_TRY(wq_pb_skip(&type, &tf, err));
        }
      }
    } else {
      WQ_TRY(wq_pb_skip(&r, &f, err));
    }
  }
  return WQ_OK;
}

/* Declared dtype of a value info, validated. */
static wq_status value_info_dtype(const value_info *vi, const char *what, const char *name,
                                  wq_dtype *out, wq_error *err) {
  if (vi->elem_type < 0 || vi->elem_type >= WQ_DT_COUNT_)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "%s '%s' has invalid elem_type %d", what, name,
                   (int)vi->elem_type);
  *out = (wq_dtype)vi->elem_type;
  return WQ_OK;
}

/* Writes the declared dtype and shape of `vi` into tensor t. */
static wq_status apply_value_info(wq_tensor *t, const value_info *vi, wq_dtype dtype,
                                  wq_error *err) {
  t->dtype = dtype;
  if (vi->rank < 0)
    return WQ_OK;
  t->rank = vi->rank;
  for (int k = 0; k < vi->rank; k++) {
    t->dims[k] = vi->dims[k];
    free(t->dim_params[k]);
    t->dim_params[k] = NULL;
    if (vi->dims[k] < 0 && vi->dim_params[k].n)
      WQ_TRY(copy_string(vi->dim_params[k], "dim_param", &t->dim_params[k], err));
  }
  return WQ_OK;
}

/* ---- nodes ----------------------------------------------------------------- */

typedef struct {
  span name, op_type, domain;
  span_list inputs, outputs, attrs;
  char *final_name; /* owned until moved into the node */
} node_header;

static void header_free(node_header *h) {
  span_list_free(&h->inputs);
  span_list_free(&h->outputs);
  span_list_free(&h->attrs);
  free(h->final_name);
  h->final_name = NULL;
}

static wq_status parse_node_header(span bytes, int depth, int index, node_header *h,
                                   wq_error *err) {
  wq_pb_reader r;
  wq_pb_init(&r, bytes.p, bytes.n, "NodeProto");
  r.depth = depth;
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    const uint8_t *p;
    size_t n;
    WQ_TRY(wq_pb_next_field(&r, &f, err));
    switch (f.number) {
    case NODE_INPUT:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "input", &p, &n, err));
      WQ_TRY(span_push(&h->inputs, p, n, err));
      break;
    case NODE_OUTPUT:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "output", &p, &n, err));
      WQ_TRY(span_push(&h->outputs, p, n, err));
      break;
    case NODE_NAME: WQ_TRY(wq_pb_get_bytes(&r, &f, "name", &h->name.p, &h->name.n, err)); break;
    case NODE_OP_TYPE:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "op_type", &h->op_type.p, &h->op_type.n, err));
      break;
    case NODE_DOMAIN:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "domain", &h->domain.p, &h->domain.n, err));
      break;
    case NODE_ATTRIBUTE: {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, "attribute", "AttributeProto", &sub, err));
      WQ_TRY(span_push(&h->attrs, sub.pos, (size_t)(sub.end - sub.pos), err));
      break;
    }
    default: WQ_TRY(wq_pb_skip(&r, &f, err)); break;
    }
  }
  if (h->op_type.n == 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "node #%d has no op_type", index);
  if (h->inputs.count > INT_MAX || h->outputs.count > INT_MAX || h->attrs.count > INT_MAX)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "node #%d has too many fields", index);
  if (h->name.n) {
    WQ_TRY(copy_string(h->name, "node name", &h->final_name, err));
  } else {
    char *op;
    WQ_TRY(copy_string(h->op_type, "op_type", &op, err));
    size_t cap = strlen(op) + 24;
    h->final_name = malloc(cap);
    if (h->final_name)
      wq_format(h->final_name, cap, "%s_%d", op, index);
    free(op);
    if (!h->final_name)
      return oom(err);
  }
  return WQ_OK;
}

static wq_status build_graph(graph_builder *b, span bytes, wq_error *err);

/* Builds the subgraph of a GRAPH(S) attribute of node `node_index`, then
 * records the outer-scope tensors it reads as ordering edges of that node. */
static wq_status build_subgraph(graph_builder *b, int node_index, span bytes, wq_graph **out,
                                wq_error *err) {
  graph_builder sub;
  memset(&sub, 0, sizeof sub);
  sub.parent = b;
  sub.ctx = b->ctx;
  sub.depth = b->depth + 3; /* GraphProto > NodeProto > AttributeProto > GraphProto */
  sub.g = wq_graph_new();
  if (!sub.g)
    return oom(err);
  wq_status st = build_graph(&sub, bytes, err);
  for (int i = 0; st == WQ_OK && i < sub.g->n_tensors; i++) {
    if (!sub.captured[i])
      continue;
    const char *name = sub.g->tensors[i].name;
    span s = {(const uint8_t *)name, strlen(name)};
    int idx;
    st = resolve_name(b, s, false, &idx, err);
    if (st == WQ_OK && idx >= 0)
      st = add_implicit(b, node_index, idx, err);
  }
  builder_free(&sub);
  if (st != WQ_OK) {
    wq_graph_free(sub.g);
    return st;
  }
  *out = sub.g;
  return WQ_OK;
}

typedef struct {
  span name, ref_attr_name, s, t, g;
  int32_t type;
  float f;
  int64_t i;
  wq_pb_array floats, ints;
  size_t n_strings, n_tensors, n_graphs;
  bool has_f, has_i, has_s, has_t, has_g, has_sparse, has_tp;
} attr_fields;

static wq_status scan_attribute(wq_pb_reader *r, attr_fields *af, wq_error *err) {
  while (!wq_pb_at_end(r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(r, &f, err));
    wq_pb_reader sub;
    const uint8_t *p;
    size_t n;
    switch (f.number) {
    case ATTR_NAME: WQ_TRY(wq_pb_get_bytes(r, &f, "name", &af->name.p, &af->name.n, err)); break;
    case ATTR_REF_ATTR_NAME:
      WQ_TRY(
          wq_pb_get_bytes(r, &f, "ref_attr_name", &af->ref_attr_name.p, &af->ref_attr_name.n, err));
      break;
    case ATTR_TYPE: WQ_TRY(wq_pb_get_int32(r, &f, "type", &af->type, err)); break;
    case ATTR_F:
      WQ_TRY(wq_pb_get_float(r, &f, "f", &af->f, err));
      af->has_f = true;
      break;
    case ATTR_I:
      WQ_TRY(wq_pb_get_int64(r, &f, "i", &af->i, err));
      af->has_i = true;
      break;
    case ATTR_S:
      WQ_TRY(wq_pb_get_bytes(r, &f, "s", &af->s.p, &af->s.n, err));
      af->has_s = true;
      break;
    case ATTR_T:
      WQ_TRY(wq_pb_get_message(r, &f, "t", "TensorProto", &sub, err));
      af->t.p = sub.pos;
      af->t.n = (size_t)(sub.end - sub.pos);
      af->has_t = true;
      break;
    case ATTR_G:
      WQ_TRY(wq_pb_get_message(r, &f, "g", "GraphProto", &sub, err));
      af->g.p = sub.pos;
      af->g.n = (size_t)(sub.end - sub.pos);
      af->has_g = true;
      break;
    case ATTR_FLOATS: WQ_TRY(wq_pb_get_repeated_float(r, &f, "floats", &af->floats, err)); break;
    case ATTR_INTS: WQ_TRY(wq_pb_get_repeated_int64(r, &f, "ints", &af->ints, err)); break;
    case ATTR_STRINGS:
      WQ_TRY(wq_pb_get_bytes(r, &f, "strings", &p, &n, err));
      af->n_strings++;
      break;
    case ATTR_TENSORS:
      WQ_TRY(wq_pb_get_message(r, &f, "tensors", "TensorProto", &sub, err));
      af->n_tensors++;
      break;
    case ATTR_GRAPHS:
      WQ_TRY(wq_pb_get_message(r, &f, "graphs", "GraphProto", &sub, err));
      af->n_graphs++;
      break;
    case ATTR_SPARSE_TENSOR:
    case ATTR_SPARSE_TENSORS:
      af->has_sparse = true;
      WQ_TRY(wq_pb_skip(r, &f, err));
      break;
    case ATTR_TP:
    case ATTR_TYPE_PROTOS:
      af->has_tp = true;
      WQ_TRY(wq_pb_skip(r, &f, err));
      break;
    default: WQ_TRY(wq_pb_skip(r, &f, err)); break;
    }
  }
  return WQ_OK;
}

/* IR version 1 attributes carry no type: take it from the field present. */
static int32_t infer_attr_type(const attr_fields *af) {
  if (af->has_g)
    return WQ_ATTR_GRAPH;
  if (af->has_t)
    return WQ_ATTR_TENSOR;
  if (af->has_s)
    return WQ_ATTR_STRING;
  if (af->has_i)
    return WQ_ATTR_INT;
  if (af->has_f)
    return WQ_ATTR_FLOAT;
  if (af->n_graphs)
    return WQ_ATTR_GRAPHS;
  if (af->n_tensors)
    return WQ_ATTR_TENSORS;
  if (af->n_strings)
    return WQ_ATTR_STRINGS;
  if (af->ints.count)
    return WQ_ATTR_INTS;
  if (af->floats.count)
    return WQ_ATTR_FLOATS;
  if (af->has_sparse)
    return ATTRT_SPARSE_TENSOR;
  if (af->has_tp)
    return ATTRT_TYPE_PROTO;
  return WQ_ATTR_UNDEFINED;
}

/* Prefixes the error just recorded with the node and attribute it is in. */
static wq_status attr_error(wq_error *err, wq_status st, const char *node_name,
                            const char *attr_name) {
  if (!err)
    return st;
  char inner[WQ_ERROR_MSG_MAX];
  wq_format(inner, sizeof inner, "%s", err->message);
  return wq_fail(err, st, node_name, "node '%s', attribute '%s': %s", node_name, attr_name, inner);
}

/* Second pass over an attribute: fills strings, tensors or graphs (the
 * repeated message/bytes fields), whose arrays are already allocated. */
static wq_status fill_repeated_attr(graph_builder *b, int node_index, const char *node_name,
                                    span bytes, wq_attr *a, wq_error *err) {
  wq_pb_reader r;
  wq_pb_init(&r, bytes.p, bytes.n, "AttributeProto");
  r.depth = b->depth + 2;
  size_t k = 0;
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(&r, &f, err));
    span s;
    if (a->type == WQ_ATTR_STRINGS && f.number == ATTR_STRINGS) {
      WQ_TRY(wq_pb_get_bytes(&r, &f, "strings", &s.p, &s.n, err));
      a->strings[k] = malloc(s.n + 1);
      if (!a->strings[k])
        return oom(err);
      if (s.n)
        memcpy(a->strings[k], s.p, s.n);
      a->strings[k][s.n] = '\0';
      k++;
    } else if (a->type == WQ_ATTR_TENSORS && f.number == ATTR_TENSORS) {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, "tensors", "TensorProto", &sub, err));
      wq_status st = wq_onnx_read_tensor(&sub, "attribute tensor", &a->tensors[k], err);
      if (st != WQ_OK)
        return attr_error(err, st, node_name, a->name);
      k++;
    } else if (a->type == WQ_ATTR_GRAPHS && f.number == ATTR_GRAPHS) {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, "graphs", "GraphProto", &sub, err));
      span gs = {sub.pos, (size_t)(sub.end - sub.pos)};
      WQ_TRY(build_subgraph(b, node_index, gs, &a->graphs[k], err));
      k++;
    } else {
      WQ_TRY(wq_pb_skip(&r, &f, err));
    }
  }
  return WQ_OK;
}

static wq_status fill_attribute(graph_builder *b, int node_index, const char *node_name, span bytes,
                                attr_fields *af, wq_attr *a, wq_error *err) {
  WQ_TRY(copy_string(af->name, "attribute name", &a->name, err));
  if (!af->name.n)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node_name,
                   "node '%s' has an attribute without a name", node_name);
  if (af->ref_attr_name.n)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node_name,
                   "node '%s', attribute '%s' refers to a function attribute (ref_attr_name), "
                   "which is not supported",
                   node_name, a->name);
  int32_t type = af->type ? af->type : infer_attr_type(af);
  if (type == ATTRT_SPARSE_TENSOR || type == ATTRT_SPARSE_TENSORS || type == ATTRT_TYPE_PROTO ||
      type == ATTRT_TYPE_PROTOS)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node_name,
                   "node '%s', attribute '%s' has type %d (sparse tensor or type proto), which "
                   "is not supported",
                   node_name, a->name, (int)type);
  if (type < WQ_ATTR_FLOAT || type > WQ_ATTR_GRAPHS)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node_name,
                   "node '%s', attribute '%s' has invalid type %d", node_name, a->name, (int)type);
  a->type = (wq_attr_type)type;
  switch (a->type) {
  case WQ_ATTR_FLOAT: a->f = af->f; break;
  case WQ_ATTR_INT: a->i = af->i; break;
  case WQ_ATTR_STRING:
    a->s = malloc(af->s.n + 1);
    if (!a->s)
      return oom(err);
    if (af->s.n)
      memcpy(a->s, af->s.p, af->s.n);
    a->s[af->s.n] = '\0';
    a->s_len = af->s.n;
    break;
  case WQ_ATTR_TENSOR: {
    if (!af->has_t)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node_name,
                     "node '%s', attribute '%s' of type TENSOR has no tensor", node_name, a->name);
    a->t = calloc(1, sizeof *a->t);
    if (!a->t)
      return oom(err);
    wq_pb_reader r;
    wq_pb_init(&r, af->t.p, af->t.n, "TensorProto");
    r.depth = b->depth + 3;
    wq_status st = wq_onnx_read_tensor(&r, "attribute tensor", a->t, err);
    if (st != WQ_OK)
      return attr_error(err, st, node_name, a->name);
    break;
  }
  case WQ_ATTR_GRAPH:
    if (!af->has_g)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node_name,
                     "node '%s', attribute '%s' of type GRAPH has no graph", node_name, a->name);
    WQ_TRY(build_subgraph(b, node_index, af->g, &a->g, err));
    break;
  case WQ_ATTR_FLOATS:
    a->floats = af->floats.data;
    a->count = af->floats.count;
    af->floats.data = NULL;
    break;
  case WQ_ATTR_INTS:
    a->ints = af->ints.data;
    a->count = af->ints.count;
    af->ints.data = NULL;
    break;
  case WQ_ATTR_STRINGS:
  case WQ_ATTR_TENSORS:
  case WQ_ATTR_GRAPHS: {
    size_t n = a->type == WQ_ATTR_STRINGS   ? af->n_strings
               : a->type == WQ_ATTR_TENSORS ? af->n_tensors
                                            : af->n_graphs;
    /* count is set with the allocation so wq_attr_clear can free a partial fill. */
    if (n) {
      if (a->type == WQ_ATTR_STRINGS)
        a->strings = calloc(n, sizeof *a->strings);
      else if (a->type == WQ_ATTR_TENSORS)
        a->tensors = calloc(n, sizeof *a->tensors);
      else
        a->graphs = calloc(n, sizeof *a->graphs);
      if (!a->strings && !a->tensors && !a->graphs)
        return oom(err);
      a->count = n;
      WQ_TRY(fill_repeated_attr(b, node_index, node_name, bytes, a, err));
    }
    break;
  }
  default: break;
  }
  return WQ_OK;
}

static wq_status parse_attribute(graph_builder *b, int node_index, const char *node_name,
                                 span bytes, wq_attr *a, wq_error *err) {
  attr_fields af;
  memset(&af, 0, sizeof af);
  wq_pb_array_init(&af.floats, sizeof(float));
  wq_pb_array_init(&af.ints, sizeof(int64_t));
  wq_pb_reader r;
  wq_pb_init(&r, bytes.p, bytes.n, "AttributeProto");
  r.depth = b->depth + 2;
  wq_status st = scan_attribute(&r, &af, err);
  if (st == WQ_OK)
    st = fill_attribute(b, node_index, node_name, bytes, &af, a, err);
  wq_pb_array_free(&af.floats);
  wq_pb_array_free(&af.ints);
  return st;
}

static wq_status node_opset(const graph_builder *b, const node_header *h, int *opset,
                            wq_error *err) {
  bool dflt = is_default_domain(h->domain);
  for (int i = 0; i < b->ctx->n_opsets; i++) {
    const char *d = b->ctx->opsets[i].domain;
    bool match = dflt ? d[0] == '\0' : span_eq(h->domain, d);
    if (match) {
      *opset = (int)b->ctx->opsets[i].version;
      return WQ_OK;
    }
  }
  char *domain = NULL;
  WQ_TRY(copy_string(h->domain, "domain", &domain, err));
  wq_fail(err, WQ_ERR_INVALID_MODEL, h->final_name,
          "node '%s' uses domain '%s', for which the model imports no opset", h->final_name,
          dflt ? "ai.onnx" : domain);
  free(domain);
  return WQ_ERR_INVALID_MODEL;
}

/* Phase 1: every node output becomes a tensor with a producer, so that
 * nodes may appear before their producers and subgraphs may read outputs
 * of later nodes of the enclosing graph. */
static wq_status register_outputs(graph_builder *b, node_header *hs, int n_nodes, wq_error *err) {
  for (int i = 0; i < n_nodes; i++) {
    const node_header *h = &hs[i];
    for (size_t k = 0; k < h->outputs.count; k++) {
      span s = h->outputs.items[k];
      if (!s.n)
        continue;
      int idx = map_find(&b->names, b->g, s.p, s.n);
      if (idx < 0) {
        WQ_TRY(add_named_tensor(b, s, &idx, err));
        b->producer[idx] = i;
        continue;
      }
      const wq_tensor *t = &b->g->tensors[idx];
      if (t->is_constant)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, h->final_name,
                       "node '%s' writes tensor '%s', which is an initializer", h->final_name,
                       t->name);
      if (t->is_input)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, h->final_name,
                       "node '%s' writes tensor '%s', which is a graph input", h->final_name,
                       t->name);
      return wq_fail(err, WQ_ERR_INVALID_MODEL, h->final_name,
                     "tensor '%s' is produced twice: by node '%s' and by node '%s'", t->name,
                     hs[b->producer[idx]].final_name, h->final_name);
    }
  }
  return WQ_OK;
}

/* Phase 2: the node itself. */
static wq_status build_node(graph_builder *b, node_header *h, int index, wq_error *err) {
  int opset;
  WQ_TRY(node_opset(b, h, &opset, err));
  wq_node *n = wq_graph_add_node(b->g);
  if (!n)
    return oom(err);
  n->name = h->final_name;
  h->final_name = NULL;
  n->opset = opset;
  WQ_TRY(copy_string(h->op_type, "op_type", &n->op_type, err));
  if (is_default_domain(h->domain))
    n->domain = wq_strdup("");
  else
    WQ_TRY(copy_string(h->domain, "domain", &n->domain, err));
  if (!n->domain)
    return oom(err);
  int n_in = (int)h->inputs.count, n_out = (int)h->outputs.count, n_attr = (int)h->attrs.count;
  n->inputs = malloc((size_t)(n_in ? n_in : 1) * sizeof *n->inputs);
  n->outputs = malloc((size_t)(n_out ? n_out : 1) * sizeof *n->outputs);
  n->attrs = calloc((size_t)(n_attr ? n_attr : 1), sizeof *n->attrs);
  if (!n->inputs || !n->outputs || !n->attrs)
    return oom(err);
  n->n_attrs = n_attr;
  for (int k = 0; k < n_in; k++) {
    span s = h->inputs.items[k];
    n->inputs[k] = -1;
    if (s.n)
      WQ_TRY(resolve_name(b, s, true, &n->inputs[k], err));
    n->n_inputs = k + 1;
  }
  for (int k = 0; k < n_out; k++) {
    span s = h->outputs.items[k];
    n->outputs[k] = s.n ? map_find(&b->names, b->g, s.p, s.n) : -1;
    n->n_outputs = k + 1;
  }
  /* Attributes may build subgraphs, which add tensors but never nodes to
   * this graph, so `n` stays valid; re-derive it anyway for clarity. */
  for (int k = 0; k < n_attr; k++) {
    wq_node *cur = &b->g->nodes[index];
    WQ_TRY(parse_attribute(b, index, cur->name, h->attrs.items[k], &cur->attrs[k], err));
    for (int j = 0; j < k; j++)
      if (strcmp(cur->attrs[j].name, cur->attrs[k].name) == 0)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, cur->name, "node '%s' has attribute '%s' twice",
                       cur->name, cur->attrs[k].name);
  }
  return WQ_OK;
}

/* ---- validation and ordering -------------------------------------------- */

static wq_status check_inputs_defined(const graph_builder *b, wq_error *err) {
  const wq_graph *g = b->g;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
      int t = n->inputs[k];
      if (t >= 0 && !tensor_defined(b, t))
        return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                       "node '%s' (%s) reads tensor '%s', which is not a graph input, an "
                       "initializer or any node's output",
                       n->name, n->op_type, g->tensors[t].name);
    }
  }
  for (size_t k = 0; k < b->n_implicit; k++) {
    int t = b->implicit[k].tensor;
    if (!tensor_defined(b, t)) {
      const wq_node *n = &g->nodes[b->implicit[k].node];
      return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                     "a subgraph of node '%s' (%s) reads tensor '%s', which is never defined",
                     n->name, n->op_type, g->tensors[t].name);
    }
  }
  return WQ_OK;
}

/* Number of producer -> c edges from c's inputs. */
static int count_edges_into(const graph_builder *b, int c) {
  const wq_node *n = &b->g->nodes[c];
  int e = 0;
  for (int k = 0; k < n->n_inputs; k++)
    if (n->inputs[k] >= 0 && b->producer[n->inputs[k]] >= 0)
      e++;
  return e;
}

static wq_status report_cycle(const graph_builder *b, const int *indeg, wq_error *err) {
  const wq_graph *g = b->g;
  int u = -1;
  for (int i = 0; i < g->n_nodes && u < 0; i++)
    if (indeg[i] > 0)
      u = i;
  /* Walking back through unfinished producers n times must end on a cycle. */
  for (int step = 0; step < g->n_nodes && u >= 0; step++) {
    int next = -1;
    const wq_node *n = &g->nodes[u];
    for (int k = 0; k < n->n_inputs && next < 0; k++) {
      int t = n->inputs[k];
      int p = t >= 0 ? b->producer[t] : -1;
      if (p >= 0 && indeg[p] > 0)
        next = p;
    }
    for (size_t k = 0; k < b->n_implicit && next < 0; k++) {
      if (b->implicit[k].node != u)
        continue;
      int p = b->producer[b->implicit[k].tensor];
      if (p >= 0 && indeg[p] > 0)
        next = p;
    }
    if (next < 0)
      break;
    u = next;
  }
  const wq_node *n = &g->nodes[u < 0 ? 0 : u];
  return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "graph has a cycle through node '%s' (%s)",
                 n->name, n->op_type);
}

static wq_status topo_sort(graph_builder *b, wq_error *err) {
  wq_graph *g = b->g;
  int n = g->n_nodes;
  bool sorted = true;
  for (int c = 0; c < n && sorted; c++) {
    const wq_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++)
      if (node->inputs[k] >= 0 && b->producer[node->inputs[k]] >= c)
        sorted = false;
  }
  for (size_t k = 0; k < b->n_implicit; k++)
    if (b->producer[b->implicit[k].tensor] >= b->implicit[k].node)
      sorted = false;
  if (sorted)
    return WQ_OK;

  /* Edges producer -> consumer in CSR form (with multiplicity). */
  size_t n_edges = b->n_implicit;
  for (int c = 0; c < n; c++)
    n_edges += (size_t)count_edges_into(b, c);
  int *start = calloc((size_t)n + 1, sizeof *start);
  int *fill = calloc((size_t)n + 1, sizeof *fill);
  int *consumers = malloc((n_edges ? n_edges : 1) * sizeof *consumers);
  int *indeg = calloc((size_t)n, sizeof *indeg);
  int *heap = malloc((size_t)n * sizeof *heap);
  int *order = malloc((size_t)n * sizeof *order);
  wq_node *sorted_nodes = malloc((size_t)n * sizeof *sorted_nodes);
  wq_status st = WQ_OK;
  if (!start || !fill || !consumers || !indeg || !heap || !order || !sorted_nodes) {
    st = oom(err);
    goto done;
  }
  for (int c = 0; c < n; c++) {
    const wq_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t >= 0 && b->producer[t] >= 0) {
        start[b->producer[t] + 1]++;
        indeg[c]++;
      }
    }
  }
  for (size_t k = 0; k < b->n_implicit; k++) {
    int p = b->producer[b->implicit[k].tensor];
    if (p >= 0) {
      start[p + 1]++;
      indeg[b->implicit[k].node]++;
    }
  }
  for (int i = 0; i < n; i++)
    start[i + 1] += start[i];
  for (int c = 0; c < n; c++) {
    const wq_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t >= 0 && b->producer[t] >= 0) {
        int p = b->producer[t];
        consumers[start[p] + fill[p]++] = c;
      }
    }
  }
  for (size_t k = 0; k < b->n_implicit; k++) {
    int p = b->producer[b->implicit[k].tensor];
    if (p >= 0)
      consumers[start[p] + fill[p]++] = b->implicit[k].node;
  }
  if (wq_kahn_order(n, start, consumers, indeg, heap, order) < n) {
    st = report_cycle(b, indeg, err);
    goto done;
  }
  for (int i = 0; i < n; i++)
    sorted_nodes[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted_nodes, (size_t)n * sizeof *sorted_nodes);
done:
  free(start);
  free(fill);
  free(consumers);
  free(indeg);
  free(heap);
  free(order);
  free(sorted_nodes);
  return st;
}

/* ---- GraphProto --------------------------------------------------------- */

typedef struct {
  span name;
  span_list nodes, initializers, inputs, outputs, value_infos;
  node_header *headers;
  int n_headers;
} graph_parts;

static void parts_free(graph_parts *gp) {
  span_list_free(&gp->nodes);
  span_list_free(&gp->initializers);
  span_list_free(&gp->inputs);
  span_list_free(&gp->outputs);
  span_list_free(&gp->value_infos);
  for (int i = 0; i < gp->n_headers; i++)
    header_free(&gp->headers[i]);
  free(gp->headers);
}

static wq_status scan_graph(const graph_builder *b, span bytes, graph_parts *gp, wq_error *err) {
  wq_pb_reader r;
  wq_pb_init(&r, bytes.p, bytes.n, "GraphProto");
  r.depth = b->depth;
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(&r, &f, err));
    span_list *list = NULL;
    const char *field = NULL, *type = NULL;
    switch (f.number) {
    case GRAPH_NAME: WQ_TRY(wq_pb_get_bytes(&r, &f, "name", &gp->name.p, &gp->name.n, err)); break;
    case GRAPH_NODE: list = &gp->nodes, field = "node", type = "NodeProto"; break;
    case GRAPH_INITIALIZER:
      list = &gp->initializers, field = "initializer", type = "TensorProto";
      break;
    case GRAPH_INPUT: list = &gp->inputs, field = "input", type = "ValueInfoProto"; break;
    case GRAPH_OUTPUT: list = &gp->outputs, field = "output", type = "ValueInfoProto"; break;
    case GRAPH_VALUE_INFO:
      list = &gp->value_infos, field = "value_info", type = "ValueInfoProto";
      break;
    case GRAPH_SPARSE_INITIALIZER: {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, "sparse_initializer", "SparseTensorProto", &sub, err));
      char *gname = NULL;
      WQ_TRY(copy_string(gp->name, "graph name", &gname, err));
      wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
              "graph '%s' has a sparse_initializer, which is not supported", gname);
      free(gname);
      return WQ_ERR_UNSUPPORTED;
    }
    default: WQ_TRY(wq_pb_skip(&r, &f, err)); break;
    }
    if (list) {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, field, type, &sub, err));
      WQ_TRY(span_push(list, sub.pos, (size_t)(sub.end - sub.pos), err));
    }
  }
  if (gp->nodes.count > INT_MAX / 2)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph has too many nodes");
  return WQ_OK;
}

static wq_status add_initializers(graph_builder *b, const graph_parts *gp, wq_error *err) {
  for (size_t i = 0; i < gp->initializers.count; i++) {
    wq_pb_reader r;
    wq_pb_init(&r, gp->initializers.items[i].p, gp->initializers.items[i].n, "TensorProto");
    r.depth = b->depth + 1;
    wq_tensor t;
    WQ_TRY(wq_onnx_read_tensor(&r, "initializer", &t, err));
    wq_status st = WQ_OK;
    if (t.name[0] == '\0')
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "initializer #%zu has no name", i);
    else if (map_find(&b->names, b->g, (const uint8_t *)t.name, strlen(t.name)) >= 0)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "initializer '%s' is defined twice", t.name);
    int idx;
    if (st == WQ_OK)
      st = add_tensor_moved(b, &t, &idx, err);
    wq_tensor_clear(&t); /* no-op after a successful move */
    if (st != WQ_OK)
      return st;
  }
  return WQ_OK;
}

static wq_status add_graph_inputs(graph_builder *b, const graph_parts *gp, wq_error *err) {
  wq_graph *g = b->g;
  g->inputs = malloc((gp->inputs.count ? gp->inputs.count : 1) * sizeof *g->inputs);
  if (!g->inputs)
    return oom(err);
  for (size_t i = 0; i < gp->inputs.count; i++) {
    value_info vi;
    WQ_TRY(parse_value_info(gp->inputs.items[i], b->depth + 1, &vi, err));
    if (!vi.name.n)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph input #%zu has no name", i);
    int idx = map_find(&b->names, g, vi.name.p, vi.name.n);
    if (idx >= 0 && g->tensors[idx].is_constant)
      continue; /* old exporters list initializers as inputs: they stay constants */
    if (idx >= 0)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph input '%s' is declared twice",
                     g->tensors[idx].name);
    WQ_TRY(add_named_tensor(b, vi.name, &idx, err));
    wq_tensor *t = &g->tensors[idx];
    if (vi.not_tensor)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "graph input '%s' is not a tensor (sequence, map, optional and sparse "
                     "inputs are not supported)",
                     t->name);
    if (vi.declared_rank > WQ_MAX_RANK)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "graph input '%s' has rank %zu, above %d",
                     t->name, vi.declared_rank, WQ_MAX_RANK);
    wq_dtype dt;
    WQ_TRY(value_info_dtype(&vi, "graph input", t->name, &dt, err));
    WQ_TRY(apply_value_info(t, &vi, dt, err));
    t->is_input = true;
    g->inputs[g->n_inputs++] = idx;
  }
  return WQ_OK;
}

static wq_status add_graph_outputs(graph_builder *b, const graph_parts *gp, wq_error *err) {
  wq_graph *g = b->g;
  g->outputs = malloc((gp->outputs.count ? gp->outputs.count : 1) * sizeof *g->outputs);
  if (!g->outputs)
    return oom(err);
  for (size_t i = 0; i < gp->outputs.count; i++) {
    value_info vi;
    WQ_TRY(parse_value_info(gp->outputs.items[i], b->depth + 1, &vi, err));
    if (!vi.name.n)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph output #%zu has no name", i);
    int idx;
    WQ_TRY(resolve_name(b, vi.name, false, &idx, err));
    if (idx < 0 || !tensor_defined(b, idx)) {
      char *name = NULL;
      WQ_TRY(copy_string(vi.name, "graph output name", &name, err));
      wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
              "graph output '%s' is not produced by any node and is not a graph input or "
              "initializer",
              name);
      free(name);
      return WQ_ERR_INVALID_MODEL;
    }
    wq_tensor *t = &g->tensors[idx];
    if (vi.not_tensor)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "graph output '%s' is not a tensor (sequence, map, optional and sparse "
                     "outputs are not supported)",
                     t->name);
    wq_dtype dt;
    WQ_TRY(value_info_dtype(&vi, "graph output", t->name, &dt, err));
    /* The declaration describes a computed output; inputs and constants
     * passed straight through keep what they already have. */
    if (!t->is_constant && !t->is_input && vi.has_type && vi.declared_rank <= WQ_MAX_RANK)
      WQ_TRY(apply_value_info(t, &vi, dt, err));
    t->is_output = true;
    g->outputs[g->n_outputs++] = idx;
  }
  return WQ_OK;
}

/* value_info entries are hints for intermediate tensors; names the graph
 * does not use are ignored, bad entries are dropped rather than fatal. */
static wq_status apply_value_infos(graph_builder *b, const graph_parts *gp, wq_error *err) {
  for (size_t i = 0; i < gp->value_infos.count; i++) {
    value_info vi;
    WQ_TRY(parse_value_info(gp->value_infos.items[i], b->depth + 1, &vi, err));
    int idx = vi.name.n ? map_find(&b->names, b->g, vi.name.p, vi.name.n) : -1;
    if (idx < 0 || !vi.has_type || vi.not_tensor || vi.declared_rank > WQ_MAX_RANK)
      continue;
    wq_tensor *t = &b->g->tensors[idx];
    if (t->is_constant || t->is_input || vi.elem_type < 0 || vi.elem_type >= WQ_DT_COUNT_)
      continue;
    if (t->dtype == WQ_DT_UNDEFINED && t->rank < 0)
      WQ_TRY(apply_value_info(t, &vi, (wq_dtype)vi.elem_type, err));
  }
  return WQ_OK;
}

static wq_status build_graph(graph_builder *b, span bytes, wq_error *err) {
  graph_parts gp;
  memset(&gp, 0, sizeof gp);
  wq_status st = scan_graph(b, bytes, &gp, err);
  if (st == WQ_OK)
    st = copy_string(gp.name, "graph name", &b->g->name, err);
  if (st == WQ_OK)
    st = add_initializers(b, &gp, err);
  if (st == WQ_OK)
    st = add_graph_inputs(b, &gp, err);
  if (st == WQ_OK && gp.nodes.count) {
    gp.headers = calloc(gp.nodes.count, sizeof *gp.headers);
    if (!gp.headers)
      st = oom(err);
  }
  for (size_t i = 0; st == WQ_OK && i < gp.nodes.count; i++) {
    st = parse_node_header(gp.nodes.items[i], b->depth + 1, (int)i, &gp.headers[i], err);
    gp.n_headers = (int)i + 1;
  }
  if (st == WQ_OK)
    st = register_outputs(b, gp.headers, gp.n_headers, err);
  for (int i = 0; st == WQ_OK && i < gp.n_headers; i++)
    st = build_node(b, &gp.headers[i], i, err);
  if (st == WQ_OK)
    st = add_graph_outputs(b, &gp, err);
  if (st == WQ_OK)
    st = apply_value_infos(b, &gp, err);
  if (st == WQ_OK)
    st = check_inputs_defined(b, err);
  if (st == WQ_OK)
    st = topo_sort(b, err);
  parts_free(&gp);
  return st;
}

/* ---- ModelProto ----------------------------------------------------------- */

static wq_status parse_opset(wq_pb_reader *r, wq_model_ir *m, wq_error *err) {
  span domain = {NULL, 0};
  int64_t version = 0;
  while (!wq_pb_at_end(r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(r, &f, err));
    if (f.number == OPSET_DOMAIN)
      WQ_TRY(wq_pb_get_bytes(r, &f, "domain", &domain.p, &domain.n, err));
    else if (f.number == OPSET_VERSION)
      WQ_TRY(wq_pb_get_int64(r, &f, "version", &version, err));
    else
      WQ_TRY(wq_pb_skip(r, &f, err));
  }
  if (m->n_opsets == INT_MAX)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "too many opset imports");
  wq_opset_import *o = realloc(m->opsets, (size_t)(m->n_opsets + 1) * sizeof *o);
  if (!o)
    return oom(err);
  m->opsets = o;
  wq_opset_import *imp = &m->opsets[m->n_opsets];
  imp->version = version;
  if (is_default_domain(domain))
    imp->domain = wq_strdup("");
  else
    WQ_TRY(copy_string(domain, "opset domain", &imp->domain, err));
  if (!imp->domain)
    return oom(err);
  m->n_opsets++;
  return WQ_OK;
}

static wq_status check_opsets(const wq_model_ir *m, wq_error *err) {
  for (int i = 0; i < m->n_opsets; i++) {
    const wq_opset_import *o = &m->opsets[i];
    const char *shown = o->domain[0] ? o->domain : "ai.onnx";
    if (o->domain[0] == '\0' && (o->version < WQ_ONNX_MIN_OPSET || o->version > WQ_ONNX_MAX_OPSET))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "ai.onnx opset version %lld is not supported (supported: %d..%d)",
                     (long long)o->version, WQ_ONNX_MIN_OPSET, WQ_ONNX_MAX_OPSET);
    if (o->version < 1 || o->version > INT_MAX)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "opset version %lld of domain '%s' is not supported", (long long)o->version,
                     shown);
    for (int j = 0; j < i; j++)
      if (strcmp(m->opsets[j].domain, o->domain) == 0 && m->opsets[j].version != o->version)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                       "domain '%s' is imported twice, at opset %lld and %lld", shown,
                       (long long)m->opsets[j].version, (long long)o->version);
  }
  return WQ_OK;
}

/* The ModelProto's own fields do not read as protobuf: the bytes are no
 * serialized ONNX model (a text file, an image, a cut-off download). Says so
 * before the wire-level detail. */
static wq_status not_onnx(wq_status st, wq_error *err) {
  if (err) {
    char detail[WQ_ERROR_MSG_MAX];
    wq_format(detail, sizeof detail, "%.400s", err->message);
    wq_format(err->message, sizeof err->message,
              "this is not an ONNX model, or it is cut off (%.400s)", detail);
  }
  return st;
}

static wq_status import_model(const uint8_t *bytes, size_t n, wq_model_ir *m, wq_error *err) {
  wq_pb_reader r;
  wq_pb_init(&r, bytes, n, "ModelProto");
  span graph = {NULL, 0};
  bool has_graph = false;
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    wq_status read = wq_pb_next_field(&r, &f, err);
    if (read != WQ_OK)
      return not_onnx(read, err);
    span s;
    switch (f.number) {
    case MODEL_IR_VERSION:
      WQ_TRY(wq_pb_get_int64(&r, &f, "ir_version", &m->ir_version, err));
      break;
    case MODEL_PRODUCER_NAME:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "producer_name", &s.p, &s.n, err));
      free(m->producer_name);
      WQ_TRY(copy_string(s, "producer_name", &m->producer_name, err));
      break;
    case MODEL_PRODUCER_VERSION:
      WQ_TRY(wq_pb_get_bytes(&r, &f, "producer_version", &s.p, &s.n, err));
      free(m->producer_version);
      WQ_TRY(copy_string(s, "producer_version", &m->producer_version, err));
      break;
    case MODEL_GRAPH: {
      wq_pb_reader sub;
      wq_status st = wq_pb_get_message(&r, &f, "graph", "GraphProto", &sub, err);
      if (st != WQ_OK)
        return not_onnx(st, err);
      graph.p = sub.pos;
      graph.n = (size_t)(sub.end - sub.pos);
      has_graph = true;
      break;
    }
    case MODEL_OPSET_IMPORT: {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(&r, &f, "opset_import", "OperatorSetIdProto", &sub, err));
      WQ_TRY(parse_opset(&sub, m, err));
      break;
    }
    default: {
      wq_status skip = wq_pb_skip(&r, &f, err);
      if (skip != WQ_OK)
        return not_onnx(skip, err);
      break;
    }
    }
  }
  if (!has_graph)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                   n ? "this is not an ONNX model (no graph in it)"
                     : "this is not an ONNX model (the file is empty)");
  if (!m->producer_name)
    m->producer_name = wq_strdup("");
  if (!m->producer_version)
    m->producer_version = wq_strdup("");
  if (!m->producer_name || !m->producer_version)
    return oom(err);
  WQ_TRY(check_opsets(m, err));

  import_ctx ctx = {m->opsets, m->n_opsets};
  graph_builder b;
  memset(&b, 0, sizeof b);
  b.ctx = &ctx;
  b.depth = 1;
  b.g = wq_graph_new();
  if (!b.g)
    return oom(err);
  m->graph = b.g; /* owned by the model from here on, freed with it on error */
  wq_status st = build_graph(&b, graph, err);
  builder_free(&b);
  return st == WQ_OK ? wq_graph_bind_captures(m->graph, err) : st;
}

wq_status wq_onnx_import(const uint8_t *bytes, size_t n, wq_model_ir **out, wq_error *err) {
  if (!out)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_onnx_import: out is NULL");
  *out = NULL;
  if (!bytes && n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_onnx_import: bytes is NULL");
  wq_error_clear(err);
  wq_model_ir *m = calloc(1, sizeof *m);
  if (!m)
    return oom(err);
  wq_status st = import_model(bytes, n, m, err);
  if (st != WQ_OK) {
    wq_model_ir_free(m);
    return st;
  }
  *out = m;
  return WQ_OK;
}
