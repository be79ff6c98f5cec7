/* onnxruntime's operator-format quantized contrib ops (domain
 * "com.microsoft") that real int8 models rely on: QLinearAdd, QLinearMul,
 * QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearReduceMean, QLinearAveragePool, QLinearConcat and QLinearSoftmax. Each carries its
 * operands' per-tensor scale and zero point as inputs; the result is that of dequantizing the
 * operands, applying the float op and quantizing (round half to even, saturate), the formula
 * onnxruntime documents for them. The reference kernels are the int8 backend's own (qeltwise, int8
 * pool), so the lowered graph (QAdd, QMul, QGlobalAveragePool with the parameters on the tensors)
 * computes the same codes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/nhwc.h"
#include "../kernels/qeltwise.h"
#include "../kernels/ref/ew_norm.h"
#include "../kernels/ref/ew_unary.h"
#include "../kernels/ref/int8_eltwise_ref.h"
#include "../kernels/ref/int8_pool_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "contrib_qlinear.h"
#include "elementwise_common.h"
#include "nn_window.h"
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
    .int8 = WQ_INT8_CONTRIB,
    .int8_as = WQ_OPID(int8_add),
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
    .int8 = WQ_INT8_CONTRIB,
    .int8_as = WQ_OPID(int8_mul),
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
  wq_qgap_nhwc(n, plane, c, &q, x->data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_global_average_pool = {
    .int8 = WQ_INT8_CONTRIB,
    .int8_as = WQ_OPID(int8_global_average_pool),
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

/* ---- QLinearSigmoid / QLinearLeakyRelu -----------------------------------------
 * Inputs: X, X_scale, X_zero_point?, Y_scale, Y_zero_point?; LeakyRelu's
 * attribute alpha (default 0.01). Elementwise, so one table of the 256 codes
 * (dequantize, the float function, quantize) is the whole op, as
 * onnxruntime computes it too. */

typedef struct {
  ew_unary_kind kind;
  float alpha;
} qunary_state;

