/* The packed-kernel references (ref_qgemm, ref_qconv_nhwc, reached through
 * the kernels/qgemm.h and qconv.h entry points) against the ONNX reference
 * kernels of quant_ref.h / ref_qconv.h: identical bytes on random shapes
 * and quantization parameters (uint8 and int8 everywhere, per-tensor and
 * per-channel weight zero points, fused clamps), and exact hand-computed
 * values for a few ties and saturations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/config.h"
#include "kernels/qconv.h"
#include "kernels/qgemm.h"
#include "kernels/ref/quant_ref.h"
#include "kernels/ref/ref_qconv.h"
#include "wq_test.h"

static uint64_t rng = 0x12345678ABCDEFULL;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static int32_t rand_int(int32_t lo, int32_t hi) {
  return lo + (int32_t)(next_u32() % (uint32_t)(hi - lo + 1));
}
static wq_dtype rand_q8(void) { return rand_int(0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8; }
static int32_t lo_of(wq_dtype d) { return d == WQ_DT_UINT8 ? 0 : -128; }
static int32_t hi_of(wq_dtype d) { return d == WQ_DT_UINT8 ? 255 : 127; }
static int32_t load_q8(const uint8_t *p, wq_dtype d, int64_t i) {
  return d == WQ_DT_UINT8 ? p[i] : (int8_t)p[i];
}

/* ONNX semantics spelled out with quant_ref: center, exact accumulate,
 * requantize, then the fused clamp. */
static int32_t onnx_output(int32_t acc, float mult, int32_t zp, wq_dtype dt, int32_t lo,
                           int32_t hi) {
  int32_t q = wq_ref_requantize_value(acc, mult, zp, lo_of(dt), hi_of(dt));
  return q < lo ? lo : (q > hi ? hi : q);
}

static void gemm_case(int64_t m, int64_t n, int64_t k) {
  wq_qgemm_desc d = {0};
  d.n = n;
  d.k = k;
  d.a_dtype = rand_q8();
  d.w_dtype = rand_q8();
  d.y_dtype = rand_q8();
  d.a_zero_point = rand_int(lo_of(d.a_dtype), hi_of(d.a_dtype));
  d.w_k_stride = n;
  d.w_n_stride = 1;
  uint8_t *a = malloc((size_t)(m * k)), *w = malloc((size_t)(k * n));
  uint8_t *y = malloc((size_t)(m * n));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)n), *bias = malloc(sizeof(int32_t) * (size_t)n);
  float *mult = malloc(sizeof(float) * (size_t)n);
  int32_t *ac = malloc(sizeof(int32_t) * (size_t)(m * k)),
          *wc = malloc(sizeof(int32_t) * (size_t)(k * n));
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = (uint8_t)next_u32();
  for (int64_t i = 0; i < k * n; i++)
    w[i] = (uint8_t)next_u32();
  int per_channel = rand_int(0, 1);
  for (int64_t j = 0; j < n; j++) {
    wzp[j] = rand_int(lo_of(d.w_dtype), hi_of(d.w_dtype));
    bias[j] = rand_int(-5000, 5000);
    mult[j] = (j % 3 == 0) ? 0.5f : 1.0f / (float)(40 * k) * (float)(1 + j % 9);
  }
  d.w = w;
  d.w_zero_point = wzp;
  d.w_zero_point_count = per_channel ? n : 1;
  d.bias = bias;
  d.multiplier = mult;
  d.multiplier_count = n;
  d.y_zero_point = rand_int(lo_of(d.y_dtype), hi_of(d.y_dtype));
  d.y_min = rand_int(0, 1) ? d.y_zero_point : lo_of(d.y_dtype);
  d.y_max = hi_of(d.y_dtype);
  wq_qgemm_packed p;
  wq_error err;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "gemm", &err) == WQ_OK);
  CHECK(wq_qgemm_run(&p, m, a, k, y, n, &err) == WQ_OK);
  /* The ONNX path: wq_ref_qmatmul_acc on centered operands (+ bias). */
  for (int64_t i = 0; i < m * k; i++)
    ac[i] = load_q8(a, d.a_dtype, i) - d.a_zero_point;
  for (int64_t i = 0; i < k * n; i++)
    wc[i] = load_q8(w, d.w_dtype, i) - wzp[per_channel ? i % n : 0];
  wq_qmatmul_geometry g = {0};
  g.M = m, g.K = k, g.N = n, g.batch_count = 1;
  wq_ref_qmatmul_acc(&g, ac, wc, acc);
  int mismatches = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int32_t sum = (int32_t)((uint32_t)acc[i * n + j] + (uint32_t)bias[j]);
      int32_t want = onnx_output(sum, mult[j], d.y_zero_point, d.y_dtype, d.y_min, d.y_max);
      mismatches += load_q8(y, d.y_dtype, i * n + j) != want;
    }
  CHECK_MSG(mismatches == 0, "qgemm %lldx%lldx%lld: %d mismatches", (long long)m, (long long)n,
            (long long)k, mismatches);
  wq_qgemm_packed_free(&p);
  free(a), free(w), free(y), free(wzp), free(bias), free(mult), free(ac), free(wc), free(acc);
}

