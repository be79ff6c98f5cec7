/* onnxruntime's operator-format quantized contrib ops (domain
 * "com.microsoft") that real int8 models rely on: QLinearAdd, QLinearMul
 * and QLinearGlobalAveragePool. Each carries its operands' per-tensor scale
 * and zero point as inputs; the result is that of dequantizing the operands,
 * applying the float op and quantizing (round half to even, saturate), the
 * formula onnxruntime documents for them. The reference kernels are the int8
 * backend's own (qeltwise, int8 pool), so the lowered graph (QAdd, QMul,
 * QGlobalAveragePool with the parameters on the tensors) computes the same
 * codes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "../kernels/ref/int8_pool_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "quant_common.h"

#define CONTRIB_DOMAIN "com.microsoft"

/* Fails unless input k is present (the generic count check allows empty
 * optional inputs before it). */
static wq_status require_input(const wq_node *node, int k, const char *what, wq_error *err) {
  if (k < node->n_inputs && node->inputs[k] >= 0)
    return WQ_OK;
  return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: required input %s is missing",
                 node->op_type, what);
}

/* The (scale, zero point) pair at inputs scale_k / zp_k (zp optional: 0)
 * for data of `dtype`: a one-element float scale > 0 and a one-element zero
 * point of the data's dtype. */
static wq_status scalar_qparams(const wq_node *node, const wq_value *in, int scale_k, int zp_k,
                                wq_dtype dtype, const char *what, float *scale, int32_t *zero_point,
                                wq_error *err) {
  const wq_value *s = &in[scale_k];
  if (s->dtype != WQ_DT_FLOAT || (s->rank >= 0 && wq_value_numel(s) != 1))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: %s scale must be one float32 value (per-tensor)", node->op_type, what);
  const wq_value *zp = wq_quant_optional_input(node, in, zp_k);
  if (zp) {
    if (zp->dtype != dtype)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "%s: %s zero point is %s but the data is %s", node->op_type, what,
                     wq_dtype_name(zp->dtype), wq_dtype_name(dtype));
    if (zp->rank >= 0 && wq_value_numel(zp) != 1)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "%s: %s zero point must be one value (per-tensor)", node->op_type, what);
  }
  if (!s->data)
    return WQ_OK; /* shape inference: values not known yet */
  *scale = ((const float *)s->data)[0];
  if (!(*scale > 0.0f) || !isfinite(*scale))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: %s scale %g must be positive and finite", node->op_type, what,
                   (double)*scale);
  *zero_point = zp && zp->data ? wq_ref_q_load(zp->data, dtype, 0) : 0;
  return WQ_OK;
}

/* ---- QLinearAdd / QLinearMul ------------------------------------------------
 * Inputs: A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale,
 * C_zero_point?; A, B and C share one 8-bit dtype; numpy broadcasting. */

static wq_status qlinear_binary_params(const wq_node *node, const wq_value *in,
                                       wq_qbinary_params *p, wq_error *err) {
  WQ_TRY(require_input(node, 3, "B", err));
  WQ_TRY(require_input(node, 4, "B_scale", err));
  WQ_TRY(require_input(node, 6, "C_scale", err));
  WQ_TRY(wq_quant_expect_dtype(node, "A", in[0].dtype, WQ_QDT_8BIT, err));
  WQ_TRY(wq_quant_expect_dtype(node, "B", in[3].dtype, WQ_QDT_BIT(in[0].dtype), err));
  memset(p, 0, sizeof *p);
  p->mul = strcmp(node->op_type, "QLinearMul") == 0;
  p->a_dtype = p->b_dtype = p->y_dtype = in[0].dtype;
  WQ_TRY(scalar_qparams(node, in, 1, 2, in[0].dtype, "A", &p->a_scale, &p->a_zero_point, err));
  WQ_TRY(scalar_qparams(node, in, 4, 5, in[0].dtype, "B", &p->b_scale, &p->b_zero_point, err));
  WQ_TRY(scalar_qparams(node, in, 6, 7, in[0].dtype, "C", &p->y_scale, &p->y_zero_point, err));
  p->y_min = in[0].dtype == WQ_DT_INT8 ? -128 : 0;
  p->y_max = in[0].dtype == WQ_DT_INT8 ? 127 : 255;
  return WQ_OK;
}

