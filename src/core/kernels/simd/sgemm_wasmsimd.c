/* f32x4 GEMM: B is packed into 8-column panels and A into 4-row panels per
 * cache block; a 4x8 register tile accumulates with f32x4 mul + add (SIMD128
 * has no fused multiply-add, so each product rounds like the scalar code).
 * A batch-1 product (m == 1) skips A packing and streams B rows. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "../sgemm.h"

enum { MR = 4, NR = 8, KC = 256, MC = 96, NC = 512 };

/* Rows [i0, i0 + mc) x cols [p0, p0 + kc) of A into MR-row panels,
 * panel[p * MR + r]; rows past the block are zero. */
static void pack_a(const float *a, int64_t rs, int64_t cs, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, float *dst) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    int64_t rows = mc - ir < MR ? mc - ir : MR;
    const float *base = a + (i0 + ir) * rs + p0 * cs;
    if (rows == MR && cs == 1) {
      const float *r0 = base, *r1 = base + rs, *r2 = base + 2 * rs, *r3 = base + 3 * rs;
      int64_t p = 0;
      for (; p + 4 <= kc; p += 4) { /* 4x4 transpose */
        v128_t v0 = wasm_v128_load(r0 + p), v1 = wasm_v128_load(r1 + p);
        v128_t v2 = wasm_v128_load(r2 + p), v3 = wasm_v128_load(r3 + p);
        v128_t t0 = wasm_i32x4_shuffle(v0, v1, 0, 4, 1, 5),
               t1 = wasm_i32x4_shuffle(v0, v1, 2, 6, 3, 7);
        v128_t t2 = wasm_i32x4_shuffle(v2, v3, 0, 4, 1, 5),
               t3 = wasm_i32x4_shuffle(v2, v3, 2, 6, 3, 7);
        wasm_v128_store(dst + 0, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
        wasm_v128_store(dst + 4, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
        wasm_v128_store(dst + 8, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
        wasm_v128_store(dst + 12, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
        dst += 16;
      }
      for (; p < kc; p++) {
        dst[0] = r0[p];
        dst[1] = r1[p];
        dst[2] = r2[p];
        dst[3] = r3[p];
        dst += MR;
      }
      continue;
    }
    for (int64_t p = 0; p < kc; p++) {
      for (int64_t r = 0; r < MR; r++)
        dst[r] = r < rows ? base[r * rs + p * cs] : 0.0f;
      dst += MR;
    }
  }
}

/* Rows [p0, p0 + kc) x cols [j0, j0 + nc) of B into NR-column panels,
 * panel[p * NR + c]; columns past the block are zero. */
static void pack_b(const float *b, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0,
                   int64_t nc, float *dst) {
  for (int64_t jr = 0; jr < nc; jr += NR) {
    int64_t cols = nc - jr < NR ? nc - jr : NR;
    const float *base = b + p0 * rs + (j0 + jr) * cs;
    for (int64_t p = 0; p < kc; p++) {
      const float *row = base + p * rs;
      if (cs == 1 && cols == NR) {
        wasm_v128_store(dst, wasm_v128_load(row));
        wasm_v128_store(dst + 4, wasm_v128_load(row + 4));
      } else {
        for (int64_t c = 0; c < NR; c++)
          dst[c] = c < cols ? row[c * cs] : 0.0f;
      }
      dst += NR;
    }
  }
}

static void micro_kernel(int64_t kc, const float *restrict ap, const float *restrict bp,
                         v128_t acc[8]) {
  v128_t c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00;
  v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int64_t p = 0; p < kc; p++) {
    v128_t b0 = wasm_v128_load(bp), b1 = wasm_v128_load(bp + 4);
    v128_t a0 = wasm_v128_load32_splat(ap), a1 = wasm_v128_load32_splat(ap + 1);
    c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(a0, b0));
    c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(a0, b1));
    c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(a1, b0));
    c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(a1, b1));
    v128_t a2 = wasm_v128_load32_splat(ap + 2), a3 = wasm_v128_load32_splat(ap + 3);
    c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(a2, b0));
    c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(a2, b1));
    c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(a3, b0));
    c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(a3, b1));
    ap += MR;
    bp += NR;
  }
  acc[0] = c00;
  acc[1] = c01;
  acc[2] = c10;
  acc[3] = c11;
  acc[4] = c20;
  acc[5] = c21;
  acc[6] = c30;
  acc[7] = c31;
}

