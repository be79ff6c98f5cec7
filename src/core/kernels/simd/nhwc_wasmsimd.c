/* wasm SIMD128 NHWC transitions and pools (kernels/nhwc.h). */
#include <string.h>
#include <wasm_simd128.h>

#include "../../runtime/parallel.h"
#include "../ref/quant_ref.h"
#include "../ref/ref_nhwc.h"
#include "nhwc_simd.h"

/* dst (cols x rows) = transpose of src (rows x cols), bytes: 16x16 blocks
 * by four rounds of byte interleaves, scalar edges. */
static void transpose_u8(int64_t rows, int64_t cols, const uint8_t *src, uint8_t *dst) {
  int64_t r0 = 0;
  for (; r0 + 16 <= rows; r0 += 16) {
    int64_t c0 = 0;
    for (; c0 + 16 <= cols; c0 += 16) {
      v128_t v[16], t[16];
      for (int i = 0; i < 16; i++) {
        v[i] = wasm_v128_load(src + (r0 + i) * cols + c0);
      }
      /* The four rounds are the same code: kept rolled (each unrolled
       * round is ~1 KB of shuffle immediates in the shipped .wasm). */
#pragma clang loop unroll(disable)
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 8; i++) {
          t[2 * i] = wasm_i8x16_shuffle(v[i], v[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6,
                                        22, 7, 23);
          t[2 * i + 1] = wasm_i8x16_shuffle(v[i], v[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28,
                                            13, 29, 14, 30, 15, 31);
        }
        memcpy(v, t, sizeof v);
      }
      for (int i = 0; i < 16; i++)
        wasm_v128_store(dst + (c0 + i) * rows + r0, v[i]);
    }
    for (; c0 < cols; c0++)
      for (int64_t r = r0; r < r0 + 16; r++)
        dst[c0 * rows + r] = src[r * cols + c0];
  }
  for (; r0 < rows; r0++)
    for (int64_t c = 0; c < cols; c++)
      dst[c * rows + r0] = src[r0 * cols + c];
}

void wq_simd_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  const uint8_t *x8 = x;
  uint8_t *y8 = y;
  for (int64_t b = 0; b < n; b++)
    transpose_u8(c, s, x8 + b * c * s, y8 + b * c * s);
}

void wq_simd_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  const uint8_t *x8 = x;
  uint8_t *y8 = y;
  for (int64_t b = 0; b < n; b++)
    transpose_u8(s, c, x8 + b * c * s, y8 + b * c * s);
}

typedef struct {
  int64_t pixels, channels;
  const wq_int8_pool_quant *q;
  const void *x;
  void *y;
} qgap_job;

/* Sums of `lanes` (16, or 8 through 8-byte loads) channels from c0 over
 * every pixel of one image, stored as codes for the lanes from `first`. */
static void qgap_lanes(const qgap_job *j, int64_t b, int64_t c0, int lanes, int first) {
  const int64_t pixels = j->pixels, channels = j->channels;
  const wq_int8_pool_quant *q = j->q;
  const uint8_t *xb = (const uint8_t *)j->x + b * pixels * channels + c0;
  const int is_unsigned = q->x_dtype == WQ_DT_UINT8;
  v128_t s0 = wasm_i32x4_splat(0), s1 = s0, s2 = s0, s3 = s0;
  /* int16 partial sums are exact for 128 pixels of 8-bit codes. */
  for (int64_t p0 = 0; p0 < pixels; p0 += 128) {
    int64_t p1 = pixels - p0 < 128 ? pixels : p0 + 128;
    v128_t lo = wasm_i16x8_splat(0), hi = lo;
    for (int64_t p = p0; p < p1; p++) {
      v128_t v = lanes == 16 ? wasm_v128_load(xb + p * channels)
                             : wasm_v128_load64_zero(xb + p * channels);
      if (is_unsigned) {
        lo = wasm_i16x8_add(lo, wasm_u16x8_extend_low_u8x16(v));
        hi = wasm_i16x8_add(hi, wasm_u16x8_extend_high_u8x16(v));
      } else {
        lo = wasm_i16x8_add(lo, wasm_i16x8_extend_low_i8x16(v));
        hi = wasm_i16x8_add(hi, wasm_i16x8_extend_high_i8x16(v));
      }
    }
    if (is_unsigned) {
      s0 = wasm_i32x4_add(s0, wasm_u32x4_extend_low_u16x8(lo));
      s1 = wasm_i32x4_add(s1, wasm_u32x4_extend_high_u16x8(lo));
      s2 = wasm_i32x4_add(s2, wasm_u32x4_extend_low_u16x8(hi));
      s3 = wasm_i32x4_add(s3, wasm_u32x4_extend_high_u16x8(hi));
    } else {
      s0 = wasm_i32x4_add(s0, wasm_i32x4_extend_low_i16x8(lo));
      s1 = wasm_i32x4_add(s1, wasm_i32x4_extend_high_i16x8(lo));
      s2 = wasm_i32x4_add(s2, wasm_i32x4_extend_low_i16x8(hi));
      s3 = wasm_i32x4_add(s3, wasm_i32x4_extend_high_i16x8(hi));
    }
  }
  int32_t sums[16];
  wasm_v128_store(sums, s0);
  wasm_v128_store(sums + 4, s1);
  wasm_v128_store(sums + 8, s2);
  wasm_v128_store(sums + 12, s3);
  for (int i = first; i < lanes; i++) {
    /* int32 lane sums are exact below 2^23 pixels; widen before the
     * zero-point correction. */
    int64_t sum = (is_unsigned ? (int64_t)(uint32_t)sums[i] : (int64_t)sums[i]) -
                  (int64_t)q->x_zero_point * pixels;
    wq_ref_q_store(j->y, q->y_dtype, b * channels + c0 + i, wq_qpool_mean_code(q, sum, pixels));
  }
}

