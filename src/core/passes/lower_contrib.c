/* Lowering of onnxruntime's operator-format contrib ops (com.microsoft):
 * QLinearAdd/QLinearMul become QAdd/QMul, QLinearGlobalAveragePool (on
 * channels-first data) QGlobalAveragePool, QLinearSigmoid/QLinearLeakyRelu
 * a QLookup of their 256 codes and QLinearReduceMean (axes one contiguous
 * block) QReduceMean; QLinearSoftmax stays itself, with the operands' scales and
 * zero points moved onto their tensors (lower_attach_qparams). The wasmq
 * ops compute the same codes as the contrib ops' reference kernels, and
 * being ordinary int8 ops they join the layout pass's channels-last
 * regions instead of forcing transitions around them. */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/contrib_qlinear.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

/* QLinearSigmoid / QLinearLeakyRelu: QLookup(x, table) with the node's
 * own table over x's and y's parameters (already checked equal to the
 * node's operands). */
static wq_status lower_contrib_lookup(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const int x = n->inputs[0], y = n->outputs[0];
  const wq_qparams *xq = g->tensors[x].qparams, *yq = g->tensors[y].qparams;
  uint8_t *table = malloc(256);
  if (!table)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  if (!wq_contrib_lookup_table(n, xq->dtype, xq->scale[0], xq->zero_point[0], yq->dtype,
                               yq->scale[0], yq->zero_point[0], table)) {
    free(table);
    return lower_why(c, WQ_REASON_UNSUPPORTED_OP, "%s is not prepared", n->op_type);
  }
  int64_t dims[1] = {256};
  int t = lower_add_constant(c, n->name, "_table", yq->dtype, 1, dims, table, 256);
  if (t < 0)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  n = &g->nodes[i];
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QLookup from %s (com.microsoft, table of its 256 codes)", n->op_type);
  int inputs[2] = {x, t};
  lower_attrs none = {0};
  return lower_commit(c, i, WQ_OPID(int8_lookup), inputs, 2, &y, 1, &none, WQ_OK, why, done, err);
}

/* QLinearReduceMean over one contiguous block of axes: QReduceMean. */
static wq_status lower_contrib_reduce_mean(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const int x = n->inputs[0], y = n->outputs[0];
  const int rank = g->tensors[x].rank;
  const wq_attr *a = wq_node_attr(n, "axes");
  if (rank < 1 || !a || a->type != WQ_ATTR_INTS || a->count == 0)
    return lower_why(c, WQ_REASON_UNKNOWN_SHAPE, "input rank or axes not known at load");
  bool reduced[WQ_MAX_RANK] = {false};
  for (size_t k = 0; k < a->count; k++) {
    int64_t d = a->ints[k] < 0 ? a->ints[k] + rank : a->ints[k];
    if (d < 0 || d >= rank)
      return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR, "axis out of range");
    reduced[d] = true;
  }
  int first = -1, last = -1;
  for (int d = 0; d < rank; d++)
    if (reduced[d]) {
      first = first < 0 ? d : first;
      last = d;
    }
  for (int d = first; d <= last; d++)
    if (!reduced[d])
      return lower_why(c, WQ_REASON_INT8_REFERENCE,
                       "reduced axes are not one contiguous block: runs on the contrib op's "
                       "reference kernel");
  const wq_attr *keep = wq_node_attr(n, "keepdims");
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", g->tensors[y].dtype, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "first_axis", first, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "n_axes", last - first + 1, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "keepdims", keep && keep->type == WQ_ATTR_INT ? keep->i != 0 : 1,
                         err);
  return lower_commit(c, i, WQ_OPID(int8_reduce_mean), &x, 1, &y, 1, &attrs, st,
                      "QReduceMean from QLinearReduceMean (com.microsoft, same arithmetic)", done,
                      err);
}

/* QLinearConcat: QConcat of the inputs (each requantized by table to the
 * output's parameters when they differ, as the contrib op does). */
static wq_status lower_contrib_concat(lower_ctx *c, int i, int n_x, const lower_qlinear_operand *xs,
                                      bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int inputs[LOWER_CONTRIB_MAX_OPERANDS];
  for (int k = 0; k < n_x; k++)
    inputs[k] = n->inputs[xs[k].data];
  const int y = n->outputs[0];
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", g->tensors[y].dtype, err);
  if (st == WQ_OK)
    st = lower_attrs_copy(&attrs, n, "axis", err);
  return lower_commit(c, i, WQ_OPID(int8_concat), inputs, n_x, &y, 1, &attrs, st,
                      "QConcat from QLinearConcat (com.microsoft, same arithmetic)", done, err);
}

