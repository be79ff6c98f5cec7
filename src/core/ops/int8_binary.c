/* QAdd and QMul (domain "wasmq"): y = quantize(dequantize(a) + or *
 * dequantize(b)) with numpy broadcasting; a, b and y are int8/uint8 with
 * per-tensor quantization parameters on their tensors. The plan hook builds
 * the kernel parameters (kernels/qeltwise.h); the arithmetic is exactly
 * that of DequantizeLinear → Add/Mul → QuantizeLinear run in float32. Attributes: y_dtype,
 * act_min/act_max (a fused relu/clip as a clamp of the output codes). */
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "int8_common.h"

typedef struct {
  wq_dtype y_dtype;
  int32_t act_min, act_max;
  bool planned;
  wq_qbinary_params params;
} qbinary_state;

static wq_status qbinary_prepare(wq_node *node, wq_error *err) {
  qbinary_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  wq_status st = wq_int8_read_y_dtype(node, false, &s->y_dtype, err);
  if (st == WQ_OK)
    st = wq_int8_read_act_range(node, s->y_dtype, &s->act_min, &s->act_max, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

static wq_status qbinary_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  const qbinary_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "A", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "B", in[1].dtype, err));
  out[0].dtype = s->y_dtype;
  if (in[0].rank < 0 || in[1].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  return wq_broadcast_shapes(&in[0], &in[1], &out[0].rank, out[0].dims, node->name, err);
}

static wq_status qbinary_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                              wq_error *err) {
  (void)kernel;
  qbinary_state *s = node->op_state;
  const wq_qparams *qa, *qb, *qy;
  wq_qbinary_params *p = &s->params;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qa, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qb, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  WQ_TRY(wq_int8_per_tensor(node, qa, "A", &p->a_scale, &p->a_zero_point, err));
  WQ_TRY(wq_int8_per_tensor(node, qb, "B", &p->b_scale, &p->b_zero_point, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "C", &p->y_scale, &p->y_zero_point, err));
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: output quantization parameters are %s but y_dtype is %s", node->op_type,
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  p->mul = strcmp(node->op_type, "QMul") == 0;
  p->a_dtype = qa->dtype;
  p->b_dtype = qb->dtype;
  p->y_dtype = s->y_dtype;
  p->y_min = s->act_min;
  p->y_max = s->act_max;
  s->planned = true;
  return WQ_OK;
}

static wq_status qbinary_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const qbinary_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].dtype != s->params.a_dtype || in[1].dtype != s->params.b_dtype)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: inputs are %s, %s but were planned as %s, %s", node->op_type,
                   wq_dtype_name(in[0].dtype), wq_dtype_name(in[1].dtype),
                   wq_dtype_name(s->params.a_dtype), wq_dtype_name(s->params.b_dtype));
  /* Each operand is read through its own layout record: inputs in other
   * layouts than the output's need no transition. */
  wq_qbinary(&s->params, &in[0], &in[1], &out[0]);
  return WQ_OK;
}

const wq_op wq_op_int8_add = {.int8 = WQ_INT8_KERNEL,
                              .layout = WQ_LCAP_AGNOSTIC_BIN,
                              .op_type = "QAdd",
                              .domain = WQ_INT8_DOMAIN,
                              .min_opset = 1,
                              .min_inputs = 2,
                              .max_inputs = 2,
                              .min_outputs = 1,
                              .max_outputs = 1,
                              .prepare = qbinary_prepare,
                              .free_state = free,
                              .infer = qbinary_infer,
                              .run = qbinary_run,
                              .plan = qbinary_plan};

const wq_op wq_op_int8_mul = {.int8 = WQ_INT8_KERNEL,
                              .layout = WQ_LCAP_AGNOSTIC_BIN,
                              .op_type = "QMul",
                              .domain = WQ_INT8_DOMAIN,
                              .min_opset = 1,
                              .min_inputs = 2,
                              .max_inputs = 2,
                              .min_outputs = 1,
                              .max_outputs = 1,
                              .prepare = qbinary_prepare,
                              .free_state = free,
                              .infer = qbinary_infer,
                              .run = qbinary_run,
                              .plan = qbinary_plan};