static wq_status qlinear_binary_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                      wq_error *err) {
  wq_qbinary_params p;
  WQ_TRY(qlinear_binary_params(node, in, &p, err));
  out[0].dtype = in[0].dtype;
  if (in[0].rank < 0 || in[3].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  return wq_broadcast_shapes(&in[0], &in[3], &out[0].rank, out[0].dims, node->name, err);
}

static wq_status qlinear_binary_run(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  wq_qbinary_params p;
  WQ_TRY(qlinear_binary_params(node, in, &p, err));
  wq_qbinary(&p, &in[0], &in[3], &out[0]);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_add = {
    .op_type = "QLinearAdd",
    .domain = CONTRIB_DOMAIN,
    .min_opset = 1,
    .min_inputs = 2, /* A, A_scale; B, B_scale, C_scale checked by infer */
    .max_inputs = 8,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = WQ_OP_FLAG_INT8,
    .infer = qlinear_binary_infer,
    .run = qlinear_binary_run};

const wq_op wq_op_contrib_qlinear_mul = {
    .op_type = "QLinearMul",
    .domain = CONTRIB_DOMAIN,
    .min_opset = 1,
    .min_inputs = 2, /* A, A_scale; B, B_scale, C_scale checked by infer */
    .max_inputs = 8,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = WQ_OP_FLAG_INT8,
    .infer = qlinear_binary_infer,
    .run = qlinear_binary_run};

/* ---- QLinearGlobalAveragePool -------------------------------------------------
 * Inputs: X, x_scale, x_zero_point?, y_scale, y_zero_point?; attribute
 * channels_last (0: X is [N, C, spatial...], 1: [N, spatial..., C]); the
 * mean over the spatial dims keeps them as 1s. */

typedef struct {
  bool channels_last;
} qgap_state;

static wq_status qgap_prepare(wq_node *node, wq_error *err) {
  int64_t channels_last;
  WQ_TRY(wq_attr_int(node, "channels_last", 0, &channels_last, err));
  if (channels_last != 0 && channels_last != 1)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QLinearGlobalAveragePool: channels_last must be 0 or 1, got %lld",
                   (long long)channels_last);
  qgap_state *s = malloc(sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name,
                   "QLinearGlobalAveragePool: out of memory");
  s->channels_last = channels_last == 1;
  node->op_state = s;
  return WQ_OK;
}

static wq_status qgap_quant(const wq_node *node, const wq_value *in, wq_int8_pool_quant *q,
                            wq_error *err) {
  WQ_TRY(require_input(node, 3, "y_scale", err));
  WQ_TRY(wq_quant_expect_dtype(node, "X", in[0].dtype, WQ_QDT_8BIT, err));
  memset(q, 0, sizeof *q);
  q->x_dtype = q->y_dtype = in[0].dtype;
  WQ_TRY(scalar_qparams(node, in, 1, 2, in[0].dtype, "x", &q->x_scale, &q->x_zero_point, err));
  WQ_TRY(scalar_qparams(node, in, 3, 4, in[0].dtype, "y", &q->y_scale, &q->y_zero_point, err));
  q->y_min = in[0].dtype == WQ_DT_INT8 ? -128 : 0;
  q->y_max = in[0].dtype == WQ_DT_INT8 ? 127 : 255;
  return WQ_OK;
}

static wq_status qgap_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qgap_state *s = node->op_state;
  wq_int8_pool_quant q;
  WQ_TRY(qgap_quant(node, in, &q, err));
  out[0].dtype = in[0].dtype;
  out[0].rank = in[0].rank;
  if (in[0].rank < 0)
    return WQ_OK;
  if (in[0].rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QLinearGlobalAveragePool: X must have rank >= 3, got %d", in[0].rank);
  int channel_axis = s->channels_last ? in[0].rank - 1 : 1;
  for (int d = 0; d < in[0].rank; d++)
    out[0].dims[d] = d == 0 || d == channel_axis ? in[0].dims[d] : 1;
  return WQ_OK;
}

static wq_status qgap_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qgap_state *s = node->op_state;
  wq_int8_pool_quant q;
  WQ_TRY(qgap_quant(node, in, &q, err));
  const wq_value *x = &in[0];
  int64_t n = x->dims[0];
  int64_t c = s->channels_last ? x->dims[x->rank - 1] : x->dims[1];
  int64_t total = wq_value_numel(x);
  int64_t plane = n * c > 0 ? total / (n * c) : 0;
  if (!s->channels_last) {
    wq_int8_global_avgpool_ref(n * c, plane, &q, x->data, out[0].data);
    return WQ_OK;
  }
  wq_int8_global_avgpool_nhwc_ref(n, plane, c, &q, x->data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_global_average_pool = {
    .op_type = "QLinearGlobalAveragePool",
    .domain = CONTRIB_DOMAIN,
    .min_opset = 1,
    .min_inputs = 2, /* X, x_scale; y_scale checked by infer */
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = WQ_OP_FLAG_INT8,
    .prepare = qgap_prepare,
    .free_state = free,
    .infer = qgap_infer,
    .run = qgap_run};
