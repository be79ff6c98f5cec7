/* Lowering of elementwise, pooling, concat and data-movement ops: QAdd,
 * QMul, QLookup (any int8 → int8 elementwise map as a 256-entry table),
 * QAveragePool, QGlobalAveragePool, QConcat, and ops that only move
 * elements (MaxPool, Reshape, Transpose, ...) run as they are on int8 data,
 * with a QLookup requantization after them when their input and output
 * parameters differ. */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../kernels/ref/int8_eltwise_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "../ops/int8_common.h"
#include "../ops/op.h"
#include "../runtime/executor.h"
#include "lower_internal.h"

/* The int8 operand behind float tensor t: an activation, or a quantized
 * constant with per-tensor parameters. -1 with a reason. */
static int quantized_operand(lower_ctx *c, int t, const char *what) {
  int p = lower_producer(c, t);
  bool constant = p < 0 && c->g->tensors[t].is_constant;
  if (!constant)
    return lower_activation_input(c, t, what);
  int q = lower_constant_input(c, t, what);
  if (q >= 0 && (!wq_qparams_is_per_tensor(c->g->tensors[q].qparams) ||
                 (c->g->tensors[q].dtype != WQ_DT_INT8 && c->g->tensors[q].dtype != WQ_DT_UINT8))) {
    lower_why(c, WQ_REASON_NO_QPARAMS,
              "%s '%s' must be an int8/uint8 constant quantized per tensor", what,
              c->g->tensors[q].name);
    return -1;
  }
  return q;
}

/* 256 codes of `to` for every code of `from`: quantize_to(dequantize_from(q)). */
static void requant_table(const wq_qparams *from, const wq_qparams *to, uint8_t *table) {
  float real[256];
  wq_int8_dequant_table(from->dtype, from->scale[0], from->zero_point[0], real);
  for (int i = 0; i < 256; i++) {
    int32_t q = wq_ref_quantize_value(real[i], to->scale[0], to->zero_point[0], to->qmin, to->qmax);
    table[i] = to->dtype == WQ_DT_INT8 ? (uint8_t)(int8_t)q : (uint8_t)q;
  }
}

static int add_table(lower_ctx *c, const char *base, wq_dtype dtype, uint8_t *table) {
  int64_t dims[1] = {256};
  return lower_add_constant(c, base, "_table", dtype, 1, dims, table, 256);
}

/* Turns node i into QLookup(x, table) → y. `table` is moved. */
static wq_status rewrite_as_lookup(lower_ctx *c, int i, int x, int y, wq_dtype y_dtype,
                                   uint8_t *table, wq_error *err) {
  int t = add_table(c, c->g->nodes[i].name, y_dtype, table);
  if (t < 0)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, c->g->nodes[i].name, "lowering: out of memory");
  int inputs[2] = {x, t};
  lower_attrs none = {0};
  return lower_rewrite_node(c, i, WQ_OPID(int8_lookup), inputs, 2, &y, 1, &none, err);
}

/* ---- QLookup ---------------------------------------------------------------- */

/* What a lookup matched: the varying input's position and codes, the sink. */
typedef struct {
  int act_k, x;
  lower_sink sink;
} lookup_match;

/* Matching only: false with a reason (nothing changed). */
LOWER_RULE_PART bool match_lookup(lower_ctx *c, int i, lookup_match *m) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  /* Exactly one input varies; every other one is a constant (Clip bounds,
   * the scalar of x * 0.5): the registry's lookup condition. */
  wq_int8_answer a = {.reason = WQ_REASON_INT8};
  wq_op_lookup_check(g, n, &a);
  if (a.reason != WQ_REASON_INT8)
    return lower_no(c, a.reason, "%s", a.detail);
  m->act_k = 0;
  while (m->act_k < n->n_inputs &&
         (n->inputs[m->act_k] < 0 || wq_op_is_constant(g, n->inputs[m->act_k])))
    m->act_k++;
  m->x = lower_activation_input(c, n->inputs[m->act_k], "input");
  return m->x >= 0 && lower_output_sink(c, n->outputs[0], LOWER_FUSE_NONE, &m->sink);
}

/* The float op itself run on the 256 dequantized codes, quantized with the
 * sink's parameters: *table (malloc'ed), or NULL with a reason when the op
 * does not map each code to one float. */