static wq_status qunary_prepare(wq_node *node, wq_error *err) {
  qunary_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  s->kind = strcmp(node->op_type, "QLinearSigmoid") == 0 ? EW_UNARY_SIGMOID : EW_UNARY_LEAKY_RELU;
  wq_status st = WQ_OK;
  if (s->kind == EW_UNARY_LEAKY_RELU)
    st = wq_attr_float(node, "alpha", 0.01f, &s->alpha, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

bool wq_contrib_lookup_table(const wq_node *node, wq_dtype x_dtype, float x_scale,
                             int32_t x_zero_point, wq_dtype y_dtype, float y_scale,
                             int32_t y_zero_point, uint8_t table[256]) {
  if (!node->op || node->op->prepare != qunary_prepare || !node->op_state)
    return false;
  const qunary_state *s = node->op_state;
  float real[256], mapped[256];
  wq_int8_dequant_table(x_dtype, x_scale, x_zero_point, real);
  ew_unary_float(s->kind, s->alpha, 0.0f, real, mapped, 256);
  const int32_t y_min = y_dtype == WQ_DT_INT8 ? -128 : 0, y_max = y_dtype == WQ_DT_INT8 ? 127 : 255;
  for (int k = 0; k < 256; k++) {
    int32_t q = wq_ref_quantize_value(mapped[k], y_scale, y_zero_point, y_min, y_max);
    table[k] = y_dtype == WQ_DT_INT8 ? (uint8_t)(int8_t)q : (uint8_t)q;
  }
  return true;
}

static wq_status qunary_quant(const wq_node *node, const wq_value *in, wq_int8_pool_quant *q,
                              wq_error *err) {
  /* Same operand layout as QLinearGlobalAveragePool. */
  return qgap_quant(node, in, q, err);
}

static wq_status qunary_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  out[0] = in[0];
  out[0].data = NULL;
  return WQ_OK;
}

static wq_status qunary_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  uint8_t table[256];
  wq_contrib_lookup_table(node, q.x_dtype, q.x_scale, q.x_zero_point, q.y_dtype, q.y_scale,
                          q.y_zero_point, table);
  wq_int8_lookup_ref(q.x_dtype, in[0].data, wq_value_numel(&in[0]), table, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_sigmoid = {.int8 = WQ_INT8_CONTRIB,
                                             .int8_as = WQ_OPID(int8_lookup),
                                             .op_type = "QLinearSigmoid",
                                             .domain = CONTRIB_DOMAIN,
                                             .min_opset = 1,
                                             .min_inputs =
                                                 2, /* X, X_scale; Y_scale checked by infer */
                                             .max_inputs = 5,
                                             .min_outputs = 1,
                                             .max_outputs = 1,
                                             .flags = WQ_OP_FLAG_INT8,
                                             .prepare = qunary_prepare,
                                             .free_state = free,
                                             .infer = qunary_infer,
                                             .run = qunary_run};

const wq_op wq_op_contrib_qlinear_leaky_relu = {.int8 = WQ_INT8_CONTRIB,
                                                .int8_as = WQ_OPID(int8_lookup),
                                                .op_type = "QLinearLeakyRelu",
                                                .domain = CONTRIB_DOMAIN,
                                                .min_opset = 1,
                                                .min_inputs =
                                                    2, /* X, X_scale; Y_scale checked by infer */
                                                .max_inputs = 5,
                                                .min_outputs = 1,
                                                .max_outputs = 1,
                                                .flags = WQ_OP_FLAG_INT8,
                                                .prepare = qunary_prepare,
                                                .free_state = free,
                                                .infer = qunary_infer,
                                                .run = qunary_run};

/* ---- QLinearReduceMean -------------------------------------------------------------
 * Inputs: data, data_scale, data_zero_point?, reduced_scale,
 * reduced_zero_point?; attributes axes (required) and keepdims. The mean of
 * the dequantized values over `axes`, quantized: the sum of zero-point-free
 * codes is exact, the mean taken as QReduceMean does (in double, rounded to
 * float32, quantized half to even). */

typedef struct {
  bool keepdims;
  int n_axes;
  int64_t axes[WQ_MAX_RANK];
} qreduce_attrs;

static wq_status qreduce_mean_prepare(wq_node *node, wq_error *err) {
  const int64_t *axes = NULL;
  size_t count = 0;
  int64_t keepdims = 1;
  WQ_TRY(wq_attr_ints(node, "axes", &axes, &count, err));
  WQ_TRY(wq_attr_int(node, "keepdims", 1, &keepdims, err));
  if (count == 0 || count > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QLinearReduceMean: needs 1..%d axes, got %zu", WQ_MAX_RANK, count);
  qreduce_attrs *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QLinearReduceMean: out of memory");
  s->keepdims = keepdims != 0;
  s->n_axes = (int)count;
  memcpy(s->axes, axes, count * sizeof *axes);
  node->op_state = s;
  return WQ_OK;
}

/* reduced[d] for every axis of a rank-`rank` input, validated. */
static wq_status qreduce_mean_axes(const wq_node *node, int rank, bool *reduced, wq_error *err) {
  const qreduce_attrs *s = node->op_state;
  for (int d = 0; d < rank; d++)
    reduced[d] = false;
  for (int k = 0; k < s->n_axes; k++) {
    int64_t d = s->axes[k] < 0 ? s->axes[k] + rank : s->axes[k];
    if (d < 0 || d >= rank || reduced[d])
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QLinearReduceMean: axis %lld is out of range for rank %d or repeated",
                     (long long)s->axes[k], rank);
    reduced[d] = true;
  }
  return WQ_OK;
}

static wq_status qreduce_mean_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  const qreduce_attrs *s = node->op_state;
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  out[0].dtype = in[0].dtype;
  if (in[0].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  bool reduced[WQ_MAX_RANK];
  WQ_TRY(qreduce_mean_axes(node, in[0].rank, reduced, err));
  int rank = 0;
  for (int d = 0; d < in[0].rank; d++)
    if (!reduced[d] || s->keepdims)
      out[0].dims[rank++] = reduced[d] ? 1 : in[0].dims[d];
  out[0].rank = rank;
  return WQ_OK;
}

static wq_status qreduce_mean_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  const wq_value *x = &in[0];
  bool reduced[WQ_MAX_RANK];
  WQ_TRY(qreduce_mean_axes(node, x->rank, reduced, err));
  int64_t n_out = wq_value_numel(&out[0]), n_in = wq_value_numel(x);
  int64_t *sums = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *sums);
  if (!sums)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QLinearReduceMean: out of memory");
  /* Walk the input in order, carrying its coordinates and the output offset
   * they map to (reduced axes contribute nothing). */
  int64_t coord[WQ_MAX_RANK] = {0}, out_stride[WQ_MAX_RANK];
  int64_t stride = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    out_stride[d] = reduced[d] ? 0 : stride;
    if (!reduced[d])
      stride *= x->dims[d];
  }
  int64_t o = 0;
  for (int64_t i = 0; i < n_in; i++) {
    sums[o] += wq_ref_q_load(x->data, q.x_dtype, i) - q.x_zero_point;
    for (int d = x->rank - 1; d >= 0; d--) {
      o += out_stride[d];
      if (++coord[d] < x->dims[d])
        break;
      o -= out_stride[d] * coord[d];
      coord[d] = 0;
    }
  }
  int64_t count = n_out > 0 ? n_in / n_out : 0;
  for (int64_t k = 0; k < n_out; k++) {
    wq_ref_q_store(out[0].data, q.y_dtype, k, wq_qpool_mean_code(&q, sums[k], count));
  }
  free(sums);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_reduce_mean = {
    .int8 = WQ_INT8_CONTRIB,
    .int8_as = WQ_OPID(int8_reduce_mean),
    .op_type = "QLinearReduceMean",
    .domain = CONTRIB_DOMAIN,
    .min_opset = 1,
    .min_inputs = 2, /* data, data_scale; reduced_scale checked by infer */
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = WQ_OP_FLAG_INT8,
    .prepare = qreduce_mean_prepare,
    .free_state = free,
    .infer = qreduce_mean_infer,
    .run = qreduce_mean_run};

