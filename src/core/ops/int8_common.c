#include "int8_common.h"

#include "../kernels/ref/quant_ref.h"

#include <stdlib.h>

wq_status wq_int8_read_y_dtype(const wq_node *node, bool allow_int32, wq_dtype *out,
                               wq_error *err) {
  int64_t code;
  WQ_TRY(wq_attr_int(node, "y_dtype", 0, &code, err));
  bool ok = code == WQ_DT_INT8 || code == WQ_DT_UINT8 || (allow_int32 && code == WQ_DT_INT32);
  if (!ok)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: attribute y_dtype is %lld; it must be int8 or uint8%s", node->op_type,
                   (long long)code, allow_int32 ? " (or int32)" : "");
  *out = (wq_dtype)code;
  return WQ_OK;
}

wq_status wq_int8_read_act_range(const wq_node *node, wq_dtype y_dtype, int32_t *act_min,
                                 int32_t *act_max, wq_error *err) {
  int32_t qmin = y_dtype == WQ_DT_INT8 ? -128 : 0, qmax = y_dtype == WQ_DT_INT8 ? 127 : 255;
  if (y_dtype == WQ_DT_INT32) {
    *act_min = INT32_MIN;
    *act_max = INT32_MAX;
    return WQ_OK;
  }
  int64_t lo, hi;
  WQ_TRY(wq_attr_int(node, "act_min", qmin, &lo, err));
  WQ_TRY(wq_attr_int(node, "act_max", qmax, &hi, err));
  if (lo < qmin || hi > qmax || lo > hi)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: activation clamp [%lld, %lld] must be an ordered range within [%d, %d]",
                   node->op_type, (long long)lo, (long long)hi, (int)qmin, (int)qmax);
  *act_min = (int32_t)lo;
  *act_max = (int32_t)hi;
  return WQ_OK;
}

wq_status wq_int8_read_act_alpha(const wq_node *node, wq_dtype y_dtype, bool *leaky, float *alpha,
                                 wq_error *err) {
  *leaky = wq_node_attr(node, "act_alpha") != NULL;
  WQ_TRY(wq_attr_float(node, "act_alpha", 1.0f, alpha, err));
  if (*leaky && (!(*alpha >= 0.0f && *alpha <= 1.0f) || y_dtype == WQ_DT_INT32))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "act_alpha must be in [0, 1], 8-bit y");
  return WQ_OK;
}

wq_status wq_int8_expect_8bit(const wq_node *node, const char *what, wq_dtype dtype,
                              wq_error *err) {
  if (dtype == WQ_DT_INT8 || dtype == WQ_DT_UINT8)
    return WQ_OK;
  return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s has dtype %s; it must be int8 or uint8",
                 node->op_type, what, wq_dtype_name(dtype));
}

wq_status wq_int8_tensor_qparams(const wq_node *node, const wq_graph *g, int k, bool output,
                                 const wq_qparams **out, wq_error *err) {
  int n = output ? node->n_outputs : node->n_inputs;
  int t = k < n ? (output ? node->outputs[k] : node->inputs[k]) : -1;
  const char *role = output ? "output" : "input";
  if (t < 0 || t >= g->n_tensors)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: %s %d is missing", node->op_type,
                   role, k);
  const wq_tensor *tensor = &g->tensors[t];
  if (!tensor->qparams || !tensor->qparams->scale)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: %s %d '%s' has no quantization parameters", node->op_type, role, k,
                   tensor->name);
  if (tensor->dtype != WQ_DT_UNDEFINED && tensor->qparams->dtype != tensor->dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: %s %d '%s' is %s but its quantization parameters are for %s", node->op_type,
                   role, k, tensor->name, wq_dtype_name(tensor->dtype),
                   wq_dtype_name(tensor->qparams->dtype));
  *out = tensor->qparams;
  return WQ_OK;
}