static void conv_case(int depthwise) {
  wq_qconv_desc d = {0};
  wq_conv_geometry *g = &d.geo;
  do {
    memset(g, 0, sizeof *g);
    g->n_spatial = 2;
    for (int i = 0; i < 2; i++) {
      g->in[i] = rand_int(1, 9);
      g->kernel[i] = rand_int(1, 4);
      g->stride[i] = rand_int(1, 2);
      g->dilation[i] = rand_int(1, 2);
      g->pad_begin[i] = rand_int(0, 2);
      g->pad_end[i] = rand_int(0, 2);
    }
  } while (wq_conv_geometry_resolve(g, WQ_AUTO_PAD_NOTSET, false) >= 0);
  d.batch = rand_int(1, 2);
  if (depthwise) {
    d.in_channels = d.out_channels = d.group = rand_int(1, 20);
  } else {
    d.group = rand_int(1, 3);
    d.in_channels = d.group * rand_int(1, 6);
    d.out_channels = d.group * rand_int(1, 6);
  }
  const int64_t N = d.batch, C = d.in_channels, M = d.out_channels, cg = C / d.group;
  const int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1];
  const int64_t KK = g->kernel[0] * g->kernel[1];
  d.x_dtype = rand_q8();
  d.w_dtype = rand_q8();
  d.y_dtype = rand_q8();
  d.x_zero_point = rand_int(lo_of(d.x_dtype), hi_of(d.x_dtype));
  uint8_t *x = malloc((size_t)(N * H * W * C)), *w = malloc((size_t)(M * cg * KK));
  uint8_t *y = malloc((size_t)(N * OH * OW * M));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)M), *bias = malloc(sizeof(int32_t) * (size_t)M);
  float *mult = malloc(sizeof(float) * (size_t)M);
  int32_t *xc = malloc(sizeof(int32_t) * (size_t)(N * C * H * W));
  int32_t *wc = malloc(sizeof(int32_t) * (size_t)(M * cg * KK));
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)(N * M * OH * OW));
  for (int64_t i = 0; i < N * H * W * C; i++)
    x[i] = (uint8_t)next_u32();
  for (int64_t i = 0; i < M * cg * KK; i++)
    w[i] = (uint8_t)next_u32();
  int per_channel = rand_int(0, 1);
  for (int64_t j = 0; j < M; j++) {
    wzp[j] = rand_int(lo_of(d.w_dtype), hi_of(d.w_dtype));
    bias[j] = rand_int(-5000, 5000);
    mult[j] = (j % 3 == 0) ? 0.25f : 1.0f / (float)(40 * cg * KK) * (float)(1 + j % 7);
  }
  d.w = w;
  d.w_zero_point = wzp;
  d.w_zero_point_count = per_channel ? M : 1;
  d.bias = bias;
  d.multiplier = mult;
  d.multiplier_count = M;
  d.y_zero_point = rand_int(lo_of(d.y_dtype), hi_of(d.y_dtype));
  d.y_min = lo_of(d.y_dtype);
  d.y_max = rand_int(0, 1) ? d.y_zero_point : hi_of(d.y_dtype);
  wq_qconv_plan p;
  wq_error err;
  CHECK(wq_qconv_plan_init(&p, wq_kernel_set_default()->qconv, &d, "conv", &err) == WQ_OK);
  const bool pointwise = KK == 1 && g->stride[0] == 1 && g->stride[1] == 1 &&
                         g->pad_begin[0] == 0 && g->pad_begin[1] == 0 && OH == H && OW == W;
  const wq_qconv_algo want_algo =
      d.group == 1 ? (pointwise ? WQ_QCONV_GEMM_1X1 : WQ_QCONV_IM2COL_GEMM)
                   : (d.group == C && d.group == M ? WQ_QCONV_DEPTHWISE : WQ_QCONV_GROUPED_GEMM);
  CHECK(p.algo == want_algo);
  CHECK(wq_qconv_run(&p, x, y, &err) == WQ_OK);
  /* ONNX path on NCHW: transpose, center, wq_ref_qconv_acc. */
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < H * W; i++)
        xc[(n * C + c) * H * W + i] =
            load_q8(x, d.x_dtype, (n * H * W + i) * C + c) - d.x_zero_point;
  for (int64_t i = 0; i < M * cg * KK; i++)
    wc[i] = load_q8(w, d.w_dtype, i) - wzp[per_channel ? i / (cg * KK) : 0];
  wq_qconv_shape s = {N, C, M, d.group, *g};
  wq_ref_qconv_acc(&s, xc, wc, bias, acc);
  int mismatches = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t i = 0; i < OH * OW; i++) {
        int32_t want = onnx_output(acc[(n * M + m) * OH * OW + i], mult[m], d.y_zero_point,
                                   d.y_dtype, d.y_min, d.y_max);
        mismatches += load_q8(y, d.y_dtype, (n * OH * OW + i) * M + m) != want;
      }
  CHECK_MSG(mismatches == 0, "qconv %s c=%lld m=%lld g=%lld: %d mismatches",
            wq_qconv_algo_name(p.algo), (long long)C, (long long)M, (long long)d.group, mismatches);
  wq_qconv_plan_free(&p);
  free(x), free(w), free(y), free(wzp), free(bias), free(mult), free(xc), free(wc), free(acc);
}