/* What a contrib QGemm matched: B (constant, with the parameters the node
 * reads it with), its layout, alpha, N and C (the int32 bias; -1 none). */
typedef struct {
  int b, c_bias;
  int64_t trans_b, N;
  float alpha;
} qgemm_match;

/* Matching only: QGemm with a quantized output, A not transposed, constant
 * B and an optional constant int32 C of N values. false with a reason. */
LOWER_RULE_PART bool match_contrib_qgemm(lower_ctx *c, const wq_node *n, qgemm_match *m) {
  const wq_graph *g = c->g;
  if (n->n_inputs < 8 || n->inputs[7] < 0)
    return lower_no(c, WQ_REASON_INT8_REFERENCE,
                    "float output (no y_scale): runs on the contrib op's reference kernel");
  int64_t trans_a = 0;
  m->trans_b = 0;
  m->alpha = 1.0f;
  if (wq_attr_int(n, "transA", 0, &trans_a, NULL) != WQ_OK ||
      wq_attr_int(n, "transB", 0, &m->trans_b, NULL) != WQ_OK ||
      wq_attr_float(n, "alpha", 1.0f, &m->alpha, NULL) != WQ_OK || trans_a != 0)
    return lower_no(c, WQ_REASON_INT8_REFERENCE,
                    "transA or unreadable attributes: runs on the contrib op's reference kernel");
  m->b = n->inputs[3];
  const wq_tensor *bt = &g->tensors[m->b];
  if (!bt->is_constant || !bt->data || !bt->qparams || bt->rank != 2)
    return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR,
                    "B '%s' is not a 2-D constant with quantization parameters", bt->name);
  /* B must carry exactly the parameters this node reads it with. */
  wq_node view = *n;
  wq_attr axis_attr = {.name = (char *)"axis", .type = WQ_ATTR_INT, .i = m->trans_b ? 0 : 1};
  int in3[3] = {m->b, n->inputs[4], n->n_inputs > 5 ? n->inputs[5] : -1};
  view.inputs = in3;
  view.n_inputs = 3;
  view.attrs = &axis_attr;
  view.n_attrs = 1;
  view.opset = 13;
  wq_qparams bq;
  if (!lower_node_qparams(c, &view, m->b, &bq))
    return false;
  bool same = lower_qparams_equal(&bq, bt->qparams);
  wq_qparams_free(&bq);
  if (!same)
    return lower_no(c, WQ_REASON_QPARAMS_MISMATCH,
                    "B '%s' carries other quantization parameters than QGemm reads it with",
                    bt->name);
  m->N = m->trans_b ? bt->dims[0] : bt->dims[1];
  m->c_bias = n->n_inputs > 6 ? n->inputs[6] : -1;
  if (m->c_bias < 0)
    return true;
  const wq_tensor *ct = &g->tensors[m->c_bias];
  int64_t count = 1;
  for (int d = 0; d < ct->rank; d++)
    count *= ct->dims[d];
  if (!ct->is_constant || !ct->data || ct->dtype != WQ_DT_INT32 || count != m->N ||
      (ct->rank == 2 && ct->dims[0] != 1) || ct->rank > 2)
    return lower_no(c, WQ_REASON_NOT_CONSTANT,
                    "C '%s' is not a constant int32 vector of N = %lld values", ct->name,
                    (long long)m->N);
  return true;
}

/* Rewriting: wasmq QGemm (weight as [N, K], alpha folded into its scales,
 * C as the int32 bias, a [1, N] C copied to [N]). The weight may still
 * refuse (parameters it cannot take): *done stays false, nothing added. */
