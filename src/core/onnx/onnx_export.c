#include "onnx_export.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/topo.h"
#include "onnx_tensor.h"
#include "pb_writer.h"

/* raw_data is little-endian and is written from memory as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX writer assumes a little-endian host"
#endif

/* Field numbers from onnx.proto (the importer's, in onnx_import.c). */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11 };
enum { GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
enum { NODE_DOMAIN = 7 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_S = 4, ATTR_T = 5, ATTR_G = 6 };
enum { ATTR_FLOATS = 7, ATTR_INTS = 8, ATTR_STRINGS = 9, ATTR_TENSORS = 10, ATTR_TYPE = 20 };
enum { VI_NAME = 1, VI_TYPE = 2 };
enum { TYPE_TENSOR = 1, TTYPE_ELEM_TYPE = 1, TTYPE_SHAPE = 2 };
enum { SHAPE_DIM = 1, DIM_VALUE = 1, DIM_PARAM = 2 };
enum { TP_DIMS = 1, TP_DATA_TYPE = 2, TP_NAME = 8, TP_RAW_DATA = 9 };

/* Attributes named for the toolkit itself start with this and are never
 * written (the pipeline's decisions live in each node's record, not in
 * attributes). */
#define INTERNAL_ATTR_PREFIX "wasmq."
#define INTERNAL_DOMAIN "wasmq"

typedef struct {
  const wq_model_ir *ir;
  const wq_graph *g;
  wq_pb_writer w;
  int *order;    /* nodes in topological order */
  bool *written; /* per tensor: an initializer to write */
  bool sub;      /* g is an If branch: it may read the enclosing graph's values */
} export_ctx;

static wq_status oom(wq_error *err) {
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory while exporting the model");
}

/* One TensorProto: dims, data_type, name and the data as raw_data. `node`
 * names the node an attribute tensor belongs to (NULL for initializers). */
static wq_status write_tensor(export_ctx *c, uint32_t field, const wq_tensor *t, const char *node,
                              wq_error *err) {
  const char *name = t->name && t->name[0] ? t->name : "(unnamed)";
  if (wq_onnx_dtype_bits(t->dtype) == 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node,
                   "constant '%s' has dtype %s, which cannot be written", name,
                   wq_dtype_name(t->dtype));
  if (t->rank < 0 || t->rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "constant '%s' has no known shape", name);
  int64_t numel = 1;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] < 0)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "constant '%s' has an unknown dim", name);
    numel *= t->dims[d];
  }
  uint64_t need = wq_onnx_storage_bytes(t->dtype, numel);
  if (!t->data || (uint64_t)t->nbytes != need)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node,
                   "constant '%s' holds %zu bytes of data where its shape needs %llu", name,
                   t->data ? t->nbytes : 0, (unsigned long long)need);
  wq_pb_writer *w = &c->w;
  WQ_TRY(wq_pb_begin(w, field));
  WQ_TRY(wq_pb_write_repeated_int64(w, TP_DIMS, t->dims, (size_t)t->rank));
  WQ_TRY(wq_pb_write_int32(w, TP_DATA_TYPE, (int32_t)t->dtype));
  if (t->name && t->name[0])
    WQ_TRY(wq_pb_write_string(w, TP_NAME, t->name));
  WQ_TRY(wq_pb_write_bytes(w, TP_RAW_DATA, t->data, t->nbytes));
  return wq_pb_end(w);
}

/* ValueInfoProto of a graph input or output: name, and the tensor type
 * when the dtype is known (with the shape when the rank is). */