LOWER_RULE_PART wq_status lookup_table(lower_ctx *c, int i, const lookup_match *m, uint8_t **table,
                                       wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  *table = NULL;
  const wq_qparams *xq = g->tensors[m->x].qparams;
  float real[256];
  wq_int8_dequant_table(xq->dtype, xq->scale[0], xq->zero_point[0], real);
  wq_value *in = calloc((size_t)n->n_inputs + 1, sizeof *in);
  wq_value out[1];
  if (!in)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  for (int k = 0; k < n->n_inputs; k++) {
    if (n->inputs[k] < 0) {
      in[k].dtype = WQ_DT_UNDEFINED;
      in[k].rank = -1;
    } else if (k == m->act_k) {
      in[k] = (wq_value){.dtype = WQ_DT_FLOAT, .rank = 1, .dims = {256}, .data = real};
    } else {
      in[k] = wq_tensor_value(&g->tensors[n->inputs[k]]);
    }
  }
  wq_error local;
  wq_error_clear(&local);
  wq_status st = wq_run_node(n, in, out, &local);
  free(in);
  if (st != WQ_OK) {
    if (st == WQ_ERR_OUT_OF_MEMORY)
      return wq_fail(err, st, n->name, "lowering: out of memory");
    return lower_why(c, WQ_REASON_UNSUPPORTED_OP, "evaluating %s on the 256 codes failed: %s",
                     n->op_type, local.message);
  }
  if (out[0].dtype != WQ_DT_FLOAT || wq_value_numel(&out[0]) != 256) {
    free(out[0].data);
    return lower_why(c, WQ_REASON_UNSUPPORTED_OP, "%s does not map each code to one float",
                     n->op_type);
  }
  *table = malloc(256);
  if (!*table) {
    free(out[0].data);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  }
  const wq_qparams *yq = g->tensors[m->sink.tensor].qparams;
  const float *mapped = out[0].data;
  for (int k = 0; k < 256; k++) {
    int32_t q =
        wq_ref_quantize_value(mapped[k], yq->scale[0], yq->zero_point[0], yq->qmin, yq->qmax);
    (*table)[k] = yq->dtype == WQ_DT_INT8 ? (uint8_t)(int8_t)q : (uint8_t)q;
  }
  free(out[0].data);
  return WQ_OK;
}

/* Rewriting: node i becomes the QLookup of `table` (owned from here on),
 * the sink is absorbed. */
LOWER_RULE_PART wq_status rewrite_lookup(lower_ctx *c, int i, const lookup_match *m, uint8_t *table,
                                         bool *done, wq_error *err) {
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QLookup from %s (table of its 256 codes)", c->g->nodes[i].op_type);
  lower_absorb_sink(c, &m->sink, why, sizeof why);
  WQ_TRY(rewrite_as_lookup(c, i, m->x, m->sink.tensor, m->sink.dtype, table, err));
  lower_why(c, WQ_REASON_INT8, "%s", why);
  *done = true;
  return WQ_OK;
}

wq_status lower_lookup(lower_ctx *c, int i, bool *done, wq_error *err) {
  lookup_match m;
  uint8_t *table = NULL;
  if (!match_lookup(c, i, &m))
    return WQ_OK;
  WQ_TRY(lookup_table(c, i, &m, &table, err));
  return table ? rewrite_lookup(c, i, &m, table, done, err) : WQ_OK;
}

/* ---- QAdd / QMul -------------------------------------------------------------- */

wq_status lower_binary(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  /* x op scalar float constant: a lookup. */
  for (int k = 0; k < 2; k++) {
    const wq_tensor *t = &g->tensors[n->inputs[k]];
    wq_value v = wq_tensor_value(t);
    if (t->is_constant && t->data && t->dtype == WQ_DT_FLOAT && wq_value_numel(&v) == 1 &&
        lower_producer(c, n->inputs[k]) < 0) {
      int q = lower_constant_input(c, n->inputs[k], "operand");
      if (q < 0)
        return lower_lookup(c, i, done, err);
    }
  }
  int a = quantized_operand(c, n->inputs[0], "input A");
  if (a < 0)
    return WQ_OK;
  int b = quantized_operand(c, n->inputs[1], "input B");
  if (b < 0)
    return WQ_OK;
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_CLAMP, &sink))
    return WQ_OK;
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", sink.dtype, err);
  int32_t qmin = sink.dtype == WQ_DT_INT8 ? -128 : 0, qmax = sink.dtype == WQ_DT_INT8 ? 127 : 255;
  if (st == WQ_OK && sink.act_min != qmin)
    st = lower_attrs_int(&attrs, "act_min", sink.act_min, err);
  if (st == WQ_OK && sink.act_max != qmax)
    st = lower_attrs_int(&attrs, "act_max", sink.act_max, err);
  const int as = n->op->int8_as; /* QAdd, QMul */
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s from %s", wq_op_by_id(as)->op_type, n->op_type);
  lower_absorb_sink(c, &sink, why, sizeof why);
  int inputs[2] = {a, b};
  return lower_commit(c, i, as, inputs, 2, &sink.tensor, 1, &attrs, st, why, done, err);
}

/* ---- pools -------------------------------------------------------------------- */

