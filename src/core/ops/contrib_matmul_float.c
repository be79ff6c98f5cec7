/* onnxruntime's integer matrix products with a float32 result (domain
 * "com.microsoft"), as its dynamic quantizer and graph optimizer write them:
 *   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?,
 *                        b_zero_point?, bias?)
 *   DynamicQuantizeMatMul(A float, B, b_scale, b_zero_point?, bias?): A is
 *     first quantized to uint8 by DynamicQuantizeLinear's rule.
 * Y = float(sum_k (A - a_zp)(B - b_zp[n])) * (a_scale * b_scale[n]) + bias[n],
 * A [..., M, K], B a 2-D [K, N] with per-tensor or per-column parameters. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/quantize.h"
#include "../kernels/ref/quant_ref.h"
#include "quant_common.h"

static bool present(const wq_node *node, int k) {
  return k < node->n_inputs && node->inputs[k] >= 0;
}

static bool dynamic_a(const wq_node *node) {
  return strcmp(node->op_type, "DynamicQuantizeMatMul") == 0;
}

/* Input indices of B, b_scale, b_zero_point and bias. */
static void b_inputs(const wq_node *node, int *b, int *b_scale, int *b_zp, int *bias) {
  bool dyn = dynamic_a(node);
  *b = 1;
  *b_scale = dyn ? 2 : 3;
  *b_zp = dyn ? 3 : 5;
  *bias = dyn ? 4 : 6;
}

static wq_status matmul_float_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  int b, b_scale, b_zp, bias;
  b_inputs(node, &b, &b_scale, &b_zp, &bias);
  if (dynamic_a(node) ? in[0].dtype != WQ_DT_FLOAT
                      : wq_quant_expect_dtype(node, "A", in[0].dtype, WQ_QDT_8BIT, NULL) != WQ_OK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: A has dtype %s", node->op_type,
                   wq_dtype_name(in[0].dtype));
  if (!present(node, b_scale) || (!dynamic_a(node) && !present(node, 2)))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: a scale input is missing",
                   node->op_type);
  WQ_TRY(wq_quant_expect_dtype(node, "B", in[b].dtype, WQ_QDT_8BIT, err));
  out[0].dtype = WQ_DT_FLOAT;
  if (in[0].rank < 0 || in[b].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  if (in[b].rank != 2 || in[0].rank < 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: B must be 2-D and A at least 1-D (B has rank %d)", node->op_type,
                   in[b].rank);
  if (in[0].dims[in[0].rank - 1] >= 0 && in[b].dims[0] >= 0 &&
      in[0].dims[in[0].rank - 1] != in[b].dims[0])
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: A has K = %lld but B has %lld",
                   node->op_type, (long long)in[0].dims[in[0].rank - 1], (long long)in[b].dims[0]);
  out[0].rank = in[0].rank;
  memcpy(out[0].dims, in[0].dims, sizeof out[0].dims);
  out[0].dims[in[0].rank - 1] = in[b].dims[1];
  return WQ_OK;
}

/* A's codes, scale and zero point: the int8 input as given, or the float
 * input quantized by DynamicQuantizeLinear (the registered op's rule). */
static wq_status a_codes(const wq_node *node, const wq_value *in, wq_value *codes, float *scale,
                         int32_t *zero_point, wq_error *err) {
  if (!dynamic_a(node)) {
    *codes = in[0];
    if (in[2].dtype != WQ_DT_FLOAT || wq_value_numel(&in[2]) != 1)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: a_scale must be one float",
                     node->op_type);
    *scale = ((const float *)in[2].data)[0];
    const wq_value *zp = wq_quant_optional_input(node, in, 4);
    if (zp && (zp->dtype != in[0].dtype || wq_value_numel(zp) != 1))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "%s: a_zero_point must be one value of A's dtype", node->op_type);
    *zero_point = zp ? wq_ref_q_load(zp->data, zp->dtype, 0) : 0;
    return WQ_OK;
  }
  const int64_t n = wq_value_numel(&in[0]);
  WQ_TRY(wq_dynamic_qparams(node, in[0].data, n, scale, zero_point, err));
  *codes = in[0];
  codes->dtype = WQ_DT_UINT8;
  codes->data = malloc((size_t)(n > 0 ? n : 1));
  if (!codes->data)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  wq_quantize_f32_q8(in[0].data, n, *scale, *zero_point, WQ_DT_UINT8, 0, 255, codes->data);
  return WQ_OK;
}