/* ---- QLinearAveragePool --------------------------------------------------------------
 * Inputs: X, x_scale, x_zero_point?, y_scale, y_zero_point?; AveragePool's
 * attributes (kernel_shape, strides, pads, auto_pad, ceil_mode,
 * count_include_pad) and channels_last. The window mean of the dequantized
 * values, quantized; the window sum of zero-point-free codes is exact (the
 * int8 backend's QAveragePool kernel). channels_last = 1 is not supported
 * yet and fails at load naming the node. */

typedef struct {
  wq_window_attrs win;
  bool ceil_mode, count_include_pad;
} qavgpool_state;

static wq_status qavgpool_prepare(wq_node *node, wq_error *err) {
  int64_t channels_last = 0, ceil_mode = 0, count_include_pad = 0;
  WQ_TRY(wq_attr_int(node, "channels_last", 0, &channels_last, err));
  if (channels_last != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QLinearAveragePool: channels_last=%lld is not supported (only 0)",
                   (long long)channels_last);
  WQ_TRY(wq_attr_int(node, "ceil_mode", 0, &ceil_mode, err));
  WQ_TRY(wq_attr_int(node, "count_include_pad", 0, &count_include_pad, err));
  qavgpool_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QLinearAveragePool: out of memory");
  wq_status st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK && (s->win.n_kernel_shape == 0 || s->win.n_dilations != 0))
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                 "QLinearAveragePool: needs kernel_shape and takes no dilations");
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->ceil_mode = ceil_mode != 0;
  s->count_include_pad = count_include_pad != 0;
  node->op_state = s;
  return WQ_OK;
}

static wq_status qavgpool_geometry(const wq_node *node, const wq_value *x, wq_conv_geometry *g,
                                   wq_error *err) {
  const qavgpool_state *s = node->op_state;
  int rank = s->win.n_kernel_shape + 2;
  if (x->rank >= 0 && x->rank != rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QLinearAveragePool: input has rank %d but kernel_shape has %d dims", x->rank,
                   s->win.n_kernel_shape);
  int64_t in_spatial[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < rank - 2; i++)
    in_spatial[i] = x->rank >= 0 ? x->dims[2 + i] : -1;
  return wq_window_geometry(node, &s->win, rank - 2, in_spatial, NULL, s->ceil_mode, true, g, err);
}

static wq_status qavgpool_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  wq_conv_geometry g;
  WQ_TRY(qavgpool_geometry(node, &in[0], &g, err));
  out[0].dtype = in[0].dtype;
  out[0].rank = g.n_spatial + 2;
  out[0].dims[0] = in[0].rank >= 0 ? in[0].dims[0] : -1;
  out[0].dims[1] = in[0].rank >= 0 ? in[0].dims[1] : -1;
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[2 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "pool output", err));
  return WQ_OK;
}

