/* Building blocks of the wasm SIMD128 int8 GEMM, shared by the GEMM and the
 * convolutions (which only differ in where the rows of A come from):
 *
 *  - the activation panel: WQ_QGEMM_MR rows of A widened to int16, stored
 *    pair-interleaved (panel[(kp * MR + r) * 2 + (k & 1)] = A(r, k), kp =
 *    k / 2), so one v128.load32_splat broadcasts row r's pair kp; slots not
 *    backed by input (padding) hold the activation zero point, which makes
 *    them contribute exactly 0 after the zero-point corrections;
 *  - the 4x8 micro-kernel on i32x4.dot_i16x8_s;
 *  - the requantizing epilogue (fp32 multiplier, round half to even via the
 *    1.5 * 2^23 magic add, saturate, fused clamp) and stores.
 * Internal to kernels/simd. */
#ifndef WQ_KERNELS_SIMD_QGEMM_UKERNEL_H
#define WQ_KERNELS_SIMD_QGEMM_UKERNEL_H

#include <stdint.h>
#include <string.h>
#include <wasm_simd128.h>

#include "qgemm_simd.h"

/* Writes `len` activations of each of MR rows (srcs[r], int8 or uint8)
 * into panel slots k0 .. k0 + len (k0 even); an odd len leaves the last
 * pair's second slot at the zero point. */
