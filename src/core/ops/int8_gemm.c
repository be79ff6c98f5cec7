/* QGemm (domain "wasmq"): an int8/uint8 activation a [..., K] (rank 2
 * [K, M] with trans_a = 1) times a constant int8/uint8 weight in the
 * canonical [N, K] layout — one row per output feature, whatever MatMul,
 * Gemm transB or QLinearMatMul form it came from — plus an optional constant
 * int32 bias [N] in accumulator units. Output [..., N] (or [M, N]).
 * Quantization parameters come from the tensors: a per tensor, w per tensor
 * or per row (output feature), y per tensor. Attributes: y_dtype (int8,
 * uint8, or int32 = raw accumulator as MatMulInteger), act_min/act_max
 * (fused clamp), trans_a. The kernel is wq_int8_gemm_ref. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/config.h"
#include "../kernels/qgemm.h"
#include "../kernels/ref/int8_gemm_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "int8_common.h"

typedef struct {
  bool trans_a;
  wq_dtype y_dtype;
  int32_t act_min, act_max;
  bool leaky; /* fused LeakyRelu (act_alpha) */
  float leaky_alpha;
  /* Filled by the plan hook. */
  bool planned;
  int64_t N, K;
  int32_t a_zero_point, y_zero_point;
  int32_t *w;        /* [N, K] centered */
  int32_t *bias;     /* [N] or NULL */
  float *multiplier; /* [N]; NULL for int32 output */
  /* int8/uint8 output without trans_a: weights packed for the kernels of
   * kernels/qgemm.h (SIMD in wasm, the scalar reference natively). */
  bool has_packed;
  wq_qgemm_packed packed;
} qgemm_state;

static void qgemm_free(void *p) {
  qgemm_state *s = p;
  if (!s)
    return;
  free(s->w);
  free(s->bias);
  free(s->multiplier);
  wq_qgemm_packed_free(&s->packed);
  free(s);
}

static wq_status qgemm_prepare(wq_node *node, wq_error *err) {
  qgemm_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QGemm: out of memory");
  int64_t trans_a = 0;
  wq_status st = wq_attr_int(node, "trans_a", 0, &trans_a, err);
  if (st == WQ_OK && trans_a != 0 && trans_a != 1)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "QGemm: trans_a is %lld (must be 0 or 1)",
                 (long long)trans_a);
  if (st == WQ_OK)
    st = wq_int8_read_y_dtype(node, true, &s->y_dtype, err);
  if (st == WQ_OK)
    st = wq_int8_read_act_range(node, s->y_dtype, &s->act_min, &s->act_max, err);
  if (st == WQ_OK)
    st = wq_int8_read_act_alpha(node, s->y_dtype, &s->leaky, &s->leaky_alpha, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->trans_a = trans_a == 1;
  node->op_state = s;
  return WQ_OK;
}

/* M (rows of the product) and the output shape. */
static wq_status qgemm_shape(const wq_node *node, const wq_value *a, const wq_value *w,
                             wq_value *out, int64_t *M, wq_error *err) {
  const qgemm_state *s = node->op_state;
  out->dtype = s->y_dtype;
  *M = -1;
  if (w->rank >= 0 && w->rank != 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: w must be [N, K], has rank %d", w->rank);
  if (a->rank < 0 || w->rank < 0) {
    out->rank = -1;
    return WQ_OK;
  }
  int64_t N = w->dims[0], K = w->dims[1];
  if (s->trans_a) {
    if (a->rank != 2)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "QGemm: with trans_a, a must be [K, M], has rank %d", a->rank);
    if (a->dims[0] >= 0 && K >= 0 && a->dims[0] != K)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: a is [%lld, M] but w has K = %lld",
                     (long long)a->dims[0], (long long)K);
    out->rank = 2;
    out->dims[0] = a->dims[1];
    out->dims[1] = N;
    *M = a->dims[1];
  } else {
    if (a->rank < 1)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: a must have rank >= 1");
    int64_t ak = a->dims[a->rank - 1];
    if (ak >= 0 && K >= 0 && ak != K)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "QGemm: a's last dim is %lld but w has K = %lld", (long long)ak, (long long)K);
    out->rank = a->rank;
    memcpy(out->dims, a->dims, sizeof out->dims);
    out->dims[a->rank - 1] = N;
    int64_t rows = 1;
    for (int i = 0; i + 1 < a->rank; i++)
      rows = (rows < 0 || a->dims[i] < 0) ? -1 : rows * a->dims[i];
    *M = rows;
  }
  if (wq_value_shape_known(out))
    WQ_TRY(wq_shape_check(out->dims, out->rank, node->name, "QGemm output", err));
  return WQ_OK;
}

static wq_status qgemm_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  WQ_TRY(wq_int8_expect_8bit(node, "a", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "w", in[1].dtype, err));
  bool has_bias = node->n_inputs > 2 && wq_value_present(&in[2]);
  if (has_bias && in[2].dtype != WQ_DT_INT32)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: bias has dtype %s; it must be int32",
                   wq_dtype_name(in[2].dtype));
  int64_t M;
  WQ_TRY(qgemm_shape(node, &in[0], &in[1], &out[0], &M, err));
  if (has_bias && in[2].rank >= 0 && in[1].rank == 2 && in[1].dims[0] >= 0 &&
      (in[2].rank != 1 || in[2].dims[0] != in[1].dims[0]))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: bias must have shape [%lld]",
                   (long long)in[1].dims[0]);
  return WQ_OK;
}

