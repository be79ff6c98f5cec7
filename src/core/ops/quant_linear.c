/* QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: glue between
 * the ONNX node forms (opset 10 per-tensor, 13 axis, 19 saturate, 21
 * block_size/output_dtype, 23 precision) and the wq_qparams-based reference
 * kernels. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../kernels/quantize.h"
#include "../kernels/ref/quant_ref.h"
#include "int8_nhwc.h"
#include "quant_common.h"

#define QUANTIZED_OUT_DTYPES (WQ_QDT_8BIT | WQ_QDT_16BIT)
#define DEQUANTIZE_IN_DTYPES (WQ_QDT_8BIT | WQ_QDT_16BIT | WQ_QDT_BIT(WQ_DT_INT32))

typedef struct {
  int64_t axis, block_size, output_dtype;
} quant_linear_attrs;

static wq_status read_attrs(const wq_node *node, quant_linear_attrs *a, wq_error *err) {
  WQ_TRY(wq_attr_int(node, "axis", 1, &a->axis, err));
  a->block_size = 0;
  a->output_dtype = 0;
  if (node->opset >= 21) {
    WQ_TRY(wq_attr_int(node, "block_size", 0, &a->block_size, err));
    WQ_TRY(wq_attr_int(node, "output_dtype", 0, &a->output_dtype, err));
  }
  if (node->opset >= 23 && strcmp(node->op_type, "QuantizeLinear") == 0) {
    /* precision sets the type of x / y_scale; only float32 is executed. */
    int64_t precision;
    WQ_TRY(wq_attr_int(node, "precision", 0, &precision, err));
    if (precision != 0 && precision != WQ_DT_FLOAT)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "QuantizeLinear: precision dtype %s is not supported",
                     wq_dtype_name((int)precision));
  }
  if (a->block_size < 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: block_size %lld is negative",
                   node->op_type, (long long)a->block_size);
  return WQ_OK;
}

/* The qparams of x (data shape known) for these attributes. */
static wq_status node_qparams(const wq_node *node, const quant_linear_attrs *a, wq_dtype qdtype,
                              const wq_value *data, const wq_value *scale,
                              const wq_value *zero_point, const char *what, wq_qparams *qp,
                              wq_error *err) {
  return wq_qparams_from_onnx(qp, qdtype, data->rank, data->dims, scale, zero_point, a->axis,
                              a->block_size, node->name, what, err);
}

/* Per-tensor 8-bit Q/DQ are the boundaries of every int8 region, run every
 * inference: read the scalar scale and zero point directly instead of
 * building (and formatting) a wq_qparams per run. Anything else — or a scale
 * the general path must reject — returns false and takes that path. */
static bool scalar_qparams_8bit(const wq_node *node, const wq_value *in, wq_dtype qdtype,
                                float *scale, int32_t *zero_point) {
  if ((qdtype != WQ_DT_INT8 && qdtype != WQ_DT_UINT8) || wq_value_numel(&in[1]) != 1)
    return false;
  const wq_value *zp = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  if (zp && (zp->dtype != qdtype || wq_value_numel(zp) != 1))
    return false;
  float s = *(const float *)in[1].data;
  if (!(isfinite(s) && s >= FLT_MIN)) /* finite, positive, not subnormal */
    return false;
  *scale = s;
  *zero_point = zp ? (int32_t)wq_value_get_int(zp, 0) : 0;
  return true;
}

/* The layout pass fused a layout transition into this node: input and
 * output layouts differ (channels-first floats, channels-last codes). */
static bool layout_change(const wq_value *in, const wq_value *out) {
  return wq_layout_channels_last(in[0].layout, in[0].rank) !=
         wq_layout_channels_last(out[0].layout, in[0].rank);
}

/* ---- QuantizeLinear ---------------------------------------------------- */

static wq_status quantize_out_dtype(const wq_node *node, const quant_linear_attrs *a,
                                    const wq_value *in, wq_dtype *out, wq_error *err) {
  const wq_value *zp = node->n_inputs > 2 ? &in[2] : NULL;
  if (zp && wq_value_present(zp)) {
    WQ_TRY(wq_quant_expect_dtype(node, "y_zero_point", zp->dtype, QUANTIZED_OUT_DTYPES, err));
    if (a->output_dtype != 0 && a->output_dtype != zp->dtype)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QuantizeLinear: output_dtype %s differs from y_zero_point dtype %s",
                     wq_dtype_name((int)a->output_dtype), wq_dtype_name(zp->dtype));
    *out = zp->dtype;
    return WQ_OK;
  }
  wq_dtype dt = a->output_dtype != 0 ? (wq_dtype)a->output_dtype : WQ_DT_UINT8;
  if (a->output_dtype < 0 || a->output_dtype >= WQ_DT_COUNT_)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QuantizeLinear: output_dtype %lld is not a dtype", (long long)a->output_dtype);
  WQ_TRY(wq_quant_expect_dtype(node, "output_dtype", dt, QUANTIZED_OUT_DTYPES, err));
  *out = dt;
  return WQ_OK;
}

