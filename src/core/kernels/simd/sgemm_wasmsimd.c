/* f32x4 GEMM: B is packed into 8-column panels and A into 4-row panels per
 * cache block; a 4x8 register tile accumulates with f32x4 mul + add (SIMD128
 * has no fused multiply-add, so each product rounds like the scalar code).
 * Products of fewer than 4 rows (batch 1) skip packing: B streams by rows,
 * or by columns as dot products when stored transposed. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "cold_loop.h"
#include "sgemm_simd.h"

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
      WQ_COLD_LOOP
      for (; p < kc; p++) {
        dst[0] = r0[p];
        dst[1] = r1[p];
        dst[2] = r2[p];
        dst[3] = r3[p];
        dst += MR;
      }
      continue;
    }
    WQ_COLD_LOOP
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
    WQ_COLD_LOOP
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
  WQ_COLD_LOOP
  for (int64_t i = 0; i < m; i++) {
    float *row = c + i * ldc;
    if (beta == 0.0f)
      memset(row, 0, sizeof(float) * (size_t)n);
    else {
      WQ_COLD_LOOP
      for (int64_t j = 0; j < n; j++)
        row[j] *= beta;
    }
  }
}

/* Columns of y a batch-1 row pass accumulates at once (8 KB on the stack):
 * whole rows of B up to 2048 wide, read in memory order. */
enum { GEMV_COLS = 2048 };

/* c = alpha * a * B + beta * c for one row a, B row-major (b_col_stride 1):
 * per chunk of columns, y += a[p] * B[p, :] eight rows of B per pass, so B
 * streams through contiguously once (a 16-column strip down all k rows
 * strode a whole row per load: the 1x1024x1024 model ran 0.52 ms, now
 * ~0.2 ms, the kernel alone ~0.09 ms). Each column sums its products in p
 * order, like the reference. */
static void gemv_rows(int64_t n, int64_t k, float alpha, const float *a, int64_t a_col_stride,
                      const float *b, int64_t b_row_stride, float beta, float *c) {
  float acc[GEMV_COLS] __attribute__((aligned(16)));
  for (int64_t j0 = 0; j0 < n; j0 += GEMV_COLS) {
    int64_t nc = n - j0 < GEMV_COLS ? n - j0 : GEMV_COLS;
    int64_t nv = nc & ~(int64_t)3;
    memset(acc, 0, sizeof(float) * (size_t)nc);
    const float *bj = b + j0;
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
      const float *r = bj + p * b_row_stride;
      v128_t av[8];
      for (int q = 0; q < 8; q++)
        av[q] = wasm_f32x4_splat(a[(p + q) * a_col_stride]);
      int64_t j = 0;
      for (; j < nv; j += 4) {
        v128_t v = wasm_v128_load(acc + j);
        for (int q = 0; q < 8; q++)
          v = wasm_f32x4_add(v, wasm_f32x4_mul(av[q], wasm_v128_load(r + q * b_row_stride + j)));
        wasm_v128_store(acc + j, v);
      }
      WQ_COLD_LOOP
      for (; j < nc; j++) {
        float v = acc[j];
        for (int q = 0; q < 8; q++)
          v += a[(p + q) * a_col_stride] * r[q * b_row_stride + j];
        acc[j] = v;
      }
    }
    for (; p < k; p++) {
      float s = a[p * a_col_stride];
      const float *r = bj + p * b_row_stride;
      for (int64_t j = 0; j < nc; j++)
        acc[j] += s * r[j];
    }
    float *cj = c + j0;
    for (int64_t j = 0; j < nc; j++)
      cj[j] = beta != 0.0f ? alpha * acc[j] + beta * cj[j] : alpha * acc[j];
  }
}

/* Four accumulators hold a panel's 16 columns while all of its k rows
 * stream by (one contiguous read of B); 1x1024x1024: 0.066 ms against
 * 0.098 ms for gemv_rows on unpacked B (best of 5, 100 runs each). */
static void simd_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride,
                              const float *bp, float *c) {
  for (int64_t j = 0; j < n; j += WQ_SGEMV_NR, bp += k * WQ_SGEMV_NR) {
    v128_t c0 = wasm_f32x4_splat(0.0f), c1 = c0, c2 = c0, c3 = c0;
    const float *q = bp;
#pragma clang loop unroll(disable)
    for (int64_t p = 0; p < k; p++, q += WQ_SGEMV_NR) {
      v128_t av = wasm_f32x4_splat(a[p * a_col_stride]);
      c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(av, wasm_v128_load(q)));
      c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(av, wasm_v128_load(q + 4)));
      c2 = wasm_f32x4_add(c2, wasm_f32x4_mul(av, wasm_v128_load(q + 8)));
      c3 = wasm_f32x4_add(c3, wasm_f32x4_mul(av, wasm_v128_load(q + 12)));
    }
    float t[WQ_SGEMV_NR];
    wasm_v128_store(t, c0);
    wasm_v128_store(t + 4, c1);
    wasm_v128_store(t + 8, c2);
    wasm_v128_store(t + 12, c3);
    memcpy(c + j, t, sizeof(float) * (size_t)(n - j < WQ_SGEMV_NR ? n - j : WQ_SGEMV_NR));
  }
}