wq_status wq_int8_per_tensor(const wq_node *node, const wq_qparams *qp, const char *what,
                             float *scale, int32_t *zero_point, wq_error *err) {
  if (!wq_qparams_is_per_tensor(qp)) {
    char desc[160];
    wq_qparams_describe(qp, desc, sizeof desc);
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: %s must be quantized per tensor, has %s", node->op_type, what, desc);
  }
  *scale = qp->scale[0];
  *zero_point = qp->zero_point ? qp->zero_point[0] : 0;
  return WQ_OK;
}

wq_status wq_int8_constant_input(const wq_node *node, const wq_graph *g, int k, const char *what,
                                 const wq_tensor **out, wq_error *err) {
  int t = k < node->n_inputs ? node->inputs[k] : -1;
  if (t < 0 || t >= g->n_tensors || !g->tensors[t].is_constant || !g->tensors[t].data)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: %s must be a constant",
                   node->op_type, what);
  *out = &g->tensors[t];
  return WQ_OK;
}

wq_status wq_int8_not_planned(const wq_node *node, wq_error *err) {
  return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                 "%s: run before its plan hook read the quantization parameters", node->op_type);
}

wq_status wq_int8_prepare_weights(const wq_node *node, const wq_graph *g, const wq_value *wv,
                                  const wq_qparams *qw, float in_scale, float out_scale,
                                  bool requantize, int32_t **w, int32_t **bias, float **multiplier,
                                  wq_error *err) {
  if (!wq_qparams_is_per_tensor(qw) && wq_qparams_channel_axis(qw) != 0) {
    char desc[160];
    wq_qparams_describe(qw, desc, sizeof desc);
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: w must be quantized per tensor or per output channel (axis 0), has %s",
                   node->op_type, desc);
  }
  const int64_t rows = wv->dims[0], numel = wq_value_numel(wv);
  const int64_t per_row = numel / (rows > 0 ? rows : 1);
  const size_t row_count = (size_t)(rows > 0 ? rows : 1);
  const wq_tensor *bias_tensor = NULL;
  if (node->n_inputs > 2 && node->inputs[2] >= 0) {
    WQ_TRY(wq_int8_constant_input(node, g, 2, "bias", &bias_tensor, err));
    if (bias_tensor->dtype != WQ_DT_INT32 || bias_tensor->rank != 1 || bias_tensor->dims[0] != rows)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: bias must be int32 [%lld]", node->op_type,
                     (long long)rows);
  }
  free(*bias), free(*multiplier);
  *bias = NULL, *multiplier = NULL;
  if (w) {
    free(*w);
    *w = malloc((size_t)(numel > 0 ? numel : 1) * sizeof **w);
  }
  if (bias_tensor)
    *bias = malloc(row_count * sizeof **bias);
  if (requantize)
    *multiplier = malloc(row_count * sizeof **multiplier);
  if ((w && !*w) || (bias_tensor && !*bias) || (requantize && !*multiplier))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  if (w)
    wq_ref_q_center(wv->data, numel, qw, *w);
  for (int64_t r = 0; r < rows; r++) {
    if (bias_tensor)
      (*bias)[r] = ((const int32_t *)bias_tensor->data)[r];
    if (requantize)
      (*multiplier)[r] = (in_scale * qw->scale[wq_qparams_index_of(qw, r * per_row)]) / out_scale;
  }
  return WQ_OK;
}

wq_status wq_int8_conv_attrs_parse(const wq_node *node, wq_window_attrs *win, int64_t *group,
                                   wq_dtype *y_dtype, int32_t *act_min, int32_t *act_max,
                                   wq_error *err) {
  WQ_TRY(wq_window_attrs_parse(node, win, err));
  WQ_TRY(wq_conv_group_parse(node, group, err));
  WQ_TRY(wq_int8_read_y_dtype(node, true, y_dtype, err));
  return wq_int8_read_act_range(node, *y_dtype, act_min, act_max, err);
}