/* Hand-computed: ties round to even, saturation, the fused clamp. */
static void exact_values(void) {
  /* y = round(acc * 0.5) + zp with acc = a * w: 3*1 -> 1.5 -> 2, 5*1 -> 2.5 -> 2,
   * -3 -> -1.5 -> -2, 1000 -> saturates at 127, -1000 -> clamped at act_min -10. */
  int8_t a[5] = {3, 5, -3, 100, -100}, w[1] = {1}, y[5];
  int8_t w10[1] = {10};
  float half = 0.5f;
  wq_qgemm_desc d = {.n = 1,
                     .k = 1,
                     .a_dtype = WQ_DT_INT8,
                     .w_dtype = WQ_DT_INT8,
                     .w = w,
                     .w_k_stride = 1,
                     .w_n_stride = 1,
                     .multiplier = &half,
                     .multiplier_count = 1,
                     .y_dtype = WQ_DT_INT8,
                     .y_zero_point = 0,
                     .y_min = -10,
                     .y_max = 127};
  wq_qgemm_packed p;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "t", NULL) == WQ_OK);
  CHECK(wq_qgemm_run(&p, 3, a, 1, y, 1, NULL) == WQ_OK);
  CHECK(y[0] == 2 && y[1] == 2 && y[2] == -2);
  wq_qgemm_packed_free(&p);
  d.w = w10;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "t", NULL) == WQ_OK);
  CHECK(wq_qgemm_run(&p, 2, a + 3, 1, y, 1, NULL) == WQ_OK);
  CHECK(y[0] == 127 && y[1] == -10);
  wq_qgemm_packed_free(&p);
  /* Bad descriptors fail with a named reason, never crash. */
  wq_error err;
  d.y_min = 5;
  d.y_max = 4;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "t", &err) == WQ_ERR_INVALID_ARG);
  CHECK(strstr(err.message, "range") != NULL);
  d.y_min = -128;
  d.y_max = 127;
  d.multiplier_count = 3;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "t", &err) == WQ_ERR_INVALID_ARG);
  CHECK(strstr(err.message, "multipliers") != NULL);
  /* Huge geometry: k x n past the element limit (2^31 x 2^31 would wrap the
   * packs' k_padded x n_padded) fails before any size is computed. */
  d.multiplier_count = 1;
  d.k = d.n = (int64_t)1 << 31;
  CHECK(wq_qgemm_pack(&p, wq_kernel_set_default()->qgemm, &d, "t", &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "element limit") != NULL);
}

/* A QConv whose buffers' sizes would overflow: 2^31 channels with a
 * 2^40-wide kernel (the pad row kernel_w x channels is 2^71), and weights of
 * 2^20 x 2^20 channels (2^40 elements): clear errors before any allocation
 * or read of the (one-byte) weights. */