/* Groups [g0, g1) of the flattened (image, 16-channel group) space. A last
 * partial group of C >= 16 channels reads the 16 ending at C (storing only
 * its new channels), 8 <= C < 16 runs as two 8-lane halves; only C < 8
 * sums one channel at a time. */
static void qgap_groups(void *ctx, int64_t g0, int64_t g1) {
  const qgap_job *j = ctx;
  const int64_t pixels = j->pixels, channels = j->channels;
  const wq_int8_pool_quant *q = j->q;
  const int64_t groups = (channels + 15) / 16;
  for (int64_t g = g0; g < g1; g++) {
    const int64_t b = g / groups, c0 = g % groups * 16;
    if (c0 + 16 <= channels) {
      qgap_lanes(j, b, c0, 16, 0);
    } else if (channels >= 16) {
      qgap_lanes(j, b, channels - 16, 16, (int)(c0 - (channels - 16)));
    } else if (channels >= 8) {
      qgap_lanes(j, b, 0, 8, 0);
      if (channels > 8)
        qgap_lanes(j, b, channels - 8, 8, (int)(16 - channels));
    } else {
      for (int64_t c = 0; c < channels; c++) {
        int64_t sum = 0;
        for (int64_t p = 0; p < pixels; p++)
          sum += wq_ref_q_load(j->x, q->x_dtype, (b * pixels + p) * channels + c) - q->x_zero_point;
        wq_ref_q_store(j->y, q->y_dtype, b * channels + c, wq_qpool_mean_code(q, sum, pixels));
      }
    }
  }
}

/* Pools of fewer input bytes stay on one thread. */
#define QGAP_PARALLEL_MIN ((int64_t)1 << 18)

void wq_simd_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                       const void *x, void *y) {
  qgap_job job = {pixels, channels, q, x, y};
  const int64_t groups = batch * ((channels + 15) / 16);
  if (wq_parallel_threads() > 1 && groups > 1 && batch * pixels * channels >= QGAP_PARALLEL_MIN)
    wq_parallel_for(groups, 1, qgap_groups, &job);
  else
    qgap_groups(&job, 0, groups);
}

/* Channels run in chunks of 16 lanes. A maximum does not change when
 * recomputed, so the last chunk of C >= 16 channels overlaps the one before
 * it (at C - 16), and 8 <= C < 16 runs as two 8-lane halves at 0 and C - 8;
 * only C < 8 goes through a copy. */