static void simd_dw_plane(const float *xp, int64_t pw, int64_t out_h, int64_t out_w, int64_t kh,
                          int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                          const float *w, float bias, float *y) {
  if (kh == 3 && kw == 3 && sh == 1 && sw == 1 && dh == 1 && dw == 1 && out_w >= 4) {
    /* 3x3 stride 1: the nine weights stay in registers for the plane. */
    const v128_t w0 = wasm_f32x4_splat(w[0]), w1 = wasm_f32x4_splat(w[1]),
                 w2 = wasm_f32x4_splat(w[2]), w3 = wasm_f32x4_splat(w[3]),
                 w4 = wasm_f32x4_splat(w[4]), w5 = wasm_f32x4_splat(w[5]),
                 w6 = wasm_f32x4_splat(w[6]), w7 = wasm_f32x4_splat(w[7]),
                 w8 = wasm_f32x4_splat(w[8]), b = wasm_f32x4_splat(bias);
    for (int64_t oh = 0; oh < out_h; oh++, y += out_w) {
      const float *r0 = xp + oh * pw, *r1 = r0 + pw, *r2 = r1 + pw;
      for (int64_t ow = 0;; ow += 4) {
        if (ow + 4 > out_w)
          ow = out_w - 4; /* the last block overlaps the previous one */
        v128_t acc = b;
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w0, wasm_v128_load(r0 + ow)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w1, wasm_v128_load(r0 + ow + 1)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w2, wasm_v128_load(r0 + ow + 2)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w3, wasm_v128_load(r1 + ow)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w4, wasm_v128_load(r1 + ow + 1)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w5, wasm_v128_load(r1 + ow + 2)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w6, wasm_v128_load(r2 + ow)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w7, wasm_v128_load(r2 + ow + 1)));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(w8, wasm_v128_load(r2 + ow + 2)));
        wasm_v128_store(y + ow, acc);
        if (ow + 4 >= out_w)
          break;
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < out_h; oh++, y += out_w) {
    const float *row = xp + oh * sh * pw;
    int64_t ow = 0;
    for (; ow + 4 <= out_w; ow += 4) {
      v128_t acc = wasm_f32x4_splat(bias);
      for (int64_t ki = 0; ki < kh; ki++)
        for (int64_t kj = 0; kj < kw; kj++) {
          const float *s = row + ki * dh * pw + ow * sw + kj * dw;
          /* Stride 2: the even lanes of 8 floats (one past the row at most). */
          v128_t v = sw == 2
                         ? wasm_i32x4_shuffle(wasm_v128_load(s), wasm_v128_load(s + 4), 0, 2, 4, 6)
                         : wasm_f32x4_make(s[0], s[sw], s[2 * sw], s[3 * sw]);
          acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_splat(w[ki * kw + kj]), v));
        }
      wasm_v128_store(y + ow, acc);
    }
    WQ_COLD_LOOP
    for (; ow < out_w; ow++) {
      float acc = bias;
      for (int64_t ki = 0; ki < kh; ki++)
        for (int64_t kj = 0; kj < kw; kj++)
          acc += w[ki * kw + kj] * row[ki * dh * pw + ow * sw + kj * dw];
      y[ow] = acc;
    }
  }
}

static float hsum(v128_t v) {
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

/* c = alpha * a * B + beta * c for one contiguous row a, B stored
 * transposed (b_row_stride 1, as Gemm transB=1 weights are): each output is
 * a dot product over a contiguous column of B, four at once in f32x4
 * partial sums. No packing: B is read once, in memory order. */
static void gemv_dots(int64_t n, int64_t k, float alpha, const float *a, const float *b,
                      int64_t b_col_stride, float beta, float *c) {
  int64_t kv = k & ~(int64_t)3;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float *b0 = b + j * b_col_stride, *b1 = b0 + b_col_stride;
    const float *b2 = b1 + b_col_stride, *b3 = b2 + b_col_stride;
    v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t p = 0; p < kv; p += 4) {
      v128_t av = wasm_v128_load(a + p);
      s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(av, wasm_v128_load(b0 + p)));
      s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(av, wasm_v128_load(b1 + p)));
      s2 = wasm_f32x4_add(s2, wasm_f32x4_mul(av, wasm_v128_load(b2 + p)));
      s3 = wasm_f32x4_add(s3, wasm_f32x4_mul(av, wasm_v128_load(b3 + p)));
    }
    float d[4] = {hsum(s0), hsum(s1), hsum(s2), hsum(s3)};
    for (int64_t p = kv; p < k; p++) {
      d[0] += a[p] * b0[p];
      d[1] += a[p] * b1[p];
      d[2] += a[p] * b2[p];
      d[3] += a[p] * b3[p];
    }
    for (int q = 0; q < 4; q++)
      c[j + q] = beta != 0.0f ? alpha * d[q] + beta * c[j + q] : alpha * d[q];
  }
  WQ_COLD_LOOP
  for (; j < n; j++) {
    const float *bj = b + j * b_col_stride;
    v128_t s = wasm_f32x4_splat(0.0f);
    for (int64_t p = 0; p < kv; p += 4)
      s = wasm_f32x4_add(s, wasm_f32x4_mul(wasm_v128_load(a + p), wasm_v128_load(bj + p)));
    float d = hsum(s);
    WQ_COLD_LOOP
    for (int64_t p = kv; p < k; p++)
      d += a[p] * bj[p];
    c[j] = beta != 0.0f ? alpha * d + beta * c[j] : alpha * d;
  }
}