static wq_status qgemm_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel, wq_error *err) {
  qgemm_state *s = node->op_state;
  const wq_tensor *w;
  WQ_TRY(wq_int8_constant_input(node, g, 1, "w", &w, err));
  wq_value wv = wq_tensor_value(w);
  WQ_TRY(wq_int8_expect_8bit(node, "w", wv.dtype, err));
  if (wv.rank != 2 || !wq_value_shape_known(&wv))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: w must be a constant [N, K]");
  const wq_qparams *qa, *qw, *qy = NULL;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qa, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qw, err));
  float sa, sy = 1.0f;
  WQ_TRY(wq_int8_per_tensor(node, qa, "a", &sa, &s->a_zero_point, err));
  if (s->y_dtype != WQ_DT_INT32) {
    WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
    WQ_TRY(wq_int8_per_tensor(node, qy, "y", &sy, &s->y_zero_point, err));
    if (qy->dtype != s->y_dtype)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QGemm: y quantization parameters are %s but y_dtype is %s",
                     wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  }
  const int64_t N = wv.dims[0], K = wv.dims[1];
  /* Packed for kernels/qgemm.h: the reference loop's centered int32 copy of
   * the weights (4 bytes each) is not made. */
  const bool pack = s->y_dtype != WQ_DT_INT32 && !s->trans_a && N > 0 && K > 0;
  free(s->w);
  s->w = NULL;
  WQ_TRY(wq_int8_prepare_weights(node, g, &wv, qw, sa, sy, s->y_dtype != WQ_DT_INT32,
                                 pack ? NULL : &s->w, &s->bias, &s->multiplier, err));
  s->N = N;
  s->K = K;
  wq_qgemm_packed_free(&s->packed);
  s->has_packed = false;
  if (pack) {
    int32_t *w_zero_point = malloc(sizeof(int32_t) * (size_t)N);
    if (!w_zero_point)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QGemm: out of memory");
    for (int64_t n = 0; n < N; n++)
      w_zero_point[n] = qw->zero_point[wq_qparams_index_of(qw, n * K)];
    wq_qgemm_desc d = {.n = N,
                       .k = K,
                       .a_dtype = qa->dtype,
                       .a_zero_point = s->a_zero_point,
                       .w_dtype = wv.dtype,
                       .w = wv.data,
                       .w_k_stride = 1,
                       .w_n_stride = K,
                       .w_zero_point = w_zero_point,
                       .w_zero_point_count = N,
                       .bias = s->bias,
                       .multiplier = s->multiplier,
                       .multiplier_count = N,
                       .y_dtype = s->y_dtype,
                       .y_zero_point = s->y_zero_point,
                       .y_min = s->act_min,
                       .y_max = s->act_max,
                       .leaky = s->leaky,
                       .leaky_alpha = s->leaky_alpha};
    wq_status st = wq_qgemm_pack(&s->packed, wq_kernels_of(g->kernels)->qgemm, &d, node->name, err);
    free(w_zero_point);
    WQ_TRY(st);
    s->has_packed = true;
  }
  /* The decision record: the packed variant, else the reference loop. */
  const wq_value av = wq_tensor_value(&g->tensors[node->inputs[0]]);
  kernel->name = wq_qgemm_kernel_name(wq_value_shape_known(&av) ? wq_value_numel(&av) / K : 0);
  kernel->isa = wq_isa_name(s->has_packed ? s->packed.config->isa : WQ_ISA_REF);
  s->planned = true;
  return WQ_OK;
}

static int64_t qgemm_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  (void)g;
  const qgemm_state *s = node->op_state;
  *scratch = s && s->has_packed ? wq_qgemm_scratch_bytes(&s->packed) : 0;
  if (!s || !s->planned)
    return 0;
  return wq_int8_weights_bytes(s->w ? s->N * s->K : 0, s->N) +
         (s->has_packed ? s->packed.bytes : 0);
}

static wq_status qgemm_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qgemm_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  int64_t M;
  wq_value shape_out = out[0];
  WQ_TRY(qgemm_shape(node, &in[0], &in[1], &shape_out, &M, err));
  if (M < 0 || in[1].dims[0] != s->N || in[1].dims[1] != s->K)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGemm: shapes do not match the plan");
  if (s->has_packed)
    return wq_qgemm_run(&s->packed, M, in[0].data, s->K, out[0].data, s->N, err);
  wq_int8_gemm_params p = {.M = M,
                           .K = s->K,
                           .N = s->N,
                           .trans_a = s->trans_a,
                           .a_dtype = in[0].dtype,
                           .a_zero_point = s->a_zero_point,
                           .w = s->w,
                           .bias = s->bias,
                           .out = {.y_dtype = s->y_dtype,
                                   .multiplier = s->multiplier,
                                   .zero_point = s->y_zero_point,
                                   .act_min = s->act_min,
                                   .act_max = s->act_max,
                                   .leaky = s->leaky,
                                   .leaky_alpha = s->leaky_alpha}};
  wq_int8_gemm_ref(&p, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_int8_gemm = {.int8 = WQ_INT8_KERNEL,
                               .op_type = "QGemm",
                               .domain = WQ_INT8_DOMAIN,
                               .min_opset = 1,
                               .min_inputs = 2,
                               .max_inputs = 3,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .prepare = qgemm_prepare,
                               .free_state = qgemm_free,
                               .infer = qgemm_infer,
                               .run = qgemm_run,
                               .plan = qgemm_plan,
                               .memory = qgemm_memory};
