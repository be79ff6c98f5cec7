/* onnxruntime's QGemm (domain "com.microsoft"): inputs A, a_scale,
 * a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?;
 * attributes transA, transB, alpha. A is [M, K] (transposed when transA),
 * B [K, N] ([N, K] when transB) with per-tensor or per-column ([N])
 * parameters; C is int32 at scale a_scale * b_scale (zero point 0),
 * broadcast to [M, N] and added to the integer accumulator. With y_scale
 * the result is quantized: requantize(acc, alpha * a_scale * b_scale[n] /
 * y_scale); without it Y is float32: acc * (alpha * a_scale * b_scale[n]),
 * the float products in that order as onnxruntime forms its output scales. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/quant_ref.h"
#include "quant_common.h"

typedef struct {
  bool trans_a, trans_b;
  float alpha;
} qgemm_state;

static wq_status qgemm_prepare(wq_node *node, wq_error *err) {
  int64_t trans_a = 0, trans_b = 0;
  float alpha = 1.0f;
  WQ_TRY(wq_attr_int(node, "transA", 0, &trans_a, err));
  WQ_TRY(wq_attr_int(node, "transB", 0, &trans_b, err));
  WQ_TRY(wq_attr_float(node, "alpha", 1.0f, &alpha, err));
  qgemm_state *s = malloc(sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QGemm: out of memory");
  s->trans_a = trans_a != 0;
  s->trans_b = trans_b != 0;
  s->alpha = alpha;
  node->op_state = s;
  return WQ_OK;
}

static bool present(const wq_node *node, int k) {
  return k < node->n_inputs && node->inputs[k] >= 0;
}

/* M, K, N from A and B; fails on ranks, dtypes or a K mismatch. */
static wq_status qgemm_dims(const wq_node *node, const wq_value *in, int64_t *M, int64_t *K,
                            int64_t *N, wq_error *err) {
  const qgemm_state *s = node->op_state;
  if (!present(node, 3) || !present(node, 4))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "QGemm: B and b_scale are required");
  WQ_TRY(wq_quant_expect_dtype(node, "A", in[0].dtype, WQ_QDT_8BIT, err));
  WQ_TRY(wq_quant_expect_dtype(node, "B", in[3].dtype, WQ_QDT_8BIT, err));
  if ((in[0].rank >= 0 && in[0].rank != 2) || (in[3].rank >= 0 && in[3].rank != 2))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: A and B must be 2-D");
  if (in[0].rank < 0 || in[3].rank < 0) {
    *M = *K = *N = -1;
    return WQ_OK;
  }
  *M = s->trans_a ? in[0].dims[1] : in[0].dims[0];
  *K = s->trans_a ? in[0].dims[0] : in[0].dims[1];
  int64_t kb = s->trans_b ? in[3].dims[1] : in[3].dims[0];
  *N = s->trans_b ? in[3].dims[0] : in[3].dims[1];
  if (*K >= 0 && kb >= 0 && *K != kb)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: A has K = %lld but B has %lld",
                   (long long)*K, (long long)kb);
  return WQ_OK;
}

static wq_dtype output_dtype(const wq_node *node, const wq_value *in) {
  if (!present(node, 7))
    return WQ_DT_FLOAT;
  return present(node, 8) ? in[8].dtype : in[0].dtype;
}

static wq_status qgemm_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  int64_t M, K, N;
  WQ_TRY(qgemm_dims(node, in, &M, &K, &N, err));
  out[0].dtype = output_dtype(node, in);
  if (out[0].dtype != WQ_DT_FLOAT)
    WQ_TRY(wq_quant_expect_dtype(node, "Y", out[0].dtype, WQ_QDT_8BIT, err));
  if (M < 0 && in[0].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  out[0].rank = 2;
  out[0].dims[0] = M;
  out[0].dims[1] = N;
  return WQ_OK;
}

/* One float / one zero point of a parameter input with 1 or `n` entries. */
static wq_status param_count(const wq_node *node, const wq_value *v, int64_t n, const char *what,
                             wq_error *err) {
  int64_t count = wq_value_numel(v);
  if (count != 1 && count != n)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QGemm: %s has %lld values; needs 1 or one per column (%lld)", what,
                   (long long)count, (long long)n);
  return WQ_OK;
}