__attribute__((minsize)) void wq_simd_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned,
                                                      const void *x, void *y) {
  const int64_t C = p->channels;
  const uint8_t *x8 = x;
  uint8_t *y8 = y;
  const v128_t lowest = is_unsigned ? wasm_i8x16_splat(0) : wasm_i8x16_splat(-128);
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t oh = 0; oh < p->out_h; oh++)
      for (int64_t ow = 0; ow < p->out_w; ow++) {
        const int64_t h0 = oh * p->stride_h - p->pad_top, w0 = ow * p->stride_w - p->pad_left;
        uint8_t *out = y8 + ((b * p->out_h + oh) * p->out_w + ow) * C;
        for (int64_t done = 0; done < C;) {
          /* width: 16, 8, or C (< 8) lanes from channel c0 */
          const int64_t width = C >= 16 ? 16 : C >= 8 ? 8 : C;
          const int64_t c0 = done + width <= C ? done : C - width;
          done = c0 + width;
          v128_t m = lowest;
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            int64_t ih = h0 + kh * p->dil_h;
            if (ih < 0 || ih >= p->in_h)
              continue;
            for (int64_t kw = 0; kw < p->kernel_w; kw++) {
              int64_t iw = w0 + kw * p->dil_w;
              if (iw < 0 || iw >= p->in_w)
                continue;
              const uint8_t *src = x8 + ((b * p->in_h + ih) * p->in_w + iw) * C + c0;
              v128_t v;
              if (width == 16) {
                v = wasm_v128_load(src);
              } else if (width == 8) {
                v = wasm_v128_load64_zero(src);
              } else {
                uint8_t tmp[16] = {0};
                memcpy(tmp, src, (size_t)width);
                v = wasm_v128_load(tmp);
              }
              m = is_unsigned ? wasm_u8x16_max(m, v) : wasm_i8x16_max(m, v);
            }
          }
          if (width == 16) {
            wasm_v128_store(out + c0, m);
          } else if (width == 8) {
            wasm_v128_store64_lane(out + c0, m, 0);
          } else {
            uint8_t best[16];
            wasm_v128_store(best, m);
            memcpy(out + c0, best, (size_t)width);
          }
        }
      }
}

/* 16 codes of wq_qpool_mean_code from four i32x4 window sums of
 * zero-point-free codes: the double product and quotient in f64x2, rounded
 * to float32, then QuantizeLinear as simd/quantize_wasmsimd.c does — the
 * same IEEE operations as the scalar reference. count > 0. */
static v128_t mean_codes16(const v128_t *sums, int64_t count, const wq_int8_pool_quant *q) {
  const v128_t x_scale = wasm_f64x2_splat((double)q->x_scale);
  const v128_t divisor = wasm_f64x2_splat((double)count);
  const v128_t y_scale = wasm_f32x4_splat(q->y_scale);
  const v128_t lo = wasm_f32x4_splat((float)(q->y_min - q->y_zero_point));
  const v128_t hi = wasm_f32x4_splat((float)(q->y_max - q->y_zero_point));
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  const v128_t magic_less_zp = wasm_i32x4_splat(0x4B400000 - q->y_zero_point);
  v128_t codes[4];
  for (int j = 0; j < 4; j++) {
    v128_t d_lo = wasm_f64x2_convert_low_i32x4(sums[j]);
    v128_t d_hi = wasm_f64x2_convert_low_i32x4(wasm_i32x4_shuffle(sums[j], sums[j], 2, 3, 2, 3));
    d_lo = wasm_f64x2_div(wasm_f64x2_mul(d_lo, x_scale), divisor);
    d_hi = wasm_f64x2_div(wasm_f64x2_mul(d_hi, x_scale), divisor);
    v128_t mean = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(d_lo),
                                     wasm_f32x4_demote_f64x2_zero(d_hi), 0, 1, 4, 5);
    v128_t v = wasm_f32x4_div(mean, y_scale);
    v = wasm_f32x4_pmin(hi, wasm_f32x4_pmax(lo, v));
    codes[j] = wasm_i32x4_sub(wasm_f32x4_add(v, magic), magic_less_zp);
  }
  v128_t a = wasm_i16x8_narrow_i32x4(codes[0], codes[1]);
  v128_t b = wasm_i16x8_narrow_i32x4(codes[2], codes[3]);
  return q->y_dtype == WQ_DT_UINT8 ? wasm_u8x16_narrow_i16x8(a, b) : wasm_i8x16_narrow_i16x8(a, b);
}

