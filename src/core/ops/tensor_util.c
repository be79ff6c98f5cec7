#include "tensor_util.h"

#include <string.h>

bool wq_tu_has_input(const wq_node *node, const wq_value *in, int k) {
  return k < node->n_inputs && in[k].dtype != WQ_DT_UNDEFINED;
}

wq_status wq_tu_elem_size(const wq_node *node, wq_dtype dtype, const char *what, size_t *out,
                          wq_error *err) {
  size_t size = wq_dtype_size(dtype);
  if (size == 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %s has unsupported dtype %s",
                   node->op_type, what, wq_dtype_name(dtype));
  *out = size;
  return WQ_OK;
}

wq_status wq_tu_axis(const wq_node *node, int64_t axis, int rank, const char *what, int *out,
                     wq_error *err) {
  if (axis < -(int64_t)rank || axis >= rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s %lld is out of range for rank %d",
                   node->op_type, what, (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return WQ_OK;
}

bool wq_tu_shape_known(const wq_value *v) {
  if (v->rank < 0)
    return false;
  for (int i = 0; i < v->rank; i++)
    if (v->dims[i] < 0)
      return false;
  return true;
}

int64_t wq_tu_prod(const int64_t *dims, int from, int to) {
  const int64_t cap = WQ_MAX_ELEMENTS + 1;
  int64_t p = 1;
  bool saturated = false;
  for (int i = from; i < to; i++) {
    if (dims[i] < 0)
      return -1;
    if (dims[i] == 0)
      return 0;
    if (saturated || p > cap / dims[i])
      saturated = true;
    else
      p *= dims[i];
  }
  return saturated ? cap : p;
}

void wq_tu_set_unknown(wq_value *out, wq_dtype dtype, int rank) {
  out->dtype = dtype;
  out->rank = rank;
  for (int i = 0; i < WQ_MAX_RANK; i++)
    out->dims[i] = -1;
}

wq_status wq_tu_int_list_len(const wq_node *node, const wq_value *v, const char *what, int64_t *len,
                             wq_error *err) {
  if (v->dtype != WQ_DT_INT64 && v->dtype != WQ_DT_INT32)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s must be int64 or int32, got %s",
                   node->op_type, what, wq_dtype_name(v->dtype));
  if (v->rank > 1)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s must be 1-D, got rank %d", node->op_type,
                   what, v->rank);
  if (v->rank < 0)
    *len = -1;
  else
    *len = v->rank == 0 ? 1 : v->dims[0];
  return WQ_OK;
}

wq_status wq_tu_read_ints(const wq_node *node, const wq_value *v, const char *what, int64_t *out,
                          int cap, int *count, wq_error *err) {
  int64_t len = 0;
  WQ_TRY(wq_tu_int_list_len(node, v, what, &len, err));
  if (len < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s has an unknown length", node->op_type,
                   what);
  if (len > cap)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s has %lld elements, at most %d allowed",
                   node->op_type, what, (long long)len, cap);
  for (int64_t i = 0; i < len; i++)
    out[i] = wq_value_get_int(v, i);
  *count = (int)len;
  return WQ_OK;
}

wq_status wq_tu_attr_ints(const wq_node *node, const char *name, int64_t *out, int cap, int *count,
                          bool *present, wq_error *err) {
  const int64_t *vals;
  size_t n = 0;
  WQ_TRY(wq_attr_ints(node, name, &vals, &n, err));
  *present = wq_node_attr(node, name) != NULL;
  if (n > (size_t)cap)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: attribute '%s' has %zu elements, at most %d allowed", node->op_type, name,
                   n, cap);
  for (size_t i = 0; i < n; i++)
    out[i] = vals[i];
  *count = (int)n;
  return WQ_OK;
}

wq_status wq_tu_unique_axes(const wq_node *node, int64_t *axes, int n, int rank, const char *what,
                            wq_error *err) {
  for (int i = 0; i < n; i++) {
    int a = 0;
    WQ_TRY(wq_tu_axis(node, axes[i], rank, what, &a, err));
    axes[i] = a;
    for (int j = 0; j < i; j++)
      if (axes[j] == a)
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s repeats axis %d", node->op_type, what,
                       a);
  }
  return WQ_OK;
}

void wq_tu_copy(void *dst, const void *src, size_t n) {
  if (n > 0)
    memcpy(dst, src, n);
}

wq_status wq_tu_run_copy(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  int64_t n_in = wq_value_numel(&in[0]), n_out = wq_value_numel(&out[0]);
  if (n_in != n_out || n_in < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: output holds %lld elements but the input %lld", node->op_type,
                   (long long)n_out, (long long)n_in);
  if (out[0].data != in[0].data)
    wq_tu_copy(out[0].data, in[0].data, (size_t)n_in * elem);
  return WQ_OK;
}