static wq_status qgemm_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qgemm_state *s = node->op_state;
  int64_t M, K, N;
  WQ_TRY(qgemm_dims(node, in, &M, &K, &N, err));
  const wq_value *a_zp = wq_quant_optional_input(node, in, 2);
  const wq_value *b_zp = wq_quant_optional_input(node, in, 5);
  const wq_value *c = present(node, 6) ? &in[6] : NULL;
  if (in[1].dtype != WQ_DT_FLOAT || wq_value_numel(&in[1]) != 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "QGemm: a_scale must be one float");
  if (a_zp && (a_zp->dtype != in[0].dtype || wq_value_numel(a_zp) != 1))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QGemm: a_zero_point must be one value of A's dtype");
  if (in[4].dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "QGemm: b_scale must be float");
  WQ_TRY(param_count(node, &in[4], N, "b_scale", err));
  if (b_zp) {
    if (b_zp->dtype != in[3].dtype)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QGemm: b_zero_point must have B's dtype");
    WQ_TRY(param_count(node, b_zp, N, "b_zero_point", err));
  }
  if (c) {
    int64_t count = wq_value_numel(c);
    if (c->dtype != WQ_DT_INT32 || (count != 1 && count != N && count != M * N))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "QGemm: C must be int32 with 1, N or M*N values");
  }
  const bool quantized = out[0].dtype != WQ_DT_FLOAT;
  float y_scale = 1.0f;
  int32_t y_zp = 0, y_min = 0, y_max = 0;
  if (quantized) {
    if (in[7].dtype != WQ_DT_FLOAT || wq_value_numel(&in[7]) != 1 ||
        !(((const float *)in[7].data)[0] > 0.0f))
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QGemm: y_scale must be one positive float");
    y_scale = ((const float *)in[7].data)[0];
    if (present(node, 8))
      y_zp = wq_ref_q_load(in[8].data, in[8].dtype, 0);
    y_min = out[0].dtype == WQ_DT_INT8 ? -128 : 0;
    y_max = out[0].dtype == WQ_DT_INT8 ? 127 : 255;
  }
  const float a_scale = ((const float *)in[1].data)[0];
  const int32_t a_zero = a_zp ? wq_ref_q_load(a_zp->data, a_zp->dtype, 0) : 0;
  const float *b_scales = in[4].data;
  const bool b_scale_per_n = wq_value_numel(&in[4]) > 1;
  const bool b_zp_per_n = b_zp && wq_value_numel(b_zp) > 1;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      int32_t b_zero = b_zp ? wq_ref_q_load(b_zp->data, b_zp->dtype, b_zp_per_n ? n : 0) : 0;
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++) {
        int64_t ai = s->trans_a ? k * M + m : m * K + k;
        int64_t bi = s->trans_b ? n * K + k : k * N + n;
        acc += (int64_t)(wq_ref_q_load(in[0].data, in[0].dtype, ai) - a_zero) *
               (wq_ref_q_load(in[3].data, in[3].dtype, bi) - b_zero);
      }
      if (c) {
        int64_t count = wq_value_numel(c);
        acc += ((const int32_t *)c->data)[count == 1 ? 0 : count == N ? n : m * N + n];
      }
      float scale = s->alpha * a_scale * b_scales[b_scale_per_n ? n : 0];
      if (quantized)
        wq_ref_q_store(out[0].data, out[0].dtype, m * N + n,
                       wq_ref_requantize_value((int32_t)acc, scale / y_scale, y_zp, y_min, y_max));
      else
        ((float *)out[0].data)[m * N + n] = (float)(int32_t)acc * scale;
    }
  return WQ_OK;
}

const wq_op wq_op_contrib_qgemm = {.int8 = WQ_INT8_CONTRIB,
                                   .int8_as = WQ_OPID(int8_gemm),
                                   .op_type = "QGemm",
                                   .domain = "com.microsoft",
                                   .min_opset = 1,
                                   .min_inputs = 5,
                                   .max_inputs = 9,
                                   .min_outputs = 1,
                                   .max_outputs = 1,
                                   .flags = WQ_OP_FLAG_INT8,
                                   .prepare = qgemm_prepare,
                                   .free_state = free,
                                   .infer = qgemm_infer,
                                   .run = qgemm_run};
