#include "ref_gemm_f32.h"

#include <stdlib.h>
#include <string.h>

/* The test suite runs real models under ASan+UBSan at -O1, where the
 * micro-kernel (the bulk of every Conv/Gemm/MatMul) is ~20x slower:
 * per-element checks block vectorisation. It only reads the packed panels,
 * whose sizes this file computes (the instrumented packing code writes every
 * element it reads), so sanitizer builds compile it optimised and unchecked,
 * and the packing/store loops optimised but checked. Other builds are
 * unaffected. */
#if defined(__SANITIZE_ADDRESS__) && defined(__GNUC__) && !defined(__clang__)
#define WQ_HOT_LOOP __attribute__((optimize("O3"), no_sanitize("address", "undefined")))
#define WQ_OPTIMIZED __attribute__((optimize("O3")))
#else
#define WQ_HOT_LOOP
#define WQ_OPTIMIZED
#endif

/* Register tile (MR x NR accumulators) and cache blocks: a KC x NC panel of B
 * stays in L2 while MC x KC blocks of A stream through L1. */
enum { MR = 4, NR = 8, KC = 256, MC = 128, NC = 512 };

/* Packs rows [i0, i0+mc) x cols [p0, p0+kc) of A into MR-row panels laid out
 * k-major (panel[p * MR + r]); rows past m are zero so edge tiles need no
 * special case in the micro-kernel. */
WQ_OPTIMIZED static void pack_a(const float *a, int64_t rs, int64_t cs, int64_t i0, int64_t mc,
                                int64_t p0, int64_t kc, float *dst) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    int64_t rows = mc - ir < MR ? mc - ir : MR;
    for (int64_t p = 0; p < kc; p++) {
      const float *src = a + (i0 + ir) * rs + (p0 + p) * cs;
      for (int64_t r = 0; r < rows; r++)
        dst[r] = src[r * rs];
      for (int64_t r = rows; r < MR; r++)
        dst[r] = 0.0f;
      dst += MR;
    }
  }
}

/* Packs rows [p0, p0+kc) x cols [j0, j0+nc) of B into NR-column panels
 * (panel[p * NR + c]), zero-filled past n. */
WQ_OPTIMIZED static void pack_b(const float *b, int64_t rs, int64_t cs, int64_t p0, int64_t kc,
                                int64_t j0, int64_t nc, float *dst) {
  for (int64_t jr = 0; jr < nc; jr += NR) {
    int64_t cols = nc - jr < NR ? nc - jr : NR;
    if (cs == 1 && cols == NR) {
      for (int64_t p = 0; p < kc; p++) {
        memcpy(dst, b + (p0 + p) * rs + j0 + jr, sizeof(float) * NR);
        dst += NR;
      }
      continue;
    }
    for (int64_t p = 0; p < kc; p++) {
      const float *src = b + (p0 + p) * rs + (j0 + jr) * cs;
      for (int64_t c = 0; c < cols; c++)
        dst[c] = src[c * cs];
      for (int64_t c = cols; c < NR; c++)
        dst[c] = 0.0f;
      dst += NR;
    }
  }
}

/* acc = sum over p of A-panel column p times B-panel row p. */
WQ_HOT_LOOP static void micro_kernel(int64_t kc, const float *restrict ap, const float *restrict bp,
                                     float acc[MR][NR]) {
  float t[MR][NR];
  for (int r = 0; r < MR; r++)
    for (int c = 0; c < NR; c++)
      t[r][c] = 0.0f;
  for (int64_t p = 0; p < kc; p++) {
    for (int r = 0; r < MR; r++) {
      float av = ap[r];
      for (int c = 0; c < NR; c++)
        t[r][c] += av * bp[c];
    }
    ap += MR;
    bp += NR;
  }
  memcpy(acc, t, sizeof t);
}

/* Writes an MR x NR tile (clipped to rows x cols) into C. On the first K
 * block C gets alpha*acc + beta*C (C untouched by reads when beta == 0);
 * later blocks accumulate. */