static wq_status write_value_info(export_ctx *c, uint32_t field, const wq_tensor *t) {
  wq_pb_writer *w = &c->w;
  WQ_TRY(wq_pb_begin(w, field));
  WQ_TRY(wq_pb_write_string(w, VI_NAME, t->name));
  if (t->dtype != WQ_DT_UNDEFINED) {
    WQ_TRY(wq_pb_begin(w, VI_TYPE));
    WQ_TRY(wq_pb_begin(w, TYPE_TENSOR));
    WQ_TRY(wq_pb_write_int32(w, TTYPE_ELEM_TYPE, (int32_t)t->dtype));
    if (t->rank >= 0) {
      WQ_TRY(wq_pb_begin(w, TTYPE_SHAPE));
      for (int d = 0; d < t->rank; d++) {
        WQ_TRY(wq_pb_begin(w, SHAPE_DIM));
        if (t->dims[d] >= 0)
          WQ_TRY(wq_pb_write_int64(w, DIM_VALUE, t->dims[d]));
        else if (t->dim_params[d] && t->dim_params[d][0])
          WQ_TRY(wq_pb_write_string(w, DIM_PARAM, t->dim_params[d]));
        WQ_TRY(wq_pb_end(w)); /* an empty Dimension is an unknown dim */
      }
      WQ_TRY(wq_pb_end(w));
    }
    WQ_TRY(wq_pb_end(w));
    WQ_TRY(wq_pb_end(w));
  }
  return wq_pb_end(w);
}

static wq_status write_subgraph(export_ctx *c, const wq_graph *s, wq_error *err);

static wq_status write_attribute(export_ctx *c, const wq_node *n, const wq_attr *a, wq_error *err) {
  wq_pb_writer *w = &c->w;
  if (a->type == WQ_ATTR_GRAPH && a->g) {
    WQ_TRY(wq_pb_begin(w, NODE_ATTRIBUTE));
    WQ_TRY(wq_pb_write_string(w, ATTR_NAME, a->name));
    WQ_TRY(write_subgraph(c, a->g, err));
    WQ_TRY(wq_pb_write_int32(w, ATTR_TYPE, (int32_t)a->type));
    return wq_pb_end(w);
  }
  if (a->type == WQ_ATTR_GRAPH || a->type == WQ_ATTR_GRAPHS)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name,
                   "node '%s' (%s): attribute '%s' holds a subgraph, which the ONNX writer does "
                   "not support",
                   n->name, n->op_type, a->name);
  if (a->type < WQ_ATTR_FLOAT || a->type > WQ_ATTR_TENSORS)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                   "node '%s' (%s): attribute '%s' has no valid type (%d)", n->name, n->op_type,
                   a->name, (int)a->type);
  WQ_TRY(wq_pb_begin(w, NODE_ATTRIBUTE));
  WQ_TRY(wq_pb_write_string(w, ATTR_NAME, a->name));
  switch (a->type) {
  case WQ_ATTR_FLOAT: WQ_TRY(wq_pb_write_float(w, ATTR_F, a->f)); break;
  case WQ_ATTR_INT: WQ_TRY(wq_pb_write_int64(w, ATTR_I, a->i)); break;
  case WQ_ATTR_STRING: WQ_TRY(wq_pb_write_bytes(w, ATTR_S, a->s ? a->s : "", a->s_len)); break;
  case WQ_ATTR_TENSOR:
    if (!a->t)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                     "node '%s' (%s): attribute '%s' of type TENSOR has no tensor", n->name,
                     n->op_type, a->name);
    WQ_TRY(write_tensor(c, ATTR_T, a->t, n->name, err));
    break;
  case WQ_ATTR_FLOATS:
    WQ_TRY(wq_pb_write_repeated_float(w, ATTR_FLOATS, a->floats, a->count));
    break;
  case WQ_ATTR_INTS: WQ_TRY(wq_pb_write_repeated_int64(w, ATTR_INTS, a->ints, a->count)); break;
  case WQ_ATTR_STRINGS:
    for (size_t k = 0; k < a->count; k++)
      WQ_TRY(wq_pb_write_string(w, ATTR_STRINGS, a->strings[k]));
    break;
  case WQ_ATTR_TENSORS:
    for (size_t k = 0; k < a->count; k++)
      WQ_TRY(write_tensor(c, ATTR_TENSORS, &a->tensors[k], n->name, err));
    break;
  default: break;
  }
  WQ_TRY(wq_pb_write_int32(w, ATTR_TYPE, (int32_t)a->type));
  return wq_pb_end(w);
}

static bool domain_imported(const wq_model_ir *ir, const char *domain) {
  for (int i = 0; i < ir->n_opsets; i++)
    if (strcmp(ir->opsets[i].domain, domain) == 0)
      return true;
  return false;
}