static inline void wq_simd_panel_pack(int16_t *panel, int64_t k0, const void *const srcs[4],
                                      int64_t len, wq_dtype dtype, int32_t zero_point) {
  int16_t *dst = panel + k0 * WQ_QGEMM_MR; /* (k0 / 2) * MR * 2 */
  const uint8_t *s0 = srcs[0], *s1 = srcs[1], *s2 = srcs[2], *s3 = srcs[3];
  int64_t c = 0;
  const int is_unsigned = dtype == WQ_DT_UINT8;
  for (; c + 8 <= len; c += 8) {
    v128_t r0, r1, r2, r3;
    if (is_unsigned) {
      r0 = wasm_u16x8_load8x8(s0 + c);
      r1 = wasm_u16x8_load8x8(s1 + c);
      r2 = wasm_u16x8_load8x8(s2 + c);
      r3 = wasm_u16x8_load8x8(s3 + c);
    } else {
      r0 = wasm_i16x8_load8x8(s0 + c);
      r1 = wasm_i16x8_load8x8(s1 + c);
      r2 = wasm_i16x8_load8x8(s2 + c);
      r3 = wasm_i16x8_load8x8(s3 + c);
    }
    /* 4x4 transpose of 32-bit pairs: out block i = pair i of rows 0..3. */
    v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5);
    v128_t t1 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7);
    v128_t t2 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5);
    v128_t t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
    wasm_v128_store(dst, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
    wasm_v128_store(dst + 8, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
    wasm_v128_store(dst + 16, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
    wasm_v128_store(dst + 24, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
    dst += 32;
  }
  if (c + 4 <= len) { /* two pairs: K = 12, 20, ... (12-channel 1x1 convs) */
    v128_t r[4];
    for (int r_ = 0; r_ < 4; r_++) {
      const v128_t v = wasm_v128_load32_zero((const uint8_t *)srcs[r_] + c);
      r[r_] = is_unsigned ? wasm_u16x8_extend_low_u8x16(v) : wasm_i16x8_extend_low_i8x16(v);
    }
    v128_t t0 = wasm_i32x4_shuffle(r[0], r[1], 0, 4, 1, 5);
    v128_t t2 = wasm_i32x4_shuffle(r[2], r[3], 0, 4, 1, 5);
    wasm_v128_store(dst, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
    wasm_v128_store(dst + 8, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
    dst += 16;
    c += 4;
  }
  for (; c < len; c += 2) {
    for (int r = 0; r < 4; r++) {
      const uint8_t *s = srcs[r];
      int32_t v0 = is_unsigned ? s[c] : (int8_t)s[c];
      int32_t v1 = c + 1 < len ? (is_unsigned ? s[c + 1] : (int8_t)s[c + 1]) : zero_point;
      dst[r * 2] = (int16_t)v0;
      dst[r * 2 + 1] = (int16_t)v1;
    }
    dst += 8;
  }
}

/* Sets panel slots [k_from, k_to) (both even) to the zero point. */
static inline void wq_simd_panel_fill(int16_t *panel, int64_t k_from, int64_t k_to,
                                      int32_t zero_point) {
  v128_t zp = wasm_i16x8_splat((int16_t)zero_point);
  for (int64_t k = k_from; k < k_to; k += 2)
    wasm_v128_store(panel + k * WQ_QGEMM_MR, zp); /* one pair of all 4 rows */
}

/* Per row: sum over the panel's k_padded slots of (A - zero_point),
 * wrapping; lane r of the result is row r. */
static inline v128_t wq_simd_panel_centered_sums(const int16_t *panel, int64_t k_padded,
                                                 int32_t zero_point) {
  v128_t sum = wasm_i32x4_splat(0);
  for (int64_t kp = 0; kp < k_padded / 2; kp++)
    sum = wasm_i32x4_add(sum, wasm_i32x4_extadd_pairwise_i16x8(wasm_v128_load(panel + kp * 8)));
  return wasm_i32x4_sub(sum,
                        wasm_i32x4_splat((int32_t)((uint32_t)k_padded * (uint32_t)zero_point)));
}

/* acc[2r], acc[2r + 1] = init[0], init[1] + row r x columns 0-3, 4-7 of one
 * column tile, over kpairs (even) pairs. */
static inline void wq_simd_ukernel_4x8(int64_t kpairs, const int16_t *restrict panel,
                                       const int8_t *restrict w, const v128_t init[2],
                                       v128_t acc[8]) {
  v128_t c00 = init[0], c01 = init[1], c10 = c00, c11 = c01;
  v128_t c20 = c00, c21 = c01, c30 = c00, c31 = c01;
  /* One pair per iteration keeps 8 accumulators, 2 weight vectors and the
   * broadcasts within x64's 16 vector registers (a 2-pair body spills). */
#pragma clang loop unroll(disable)
  for (int64_t kp = 0; kp < kpairs; kp++) {
    /* i16x8.load8x8_s widens while loading (one instruction on x64),
     * cheaper than a 16-byte load plus extend_low/extend_high. */
    v128_t wl = wasm_i16x8_load8x8(w), wh = wasm_i16x8_load8x8(w + 8);
    v128_t a0 = wasm_v128_load32_splat(panel);
    c00 = wasm_i32x4_add(c00, wasm_i32x4_dot_i16x8(a0, wl));
    c01 = wasm_i32x4_add(c01, wasm_i32x4_dot_i16x8(a0, wh));
    v128_t a1 = wasm_v128_load32_splat(panel + 2);
    c10 = wasm_i32x4_add(c10, wasm_i32x4_dot_i16x8(a1, wl));
    c11 = wasm_i32x4_add(c11, wasm_i32x4_dot_i16x8(a1, wh));
    v128_t a2 = wasm_v128_load32_splat(panel + 4);
    c20 = wasm_i32x4_add(c20, wasm_i32x4_dot_i16x8(a2, wl));
    c21 = wasm_i32x4_add(c21, wasm_i32x4_dot_i16x8(a2, wh));
    v128_t a3 = wasm_v128_load32_splat(panel + 6);
    c30 = wasm_i32x4_add(c30, wasm_i32x4_dot_i16x8(a3, wl));
    c31 = wasm_i32x4_add(c31, wasm_i32x4_dot_i16x8(a3, wh));
    w += 16;
    panel += 8;
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

/* Output-side constants of one packed GEMM. */
typedef struct {
  v128_t lo, hi;        /* f32: y_min - y_zp, y_max - y_zp */
  v128_t magic;         /* f32 1.5 * 2^23: adding it rounds half to even */
  v128_t magic_less_zp; /* i32 bits(magic) - y_zp */
  v128_t a_zero_point;  /* i32 */
  int is_unsigned;
  /* y_max below the dtype's maximum: clamp in float; else the saturating
   * narrows clamp (values past 2^22 still map above the maximum). */
  int clamp_hi;
  int leaky; /* a fused LeakyRelu, of slope alpha */
  v128_t alpha;
} wq_simd_requant;

static inline wq_simd_requant wq_simd_requant_init(const wq_qgemm_packed *p) {
  wq_simd_requant q;
  q.lo = wasm_f32x4_splat((float)(p->y_min - p->y_zero_point));
  q.hi = wasm_f32x4_splat((float)(p->y_max - p->y_zero_point));
  q.magic = wasm_f32x4_splat(12582912.0f);
  q.magic_less_zp = wasm_i32x4_splat(0x4B400000 - p->y_zero_point);
#ifdef WQ_QGEMM_USDOT
  /* The usdot kernels see int8 activations offset by 128 (qgemm_usdot.h). */
  q.a_zero_point = wasm_i32x4_splat(p->a_zero_point + (p->a_dtype == WQ_DT_UINT8 ? 0 : 128));
#else
  q.a_zero_point = wasm_i32x4_splat(p->a_zero_point);
#endif
  q.is_unsigned = p->y_dtype == WQ_DT_UINT8;
  q.clamp_hi = p->y_max < (q.is_unsigned ? 255 : 127);
  q.leaky = p->leaky;
  q.alpha = wasm_f32x4_splat(p->leaky_alpha);
  return q;
}

/* v < 0 ? v * alpha : v (quant_ref.h wq_ref_requantize_leaky). */
static inline v128_t wq_simd_leaky4(v128_t v, v128_t alpha) {
  return wasm_v128_bitselect(wasm_f32x4_mul(v, alpha), v, wasm_f32x4_lt(v, wasm_f32x4_splat(0.0f)));
}

/* The fused LeakyRelu on n <= 8 vectors of scaled values, out of line of
 * the unrolled epilogues (code size): they copy their vectors through
 * memory only when the plan has one, and keep them in registers otherwise. */
__attribute__((noinline)) static void wq_simd_leaky_n(v128_t *v, int n, v128_t alpha) {
  for (int i = 0; i < n; i++)
    v[i] = wq_simd_leaky4(v[i], alpha);
}

/* wq_simd_leaky_n on vectors the caller keeps in registers. */
#define WQ_SIMD_LEAKY(v, n, alpha)                                                                 \
  do {                                                                                             \
    v128_t tmp_[8];                                                                                \
    _Pragma("clang loop unroll(full)") for (int i_ = 0; i_ < (n); i_++) tmp_[i_] = (v)[i_];        \
    wq_simd_leaky_n(tmp_, (n), (alpha));                                                           \
    _Pragma("clang loop unroll(full)") for (int i_ = 0; i_ < (n); i_++)(v)[i_] = tmp_[i_];         \
  } while (0)

/* Four scaled values (acc * multiplier, after any LeakyRelu) to four
 * requantized int32 outputs (already offset by y_zp and clamped).
 * pmax(lo, v) maps NaN to lo like the reference maps NaN to the minimum;
 * after clamping |v| < 2^22, where the magic add rounds to an integer with
 * ties to even. Without the upper clamp a larger v still gives bits above
 * y_max (float bits grow with the value), which the saturating narrow then
 * clamps. */
static inline v128_t wq_simd_round4(const wq_simd_requant *q, v128_t v) {
  v = wasm_f32x4_pmax(q->lo, v);
  if (q->clamp_hi)
    v = wasm_f32x4_pmin(q->hi, v);
  v = wasm_f32x4_add(v, q->magic);
  return wasm_i32x4_sub(v, q->magic_less_zp);
}

/* n vectors of int32 accumulators to requantized outputs in place, lane
 * j of vector i scaled by multiplier[i % 2]. */
static inline void wq_simd_requant_n(const wq_simd_requant *q, v128_t *a, int n,
                                     const v128_t multiplier[2]) {
#pragma clang loop unroll(full)
  for (int i = 0; i < n; i++)
    a[i] = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a[i]), multiplier[i & 1]);
  if (q->leaky)
    WQ_SIMD_LEAKY(a, n, q->alpha);
#pragma clang loop unroll(full)
  for (int i = 0; i < n; i++)
    a[i] = wq_simd_round4(q, a[i]);
}

/* 16 int32 outputs (four vectors) to 16 bytes. */
static inline v128_t wq_simd_narrow16(const wq_simd_requant *q, v128_t a, v128_t b, v128_t c,
                                      v128_t d) {
  v128_t lo = wasm_i16x8_narrow_i32x4(a, b), hi = wasm_i16x8_narrow_i32x4(c, d);
  return q->is_unsigned ? wasm_u8x16_narrow_i16x8(lo, hi) : wasm_i8x16_narrow_i16x8(lo, hi);
}

/* Per-column-tile epilogue data: bias with the a_zp * column_sum correction
 * folded in, the multipliers and, when needed, the weight zero points. */
typedef struct {
  v128_t bias[2], multiplier[2], w_zero_point[2];
  v128_t float_bias[2]; /* float output only */
} wq_simd_tile_params;

static inline wq_simd_tile_params wq_simd_tile_params_load(const wq_simd_requant *q,
                                                           const wq_qgemm_packed *p, int64_t j0) {
  wq_simd_tile_params t;
  for (int h = 0; h < 2; h++) {
    v128_t bias = wasm_v128_load(p->bias + j0 + 4 * h);
    v128_t sums = wasm_v128_load(p->column_sum + j0 + 4 * h);
    t.bias[h] = wasm_i32x4_sub(bias, wasm_i32x4_mul(q->a_zero_point, sums));
    t.multiplier[h] = wasm_v128_load(p->multiplier + j0 + 4 * h);
    t.w_zero_point[h] = wasm_v128_load(p->w_zero_point + j0 + 4 * h);
    t.float_bias[h] = p->float_bias ? wasm_v128_load(p->float_bias + j0 + 4 * h) : t.bias[h];
  }
  return t;
}

/* Float output of four exact accumulators (qgemm.h): Cast, Mul, Add and
 * Relu as separate float32 roundings, like the op-by-op graph. pmax(v, 0)
 * is v < 0 ? 0 : v, the reference's Relu (NaN and -0 kept). */
static inline v128_t wq_simd_float_output4(v128_t acc, v128_t multiplier, v128_t float_bias,
                                           int relu) {
  v128_t v = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), multiplier), float_bias);
  return relu ? wasm_f32x4_pmax(v, wasm_f32x4_splat(0.0f)) : v;
}

/* Exact accumulator of one 4-column half: bias (with the a_zp correction)
 * and, when the weights have zero points, the row-sum correction. */
static inline v128_t wq_simd_corrected(const wq_simd_tile_params *t, int h, int has_w_zero_point,
                                       int32_t row_sum, v128_t acc) {
  v128_t a = wasm_i32x4_add(acc, t->bias[h]);
  if (has_w_zero_point)
    a = wasm_i32x4_sub(a, wasm_i32x4_mul(t->w_zero_point[h], wasm_i32x4_splat(row_sum)));
  return a;
}

/* Float counterpart of wq_simd_tile_store: y is float, ldy in elements. */
static inline void wq_simd_tile_store_float(const wq_simd_tile_params *t, int has_w_zero_point,
                                            int relu, v128_t row_sums, v128_t acc[8], float *y,
                                            int64_t ldy, int64_t mr, int64_t nr) {
  int32_t sums[4] = {0, 0, 0, 0};
  if (has_w_zero_point)
    wasm_v128_store(sums, row_sums);
  for (int64_t r = 0; r < mr; r++) {
    v128_t out[2];
    for (int h = 0; h < 2; h++)
      out[h] =
          wq_simd_float_output4(wq_simd_corrected(t, h, has_w_zero_point, sums[r], acc[2 * r + h]),
                                t->multiplier[h], t->float_bias[h], relu);
    if (nr == 8) {
      wasm_v128_store(y + r * ldy, out[0]);
      wasm_v128_store(y + r * ldy + 4, out[1]);
    } else {
      float tmp[8];
      wasm_v128_store(tmp, out[0]);
      wasm_v128_store(tmp + 4, out[1]);
      memcpy(y + r * ldy, tmp, sizeof(float) * (size_t)nr);
    }
  }
}

/* Finishes a 4x8 tile: corrections, requantization, store of rows < mr and
 * columns < nr into y (row stride ldy bytes). row_sums (lane r: centered
 * row sum) is used only when the weights have zero points. */
static inline void wq_simd_tile_store(const wq_simd_requant *q, const wq_simd_tile_params *t,
                                      int has_w_zero_point, v128_t row_sums, v128_t acc[8],
                                      uint8_t *y, int64_t ldy, int64_t mr, int64_t nr) {
  v128_t out[8];
  int32_t sums[4] = {0, 0, 0, 0};
  if (has_w_zero_point)
    wasm_v128_store(sums, row_sums);
  for (int r = 0; r < 4; r++) {
    v128_t rs = wasm_i32x4_splat(sums[r]);
    for (int h = 0; h < 2; h++) {
      v128_t a = wasm_i32x4_add(acc[2 * r + h], t->bias[h]);
      if (has_w_zero_point)
        a = wasm_i32x4_sub(a, wasm_i32x4_mul(t->w_zero_point[h], rs));
      out[2 * r + h] = a;
    }
  }
  wq_simd_requant_n(q, out, 8, t->multiplier);
  v128_t rows01 = wq_simd_narrow16(q, out[0], out[1], out[2], out[3]);
  v128_t rows23 = wq_simd_narrow16(q, out[4], out[5], out[6], out[7]);
  if (nr == 8 && mr == 4) {
    wasm_v128_store64_lane(y, rows01, 0);
    wasm_v128_store64_lane(y + ldy, rows01, 1);
    wasm_v128_store64_lane(y + 2 * ldy, rows23, 0);
    wasm_v128_store64_lane(y + 3 * ldy, rows23, 1);
    return;
  }
  uint8_t bytes[32];
  wasm_v128_store(bytes, rows01);
  wasm_v128_store(bytes + 16, rows23);
  for (int64_t r = 0; r < mr; r++)
    memcpy(y + r * ldy, bytes + 8 * r, (size_t)nr);
}

#endif