static wq_status qavgpool_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  const qavgpool_state *s = node->op_state;
  wq_int8_pool_quant q;
  WQ_TRY(qunary_quant(node, in, &q, err));
  wq_conv_geometry g;
  WQ_TRY(qavgpool_geometry(node, &in[0], &g, err));
  wq_int8_avgpool_ref(&g, in[0].dims[0] * in[0].dims[1], s->count_include_pad, &q, in[0].data,
                      out[0].data);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_average_pool = {.int8 = WQ_INT8_CONTRIB,
                                                  .int8_as = WQ_OPID(int8_average_pool),
                                                  .op_type = "QLinearAveragePool",
                                                  .domain = CONTRIB_DOMAIN,
                                                  .min_opset = 1,
                                                  .min_inputs =
                                                      2, /* X, x_scale; y_scale checked by infer */
                                                  .max_inputs = 5,
                                                  .min_outputs = 1,
                                                  .max_outputs = 1,
                                                  .flags = WQ_OP_FLAG_INT8,
                                                  .prepare = qavgpool_prepare,
                                                  .free_state = free,
                                                  .infer = qavgpool_infer,
                                                  .run = qavgpool_run};

/* ---- QLinearConcat ---------------------------------------------------------------------
 * Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input;
 * attribute axis. Each input's codes are requantized to Y's parameters
 * (dequantize, quantize: one 256-entry table per input) and concatenated. */

static wq_status qconcat_check(const wq_node *node, const wq_value *in, int64_t *axis,
                               wq_error *err) {
  if (node->n_inputs < 5 || (node->n_inputs - 2) % 3 != 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QLinearConcat: takes Y_scale, Y_zero_point and (X, scale, zero point) "
                   "triples, got %d inputs",
                   node->n_inputs);
  WQ_TRY(wq_attr_int(node, "axis", 0, axis, err));
  for (int k = 2; k < node->n_inputs; k += 3) {
    WQ_TRY(require_input(node, k, "X", err));
    WQ_TRY(require_input(node, k + 1, "X_scale", err));
    WQ_TRY(wq_quant_expect_dtype(node, "X", in[k].dtype, WQ_QDT_BIT(in[2].dtype), err));
  }
  return wq_quant_expect_dtype(node, "X", in[2].dtype, WQ_QDT_8BIT, err);
}

static wq_status qconcat_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  int64_t axis;
  WQ_TRY(qconcat_check(node, in, &axis, err));
  out[0].dtype = in[2].dtype;
  int rank = in[2].rank;
  for (int k = 2; k < node->n_inputs; k += 3)
    if (in[k].rank < 0 || in[k].rank != rank) {
      if (in[k].rank >= 0 && rank >= 0)
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "QLinearConcat: inputs differ in rank");
      out[0].rank = -1;
      return WQ_OK;
    }
  if (axis < -rank || axis >= rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QLinearConcat: axis %lld is out of range for rank %d", (long long)axis, rank);
  int a = (int)(axis < 0 ? axis + rank : axis);
  out[0].rank = rank;
  for (int d = 0; d < rank; d++)
    out[0].dims[d] = in[2].dims[d];
  out[0].dims[a] = 0;
  for (int k = 2; k < node->n_inputs; k += 3)
    for (int d = 0; d < rank; d++) {
      if (d == a) {
        out[0].dims[a] =
            in[k].dims[d] < 0 || out[0].dims[a] < 0 ? -1 : out[0].dims[a] + in[k].dims[d];
      } else if (in[k].dims[d] >= 0 && in[2].dims[d] >= 0 && in[k].dims[d] != in[2].dims[d]) {
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "QLinearConcat: inputs differ in dim %d outside the axis", d);
      }
    }
  return WQ_OK;
}