static wq_status write_node(export_ctx *c, const wq_node *n, wq_error *err) {
  const char *domain = n->domain ? n->domain : "";
  if (strcmp(domain, INTERNAL_DOMAIN) == 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name,
                   "node '%s' (%s) is an op of wasmq's internal domain, which other runtimes do "
                   "not read (export the graph before int8 lowering: load with no_lowering)",
                   n->name, n->op_type);
  if (!domain_imported(c->ir, domain))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                   "node '%s' (%s) uses domain '%s', for which the model imports no opset", n->name,
                   n->op_type, domain[0] ? domain : "ai.onnx");
  const wq_graph *g = c->g;
  wq_pb_writer *w = &c->w;
  WQ_TRY(wq_pb_begin(w, GRAPH_NODE));
  /* The values an If's branches read from outside are its inputs in the
   * IR (ir/subgraph.h), not in ONNX: only the condition is written. */
  int n_in = wq_node_attr(n, "then_branch") ? 1 : n->n_inputs;
  for (int k = 0; k < n_in; k++)
    WQ_TRY(
        wq_pb_write_string(w, NODE_INPUT, n->inputs[k] >= 0 ? g->tensors[n->inputs[k]].name : ""));
  for (int k = 0; k < n->n_outputs; k++)
    WQ_TRY(wq_pb_write_string(w, NODE_OUTPUT,
                              n->outputs[k] >= 0 ? g->tensors[n->outputs[k]].name : ""));
  WQ_TRY(wq_pb_write_string(w, NODE_NAME, n->name));
  WQ_TRY(wq_pb_write_string(w, NODE_OP_TYPE, n->op_type));
  for (int k = 0; k < n->n_attrs; k++) {
    const wq_attr *a = &n->attrs[k];
    if (a->name && strncmp(a->name, INTERNAL_ATTR_PREFIX, strlen(INTERNAL_ATTR_PREFIX)) == 0)
      continue;
    WQ_TRY(write_attribute(c, n, a, err));
  }
  if (domain[0])
    WQ_TRY(wq_pb_write_string(w, NODE_DOMAIN, domain));
  return wq_pb_end(w);
}

/* Checks every tensor a node reads is defined (graph input, constant or
 * another node's output), that no node writes a constant or a graph input,
 * and marks the constants to write: those read or that are graph outputs. */
static wq_status check_tensors(export_ctx *c, wq_error *err) {
  const wq_graph *g = c->g;
  bool *produced = calloc((size_t)g->n_tensors + 1, sizeof *produced);
  if (!produced)
    return oom(err);
  wq_status st = WQ_OK;
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_outputs && st == WQ_OK; k++) {
      int t = n->outputs[k];
      if (t < 0)
        continue;
      if (g->tensors[t].is_constant || g->tensors[t].is_input)
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                     "node '%s' (%s) writes tensor '%s', which is a %s", n->name, n->op_type,
                     g->tensors[t].name, g->tensors[t].is_input ? "graph input" : "constant");
      produced[t] = true;
    }
  }
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs && st == WQ_OK; k++) {
      int t = n->inputs[k];
      if (t < 0)
        continue;
      const wq_tensor *tensor = &g->tensors[t];
      if (tensor->is_constant)
        c->written[t] = true;
      else if (!tensor->is_input && !produced[t] && !c->sub)
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, n->name,
                     "node '%s' (%s) reads tensor '%s', which is not a graph input, a constant "
                     "or any node's output",
                     n->name, n->op_type, tensor->name);
    }
  }
  for (int i = 0; i < g->n_outputs && st == WQ_OK; i++) {
    int t = g->outputs[i];
    const wq_tensor *tensor = &g->tensors[t];
    if (tensor->is_constant)
      c->written[t] = true;
    else if (!tensor->is_input && !produced[t] && !c->sub)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                   "graph output '%s' is not produced by any node and is not a graph input or "
                   "constant",
                   tensor->name);
  }
  free(produced);
  return st;
}

