/* ReduceMean: axes as an attribute up to opset 17, as optional input 1 from
 * opset 18 (with noop_with_empty_axes). Kernel in kernels/ref/ew_reduce.c. */
#include <string.h>

#include "../kernels/ref/ew_norm.h"
#include "elementwise_common.h"

typedef struct {
  bool keepdims, noop_with_empty_axes;
  bool axes_known; /* false when the axes input's data is not known yet */
  int n_axes;
  int64_t axes[WQ_MAX_RANK];
} reduce_attrs;

static wq_status reduce_attrs_of(const wq_node *node, const wq_value *in, reduce_attrs *r,
                                 wq_error *err) {
  int64_t keepdims, noop = 0;
  WQ_TRY(wq_attr_int(node, "keepdims", 1, &keepdims, err));
  if (node->opset >= 18)
    WQ_TRY(wq_attr_int(node, "noop_with_empty_axes", 0, &noop, err));
  r->keepdims = keepdims != 0;
  r->noop_with_empty_axes = noop != 0;
  r->axes_known = true;
  r->n_axes = 0;
  const int64_t *axes = NULL;
  size_t count = 0;
  if (node->opset < 18) {
    WQ_TRY(wq_attr_ints(node, "axes", &axes, &count, err));
  } else if (in && node->n_inputs > 1 && wq_value_present(&in[1])) {
    const wq_value *a = &in[1];
    if (a->dtype != WQ_DT_INT64)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: axes must be int64, got %s", node->op_type,
                     wq_dtype_name(a->dtype));
    if (a->rank > 1)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: axes must be 1-D, got rank %d",
                     node->op_type, a->rank);
    if (!a->data) {
      r->axes_known = false;
      return WQ_OK;
    }
    axes = a->data;
    count = (size_t)wq_value_numel(a);
  }
  if (count > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %zu axes given, more than rank %d allows",
                   node->op_type, count, WQ_MAX_RANK);
  for (size_t i = 0; i < count; i++)
    r->axes[i] = axes[i];
  r->n_axes = (int)count;
  return WQ_OK;
}

/* Marks reduce[d] for every axis (validating range and duplicates). */
static wq_status reduced_dims(const wq_node *node, const reduce_attrs *r, int rank, bool *reduce,
                              wq_error *err) {
  bool all = r->n_axes == 0 && !r->noop_with_empty_axes;
  for (int d = 0; d < rank; d++)
    reduce[d] = all;
  for (int i = 0; i < r->n_axes; i++) {
    int d;
    WQ_TRY(ew_normalize_axis(node, r->axes[i], rank, &d, err));
    if (reduce[d])
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: axis %lld is listed twice",
                     node->op_type, (long long)r->axes[i]);
    reduce[d] = true;
  }
  return WQ_OK;
}

static wq_status reduce_prepare(wq_node *node, wq_error *err) {
  reduce_attrs r;
  return reduce_attrs_of(node, NULL, &r, err);
}

static wq_status reduce_mean_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                   wq_error *err) {
  static const wq_dtype types[] = {WQ_DT_FLOAT, WQ_DT_INT32, WQ_DT_INT64};
  WQ_TRY(ew_check_dtype(node, "data", in[0].dtype, types, 3, err));
  reduce_attrs r;
  WQ_TRY(reduce_attrs_of(node, in, &r, err));
  out->dtype = in[0].dtype;
  out->data = NULL;
  if (in[0].rank < 0 || !r.axes_known) {
    out->rank = -1;
    return WQ_OK;
  }
  bool reduce[WQ_MAX_RANK];
  WQ_TRY(reduced_dims(node, &r, in[0].rank, reduce, err));
  int rank = 0;
  for (int d = 0; d < in[0].rank; d++) {
    if (!reduce[d])
      out->dims[rank++] = in[0].dims[d];
    else if (r.keepdims)
      out->dims[rank++] = 1;
  }
  out->rank = rank;
  return WQ_OK;
}

static wq_status reduce_mean_run(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  reduce_attrs r;
  WQ_TRY(reduce_attrs_of(node, in, &r, err));
  bool reduce[WQ_MAX_RANK];
  WQ_TRY(reduced_dims(node, &r, in[0].rank, reduce, err));
  if (!ew_reduce_mean(in[0].dtype, in[0].data, in[0].dims, in[0].rank, reduce, out[0].data))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: dtype %s is not supported",
                   node->op_type, wq_dtype_name(in[0].dtype));
  return WQ_OK;
}

const wq_op wq_op_reduce_mean = {.int8 = WQ_INT8_REDUCE,
                                 .int8_as = WQ_OPID(int8_reduce_mean),
                                 .quant_role = WQ_QROLE_OWN_OUTPUT,
                                 .op_type = "ReduceMean",
                                 .domain = "",
                                 .min_opset = 1,
                                 .min_inputs = 1,
                                 .max_inputs = 2,
                                 .min_outputs = 1,
                                 .max_outputs = 1,
                                 .prepare = reduce_prepare,
                                 .infer = reduce_mean_infer,
                                 .run = reduce_mean_run};
