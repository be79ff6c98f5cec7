/* Every linked int8 GEMM/GEMV variant (kernels/config.h) vs the scalar
 * reference variant, bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/config.h"
#include "kernels/qgemm.h"

static wq_dtype random_q8(wq_ktest *t) { return wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8; }
static int32_t q8_lo(wq_dtype d) { return d == WQ_DT_UINT8 ? 0 : -128; }
static int32_t q8_hi(wq_dtype d) { return d == WQ_DT_UINT8 ? 255 : 127; }

static void fill_q8(wq_ktest *t, uint8_t *buf, int64_t count) {
  for (int64_t i = 0; i < count; i++)
    buf[i] = (uint8_t)wq_ktest_u32(t);
}

/* A run with exactly the scratch the packing declared, allocating nothing. */
static int run_watched(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                       int64_t ldy, wq_error *err) {
  void *block = wq_ktest_run_begin(wq_qgemm_scratch_bytes(p));
  const int ran = wq_qgemm_run(p, m, a, lda, y, ldy, err) == WQ_OK;
  return wq_ktest_run_end(block) == 0 && ran;
}

/* One random case of the given shape; returns 1 when every variant gives
 * the reference's bytes (the failing variant's name goes into `what`). */
static int run_case(wq_ktest *t, int64_t m, int64_t n, int64_t k, char *what, size_t what_cap) {
  wq_qgemm_desc d;
  memset(&d, 0, sizeof d);
  d.n = n;
  d.k = k;
  d.a_dtype = random_q8(t);
  d.w_dtype = random_q8(t);
  d.y_dtype = random_q8(t);
  /* A quarter of the cases: the float output stage (dynamic quantization's
   * fused Cast -> Mul -> Add -> Relu), bit for bit too. */
  const int float_out = wq_ktest_int(t, 0, 3) == 0;
  const size_t y_size = float_out ? sizeof(float) : 1;
  if (float_out)
    d.y_dtype = WQ_DT_FLOAT;
  d.a_zero_point = wq_ktest_int(t, q8_lo(d.a_dtype), q8_hi(d.a_dtype));
  int transposed = wq_ktest_int(t, 0, 1);
  d.w_k_stride = transposed ? 1 : n;
  d.w_n_stride = transposed ? k : 1;
  int per_channel_zp = wq_ktest_int(t, 0, 2); /* 0: none, 1: per-tensor, 2: per-channel */
  int per_channel_mult = wq_ktest_int(t, 0, 1);
  int with_bias = wq_ktest_int(t, 0, 1);
  int64_t lda = k + wq_ktest_int(t, 0, 3), ldy = n + wq_ktest_int(t, 0, 3);
  uint8_t *a = malloc((size_t)(m * lda));
  uint8_t *w = malloc((size_t)(n * k));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)n);
  int32_t *bias = malloc(sizeof(int32_t) * (size_t)n);
  float *mult = malloc(sizeof(float) * (size_t)n);
  uint8_t *y_ref = malloc((size_t)(m * ldy) * y_size), *y_simd = malloc((size_t)(m * ldy) * y_size);
  fill_q8(t, a, m * lda);
  fill_q8(t, w, n * k);
  /* Symmetric weights usually have zp 0 (int8) or 128 (uint8). */
  for (int64_t j = 0; j < n; j++)
    wzp[j] = per_channel_zp ? wq_ktest_int(t, q8_lo(d.w_dtype), q8_hi(d.w_dtype))
                            : (d.w_dtype == WQ_DT_UINT8 ? 128 : 0);
  /* Multipliers scaled to the accumulator's spread, some exact powers of two
   * so that ties (x.5) occur and round-half-to-even is exercised. */
  float base = 1.0f / (float)(64 * (k < 16 ? 16 : k));
  for (int64_t j = 0; j < n; j++) {
    bias[j] = wq_ktest_int(t, -20000, 20000);
    mult[j] = wq_ktest_int(t, 0, 3) == 0 ? 1.0f / (float)(1 << wq_ktest_int(t, 1, 12))
                                         : base * wq_ktest_float(t, 0.05f, 40.0f);
  }
  d.w = w;
  d.w_zero_point = wzp;
  d.w_zero_point_count = per_channel_zp == 2 ? n : 1;
  d.bias = with_bias ? bias : NULL;
  d.multiplier = mult;
  d.multiplier_count = per_channel_mult ? n : 1;
  d.y_zero_point = wq_ktest_int(t, q8_lo(d.y_dtype), q8_hi(d.y_dtype));
  d.y_min = q8_lo(d.y_dtype);
  d.y_max = q8_hi(d.y_dtype);
  if (wq_ktest_int(t, 0, 2) == 0) { /* fused Relu-like or Clip-like clamp */
    d.y_min = d.y_zero_point;
    if (wq_ktest_int(t, 0, 1))
      d.y_max = d.y_min + (q8_hi(d.y_dtype) - d.y_min) / 2;
  }
  float *float_bias = malloc(sizeof(float) * (size_t)n);
  for (int64_t j = 0; j < n; j++)
    float_bias[j] = wq_ktest_float(t, -3.0f, 3.0f);
  d.float_bias = wq_ktest_int(t, 0, 3) ? float_bias : NULL;
  d.float_relu = wq_ktest_int(t, 0, 1);
  d.leaky = wq_ktest_int(t, 0, 2) == 0; /* a fused LeakyRelu (8-bit y) */
  d.leaky_alpha = wq_ktest_float(t, 0.0f, 1.0f);
  memset(y_ref, 0xAB, (size_t)(m * ldy) * y_size);
  memset(y_simd, 0xAB, (size_t)(m * ldy) * y_size);

  const wq_qgemm_config *const *variants;
  const int n_variants = wq_qgemm_variants(&variants);
  const char *failed = "";
  wq_qgemm_packed pr, ps;
  wq_error err;
  int ok = wq_qgemm_pack(&pr, variants[0], &d, "test", &err) == WQ_OK &&
           run_watched(&pr, m, a, lda, y_ref, ldy, &err);
  for (int v = 1; ok && v < n_variants; v++) {
    memset(y_simd, 0xAB, (size_t)(m * ldy) * y_size);
    ok = wq_qgemm_pack(&ps, variants[v], &d, "test", &err) == WQ_OK;
    ok = ok && run_watched(&ps, m, a, lda, y_simd, ldy, &err);
    ok = ok && memcmp(y_ref, y_simd, (size_t)(m * ldy) * y_size) == 0; /* gaps untouched too */
    wq_qgemm_packed_free(&ps);
    if (!ok)
      failed = variants[v]->name;
  }
  wq_qgemm_packed_free(&pr);
  snprintf(what, what_cap,
           "qgemm[%s] m=%lld n=%lld k=%lld a=%s(zp %d) w=%s(zp %s) y=%s(zp %d [%d,%d]) %s%s%s",
           failed, (long long)m, (long long)n, (long long)k, wq_dtype_name(d.a_dtype),
           (int)d.a_zero_point, wq_dtype_name(d.w_dtype),
           per_channel_zp == 2 ? "per-channel" : "per-tensor", wq_dtype_name(d.y_dtype),
           (int)d.y_zero_point, (int)d.y_min, (int)d.y_max,
           per_channel_mult ? "per-channel multipliers " : "", with_bias ? "bias " : "",
           transposed ? "W transposed" : "");
  free(a);
  free(w);
  free(wzp);
  free(bias);
  free(mult);
  free(float_bias);
  free(y_ref);
  free(y_simd);
  return ok;
}