static wq_status write_graph(export_ctx *c, int field, wq_error *err) {
  const wq_graph *g = c->g;
  wq_pb_writer *w = &c->w;
  WQ_TRY(wq_pb_begin(w, field));
  for (int i = 0; i < g->n_nodes; i++)
    WQ_TRY(write_node(c, &g->nodes[c->order[i]], err));
  WQ_TRY(wq_pb_write_string(w, GRAPH_NAME, g->name && g->name[0] ? g->name : "wasmq"));
  for (int t = 0; t < g->n_tensors; t++)
    if (c->written[t])
      WQ_TRY(write_tensor(c, GRAPH_INITIALIZER, &g->tensors[t], NULL, err));
  for (int i = 0; i < g->n_inputs && !c->sub; i++)
    WQ_TRY(write_value_info(c, GRAPH_INPUT, &g->tensors[g->inputs[i]]));
  for (int i = 0; i < g->n_outputs; i++)
    WQ_TRY(write_value_info(c, GRAPH_OUTPUT, &g->tensors[g->outputs[i]]));
  return wq_pb_end(w);
}

/* A branch as the GraphProto of a GRAPH attribute: its nodes, the constants
 * they read and its outputs, with the same checks as the main graph. */
static wq_status write_subgraph(export_ctx *c, const wq_graph *s, wq_error *err) {
  const wq_graph *g = c->g;
  int *order = c->order;
  bool *written = c->written, sub = c->sub;
  c->g = s;
  c->sub = true;
  c->order = malloc(((size_t)s->n_nodes + 1) * sizeof *c->order);
  c->written = calloc((size_t)s->n_tensors + 1, sizeof *c->written);
  wq_status st = c->order && c->written ? WQ_OK : oom(err);
  if (st == WQ_OK)
    st = check_tensors(c, err);
  if (st == WQ_OK)
    st = wq_graph_topo_order(s, c->order, err);
  if (st == WQ_OK)
    st = write_graph(c, ATTR_G, err);
  free(c->order);
  free(c->written);
  c->g = g;
  c->order = order;
  c->written = written;
  c->sub = sub;
  return st;
}

static wq_status write_model(export_ctx *c, wq_error *err) {
  const wq_model_ir *ir = c->ir;
  wq_pb_writer *w = &c->w;
  int64_t ir_version = ir->ir_version > WQ_ONNX_EXPORT_MIN_IR_VERSION
                           ? ir->ir_version
                           : WQ_ONNX_EXPORT_MIN_IR_VERSION;
  WQ_TRY(wq_pb_write_int64(w, MODEL_IR_VERSION, ir_version));
  WQ_TRY(wq_pb_write_string(w, MODEL_PRODUCER_NAME, "wasmq"));
  WQ_TRY(write_graph(c, MODEL_GRAPH, err));
  for (int i = 0; i < ir->n_opsets; i++) {
    WQ_TRY(wq_pb_begin(w, MODEL_OPSET_IMPORT));
    WQ_TRY(wq_pb_write_string(w, OPSET_DOMAIN, ir->opsets[i].domain));
    WQ_TRY(wq_pb_write_int64(w, OPSET_VERSION, ir->opsets[i].version));
    WQ_TRY(wq_pb_end(w));
  }
  return WQ_OK;
}

wq_status wq_onnx_export(const wq_model_ir *ir, uint8_t **out, size_t *out_len, wq_error *err) {
  wq_error_clear(err);
  if (!out || !out_len)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_onnx_export: out or out_len is NULL");
  *out = NULL;
  *out_len = 0;
  if (!ir || !ir->graph)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_onnx_export: the model has no graph");
  export_ctx c;
  memset(&c, 0, sizeof c);
  c.ir = ir;
  c.g = ir->graph;
  wq_pb_writer_init(&c.w);
  c.order = malloc(((size_t)c.g->n_nodes + 1) * sizeof *c.order);
  c.written = calloc((size_t)c.g->n_tensors + 1, sizeof *c.written);
  wq_status st = c.order && c.written ? WQ_OK : oom(err);
  if (st == WQ_OK)
    st = check_tensors(&c, err);
  if (st == WQ_OK)
    st = wq_graph_topo_order(c.g, c.order, err);
  if (st == WQ_OK)
    st = write_model(&c, err);
  /* A failed write leaves its reason in the writer; finish reports it. */
  if (st == WQ_OK || c.w.status != WQ_OK)
    st = wq_pb_writer_finish(&c.w, out, out_len, err);
  else
    wq_pb_writer_free(&c.w);
  free(c.order);
  free(c.written);
  return st;
}