wq_status lower_pool(lower_ctx *c, int i, bool *done, wq_error *err) {
  static const char *const POOL_ATTRS[] = {"kernel_shape",      "strides",  "pads",
                                           "dilations",         "auto_pad", "ceil_mode",
                                           "count_include_pad", NULL};
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool global = wq_node_is(n, WQ_OPID(global_average_pool));
  int x = lower_activation_input(c, n->inputs[0], "input X");
  if (x < 0)
    return WQ_OK;
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_NONE, &sink))
    return WQ_OK;
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", sink.dtype, err);
  for (int k = 0; !global && POOL_ATTRS[k] && st == WQ_OK; k++)
    st = lower_attrs_copy(&attrs, n, POOL_ATTRS[k], err);
  const int as = n->op->int8_as; /* QAveragePool, QGlobalAveragePool */
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s from %s", wq_op_by_id(as)->op_type, n->op_type);
  lower_absorb_sink(c, &sink, why, sizeof why);
  return lower_commit(c, i, as, &x, 1, &sink.tensor, 1, &attrs, st, why, done, err);
}

/* ---- Concat ------------------------------------------------------------------- */

wq_status lower_concat(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int *xs = malloc((size_t)(n->n_inputs > 0 ? n->n_inputs : 1) * sizeof *xs);
  if (!xs)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  for (int k = 0; k < n->n_inputs; k++) {
    char what[32];
    wq_format(what, sizeof what, "input %d", k);
    xs[k] = quantized_operand(c, n->inputs[k], what);
    if (xs[k] < 0) {
      free(xs);
      return WQ_OK;
    }
  }
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_NONE, &sink)) {
    free(xs);
    return WQ_OK;
  }
  const wq_qparams *yq = g->tensors[sink.tensor].qparams;
  int differ = 0;
  for (int k = 0; k < n->n_inputs; k++)
    differ += !lower_per_tensor_equal(g->tensors[xs[k]].qparams, yq);
  char why[WQ_LOWER_WHY_MAX];
  wq_status st = WQ_OK;
  if (differ == 0) {
    /* Same parameters everywhere: Concat itself moves the codes. */
    wq_node *mut = &g->nodes[i];
    for (int k = 0; k < mut->n_inputs; k++)
      mut->inputs[k] = xs[k];
    mut->outputs[0] = sink.tensor;
    wq_format(why, sizeof why, "Concat on int8 data (all inputs share the output's parameters)");
    lower_absorb_sink(c, &sink, why, sizeof why);
  } else {
    lower_attrs attrs = {0};
    st = lower_attrs_int(&attrs, "y_dtype", sink.dtype, err);
    if (st == WQ_OK)
      st = lower_attrs_copy(&attrs, n, "axis", err);
    wq_format(why, sizeof why, "QConcat from Concat (%d of %d inputs requantized by table)", differ,
              n->n_inputs);
    lower_absorb_sink(c, &sink, why, sizeof why);
    if (st == WQ_OK)
      st = lower_rewrite_node(c, i, WQ_OPID(int8_concat), xs, n->n_inputs, &sink.tensor, 1, &attrs,
                              err);
    lower_attrs_free(&attrs);
  }
  free(xs);
  WQ_TRY(st);
  lower_why(c, WQ_REASON_INT8, "%s", why);
  *done = true;
  return WQ_OK;
}

/* ---- data movement ------------------------------------------------------------ */