/* Writes a tile (rows x cols of it) into C: alpha * acc + beta * C on the
 * first K block (C not read when beta == 0), C + alpha * acc afterwards. */
static void store_tile(v128_t acc[8], int64_t rows, int64_t cols, float *c, int64_t ldc,
                       float alpha, float beta, int first_block) {
  v128_t va = wasm_f32x4_splat(alpha), vb = wasm_f32x4_splat(beta);
  for (int64_t r = 0; r < rows; r++) {
    float *row = c + r * ldc;
    v128_t v0 = wasm_f32x4_mul(acc[2 * r], va), v1 = wasm_f32x4_mul(acc[2 * r + 1], va);
    if (cols == NR) {
      if (!first_block) {
        v0 = wasm_f32x4_add(wasm_v128_load(row), v0);
        v1 = wasm_f32x4_add(wasm_v128_load(row + 4), v1);
      } else if (beta != 0.0f) {
        v0 = wasm_f32x4_add(v0, wasm_f32x4_mul(vb, wasm_v128_load(row)));
        v1 = wasm_f32x4_add(v1, wasm_f32x4_mul(vb, wasm_v128_load(row + 4)));
      }
      wasm_v128_store(row, v0);
      wasm_v128_store(row + 4, v1);
      continue;
    }
    float t[NR];
    wasm_v128_store(t, v0);
    wasm_v128_store(t + 4, v1);
    for (int64_t j = 0; j < cols; j++) {
      if (!first_block)
        row[j] += t[j];
      else if (beta != 0.0f)
        row[j] = t[j] + beta * row[j];
      else
        row[j] = t[j];
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

/* m == 1 with a row-contiguous B: y = alpha * a * B + beta * y, streaming
 * B's rows once. */
static void gemv_rows(int64_t n, int64_t k, float alpha, const float *a, int64_t a_col_stride,
                      const float *b, int64_t b_row_stride, float beta, float *c) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t p = 0; p < k; p++) {
      const float *row = b + p * b_row_stride + j;
      v128_t av = wasm_f32x4_splat(a[p * a_col_stride]);
      s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(av, wasm_v128_load(row)));
      s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(av, wasm_v128_load(row + 4)));
      s2 = wasm_f32x4_add(s2, wasm_f32x4_mul(av, wasm_v128_load(row + 8)));
      s3 = wasm_f32x4_add(s3, wasm_f32x4_mul(av, wasm_v128_load(row + 12)));
    }
    v128_t acc[4] = {s0, s1, s2, s3};
    for (int q = 0; q < 4; q++) {
      v128_t v = wasm_f32x4_mul(acc[q], wasm_f32x4_splat(alpha));
      if (beta != 0.0f)
        v = wasm_f32x4_add(v,
                           wasm_f32x4_mul(wasm_f32x4_splat(beta), wasm_v128_load(c + j + 4 * q)));
      wasm_v128_store(c + j + 4 * q, v);
    }
  }
  for (; j < n; j++) {
    float s = 0.0f;
    for (int64_t p = 0; p < k; p++)
      s += a[p * a_col_stride] * b[p * b_row_stride + j];
    c[j] = beta != 0.0f ? alpha * s + beta * c[j] : alpha * s;
  }
}

wq_status wq_simd_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                        int64_t a_row_stride, int64_t a_col_stride, const float *b,
                        int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                        int64_t ldc) {
  if (m <= 0 || n <= 0)
    return WQ_OK;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return WQ_OK;
  }
  if (m == 1 && b_col_stride == 1) {
    gemv_rows(n, k, alpha, a, a_col_stride, b, b_row_stride, beta, c);
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
  v128_t acc[8];
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