LOWER_RULE_PART wq_status rewrite_contrib_qgemm(lower_ctx *c, int i, const qgemm_match *m,
                                                bool *done, wq_error *err) {
  wq_graph *g = c->g;
  int w = -1;
  WQ_TRY(lower_weight_nk(c, m->b, !m->trans_b, m->alpha, g->nodes[i].name, &w, err));
  if (w < 0)
    return WQ_OK;
  const wq_node *n = &g->nodes[i];
  const int64_t N = m->N;
  int bias = m->c_bias;
  if (bias >= 0 && g->tensors[bias].rank != 1) {
    int32_t *copy = malloc((size_t)(N > 0 ? N : 1) * sizeof *copy);
    if (!copy)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
    memcpy(copy, g->tensors[bias].data, (size_t)N * sizeof *copy);
    int64_t dims[1] = {N};
    bias = lower_add_constant(c, n->name, "_bias", WQ_DT_INT32, 1, dims, copy,
                              (size_t)N * sizeof *copy);
    if (bias < 0)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, g->nodes[i].name, "lowering: out of memory");
  }
  const int y = g->nodes[i].outputs[0];
  int inputs[3] = {g->nodes[i].inputs[0], w, bias};
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", g->tensors[y].dtype, err);
  return lower_commit(c, i, WQ_OPID(int8_gemm), inputs, bias >= 0 ? 3 : 2, &y, 1, &attrs, st,
                      "QGemm from QGemm (com.microsoft; weight as [N, K], same arithmetic)", done,
                      err);
}

static wq_status lower_contrib_qgemm(lower_ctx *c, int i, bool *done, wq_error *err) {
  qgemm_match m;
  if (!match_contrib_qgemm(c, &c->g->nodes[i], &m))
    return WQ_OK;
  return rewrite_contrib_qgemm(c, i, &m, done, err);
}

wq_status lower_contrib(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  lower_qlinear_operand ops[LOWER_CONTRIB_MAX_OPERANDS];
  int count = lower_contrib_operands(n, ops);
  for (int k = 0; k < count; k++)
    if (!lower_contrib_operand_matches(c, n, &ops[k]))
      return WQ_OK;
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_sigmoid)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_leaky_relu)))
    return lower_contrib_lookup(c, i, done, err);
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_reduce_mean)))
    return lower_contrib_reduce_mean(c, i, done, err);
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_softmax))) {
    /* Codes in, codes out with its parameters on the tensors: the op's own
     * kernel is the int8 one (no layout of its own: channels-first data). */
    lower_why(c, WQ_REASON_INT8, "QLinearSoftmax runs as is (com.microsoft; its own int8 kernel)");
    *done = true;
    return WQ_OK;
  }
  if (wq_node_is(n, WQ_OPID(contrib_qgemm)))
    return lower_contrib_qgemm(c, i, done, err);
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_concat)))
    return lower_contrib_concat(c, i, count - 1, ops + 1, done, err);
  const int y = n->outputs[0];
  const wq_dtype y_dtype = g->tensors[y].dtype;
  const int as = n->op->int8_as; /* QAveragePool, QGlobalAveragePool, QAdd, QMul */
  const char *op_type = wq_op_by_id(as)->op_type;
  int inputs[2];
  int n_inputs;
  lower_attrs attrs = {0};
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_average_pool))) {
    static const char *const POOL_ATTRS[] = {
        "kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "count_include_pad", NULL};
    for (int k = 0; POOL_ATTRS[k]; k++)
      if (lower_attrs_copy(&attrs, n, POOL_ATTRS[k], err) != WQ_OK) {
        lower_attrs_free(&attrs);
        return WQ_ERR_OUT_OF_MEMORY;
      }
    inputs[0] = n->inputs[0];
    n_inputs = 1;
  } else if (wq_node_is(n, WQ_OPID(contrib_qlinear_global_average_pool))) {
    const wq_attr *a = wq_node_attr(n, "channels_last");
    if (a && a->type == WQ_ATTR_INT && a->i != 0)
      return lower_why(c, WQ_REASON_INT8_REFERENCE,
                       "channels-last input: runs on the contrib op's reference kernel");
    inputs[0] = n->inputs[0];
    n_inputs = 1;
  } else {
    inputs[0] = n->inputs[0];
    inputs[1] = n->inputs[3];
    n_inputs = 2;
  }
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s from %s (com.microsoft, same arithmetic)", op_type, n->op_type);
  wq_status st = lower_attrs_int(&attrs, "y_dtype", y_dtype, err);
  return lower_commit(c, i, as, inputs, n_inputs, &y, 1, &attrs, st, why, done, err);
}