wq_status lower_data_movement(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  /* The op's own conditions (Resize nearest, MaxPool's Indices unread)
   * were checked by the caller (wq_op_int8_check). */
  for (int k = 1; k < n->n_inputs; k++) {
    int t = n->inputs[k];
    int p = t >= 0 ? lower_producer(c, t) : -1;
    if (p >= 0 && wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear)))
      return lower_why(c, WQ_REASON_INPUT_NOT_QUANTIZED,
                       "its parameter input %d is itself quantized data", k);
  }
  int x = lower_activation_input(c, n->inputs[0], "input");
  if (x < 0)
    return WQ_OK;
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_NONE, &sink))
    return WQ_OK;
  const wq_qparams *xq = g->tensors[x].qparams, *yq = g->tensors[sink.tensor].qparams;
  char why[WQ_LOWER_WHY_MAX];
  /* Resize linear requantizes itself (its plan reads both tensors' parameters). */
  const wq_attr *mode = wq_node_attr(n, "mode");
  const bool interpolates =
      wq_node_is(n, WQ_OPID(resize)) && mode && mode->s && strcmp(mode->s, "nearest") != 0;
  if (interpolates && sink.dtype != g->tensors[x].dtype)
    return lower_why(c, WQ_REASON_UNSUPPORTED_DTYPE, "Resize linear reads %s and writes %s",
                     wq_dtype_name(g->tensors[x].dtype), wq_dtype_name(sink.dtype));
  if (interpolates || lower_per_tensor_equal(xq, yq)) {
    wq_node *mut = &g->nodes[i];
    mut->inputs[0] = x;
    mut->outputs[0] = sink.tensor;
    wq_format(why, sizeof why,
              interpolates ? "%s linear on int8 codes (onnxruntime's float weights)"
                           : "%s on int8 data (input and output share parameters)",
              mut->op_type);
    lower_absorb_sink(c, &sink, why, sizeof why);
    lower_why(c, WQ_REASON_INT8, "%s", why);
    *done = true;
    return WQ_OK;
  }
  /* Move the codes with the input's parameters, then requantize. */
  const int y_float = n->outputs[0];
  if (g->tensors[y_float].rank < 0)
    return lower_why(c, WQ_REASON_UNKNOWN_SHAPE, "the shape of '%s' is unknown",
                     g->tensors[y_float].name);
  uint8_t *table = malloc(256);
  if (!table)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  requant_table(xq, yq, table);
  int mid = lower_add_tensor(c, g->tensors[y_float].name, "_int8");
  if (mid < 0) {
    free(table);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  }
  wq_tensor *mt = &g->tensors[mid];
  const wq_tensor *yf = &g->tensors[y_float];
  mt->dtype = g->tensors[x].dtype;
  mt->rank = yf->rank;
  memcpy(mt->dims, yf->dims, sizeof mt->dims);
  xq = g->tensors[x].qparams;
  wq_qparams mq;
  wq_error local;
  wq_error_clear(&local);
  if (wq_qparams_init_per_tensor(&mq, xq->dtype, mt->rank, mt->dims, xq->scale[0],
                                 xq->zero_point[0], n->name, mt->name, &local) != WQ_OK) {
    free(table);
    return lower_why(c, WQ_REASON_NO_QPARAMS, "parameters for '%s': %s", mt->name, local.message);
  }
  wq_status st = lower_set_qparams(c, mid, &mq, err);
  wq_qparams_free(&mq);
  if (st != WQ_OK) {
    free(table);
    return st;
  }
  wq_node *mut = &g->nodes[i];
  mut->inputs[0] = x;
  mut->outputs[0] = mid;
  /* The QuantizeLinear becomes the requantizing lookup. */
  int q = sink.quantize_node;
  st = rewrite_as_lookup(c, q, mid, sink.tensor, sink.dtype, table, err);
  WQ_TRY(st);
  WQ_TRY(lower_note(c, q,
                    "QLookup from QuantizeLinear: requantizes the int8 result "
                    "of the data-movement op before it",
                    err));
  wq_format(why, sizeof why,
            "%s on int8 data with its input's parameters; QuantizeLinear '%s' became a QLookup "
            "requantization",
            g->nodes[i].op_type, g->nodes[q].name);
  lower_why(c, WQ_REASON_INT8, "%s", why);
  *done = true;
  return WQ_OK;
}

/* ---- DequantizeLinear → QuantizeLinear -------------------------------------- */

wq_status lower_requantize(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *q = &g->nodes[i];
  int x = lower_activation_input(c, q->inputs[0], "input");
  if (x < 0)
    return WQ_OK;
  int y = q->outputs[0];
  const wq_tensor *yt = &g->tensors[y];
  if ((yt->dtype != WQ_DT_INT8 && yt->dtype != WQ_DT_UINT8) || !yt->qparams ||
      !wq_qparams_is_per_tensor(yt->qparams))
    return lower_why(c, WQ_REASON_NO_QPARAMS, "'%s' is not quantized per tensor to int8/uint8",
                     yt->name);
  const int dq = lower_producer(c, q->inputs[0]);
  const wq_qparams *xq = g->tensors[x].qparams;
  if (lower_per_tensor_equal(xq, yt->qparams) && !yt->is_output) {
    /* Same parameters: the codes pass through; readers of y read x. */
    for (int j = 0; j < g->n_nodes; j++)
      for (int k = 0; k < g->nodes[j].n_inputs; k++)
        if (g->nodes[j].inputs[k] == y)
          g->nodes[j].inputs[k] = x;
    c->absorbed[i] = true;
    c->stats.nodes_absorbed++;
    lower_why(c, WQ_REASON_INT8,
              "removed: DequantizeLinear '%s' + QuantizeLinear with equal parameters",
              g->nodes[dq].name);
    *done = true;
    return WQ_OK;
  }
  uint8_t *table = malloc(256);
  if (!table)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, q->name, "lowering: out of memory");
  requant_table(xq, yt->qparams, table);
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QLookup from DequantizeLinear '%s' + QuantizeLinear: requantization",
            g->nodes[dq].name);
  WQ_TRY(rewrite_as_lookup(c, i, x, y, yt->dtype, table, err));
  lower_why(c, WQ_REASON_INT8, "%s", why);
  *done = true;
  return WQ_OK;
}