/* s[0..3] += the 16 int16 lane sums in lo16, hi16. */
static inline void add_widened(v128_t *s, v128_t lo16, v128_t hi16) {
  s[0] = wasm_i32x4_add(s[0], wasm_i32x4_extend_low_i16x8(lo16));
  s[1] = wasm_i32x4_add(s[1], wasm_i32x4_extend_high_i16x8(lo16));
  s[2] = wasm_i32x4_add(s[2], wasm_i32x4_extend_low_i16x8(hi16));
  s[3] = wasm_i32x4_add(s[3], wasm_i32x4_extend_high_i16x8(hi16));
}

void wq_simd_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                           const void *x, void *y) {
  const int64_t C = p->channels;
  const uint8_t *x8 = x;
  uint8_t *y8 = y;
  /* uint8 codes are summed as int8 with the top bit flipped (q - 128), the
   * zero point lowered by 128 to match: one signed path for both. */
  const int is_unsigned = q->x_dtype == WQ_DT_UINT8;
  const v128_t flip = wasm_i8x16_splat(is_unsigned ? (int8_t)0x80 : 0);
  const v128_t zp = wasm_i32x4_splat(q->x_zero_point - (is_unsigned ? 128 : 0));
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t oh = 0; oh < p->out_h; oh++)
      for (int64_t ow = 0; ow < p->out_w; ow++) {
        const int64_t h0 = oh * p->stride_h - p->pad_top, w0 = ow * p->stride_w - p->pad_left;
        const int64_t count = wq_pool2d_count(p, count_include_pad, oh, ow);
        const int64_t at = ((b * p->out_h + oh) * p->out_w + ow) * C;
        if (count <= 0) { /* an empty window: quantize(0) */
          for (int64_t c = 0; c < C; c++)
            wq_ref_q_store(y, q->y_dtype, at + c, wq_qpool_mean_code(q, 0, 0));
          continue;
        }
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
          const int64_t lanes = C - c0 < 16 ? C - c0 : 16;
          v128_t s[4] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0), wasm_i32x4_splat(0),
                         wasm_i32x4_splat(0)};
          v128_t lo16 = wasm_i16x8_splat(0), hi16 = lo16;
          int64_t taps = 0, in_window = 0;
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            const int64_t ih = h0 + kh * p->dil_h;
            if (ih < 0 || ih >= p->in_h)
              continue;
            for (int64_t kw = 0; kw < p->kernel_w; kw++) {
              const int64_t iw = w0 + kw * p->dil_w;
              if (iw < 0 || iw >= p->in_w)
                continue;
              const uint8_t *src = x8 + ((b * p->in_h + ih) * p->in_w + iw) * C + c0;
              v128_t v;
              if (lanes < 16) {
                uint8_t tmp[16] = {0};
                memcpy(tmp, src, (size_t)lanes);
                v = wasm_v128_load(tmp);
              } else {
                v = wasm_v128_load(src);
              }
              /* int16 partial sums are exact for 128 taps of 8-bit codes */
              v = wasm_v128_xor(v, flip);
              lo16 = wasm_i16x8_add(lo16, wasm_i16x8_extend_low_i8x16(v));
              hi16 = wasm_i16x8_add(hi16, wasm_i16x8_extend_high_i8x16(v));
              in_window++;
              if (++taps == 128) {
                add_widened(s, lo16, hi16);
                lo16 = hi16 = wasm_i16x8_splat(0);
                taps = 0;
              }
            }
          }
          add_widened(s, lo16, hi16);
          /* remove the zero point once per tap inside the input */
          const v128_t zp_total = wasm_i32x4_mul(zp, wasm_i32x4_splat((int32_t)in_window));
          for (int j = 0; j < 4; j++)
            s[j] = wasm_i32x4_sub(s[j], zp_total);
          v128_t codes = mean_codes16(s, count, q);
          if (lanes < 16) {
            uint8_t tmp[16];
            wasm_v128_store(tmp, codes);
            memcpy(y8 + at + c0, tmp, (size_t)lanes);
          } else {
            wasm_v128_store(y8 + at + c0, codes);
          }
        }
      }
}

const wq_nhwc_config wq_nhwc_config_simd128 = {
    .name = "simd128",
    .isa = WQ_ISA_SIMD128,
    .nchw_to_nhwc = wq_simd_nchw_to_nhwc_u8,
    .nhwc_to_nchw = wq_simd_nhwc_to_nchw_u8,
    .qgap = wq_simd_qgap_nhwc,
    .qavgpool = wq_simd_qavgpool_nhwc,
    .maxpool = wq_simd_maxpool_nhwc_q8,
};