static void conv_huge_geometry(void) {
  uint8_t w = 0;
  float mult = 1.0f;
  wq_qconv_desc d = {.batch = 1,
                     .in_channels = (int64_t)1 << 31,
                     .out_channels = (int64_t)1 << 31,
                     .group = (int64_t)1 << 31,
                     .x_dtype = WQ_DT_INT8,
                     .w_dtype = WQ_DT_INT8,
                     .y_dtype = WQ_DT_INT8,
                     .w = &w,
                     .multiplier = &mult,
                     .multiplier_count = 1,
                     .y_min = -128,
                     .y_max = 127};
  d.geo = (wq_conv_geometry){.n_spatial = 2,
                             .in = {1, 1},
                             .out = {1, 1},
                             .kernel = {1, (int64_t)1 << 40},
                             .stride = {1, 1},
                             .dilation = {1, 1}};
  wq_qconv_plan p;
  wq_error err;
  CHECK(wq_qconv_plan_init(&p, wq_kernel_set_default()->qconv, &d, "huge", &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "element limit") != NULL && strcmp(err.node, "huge") == 0);
  d.in_channels = d.out_channels = (int64_t)1 << 20;
  d.group = 1;
  d.geo.kernel[1] = 1;
  CHECK(wq_qconv_plan_init(&p, wq_kernel_set_default()->qconv, &d, "huge", &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "1048576 -> 1048576 channels") != NULL);
  /* The zero-point-padded input copy of a plan with 2^28 pads: 256 x 2^28 x
   * 2^28 x 2^20 bytes overflows int64; the copy is declined (NULL), not
   * sized from a wrapped product. */
  wq_qconv_plan huge = {.batch = 256,
                        .in_channels = (int64_t)1 << 20,
                        .in_h = 1,
                        .in_w = 1,
                        .out_h = 1,
                        .out_w = 1,
                        .kernel_h = 1,
                        .kernel_w = 1,
                        .stride_h = 1,
                        .stride_w = 1,
                        .dil_h = 1,
                        .dil_w = 1,
                        .pad_top = (int64_t)1 << 28,
                        .pad_left = (int64_t)1 << 28};
  wq_qconv_plan unpadded;
  uint8_t x = 0;
  CHECK(wq_qconv_padded_copy(&huge, &x, &unpadded) == NULL);
}

/* The selection is a pure function of the capabilities: natively only the
 * reference is linked, so every family selects it, forcing it works and
 * forcing another ISA fails naming it; equal inputs give equal sets. */
static void kernel_selection(void) {
  const wq_kernel_set *def = wq_kernel_set_default();
  CHECK(wq_kernel_isas_linked() == WQ_ISA_BIT(WQ_ISA_REF));
  CHECK(def->isa == WQ_ISA_REF && def->qgemm->isa == WQ_ISA_REF && def->qconv->isa == WQ_ISA_REF &&
        def->sgemm->isa == WQ_ISA_REF && def->quantize->isa == WQ_ISA_REF &&
        def->qeltwise->isa == WQ_ISA_REF && def->nhwc->isa == WQ_ISA_REF);
  CHECK(strcmp(def->qgemm->name, "ref") == 0 && strcmp(wq_isa_name(def->qconv->isa), "ref") == 0);
  wq_kernel_set a, b;
  wq_error err;
  CHECK(wq_kernel_set_select(&a, 0, -1, &err) == WQ_OK);
  CHECK(wq_kernel_set_select(&b, WQ_ISA_BIT(WQ_ISA_SIMD128) | WQ_ISA_BIT(WQ_ISA_RELAXED), -1,
                             &err) == WQ_OK);
  CHECK(memcmp(&a, def, sizeof a) == 0 && memcmp(&b, def, sizeof b) == 0);
  CHECK(wq_kernel_set_select(&a, 0, WQ_ISA_REF, &err) == WQ_OK && a.qgemm == def->qgemm);
  CHECK(wq_kernel_set_select(&a, 0, WQ_ISA_RELAXED, &err) == WQ_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(err.message, "'relaxed'") && strstr(err.message, "no such variant"), "%s",
            err.message);
  CHECK(wq_kernel_set_select(&a, 0, WQ_ISA_COUNT, &err) == WQ_ERR_UNSUPPORTED);
  const wq_qgemm_config *const *v;
  CHECK(wq_qgemm_variants(&v) == 1 && v[0] == def->qgemm);
}

int main(void) {
  exact_values();
  kernel_selection();
  static const int64_t sizes[] = {1, 2, 3, 5, 8, 9, 17, 33};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      gemm_case(sizes[i], sizes[j], sizes[(i + j) % 8] * 3 + 1);
  for (int c = 0; c < 60; c++)
    conv_case(c % 3 == 0);
  conv_huge_geometry();
  WQ_TEST_END();
}