static wq_status quantize_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  quant_linear_attrs a;
  WQ_TRY(read_attrs(node, &a, err));
  WQ_TRY(wq_quant_expect_dtype(node, "x", in[0].dtype, WQ_QDT_BIT(WQ_DT_FLOAT), err));
  WQ_TRY(wq_quant_expect_dtype(node, "y_scale", in[1].dtype, WQ_QDT_BIT(WQ_DT_FLOAT), err));
  wq_dtype qdt = WQ_DT_UNDEFINED;
  WQ_TRY(quantize_out_dtype(node, &a, in, &qdt, err));
  out[0].dtype = qdt;
  out[0].rank = in[0].rank;
  memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
  if (in[0].rank < 0 || !wq_value_shape_known(&in[1]))
    return WQ_OK;
  wq_qparams qp;
  WQ_TRY(node_qparams(node, &a, qdt, &in[0], &in[1], node->n_inputs > 2 ? &in[2] : NULL,
                      "QuantizeLinear: y_scale", &qp, err));
  wq_qparams_free(&qp);
  return WQ_OK;
}

static wq_status quantize_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  if (layout_change(in, out)) /* float channels-first in, channels-last codes out */
    return wq_boundary_nhwc(node, true, in, out, err);
  float scale;
  int32_t zero_point;
  if (scalar_qparams_8bit(node, in, out[0].dtype, &scale, &zero_point)) {
    int32_t qmin = out[0].dtype == WQ_DT_INT8 ? -128 : 0, qmax = qmin + 255;
    wq_quantize_f32_q8(in[0].data, wq_value_numel(&in[0]), scale, zero_point, out[0].dtype, qmin,
                       qmax, out[0].data);
    return WQ_OK;
  }
  quant_linear_attrs a;
  WQ_TRY(read_attrs(node, &a, err));
  wq_qparams qp;
  WQ_TRY(node_qparams(node, &a, out[0].dtype, &in[0], &in[1], node->n_inputs > 2 ? &in[2] : NULL,
                      "QuantizeLinear: y_scale", &qp, err));
  if (wq_qparams_is_per_tensor(&qp) && (qp.dtype == WQ_DT_INT8 || qp.dtype == WQ_DT_UINT8))
    wq_quantize_f32_q8(in[0].data, wq_value_numel(&in[0]), qp.scale[0], qp.zero_point[0], qp.dtype,
                       qp.qmin, qp.qmax, out[0].data); /* same bits, SIMD in wasm */
  else
    wq_ref_quantize_linear(in[0].data, wq_value_numel(&in[0]), &qp, out[0].data);
  wq_qparams_free(&qp);
  return WQ_OK;
}

const wq_op wq_op_quantize_linear = {.int8 = WQ_INT8_QUANTIZE,
                                     .op_type = "QuantizeLinear",
                                     .domain = "",
                                     .min_opset = 10,
                                     .min_inputs = 2,
                                     .max_inputs = 3,
                                     .min_outputs = 1,
                                     .max_outputs = 1,
                                     .flags = WQ_OP_FLAG_INT8,
                                     .infer = quantize_infer,
                                     .run = quantize_run};

/* ---- DequantizeLinear -------------------------------------------------- */

static wq_status dequantize_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  quant_linear_attrs a;
  WQ_TRY(read_attrs(node, &a, err));
  WQ_TRY(wq_quant_expect_dtype(node, "x", in[0].dtype, DEQUANTIZE_IN_DTYPES, err));
  WQ_TRY(wq_quant_expect_dtype(node, "x_scale", in[1].dtype, WQ_QDT_BIT(WQ_DT_FLOAT), err));
  if (a.output_dtype != 0 && a.output_dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "DequantizeLinear: output_dtype %s with float scales: dtype %s is not supported",
                   wq_dtype_name((int)a.output_dtype), wq_dtype_name((int)a.output_dtype));
  if (node->n_inputs > 2 && wq_value_present(&in[2]))
    WQ_TRY(wq_quant_expect_dtype(node, "x_zero_point", in[2].dtype, WQ_QDT_BIT(in[0].dtype), err));
  out[0].dtype = WQ_DT_FLOAT;
  out[0].rank = in[0].rank;
  memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
  if (in[0].rank < 0 || !wq_value_shape_known(&in[1]))
    return WQ_OK;
  wq_qparams qp;
  WQ_TRY(node_qparams(node, &a, in[0].dtype, &in[0], &in[1], node->n_inputs > 2 ? &in[2] : NULL,
                      "DequantizeLinear: x_scale", &qp, err));
  wq_qparams_free(&qp);
  return WQ_OK;
}