static wq_status matmul_float_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  int b, b_scale, b_zp, bias;
  b_inputs(node, &b, &b_scale, &b_zp, &bias);
  const int64_t K = in[b].dims[0], N = in[b].dims[1];
  const wq_value *bz = wq_quant_optional_input(node, in, b_zp);
  const wq_value *bias_v = present(node, bias) ? &in[bias] : NULL;
  if (in[b_scale].dtype != WQ_DT_FLOAT ||
      (wq_value_numel(&in[b_scale]) != 1 && wq_value_numel(&in[b_scale]) != N))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: b_scale must be float with 1 or N values", node->op_type);
  if (bz && (bz->dtype != in[b].dtype || (wq_value_numel(bz) != 1 && wq_value_numel(bz) != N)))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: b_zero_point must have B's dtype and 1 or N values", node->op_type);
  if (bias_v && (bias_v->dtype != WQ_DT_FLOAT || wq_value_numel(bias_v) != N))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: bias must be float [N]",
                   node->op_type);
  wq_value a;
  float a_scale;
  int32_t a_zero;
  WQ_TRY(a_codes(node, in, &a, &a_scale, &a_zero, err));
  const int64_t rows =
      K > 0 ? wq_value_numel(&in[0]) / K : wq_value_numel(&out[0]) / (N > 0 ? N : 1);
  const float *b_scales = in[b_scale].data;
  const bool scale_per_n = wq_value_numel(&in[b_scale]) > 1;
  const bool zp_per_n = bz && wq_value_numel(bz) > 1;
  float *y = out[0].data;
  for (int64_t m = 0; m < rows; m++)
    for (int64_t n = 0; n < N; n++) {
      int32_t b_zero = bz ? wq_ref_q_load(bz->data, bz->dtype, zp_per_n ? n : 0) : 0;
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (int64_t)(wq_ref_q_load(a.data, a.dtype, m * K + k) - a_zero) *
               (wq_ref_q_load(in[b].data, in[b].dtype, k * N + n) - b_zero);
      float v = (float)(int32_t)acc * (a_scale * b_scales[scale_per_n ? n : 0]);
      y[m * N + n] = bias_v ? v + ((const float *)bias_v->data)[n] : v;
    }
  if (dynamic_a(node))
    free(a.data);
  return WQ_OK;
}

const wq_op wq_op_contrib_matmul_integer_to_float = {.int8 = WQ_INT8_INTEGER,
                                                     .int8_as = WQ_OPID(int8_gemm_to_float),
                                                     .op_type = "MatMulIntegerToFloat",
                                                     .domain = "com.microsoft",
                                                     .min_opset = 1,
                                                     .min_inputs = 4,
                                                     .max_inputs = 7,
                                                     .min_outputs = 1,
                                                     .max_outputs = 1,
                                                     .flags = WQ_OP_FLAG_INT8,
                                                     .infer = matmul_float_infer,
                                                     .run = matmul_float_run};

const wq_op wq_op_contrib_dynamic_quantize_matmul = {.int8 = WQ_INT8_INTEGER,
                                                     .int8_as = WQ_OPID(int8_gemm_to_float),
                                                     .op_type = "DynamicQuantizeMatMul",
                                                     .domain = "com.microsoft",
                                                     .min_opset = 1,
                                                     .min_inputs = 3,
                                                     .max_inputs = 5,
                                                     .min_outputs = 1,
                                                     .max_outputs = 1,
                                                     .flags = WQ_OP_FLAG_INT8,
                                                     .infer = matmul_float_infer,
                                                     .run = matmul_float_run};