void wq_ktest_qgemm(wq_ktest *t) {
  char what[256];
  /* Edge shapes: every m, n, k around the tile sizes (4, 8, 4). */
  static const int64_t small[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33};
  const int n_small = (int)(sizeof small / sizeof small[0]);
  for (int i = 0; i < n_small; i++)
    for (int j = 0; j < n_small; j += 2)
      for (int l = 0; l < n_small; l += 3) {
        int ok = run_case(t, small[i], small[j], small[l], what, sizeof what);
        wq_ktest_case(t, ok, what);
      }
  /* Random shapes: odd sizes, k not a multiple of 4/8/16, channels 1..67. */
  for (int c = 0; c < 150; c++) {
    int64_t m = wq_ktest_int(t, 1, 3) == 1 ? 1 : wq_ktest_int(t, 1, 70);
    int64_t n = wq_ktest_int(t, 1, 67), k = wq_ktest_int(t, 1, 700);
    int ok = run_case(t, m, n, k, what, sizeof what);
    wq_ktest_case(t, ok, what);
  }
  /* Large depth: accumulators far from int8 range. */
  for (int c = 0; c < 4; c++) {
    int ok = run_case(t, wq_ktest_int(t, 1, 9), wq_ktest_int(t, 1, 40), wq_ktest_int(t, 2000, 5000),
                      what, sizeof what);
    wq_ktest_case(t, ok, what);
  }
}