static wq_status dequantize_run(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  if (layout_change(in, out)) /* channels-last codes in, float channels-first out */
    return wq_boundary_nhwc(node, false, in, out, err);
  float scale;
  int32_t zero_point;
  if (scalar_qparams_8bit(node, in, in[0].dtype, &scale, &zero_point)) {
    wq_dequantize_q8_f32(in[0].data, wq_value_numel(&in[0]), scale, zero_point, in[0].dtype,
                         out[0].data);
    return WQ_OK;
  }
  quant_linear_attrs a;
  WQ_TRY(read_attrs(node, &a, err));
  wq_qparams qp;
  WQ_TRY(node_qparams(node, &a, in[0].dtype, &in[0], &in[1], node->n_inputs > 2 ? &in[2] : NULL,
                      "DequantizeLinear: x_scale", &qp, err));
  if (wq_qparams_is_per_tensor(&qp) && (qp.dtype == WQ_DT_INT8 || qp.dtype == WQ_DT_UINT8))
    wq_dequantize_q8_f32(in[0].data, wq_value_numel(&in[0]), qp.scale[0], qp.zero_point[0],
                         qp.dtype, out[0].data); /* same bits, SIMD in wasm */
  else
    wq_ref_dequantize_linear(in[0].data, wq_value_numel(&in[0]), &qp, out[0].data);
  wq_qparams_free(&qp);
  return WQ_OK;
}

const wq_op wq_op_dequantize_linear = {.int8 = WQ_INT8_DEQUANTIZE,
                                       .op_type = "DequantizeLinear",
                                       .domain = "",
                                       .min_opset = 10,
                                       .min_inputs = 2,
                                       .max_inputs = 3,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .flags = WQ_OP_FLAG_INT8,
                                       .infer = dequantize_infer,
                                       .run = dequantize_run};

/* ---- DynamicQuantizeLinear --------------------------------------------- */

static wq_status dynamic_quantize_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                        wq_error *err) {
  WQ_TRY(wq_quant_expect_dtype(node, "x", in[0].dtype, WQ_QDT_BIT(WQ_DT_FLOAT), err));
  out[0].dtype = WQ_DT_UINT8;
  out[0].rank = in[0].rank;
  memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
  if (node->n_outputs > 1) {
    out[1].dtype = WQ_DT_FLOAT;
    out[1].rank = 0;
  }
  if (node->n_outputs > 2) {
    out[2].dtype = WQ_DT_UINT8;
    out[2].rank = 0;
  }
  return WQ_OK;
}

/* ONNX's rule: the range [min(x), max(x)] is widened to include 0, so 0.0 is
 * exactly representable; scale = range / 255 (1 for an all-zero x, whose
 * range is empty); zero point = round(clamp(-min / scale, 0, 255)). */
wq_status wq_dynamic_qparams(const wq_node *node, const float *x, int64_t n, float *scale,
                             int32_t *zero_point, wq_error *err) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo; /* a comparison with NaN is false: skipped */
    hi = x[i] > hi ? x[i] : hi;
  }
  float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  if (!isfinite(lo) || !isfinite(hi) || fpclassify(s) != FP_NORMAL)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node->name,
                   "DynamicQuantizeLinear: range [%g, %g] unusable", (double)lo, (double)hi);
  *scale = s;
  *zero_point = (int32_t)nearbyintf(fminf(255.0f, fmaxf(0.0f, 0.0f - lo / s)));
  return WQ_OK;
}

static wq_status dynamic_quantize_run(const wq_node *node, const wq_value *in, wq_value *out,
                                      wq_error *err) {
  const int64_t n = wq_value_numel(&in[0]);
  float scale;
  int32_t zp;
  WQ_TRY(wq_dynamic_qparams(node, in[0].data, n, &scale, &zp, err));
  if (out[0].data)
    wq_quantize_f32_q8(in[0].data, n, scale, zp, WQ_DT_UINT8, 0, 255, out[0].data);
  if (node->n_outputs > 1 && out[1].data)
    *(float *)out[1].data = scale;
  if (node->n_outputs > 2 && out[2].data)
    *(uint8_t *)out[2].data = (uint8_t)zp;
  return WQ_OK;
}

const wq_op wq_op_dynamic_quantize_linear = {.op_type = "DynamicQuantizeLinear",
                                             .domain = "",
                                             .min_opset = 11,
                                             .min_inputs = 1,
                                             .max_inputs = 1,
                                             .min_outputs = 1,
                                             .max_outputs = 3,
                                             .flags = WQ_OP_FLAG_INT8,
                                             .infer = dynamic_quantize_infer,
                                             .run = dynamic_quantize_run};
