#include "int8_common.h"

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