/* The blocked product; a_full (packed by simd_sgemm_pack_a: threads'
 * column shares read one copy) or NULL: each block packs its own. */
static wq_status sgemm_blocked(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                               int64_t a_row_stride, int64_t a_col_stride, const float *a_full,
                               const float *b, int64_t b_row_stride, int64_t b_col_stride,
                               float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return WQ_OK;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return WQ_OK;
  }
  /* Fewer rows than a register tile: row by row, B unpacked (packing would
   * cost as much as the product). */
  if (m < MR && b_col_stride == 1) {
    for (int64_t i = 0; i < m; i++)
      gemv_rows(n, k, alpha, a + i * a_row_stride, a_col_stride, b, b_row_stride, beta,
                c + i * ldc);
    return WQ_OK;
  }
  if (m < MR && b_row_stride == 1 && a_col_stride == 1) {
    for (int64_t i = 0; i < m; i++)
      gemv_dots(n, k, alpha, a + i * a_row_stride, b, b_col_stride, beta, c + i * ldc);
    return WQ_OK;
  }
  int64_t kc_max = k < KC ? k : KC;
  int64_t mc_max = (m < MC ? m : MC) + MR;
  int64_t nc_max = (n < NC ? n : NC) + NR;
  const int64_t m_pad = (m + MR - 1) / MR * MR;
  float *a_pack = a_full ? NULL : malloc(sizeof(float) * (size_t)(kc_max * mc_max));
  float *b_pack = malloc(sizeof(float) * (size_t)(kc_max * nc_max));
  if ((!a_full && !a_pack) || !b_pack) {
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
        const float *ap = a_full ? a_full + p0 * m_pad + i0 * kc : a_pack;
        if (!a_full)
          pack_a(a, a_row_stride, a_col_stride, i0, mc, p0, kc, a_pack);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t cols = nc - jr < NR ? nc - jr : NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t rows = mc - ir < MR ? mc - ir : MR;
            micro_kernel(kc, ap + ir * kc, b_pack + jr * kc, acc);
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

static int64_t simd_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0)
    return 0;
  const int64_t kc_max = k < KC ? k : KC, mc_max = (m < MC ? m : MC) + MR;
  const int64_t nc_max = (n < NC ? n : NC) + NR;
  return kc_max * (mc_max + nc_max) * (int64_t)sizeof(float);
}

static wq_status simd_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                            int64_t a_row_stride, int64_t a_col_stride, const float *b,
                            int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                            int64_t ldc) {
  return sgemm_blocked(m, n, k, alpha, a, a_row_stride, a_col_stride, NULL, b, b_row_stride,
                       b_col_stride, beta, c, ldc);
}

static void simd_sgemm_pack_a(int64_t m, int64_t k, const float *a, int64_t a_row_stride,
                              int64_t a_col_stride, float *a_full) {
  const int64_t m_pad = (m + MR - 1) / MR * MR;
  for (int64_t p0 = 0; p0 < k; p0 += KC) {
    int64_t kc = k - p0 < KC ? k - p0 : KC;
    for (int64_t i0 = 0; i0 < m; i0 += MC)
      pack_a(a, a_row_stride, a_col_stride, i0, m - i0 < MC ? m - i0 : MC, p0, kc,
             a_full + p0 * m_pad + i0 * kc);
  }
}

static wq_status simd_sgemm_packed_a(int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a_full, const float *b, int64_t b_row_stride,
                                     int64_t b_col_stride, float beta, float *c, int64_t ldc) {
  return sgemm_blocked(m, n, k, alpha, NULL, 0, 0, a_full, b, b_row_stride, b_col_stride, beta, c,
                       ldc);
}

static int64_t packed_a_floats(int64_t m, int64_t k) { return (m + MR - 1) / MR * MR * k; }

const wq_sgemm_config wq_sgemm_config_simd128 = {
    .name = "simd128_4x8",
    .isa = WQ_ISA_SIMD128,
    .gemm = simd_sgemm,
    .scratch_bytes = simd_sgemm_scratch_bytes,
    .gemv_packed = simd_sgemv_packed,
    .packed_a_floats = packed_a_floats,
    .pack_a = simd_sgemm_pack_a,
    .gemm_packed_a = simd_sgemm_packed_a,
    .dw_plane = simd_dw_plane,
};
