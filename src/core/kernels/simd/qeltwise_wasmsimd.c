/* wasm SIMD128 int8 elementwise and data-movement kernels
 * (kernels/qeltwise.h), bit-identical to ref/ref_qeltwise.c. */
#include <string.h>
#include <wasm_simd128.h>

#include "../ref/ref_qeltwise.h"
#include "qeltwise_simd.h"

/* ---- QAdd / QMul ------------------------------------------------------- */

/* Four f32x4 of float(q - zp) * scale for 16 codes: the same IEEE
 * conversion and product as the scalar dequantization. Codes arrive as
 * int8 (uint8 ones with the top bit flipped, zp lowered by 128 to match). */
static inline void dequant16(v128_t v, v128_t zp, v128_t scale, v128_t *f) {
  v128_t lo = wasm_i16x8_extend_low_i8x16(v), hi = wasm_i16x8_extend_high_i8x16(v);
  v128_t w[4] = {wasm_i32x4_extend_low_i16x8(lo), wasm_i32x4_extend_high_i16x8(lo),
                 wasm_i32x4_extend_low_i16x8(hi), wasm_i32x4_extend_high_i16x8(hi)};
  for (int j = 0; j < 4; j++)
    f[j] = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_sub(w[j], zp)), scale);
}

void wq_simd_qbinary_row(const wq_qbinary_params *p, int64_t n, const void *a, int a_step,
                         const void *b, int b_step, void *y) {
  const uint8_t *a8 = a, *b8 = b;
  uint8_t *y8 = y;
  const bool a_unsigned = p->a_dtype == WQ_DT_UINT8, b_unsigned = p->b_dtype == WQ_DT_UINT8;
  const v128_t a_flip = wasm_i8x16_splat(a_unsigned ? (int8_t)0x80 : 0);
  const v128_t b_flip = wasm_i8x16_splat(b_unsigned ? (int8_t)0x80 : 0);
  const v128_t a_zp = wasm_i32x4_splat(p->a_zero_point - (a_unsigned ? 128 : 0));
  const v128_t b_zp = wasm_i32x4_splat(p->b_zero_point - (b_unsigned ? 128 : 0));
  const v128_t a_scale = wasm_f32x4_splat(p->a_scale), b_scale = wasm_f32x4_splat(p->b_scale);
  const v128_t y_scale = wasm_f32x4_splat(p->y_scale);
  /* Quantization as simd/quantize_wasmsimd.c: clamp to [y_min - zp,
   * y_max - zp] (pmax sends NaN to the low end, like the reference), then
   * round half to even by adding 1.5 * 2^23. */
  const v128_t lo = wasm_f32x4_splat((float)(p->y_min - p->y_zero_point));
  const v128_t hi = wasm_f32x4_splat((float)(p->y_max - p->y_zero_point));
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  const v128_t magic_less_zp = wasm_i32x4_splat(0x4B400000 - p->y_zero_point);
  const bool y_unsigned = p->y_dtype == WQ_DT_UINT8;
  v128_t fa[4], fb[4];
  /* A broadcast operand is dequantized once. */
  if (!a_step)
    dequant16(wasm_v128_xor(wasm_i8x16_splat((int8_t)a8[0]), a_flip), a_zp, a_scale, fa);
  if (!b_step)
    dequant16(wasm_v128_xor(wasm_i8x16_splat((int8_t)b8[0]), b_flip), b_zp, b_scale, fb);
  /* A run of n > 16 ending mid-vector finishes with the 16 codes ending at
   * n, computed first (i = -16: y may be an operand's buffer) and stored
   * last: the per-channel runs of channels-last data (88, 200, ...) would
   * otherwise spend a third of their time in the scalar tail. */
  v128_t last = wasm_i32x4_splat(0);
  const bool overlap = n > 16 && n % 16 != 0;
  int64_t i = overlap ? -16 : 0;
  for (; i + 16 <= n; i += 16) {
    const int64_t at = i < 0 ? n - 16 : i;
    if (a_step)
      dequant16(wasm_v128_xor(wasm_v128_load(a8 + at), a_flip), a_zp, a_scale, fa);
    if (b_step)
      dequant16(wasm_v128_xor(wasm_v128_load(b8 + at), b_flip), b_zp, b_scale, fb);
    v128_t q[4];
    for (int j = 0; j < 4; j++) {
      v128_t v = p->mul ? wasm_f32x4_mul(fa[j], fb[j]) : wasm_f32x4_add(fa[j], fb[j]);
      v = wasm_f32x4_div(v, y_scale);
      v = wasm_f32x4_pmin(hi, wasm_f32x4_pmax(lo, v));
      q[j] = wasm_i32x4_sub(wasm_f32x4_add(v, magic), magic_less_zp);
    }
    v128_t q01 = wasm_i16x8_narrow_i32x4(q[0], q[1]), q23 = wasm_i16x8_narrow_i32x4(q[2], q[3]);
    v128_t bytes =
        y_unsigned ? wasm_u8x16_narrow_i16x8(q01, q23) : wasm_i8x16_narrow_i16x8(q01, q23);
    if (i < 0)
      last = bytes;
    else
      wasm_v128_store(y8 + i, bytes);
  }
  if (overlap)
    wasm_v128_store(y8 + n - 16, last);
  else if (i < n)
    wq_ref_qbinary_row(p, n - i, a8 + i * a_step, a_step, b8 + i * b_step, b_step, y8 + i);
}