static wq_status qconcat_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  int64_t axis;
  WQ_TRY(qconcat_check(node, in, &axis, err));
  const wq_dtype dtype = in[2].dtype;
  float y_scale;
  int32_t y_zero_point = 0;
  WQ_TRY(scalar_qparams(node, in, 0, 1, dtype, "Y", &y_scale, &y_zero_point, err));
  const int32_t y_min = dtype == WQ_DT_INT8 ? -128 : 0, y_max = dtype == WQ_DT_INT8 ? 127 : 255;
  const int rank = out[0].rank;
  const int a = (int)(axis < 0 ? axis + rank : axis);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; d++)
    outer *= out[0].dims[d];
  for (int d = a + 1; d < rank; d++)
    inner *= out[0].dims[d];
  const int64_t out_row = out[0].dims[a] * inner;
  int64_t offset = 0;
  for (int k = 2; k < node->n_inputs; k += 3) {
    float x_scale;
    int32_t x_zero_point = 0;
    WQ_TRY(scalar_qparams(node, in, k + 1, k + 2, dtype, "X", &x_scale, &x_zero_point, err));
    float real[256];
    uint8_t table[256];
    wq_int8_dequant_table(dtype, x_scale, x_zero_point, real);
    for (int q = 0; q < 256; q++) {
      int32_t v = wq_ref_quantize_value(real[q], y_scale, y_zero_point, y_min, y_max);
      table[q] = dtype == WQ_DT_INT8 ? (uint8_t)(int8_t)v : (uint8_t)v;
    }
    const int64_t row = in[k].dims[a] * inner;
    for (int64_t o = 0; o < outer; o++)
      wq_int8_lookup_ref(dtype, (const uint8_t *)in[k].data + o * row, row, table,
                         (uint8_t *)out[0].data + o * out_row + offset);
    offset += row;
  }
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_concat = {.int8 = WQ_INT8_CONTRIB,
                                            .int8_as = WQ_OPID(int8_concat),
                                            .op_type = "QLinearConcat",
                                            .domain = CONTRIB_DOMAIN,
                                            .min_opset = 1,
                                            .min_inputs = 5,
                                            .max_inputs = 2 + 3 * 64,
                                            .min_outputs = 1,
                                            .max_outputs = 1,
                                            .flags = WQ_OP_FLAG_INT8,
                                            .infer = qconcat_infer,
                                            .run = qconcat_run};

/* ---- QLinearSoftmax ----------------------------------------------------------------------
 * Inputs: X, X_scale, x_zero_point?, y_scale, y_zero_point?; attributes
 * opset (required: the Softmax opset whose axis rule applies, < 13 coerces
 * X to 2-D at axis) and axis (default 1 before opset 13, else -1). The
 * documented formula: Y = quantize(Softmax(dequantize(X))), computed as the
 * float DequantizeLinear -> Softmax -> QuantizeLinear chain would, so it
 * gives the same codes as that chain run op by op. */

static wq_status qsoftmax_prepare(wq_node *node, wq_error *err) {
  const wq_attr *a = wq_node_attr(node, "opset");
  if (!a || a->type != WQ_ATTR_INT)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QLinearSoftmax: the required int attribute opset is missing");
  int64_t axis;
  return wq_attr_int(node, "axis", 0, &axis, err);
}

static wq_status qsoftmax_view(const wq_node *node, const wq_value *in, ew_softmax_dims *v,
                               wq_error *err) {
  return ew_softmax_view(node, &in[0], wq_node_attr(node, "opset")->i < 13, v, err);
}

static wq_status qsoftmax_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qgap_quant(node, in, &q, err));
  ew_softmax_dims v;
  WQ_TRY(qsoftmax_view(node, in, &v, err));
  out[0] = in[0];
  out[0].data = NULL;
  return WQ_OK;
}

static wq_status qsoftmax_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  wq_int8_pool_quant q;
  WQ_TRY(qgap_quant(node, in, &q, err));
  ew_softmax_dims v;
  WQ_TRY(qsoftmax_view(node, in, &v, err));
  const int64_t n = wq_value_numel(&in[0]);
  if (n <= 0)
    return WQ_OK;
  float *real = malloc((size_t)n * sizeof *real), table[256];
  if (!real)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QLinearSoftmax: out of memory");
  wq_int8_dequant_table(q.x_dtype, q.x_scale, q.x_zero_point, table);
  for (int64_t i = 0; i < n; i++)
    real[i] = table[wq_int8_table_index(q.x_dtype, in[0].data, i)];
  ew_softmax_float(real, real, v.outer, v.n, v.inner);
  for (int64_t i = 0; i < n; i++)
    wq_ref_q_store(out[0].data, q.y_dtype, i,
                   wq_ref_quantize_value(real[i], q.y_scale, q.y_zero_point, q.y_min, q.y_max));
  free(real);
  return WQ_OK;
}

const wq_op wq_op_contrib_qlinear_softmax = {.int8 = WQ_INT8_CONTRIB,
                                             .op_type = "QLinearSoftmax",
                                             .domain = CONTRIB_DOMAIN,
                                             .min_opset = 1,
                                             .min_inputs = 2, /* X, X_scale; y_scale checked */
                                             .max_inputs = 5,
                                             .min_outputs = 1,
                                             .max_outputs = 1,
                                             .flags = WQ_OP_FLAG_INT8,
                                             .prepare = qsoftmax_prepare,
                                             .infer = qsoftmax_infer,
                                             .run = qsoftmax_run};
