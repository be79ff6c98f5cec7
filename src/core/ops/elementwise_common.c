#include "elementwise_common.h"
#include "../ir/format.h"

#include <string.h>

wq_status ew_infer_same_shape(const wq_node *node, const wq_value *in, wq_dtype dtype,
                              wq_value *out, wq_error *err) {
  out->dtype = dtype;
  out->rank = in->rank;
  out->data = NULL;
  if (in->rank < 0)
    return WQ_OK;
  if (in->rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: rank %d exceeds %d", node->op_type,
                   in->rank, WQ_MAX_RANK);
  memcpy(out->dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
  if (wq_value_shape_known(in))
    return wq_shape_check(out->dims, out->rank, node->name, node->op_type, err);
  return WQ_OK;
}

wq_status ew_check_dtype(const wq_node *node, const char *what, wq_dtype dtype,
                         const wq_dtype *allowed, int n, wq_error *err) {
  for (int i = 0; i < n; i++)
    if (allowed[i] == dtype)
      return WQ_OK;
  char list[160] = "";
  size_t used = 0;
  for (int i = 0; i < n && used < sizeof list; i++)
    used += (size_t)wq_format(list + used, sizeof list - used, i ? ", %s" : "%s",
                              wq_dtype_name(allowed[i]));
  return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %s has dtype %s; supported: %s",
                 node->op_type, what, wq_dtype_name(dtype), list);
}

wq_status ew_normalize_axis(const wq_node *node, int64_t axis, int rank, int *out, wq_error *err) {
  if (axis < -(int64_t)rank || axis >= rank)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: axis %lld is outside [-%d, %d) for rank %d", node->op_type, (long long)axis,
                   rank, rank, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return WQ_OK;
}