/* ---- lookup ------------------------------------------------------------ */

#define LANE(k) r = wasm_u8x16_replace_lane(r, k, table[wasm_u8x16_extract_lane(v, k)])
void wq_simd_lookup_q8(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const v128_t flip = wasm_i8x16_splat(x_signed ? (int8_t)0x80 : 0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v128_t v = wasm_v128_xor(wasm_v128_load(in + i), flip), r = v;
    LANE(0);
    LANE(1);
    LANE(2);
    LANE(3);
    LANE(4);
    LANE(5);
    LANE(6);
    LANE(7);
    LANE(8);
    LANE(9);
    LANE(10);
    LANE(11);
    LANE(12);
    LANE(13);
    LANE(14);
    LANE(15);
    wasm_v128_store(out + i, r);
  }
  wq_ref_lookup_q8(table, x_signed, n - i, in + i, out + i);
}

/* ---- copies ------------------------------------------------------------ */

/* memcpy for the short runs of channels-last data: 16-byte vectors with an
 * overlapping last one, or two overlapping 8- / 4-byte words. Not inlined:
 * one copy of it keeps the .wasm small. */
__attribute__((noinline)) static void copy_bytes(uint8_t *dst, const uint8_t *src, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      wasm_v128_store(dst + i, wasm_v128_load(src + i));
    if (i < n)
      wasm_v128_store(dst + n - 16, wasm_v128_load(src + n - 16));
  } else if (n >= 8) {
    uint64_t head, tail;
    memcpy(&head, src, 8);
    memcpy(&tail, src + n - 8, 8);
    memcpy(dst, &head, 8);
    memcpy(dst + n - 8, &tail, 8);
  } else if (n >= 4) {
    uint32_t head, tail;
    memcpy(&head, src, 4);
    memcpy(&tail, src + n - 4, 4);
    memcpy(dst, &head, 4);
    memcpy(dst + n - 4, &tail, 4);
  } else {
    for (int64_t i = 0; i < n; i++)
      dst[i] = src[i];
  }
}

void wq_simd_copy_rows_q8(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                          const uint8_t *table, bool x_signed, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  for (int64_t r = 0; r < rows; r++) {
    if (table)
      wq_simd_lookup_q8(table, x_signed, row_len, in + r * x_stride, out + r * y_stride);
    else
      copy_bytes(out + r * y_stride, in + r * x_stride, row_len);
  }
}

void wq_simd_resize_nearest_nhwc_q8(const wq_resize_nhwc *r, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const int64_t C = r->channels, row = r->out_w * C;
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t oh = 0; oh < r->out_h; oh++) {
      uint8_t *dst = out + (b * r->out_h + oh) * row;
      if (oh > 0 && r->src_h[oh] == r->src_h[oh - 1]) { /* upsampled rows repeat */
        copy_bytes(dst, dst - row, row);
        continue;
      }
      const uint8_t *src = in + (b * r->in_h + r->src_h[oh]) * r->in_w * C;
      for (int64_t ow = 0; ow < r->out_w; ow++)
        copy_bytes(dst + ow * C, src + r->src_w[ow] * C, C);
    }
}

void wq_simd_depth_to_space_nhwc_q8(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block,
                                    bool crd, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const int64_t oc = c / (block * block), ow = w * block, run = block * oc;
  for (int64_t n = 0; n < batch; n++)
    for (int64_t ih = 0; ih < h; ih++)
      for (int64_t i = 0; i < block; i++) {
        uint8_t *dst = out + ((n * h + ih) * block + i) * ow * oc;
        const uint8_t *src = in + (n * h + ih) * w * c;
        if (!crd) { /* DCR: input channels [i*b*oc, (i+1)*b*oc) are the run */
          for (int64_t iw = 0; iw < w; iw++)
            copy_bytes(dst + iw * run, src + iw * c + i * run, run);
          continue;
        }
        /* CRD: output (j, ch) reads input channel ch*b² + i*b + j. */
        for (int64_t iw = 0; iw < w; iw++) {
          const uint8_t *s = src + iw * c + i * block;
          uint8_t *d = dst + iw * run;
          for (int64_t j = 0; j < block; j++)
#pragma clang loop vectorize(disable) unroll(disable) /* a strided gather: keep it small */
            for (int64_t ch = 0; ch < oc; ch++)
              d[j * oc + ch] = s[ch * block * block + j];
        }
      }
}

const wq_qeltwise_config wq_qeltwise_config_simd128 = {
    .name = "simd128",
    .isa = WQ_ISA_SIMD128,
    .binary_row = wq_simd_qbinary_row,
    .lookup = wq_simd_lookup_q8,
    .copy_rows = wq_simd_copy_rows_q8,
    .resize_nearest = wq_simd_resize_nearest_nhwc_q8,
    .depth_to_space = wq_simd_depth_to_space_nhwc_q8,
};
