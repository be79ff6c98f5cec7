#include "annotate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "prepare.h"

typedef struct {
  const wq_graph *g;
  const wq_quant_config *cfg;
  const wq_dtype *dtypes;
  int *producer;       /* node writing each tensor, or -1 */
  int *readers;        /* number of node inputs reading each tensor */
  int *parent;         /* union-find over tensors (cluster) */
  bool *into_absorbed; /* per tensor: read by an absorbed node (no Q/DQ on it) */
  wq_annotation *a;
} ann_ctx;

static bool is_op(const wq_node *n, const char *op_type) {
  return (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) &&
         strcmp(n->op_type, op_type) == 0;
}

static wq_dtype dtype_of(const ann_ctx *c, int t) {
  return c->dtypes ? c->dtypes[t] : c->g->tensors[t].dtype;
}

static bool is_float(const ann_ctx *c, int t) { return t >= 0 && dtype_of(c, t) == WQ_DT_FLOAT; }

static bool is_constant(const ann_ctx *c, int t) {
  return t >= 0 && c->g->tensors[t].is_constant && c->g->tensors[t].data;
}

static int64_t numel(const wq_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->dims[d];
  return n;
}

static void set_reason(wq_ann_node *an, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_reason(wq_ann_node *an, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(an->reason, sizeof an->reason, fmt, ap);
  va_end(ap);
}

static int find(int *parent, int t) {
  while (parent[t] != t)
    t = parent[t] = parent[parent[t]];
  return t;
}

static void unite(int *parent, int a, int b) {
  a = find(parent, a);
  b = find(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

/* Inputs that carry data to quantize: all of them for Add/Sub/Mul/Div and
 * Concat, else input 0 only (shapes, indices, Clip bounds, Resize scales
 * stay as they are). */
/* Every float input is data (Add/Mul, Concat, and the two-operand lookups
 * Sub/Div): from the registry's int8 kinds. */
static bool all_inputs_are_data(const wq_node *n) {
  int k = n->op ? n->op->int8 : WQ_INT8_NONE;
  return k == WQ_INT8_BINARY || k == WQ_INT8_CONCAT ||
         (k == WQ_INT8_LOOKUP && n->op->min_inputs == 2);
}

static bool has_float_output(const ann_ctx *c, const wq_node *n) {
  for (int k = 0; k < n->n_outputs; k++)
    if (is_float(c, n->outputs[k]))
      return true;
  return false;
}

/* The output-channel axis of a linear's weight. */
static int weight_axis(const wq_node *n) {
  if (is_op(n, "MatMul"))
    return 1;
  if (is_op(n, "Gemm")) {
    const wq_attr *tb = wq_node_attr(n, "transB");
    return tb && tb->i ? 0 : 1;
  }
  return 0; /* Conv: [M, C/group, k...] */
}

/* Checks what the int8 lowering needs of a linear; false with a reason. */
static bool linear_ok(const ann_ctx *c, const wq_node *n, wq_ann_node *an) {
  const wq_graph *g = c->g;
  int w = n->n_inputs > 1 ? n->inputs[1] : -1;
  if (!is_float(c, n->inputs[0])) {
    set_reason(an, "input is not float");
    return false;
  }
  if (!is_constant(c, w) || !is_float(c, w)) {
    set_reason(an, "weight is not a float constant (an int8 product of two activations has no "
                   "kernel)");
    return false;
  }
  const wq_tensor *wt = &g->tensors[w];
  if (is_op(n, "Conv") && wt->rank != 3 && wt->rank != 4) {
    set_reason(an, "only 1-D and 2-D convolutions have int8 kernels (weight rank %d)", wt->rank);
    return false;
  }
  if ((is_op(n, "MatMul") || is_op(n, "Gemm")) && wt->rank != 2) {
    set_reason(an, "weight must be 2-D (rank %d)", wt->rank);
    return false;
  }
  if (is_op(n, "Gemm")) {
    const wq_attr *ta = wq_node_attr(n, "transA");
    const wq_attr *al = wq_node_attr(n, "alpha");
    const wq_attr *be = wq_node_attr(n, "beta");
    if ((ta && ta->i) || (al && al->f != 1.0f) || (be && be->f != 1.0f)) {
      set_reason(an, "Gemm with transA, alpha or beta other than the defaults");
      return false;
    }
  }
  an->bias = -1;
  if (n->n_inputs > 2 && n->inputs[2] >= 0) {
    int b = n->inputs[2];
    int64_t channels = wt->dims[weight_axis(n)];
    if (!is_constant(c, b) || !is_float(c, b) || numel(&g->tensors[b]) != channels) {
      set_reason(an, "bias is not a float constant of %lld values", (long long)channels);
      return false;
    }
    an->bias = b;
    an->bias_node = -1;
  }
  return true;
}

/* A 1-D Conv reading a model input through data movement alone (Reshape,
 * Pad, ...) reads a raw signal such as audio: quiet stretches span a few
 * steps of a per-tensor int8 grid sized for the loud ones, and the front end
 * (often an STFT) passes that error to everything after it. */
static bool reads_raw_signal(const ann_ctx *c, const wq_node *n) {
  int t = n->inputs[0];
  for (int p; (p = c->producer[t]) >= 0; t = c->g->nodes[p].inputs[0]) {
    const wq_node *m = &c->g->nodes[p];
    if (m->n_inputs < 1 || !((m->op && m->op->int8 == WQ_INT8_MOVE) || is_op(m, "Pad")))
      return false;
  }
  return t >= 0 && !c->g->tensors[t].is_constant;
}

/* Refines the op's role for this node; WQ_QROLE_NONE with a reason when the
 * int8 lowering would not take it. */
static wq_quant_role node_role(const ann_ctx *c, int i, wq_ann_node *an) {
  const wq_node *n = &c->g->nodes[i];
  wq_quant_role role = n->op ? n->op->quant_role : WQ_QROLE_NONE;
  if (role == WQ_QROLE_NONE) {
    an->code = WQ_REASON_UNSUPPORTED_OP;
    set_reason(an, "no int8 kernel for %s", n->op_type);
    return role;
  }
  if (n->n_inputs < 1 || !is_float(c, n->inputs[0]) || n->n_outputs < 1 ||
      !is_float(c, n->outputs[0])) {
    set_reason(an, "data is not float");
    return WQ_QROLE_NONE;
  }
  /* The op's own conditions for an int8 form: the registry's capability
   * check (a lookup of one varying input against scalar constants, Resize
   * nearest, MaxPool's Indices unread, ...), as the lowering asks it. */
  wq_int8_answer ans;
  if (wq_op_int8_check(c->g, n, &ans) != WQ_REASON_INT8) {
    an->code = ans.reason;
    set_reason(an, "%s", ans.detail);
    return WQ_QROLE_NONE;
  }
  /* Log is there to compress a range spanning orders of magnitude; a linear
   * int8 grid over its input flattens the small values it would spread. */
  if (is_op(n, "Log")) {
    set_reason(an, "Log input spans orders of magnitude: kept float");
    return WQ_QROLE_NONE;
  }
  switch (role) {
  case WQ_QROLE_LINEAR:
    if (!linear_ok(c, n, an))
      return WQ_QROLE_NONE;
    if (is_op(n, "Conv") && c->g->tensors[n->inputs[1]].rank == 3 && reads_raw_signal(c, n)) {
      set_reason(an, "1-D Conv on a raw model input: int8 would lose its quiet passages");
      return WQ_QROLE_NONE;
    }
    return role;
  case WQ_QROLE_CLAMP: return role;
  case WQ_QROLE_OWN_OUTPUT:
    if (all_inputs_are_data(n))
      for (int k = 0; k < n->n_inputs; k++)
        if (!is_float(c, n->inputs[k])) {
          set_reason(an, "an operand is not float");
          return WQ_QROLE_NONE;
        }
    return role;
  case WQ_QROLE_SHARED:
    if (n->op->int8 == WQ_INT8_CONCAT)
      for (int k = 0; k < n->n_inputs; k++)
        if (!is_float(c, n->inputs[k])) {
          set_reason(an, "an input is not float");
          return WQ_QROLE_NONE;
        }
    return role;
  case WQ_QROLE_NONE: break;
  }
  return WQ_QROLE_NONE;
}

/* Marks tensor t read or written by quantized node `node`. */
static void mark(ann_ctx *c, int t, int node, wq_ann_tensor_kind kind) {
  if (t < 0 || !is_float(c, t))
    return;
  wq_ann_tensor *at = &c->a->tensors[t];
  if (kind == WQ_ANN_T_ACTIVATION && is_constant(c, t))
    kind = WQ_ANN_T_CONSTANT;
  if (at->kind == WQ_ANN_T_NONE || kind == WQ_ANN_T_WEIGHT)
    at->kind = kind;
  if (!at->spec)
    at->spec = kind == WQ_ANN_T_WEIGHT
                   ? wq_quant_config_weight_for(c->cfg, c->g->nodes[node].op_type)
                   : wq_quant_config_activation_for(c->cfg, c->g->nodes[node].op_type);
}

/* Relu/Clip (or a MatMul's bias Add) reading the linear's output alone is
 * absorbed into it: the linear's output gets no Q/DQ. */
static void absorb(ann_ctx *c) {
  const wq_graph *g = c->g;
  wq_ann_node *an = c->a->nodes;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (an[i].decision != WQ_ANN_QUANTIZED)
      continue;
    bool bias_add = is_op(n, "Add") && wq_quant_is_linear_bias_add(g, i);
    if (!bias_add && an[i].role != WQ_QROLE_CLAMP)
      continue;
    /* The linear is the producer of the non-constant operand. */
    int x = n->inputs[0];
    if (bias_add && is_constant(c, x))
      x = n->inputs[1];
    int p = c->producer[x];
    if (p < 0 || c->readers[x] != 1 || g->tensors[x].is_output)
      continue;
    int linear = an[p].decision == WQ_ANN_ABSORBED ? an[p].linear : p;
    if (an[linear].decision != WQ_ANN_QUANTIZED || an[linear].role != WQ_QROLE_LINEAR)
      continue;
    /* A clamp after the bias Add, or a bias Add after a linear with no bias. */
    if (bias_add && (an[p].decision == WQ_ANN_ABSORBED || an[linear].bias >= 0 ||
                     !is_op(&g->nodes[linear], "MatMul")))
      continue;
    an[i].decision = WQ_ANN_ABSORBED;
    an[i].linear = linear;
    if (bias_add) {
      an[linear].bias = x == n->inputs[0] ? n->inputs[1] : n->inputs[0];
      an[linear].bias_node = i;
      set_reason(&an[i], "bias of %s '%s'", g->nodes[linear].op_type, g->nodes[linear].name);
    } else {
      set_reason(&an[i], "fused into %s '%s' as a clamp", g->nodes[linear].op_type,
                 g->nodes[linear].name);
    }
  }
}

/* An int8 island without a linear op (a ReduceMean and Sqrt between float
 * nodes, a lone Sigmoid after a float Resize) costs a Q/DQ pair per edge
 * and saves no multiply: such islands stay float. Islands are the
 * connected groups of quantized nodes joined by the tensors between them. */
static void drop_islands_without_linear(ann_ctx *c, int *node_parent) {
  const wq_graph *g = c->g;
  wq_ann_node *an = c->a->nodes;
  for (int i = 0; i < g->n_nodes; i++)
    node_parent[i] = i;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (an[i].decision != WQ_ANN_QUANTIZED && an[i].decision != WQ_ANN_ABSORBED)
      continue;
    for (int k = 0; k < n->n_inputs; k++) {
      int t = n->inputs[k];
      int p = t >= 0 ? c->producer[t] : -1;
      if (p >= 0 && (an[p].decision == WQ_ANN_QUANTIZED || an[p].decision == WQ_ANN_ABSORBED))
        unite(node_parent, p, i);
    }
  }
  bool *has_linear = calloc((size_t)g->n_nodes + 1, sizeof *has_linear);
  if (!has_linear)
    return; /* keeping the islands is only less efficient */
  for (int i = 0; i < g->n_nodes; i++)
    if (an[i].decision == WQ_ANN_QUANTIZED && an[i].role == WQ_QROLE_LINEAR)
      has_linear[find(node_parent, i)] = true;
  for (int i = 0; i < g->n_nodes; i++)
    if ((an[i].decision == WQ_ANN_QUANTIZED || an[i].decision == WQ_ANN_ABSORBED) &&
        !has_linear[find(node_parent, i)]) {
      an[i].decision = WQ_ANN_FLOAT;
      an[i].linear = -1;
      set_reason(&an[i], "int8 island without a Conv/Gemm/MatMul: Q/DQ would cost more than it "
                         "saves");
    }
  free(has_linear);
}

static void mark_tensors(ann_ctx *c) {
  const wq_graph *g = c->g;
  wq_ann_node *an = c->a->nodes;
  for (int j = 0; j < g->n_nodes; j++)
    if (an[j].decision == WQ_ANN_ABSORBED)
      for (int k = 0; k < g->nodes[j].n_inputs; k++)
        if (g->nodes[j].inputs[k] >= 0)
          c->into_absorbed[g->nodes[j].inputs[k]] = true;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (an[i].decision != WQ_ANN_QUANTIZED && an[i].decision != WQ_ANN_ABSORBED)
      continue;
    /* No Q/DQ between this node and an absorbed node reading its output. */
    int y = n->outputs[0];
    if (y >= 0 && !c->into_absorbed[y])
      mark(c, y, i, WQ_ANN_T_ACTIVATION);
    if (an[i].decision == WQ_ANN_ABSORBED)
      continue; /* its input is the linear's output; a bias is the linear's */
    switch (an[i].role) {
    case WQ_QROLE_LINEAR:
      mark(c, n->inputs[0], i, WQ_ANN_T_ACTIVATION);
      mark(c, n->inputs[1], i, WQ_ANN_T_WEIGHT);
      c->a->tensors[n->inputs[1]].weight_axis = weight_axis(n);
      /* Conv [M, C/group, k...]: C; MatMul [K, N] / Gemm [K, N] or [N, K]. */
      c->a->tensors[n->inputs[1]].k_axis = is_op(n, "Conv") ? 1 : 1 - weight_axis(n);
      break;
    case WQ_QROLE_SHARED:
      for (int k = 0; k < (all_inputs_are_data(n) ? n->n_inputs : 1); k++) {
        mark(c, n->inputs[k], i, WQ_ANN_T_ACTIVATION);
        unite(c->parent, n->inputs[k], y);
      }
      break;
    default:
      for (int k = 0; k < (all_inputs_are_data(n) ? n->n_inputs : 1); k++)
        mark(c, n->inputs[k], i, WQ_ANN_T_ACTIVATION);
      break;
    }
  }
}