WQ_OPTIMIZED static void store_tile(float acc[MR][NR], int64_t rows, int64_t cols, float *c,
                                    int64_t ldc, float alpha, float beta, int first_block) {
  for (int64_t r = 0; r < rows; r++) {
    float *crow = c + r * ldc;
    if (!first_block) {
      for (int64_t j = 0; j < cols; j++)
        crow[j] += alpha * acc[r][j];
    } else if (beta == 0.0f) {
      for (int64_t j = 0; j < cols; j++)
        crow[j] = alpha * acc[r][j];
    } else {
      for (int64_t j = 0; j < cols; j++)
        crow[j] = alpha * acc[r][j] + beta * crow[j];
    }
  }
}

static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++) {
    float *row = c + i * ldc;
    if (beta == 0.0f)
      memset(row, 0, sizeof(float) * (size_t)n);
    else
      for (int64_t j = 0; j < n; j++)
        row[j] *= beta;
  }
}

int64_t wq_ref_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0)
    return 0;
  const int64_t kc_max = k < KC ? k : KC, mc_max = (m < MC ? m : MC) + MR;
  const int64_t nc_max = (n < NC ? n : NC) + NR;
  return kc_max * (mc_max + nc_max) * (int64_t)sizeof(float);
}

wq_status wq_ref_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                       int64_t a_row_stride, int64_t a_col_stride, const float *b,
                       int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                       int64_t ldc) {
  if (m <= 0 || n <= 0)
    return WQ_OK;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return WQ_OK;
  }
  int64_t kc_max = k < KC ? k : KC;
  int64_t mc_max = (m < MC ? m : MC) + MR;
  int64_t nc_max = (n < NC ? n : NC) + NR;
  float *a_pack = malloc(sizeof(float) * (size_t)(kc_max * mc_max));
  float *b_pack = malloc(sizeof(float) * (size_t)(kc_max * nc_max));
  if (!a_pack || !b_pack) {
    free(a_pack);
    free(b_pack);
    return WQ_ERR_OUT_OF_MEMORY;
  }
  float acc[MR][NR];
  for (int64_t j0 = 0; j0 < n; j0 += NC) {
    int64_t nc = n - j0 < NC ? n - j0 : NC;
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      int64_t kc = k - p0 < KC ? k - p0 : KC;
      pack_b(b, b_row_stride, b_col_stride, p0, kc, j0, nc, b_pack);
      for (int64_t i0 = 0; i0 < m; i0 += MC) {
        int64_t mc = m - i0 < MC ? m - i0 : MC;
        pack_a(a, a_row_stride, a_col_stride, i0, mc, p0, kc, a_pack);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t cols = nc - jr < NR ? nc - jr : NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t rows = mc - ir < MR ? mc - ir : MR;
            micro_kernel(kc, a_pack + ir * kc, b_pack + jr * kc, acc);
            store_tile(acc, rows, cols, c + (i0 + ir) * ldc + j0 + jr, ldc, alpha, beta, p0 == 0);
          }
        }
      }
    }
  }
  free(a_pack);
  free(b_pack);
  return WQ_OK;
}

/* c[j] = sum_p a[p * a_col_stride] * B(p, j) over the packed panels, in p
 * order. */
static void ref_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride,
                             const float *bp, float *c) {
  for (int64_t j = 0; j < n; j++) {
    const float *panel = bp + j / WQ_SGEMV_NR * k * WQ_SGEMV_NR + j % WQ_SGEMV_NR;
    float s = 0.0f;
    for (int64_t p = 0; p < k; p++)
      s += a[p * a_col_stride] * panel[p * WQ_SGEMV_NR];
    c[j] = s;
  }
}

const wq_sgemm_config wq_sgemm_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .gemm = wq_ref_sgemm,
    .scratch_bytes = wq_ref_sgemm_scratch_bytes,
    .gemv_packed = ref_sgemv_packed,
};
