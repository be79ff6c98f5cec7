/* QReduceMean (domain "wasmq"): the mean of int8/uint8 codes over one
 * contiguous block of axes, with per-tensor quantization parameters on the
 * input and output tensors. Attributes: first_axis and n_axes (the
 * reduced block [first_axis, first_axis + n_axes)), keepdims, y_dtype. The lowering pass makes it
 * from DequantizeLinear -> ReduceMean [-> ReduceMean ...] -> QuantizeLinear and from onnxruntime's
 * QLinearReduceMean. Viewed as [outer, reduced, inner], the sum of zero-point-free codes is exact
 * and the mean is quantized like QGlobalAveragePool's (kernels/ref/int8_pool_ref.h). */
#include <math.h>
#include <stdlib.h>

#include "../kernels/nhwc.h"
#include "../kernels/ref/int8_pool_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "int8_common.h"

typedef struct {
  int64_t first_axis, n_axes; /* the reduced block [first_axis, first_axis + n_axes) */
  bool keepdims;
  wq_dtype y_dtype;
  bool planned;
  wq_int8_pool_quant q;
  float epsilon, m_scale; /* QNormalize: its epsilon and M's parameters */
  int32_t m_zp;
  wq_dtype m_dtype;
} qreduce_state;

static wq_status qreduce_prepare(wq_node *node, wq_error *err) {
  int64_t first_axis = -1, n_axes = 0, keepdims = 1;
  wq_dtype y_dtype;
  WQ_TRY(wq_int8_read_y_dtype(node, false, &y_dtype, err));
  WQ_TRY(wq_attr_int(node, "first_axis", -1, &first_axis, err));
  WQ_TRY(wq_attr_int(node, "n_axes", 0, &n_axes, err));
  WQ_TRY(wq_attr_int(node, "keepdims", 1, &keepdims, err));
  float epsilon;
  WQ_TRY(wq_attr_float(node, "epsilon", 0.0f, &epsilon, err));
  if (first_axis < 0 || n_axes < 1 || first_axis + n_axes > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: first_axis %lld and n_axes %lld do not name axes of a tensor",
                   node->op_type, (long long)first_axis, (long long)n_axes);
  qreduce_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  s->first_axis = first_axis;
  s->n_axes = n_axes;
  s->keepdims = keepdims != 0;
  s->y_dtype = y_dtype;
  s->epsilon = epsilon;
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
  const wq_qparams *qx, *qy, *qm;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  WQ_TRY(wq_int8_per_tensor(node, qx, "X", &s->q.x_scale, &s->q.x_zero_point, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "Y", &s->q.y_scale, &s->q.y_zero_point, err));
  if (node->n_inputs > 1) {
    WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qm, err));
    WQ_TRY(wq_int8_per_tensor(node, qm, "M", &s->m_scale, &s->m_zp, err));
    s->m_dtype = qm->dtype;
  }
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: output quantization parameters are %s but y_dtype is %s", node->op_type,
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

static wq_status qnorm_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const qreduce_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "X", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "M", in[1].dtype, err));
  out[0] = in[0];
  out[0].data = NULL;
  out[0].dtype = s->y_dtype;
  bool ok = in[0].rank == s->first_axis + s->n_axes && in[1].rank == in[0].rank;
  for (int d = 0; ok && d < in[0].rank; d++)
    ok = in[1].dims[d] == (d >= s->first_axis ? 1 : in[0].dims[d]);
  if (!ok)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QNormalize: X and M do not fit the plan");
  return WQ_OK;
}

static wq_status qnorm_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qreduce_state *s = node->op_state;
  const wq_int8_pool_quant *q = &s->q;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].dtype != q->x_dtype || in[1].dtype != s->m_dtype)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QNormalize: X and M do not fit the plan");
  int64_t rows = 1, n = 1;
  for (int d = 0; d < in[0].rank; d++)
    *(d < s->first_axis ? &rows : &n) *= in[0].dims[d];
  for (int64_t r = 0; r < rows; r++) {
    const float m = (float)(wq_ref_q_load(in[1].data, s->m_dtype, r) - s->m_zp) * s->m_scale;
    double sum = 0.0;
    float den = 0.0f;
    /* Pass 0 sums the squares, pass 1 divides by the deviation and quantizes. */
    for (int pass = 0; pass < 2; pass++) {
      for (int64_t j = r * n; j < (r + 1) * n; j++) {
        const float d =
            (float)(wq_ref_q_load(in[0].data, q->x_dtype, j) - q->x_zero_point) * q->x_scale - m;
        if (pass == 0)
          sum += (double)(d * d);
        else
          wq_ref_q_store(
              out[0].data, q->y_dtype, j,
              wq_ref_quantize_value(d / den, q->y_scale, q->y_zero_point, q->y_min, q->y_max));
      }
      den = sqrtf((float)(sum / (double)n) + s->epsilon);
    }
  }
  return WQ_OK;
}

const wq_op wq_op_int8_normalize = {.int8 = WQ_INT8_KERNEL,
                                    .op_type = "QNormalize",
                                    .domain = WQ_INT8_DOMAIN,
                                    .min_opset = 1,
                                    .min_inputs = 2,
                                    .max_inputs = 2,
                                    .min_outputs = 1,
                                    .max_outputs = 1,
                                    .prepare = qreduce_prepare,
                                    .free_state = free,
                                    .infer = qnorm_infer,
                                    .run = qnorm_run,
                                    .plan = qreduce_plan};