/* Quantize/Dequantize, QLinear*, *Integer ops, onnxruntime's quantized
 * contrib ops (WQ_OP_FLAG_INT8) and wasmq's own int8 ops (the registry's
 * int8 kinds); by name for an op the registry does not know. */
static bool is_quantized_family(const wq_node *n) {
  if (!n->op)
    return wq_op_is_int8_family(n->op_type);
  int k = n->op->int8;
  return (n->op->flags & WQ_OP_FLAG_INT8) || k == WQ_INT8_KERNEL || k == WQ_INT8_QUANTIZE ||
         k == WQ_INT8_DEQUANTIZE;
}

wq_status wq_annotate_check_float(const wq_graph *g, wq_error *err) {
  for (int i = 0; i < g->n_nodes; i++)
    if (is_quantized_family(&g->nodes[i]))
      return wq_fail(err, WQ_ERR_INVALID_ARG, g->nodes[i].name,
                     "the model is already quantized (it has a %s node); quantize a float model",
                     g->nodes[i].op_type);
  return WQ_OK;
}

wq_status wq_annotate(const wq_graph *g, const wq_quant_config *cfg, const wq_dtype *dtypes,
                      const bool *keep_float, wq_annotation *out, wq_error *err) {
  memset(out, 0, sizeof *out);
  WQ_TRY(wq_annotate_check_float(g, err));
  size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1;
  ann_ctx c = {.g = g, .cfg = cfg, .dtypes = dtypes, .a = out};
  c.producer = malloc(nt * sizeof *c.producer);
  c.readers = calloc(nt, sizeof *c.readers);
  c.parent = malloc(nt * sizeof *c.parent);
  c.into_absorbed = calloc(nt, sizeof *c.into_absorbed);
  out->nodes = calloc(nn, sizeof *out->nodes);
  out->tensors = calloc(nt, sizeof *out->tensors);
  if (!c.producer || !c.readers || !c.parent || !c.into_absorbed || !out->nodes || !out->tensors) {
    free(c.producer);
    free(c.readers);
    free(c.parent);
    free(c.into_absorbed);
    wq_annotation_free(out);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory annotating the graph");
  }
  out->n_nodes = g->n_nodes;
  out->n_tensors = g->n_tensors;
  for (int t = 0; t < g->n_tensors; t++) {
    c.producer[t] = -1;
    c.parent[t] = t;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0)
        c.producer[n->outputs[k]] = i;
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0)
        c.readers[n->inputs[k]]++;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    wq_ann_node *an = &out->nodes[i];
    an->bias = an->bias_node = an->linear = -1;
    if (!has_float_output(&c, n)) {
      an->decision = WQ_ANN_NOT_COMPUTED;
      set_reason(an, "no float output");
      continue;
    }
    an->role = node_role(&c, i, an);
    if (an->role == WQ_QROLE_NONE) {
      an->decision = WQ_ANN_FLOAT;
    } else if (wq_quant_config_keeps_float(cfg, n->op_type, n->name)) {
      an->decision = WQ_ANN_FLOAT;
      set_reason(an, "kept float by the config");
    } else if (keep_float && keep_float[i]) {
      an->decision = WQ_ANN_FLOAT;
      set_reason(an, "kept float: among the most sensitive nodes");
    } else {
      an->decision = WQ_ANN_QUANTIZED;
      set_reason(an, "%s", wq_quant_role_name(an->role));
    }
  }
  absorb(&c);
  int *node_parent = malloc(nn * sizeof *node_parent);
  if (!node_parent) {
    free(c.producer);
    free(c.readers);
    free(c.parent);
    free(c.into_absorbed);
    wq_annotation_free(out);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory annotating the graph");
  }
  drop_islands_without_linear(&c, node_parent);
  free(node_parent);
  mark_tensors(&c);
  /* A cluster's members share the spec of its lowest tensor that has one. */
  for (int t = 0; t < g->n_tensors; t++)
    out->tensors[t].cluster = find(c.parent, t);
  for (int t = 0; t < g->n_tensors; t++) {
    wq_ann_tensor *root = &out->tensors[out->tensors[t].cluster];
    if (!root->spec && out->tensors[t].kind != WQ_ANN_T_WEIGHT)
      root->spec = out->tensors[t].spec;
  }
  for (int t = 0; t < g->n_tensors; t++)
    if (out->tensors[t].kind != WQ_ANN_T_WEIGHT && out->tensors[t].kind != WQ_ANN_T_NONE)
      out->tensors[t].spec = out->tensors[out->tensors[t].cluster].spec;
  free(c.producer);
  free(c.readers);
  free(c.parent);
  free(c.into_absorbed);
  return WQ_OK;
}

void wq_annotation_free(wq_annotation *a) {
  free(a->nodes);
  free(a->tensors);
  memset(a, 0, sizeof *a);
}

const char *wq_ann_decision_name(wq_ann_decision d) {
  switch (d) {
  case WQ_ANN_QUANTIZED: return "quantized";
  case WQ_ANN_ABSORBED: return "absorbed";
  case WQ_ANN_FLOAT: return "float";
  case WQ_ANN_NOT_COMPUTED: break;
  }
  return "not computed";
}
