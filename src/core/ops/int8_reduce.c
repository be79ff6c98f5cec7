/* QReduceMean (domain "wasmq"): the mean of int8/uint8 codes over one
 * contiguous block of axes, with per-tensor quantization parameters on the
 * input and output tensors. Attributes: first_axis and n_axes (the
 * reduced block [first_axis, first_axis + n_axes)), keepdims, y_dtype. The lowering pass makes it
 * from DequantizeLinear -> ReduceMean [-> ReduceMean ...] -> QuantizeLinear and from onnxruntime's
 * QLinearReduceMean. Viewed as [outer, reduced, inner], the sum of zero-point-free codes is exact
 * and the mean is quantized like QGlobalAveragePool's (kernels/ref/int8_pool_ref.h). */
#include <stdlib.h>

#include "../kernels/nhwc.h"
#include "../kernels/ref/int8_pool_ref.h"
#include "int8_common.h"

typedef struct {
  int64_t first_axis, n_axes; /* the reduced block [first_axis, first_axis + n_axes) */
  bool keepdims;
  wq_dtype y_dtype;
  bool planned;
  wq_int8_pool_quant q;
} qreduce_state;

static wq_status qreduce_prepare(wq_node *node, wq_error *err) {
  int64_t first_axis = -1, n_axes = 0, keepdims = 1;
  wq_dtype y_dtype;
  WQ_TRY(wq_int8_read_y_dtype(node, false, &y_dtype, err));
  WQ_TRY(wq_attr_int(node, "first_axis", -1, &first_axis, err));
  WQ_TRY(wq_attr_int(node, "n_axes", 0, &n_axes, err));
  WQ_TRY(wq_attr_int(node, "keepdims", 1, &keepdims, err));
  if (first_axis < 0 || n_axes < 1 || first_axis + n_axes > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QReduceMean: first_axis %lld and n_axes %lld do not name axes of a tensor",
                   (long long)first_axis, (long long)n_axes);
  qreduce_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QReduceMean: out of memory");
  s->first_axis = first_axis;
  s->n_axes = n_axes;
  s->keepdims = keepdims != 0;
  s->y_dtype = y_dtype;
  node->op_state = s;
  return WQ_OK;
}

static wq_status qreduce_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  const qreduce_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "X", in[0].dtype, err));
  out[0].dtype = s->y_dtype;
  if (in[0].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  if (s->first_axis + s->n_axes > in[0].rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QReduceMean: axes reach past rank %d",
                   in[0].rank);
  int rank = 0;
  for (int d = 0; d < in[0].rank; d++) {
    bool reduced = d >= s->first_axis && d < s->first_axis + s->n_axes;
    if (!reduced)
      out[0].dims[rank++] = in[0].dims[d];
    else if (s->keepdims)
      out[0].dims[rank++] = 1;
  }
  out[0].rank = rank;
  return WQ_OK;
}

static wq_status qreduce_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                              wq_error *err) {
  (void)kernel;
  qreduce_state *s = node->op_state;
  const wq_qparams *qx, *qy;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  WQ_TRY(wq_int8_per_tensor(node, qx, "X", &s->q.x_scale, &s->q.x_zero_point, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "Y", &s->q.y_scale, &s->q.y_zero_point, err));
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QReduceMean: output quantization parameters are %s but y_dtype is %s",
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  s->q.x_dtype = qx->dtype;
  s->q.y_dtype = qy->dtype;
  s->q.y_min = qy->qmin;
  s->q.y_max = qy->qmax;
  s->planned = true;
  return WQ_OK;
}

static wq_status qreduce_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const qreduce_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].dtype != s->q.x_dtype)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QReduceMean: X is %s but was planned as %s",
                   wq_dtype_name(in[0].dtype), wq_dtype_name(s->q.x_dtype));
  int64_t outer = 1, reduced = 1, inner = 1;
  for (int d = 0; d < in[0].rank; d++) {
    if (d < s->first_axis)
      outer *= in[0].dims[d];
    else if (d < s->first_axis + s->n_axes)
      reduced *= in[0].dims[d];
    else
      inner *= in[0].dims[d];
  }
  if (inner == 1)
    wq_int8_global_avgpool_ref(outer, reduced, &s->q, in[0].data, out[0].data);
  else
    wq_qgap_nhwc(outer, reduced, inner, &s->q, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_int8_reduce_mean = {.int8 = WQ_INT8_KERNEL,
                                      .op_type = "QReduceMean",
                                      .domain = WQ_INT8_DOMAIN,
                                      .min_opset = 1,
                                      .min_inputs = 1,
                                      .max_inputs = 1,
                                      .min_outputs = 1,
                                      .max_outputs = 1,
                                      .prepare = qreduce_prepare,
                                      .free_state = free,
                                      .infer = qreduce_infer,
                                      .run = qreduce_run,
                                      .plan = qreduce_plan};
