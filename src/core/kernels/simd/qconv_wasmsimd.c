/* wasm SIMD128 NHWC int8 convolutions: GEMM-based algorithms feed the
 * packed GEMM (qgemm_wasmsimd.c) with im2col panels built per block of 4
 * output pixels; depthwise runs channels across lanes, two taps per
 * i32x4.dot_i16x8_s. */
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "qconv_simd.h"
#include "qgemm_ukernel.h"

enum { DW_LANES = 16, WQ_QCONV_DW_MAX_TAPS = 64 };

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* One group's weights as a GEMM over the plan's K layout: column j is
 * output channel g * mg + j, K position (segment s, element e) is tap
 * s * taps_per_segment + e / cg, channel e % cg; stride gaps are 0. */
static wq_status pack_group_gemm(wq_qconv_plan *p, const wq_qconv_desc *d, int64_t g,
                                 const char *node, wq_error *err) {
  const wq_qconv_k_layout *k = &p->k_layout;
  const int64_t cg = d->in_channels / d->group, mg = d->out_channels / d->group;
  const int64_t kdim = k->segments * k->segment_stride;
  int8_t *w = calloc((size_t)(mg * kdim), 1);
  if (!w)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  for (int64_t j = 0; j < mg; j++)
    for (int64_t s = 0; s < k->segments; s++)
      for (int64_t e = 0; e < k->segment_len; e++) {
        int64_t tap = s * k->taps_per_segment + e / cg;
        w[j * kdim + s * k->segment_stride + e] = (int8_t)wq_qconv_stored_weight(
            d, p, g * mg + j, e % cg, tap / p->kernel_w, tap % p->kernel_w);
      }
  wq_qgemm_desc gd = {
      .n = mg,
      .k = kdim,
      .a_dtype = d->x_dtype,
      .a_zero_point = d->x_zero_point,
      .w_dtype = WQ_DT_INT8, /* already stored form */
      .w = w,
      .w_k_stride = 1,
      .w_n_stride = kdim,
      .w_zero_point = p->weights.w_zero_point + g * mg,
      .w_zero_point_count = mg,
      .bias = p->weights.bias + g * mg,
      .multiplier = p->weights.multiplier + g * mg,
      .multiplier_count = mg,
      .y_dtype = d->y_dtype,
      .y_zero_point = d->y_zero_point,
      .y_min = d->y_min,
      .y_max = d->y_max,
  };
  wq_status st = wq_qgemm_desc_check(&gd, node, err);
  if (st == WQ_OK)
    st = wq_simd_qgemm_pack(&p->gemms[g], &gd, node, err);
  free(w);
  return st;
}

/* Depthwise weights: per chunk of 16 channels, per tap pair tp, 32 int16:
 * w16[((c / 16) * pairs + tp) * 32 + (c % 16) * 2 + i] = W(c, tap 2tp + i)
 * - w_zp(c) (0 past the last tap and channel); the bias absorbs -x_zp * sum_t (W - w_zp) so raw
 * activations can be multiplied (padding taps read x_zp and contribute exactly 0). */
static wq_status pack_depthwise(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                                wq_error *err) {
  const int64_t C = d->in_channels, c16 = round_up(C, DW_LANES);
  const int64_t taps = p->kernel_h * p->kernel_w, pairs = (taps + 1) / 2;
  WQ_TRY(wq_qconv_channel_data(p, d, c16, node, err));
  p->weights.w16 = calloc((size_t)(pairs * c16 * 2), sizeof(int16_t));
  if (!p->weights.w16)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  for (int64_t c = 0; c < C; c++) {
    uint32_t sum = 0;
    for (int64_t t = 0; t < taps; t++) {
      int32_t v = wq_qconv_stored_weight(d, p, c, 0, t / p->kernel_w, t % p->kernel_w) -
                  p->weights.w_zero_point[c];
      p->weights
          .w16[((c / DW_LANES) * pairs + t / 2) * 2 * DW_LANES + (c % DW_LANES) * 2 + (t & 1)] =
          (int16_t)v;
      sum += (uint32_t)v;
    }
    p->weights.bias[c] = (int32_t)((uint32_t)p->weights.bias[c] - (uint32_t)d->x_zero_point * sum);
  }
  return WQ_OK;
}

wq_status wq_simd_qconv_pack(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                             wq_error *err) {
  if (p->algo == WQ_QCONV_DEPTHWISE)
    return pack_depthwise(p, d, node, err);
  WQ_TRY(wq_qconv_channel_data(p, d, d->out_channels, node, err));
  p->gemms = calloc((size_t)d->group, sizeof *p->gemms);
  if (!p->gemms)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  for (int64_t g = 0; g < d->group; g++)
    WQ_TRY(pack_group_gemm(p, d, g, node, err));
  return WQ_OK;
}

/* im2col panels of one group. */
typedef struct {
  const wq_qconv_plan *p;
  const wq_qgemm_packed *gemm;
  const uint8_t *x;
  int64_t channel_offset;        /* g * cg */
  uint8_t *border;               /* 4 rows of segment_len bytes for windows cut by padding */
  const int64_t *segment_offset; /* segment s of an interior window: base + offset[s] */
} im2col_ctx;

/* Source of segment s of output pixel (n, oh, ow): a pointer into x when
 * the whole run is inside, the zero-point row when it is all padding, else
 * a run assembled in `scratch`. */
static const uint8_t *segment_source(const im2col_ctx *c, int64_t n, int64_t oh, int64_t ow,
                                     int64_t s, uint8_t *scratch) {
  const wq_qconv_plan *p = c->p;
  const wq_qconv_k_layout *k = &p->k_layout;
  const int64_t C = p->in_channels;
  const int64_t tap0 = s * k->taps_per_segment;
  const int64_t kh = k->taps_per_segment == 1 ? tap0 / p->kernel_w : s;
  const int64_t kw0 = k->taps_per_segment == 1 ? tap0 - kh * p->kernel_w : 0;
  const int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dil_h;
  if (ih < 0 || ih >= p->in_h)
    return p->pad_row;
  const uint8_t *row = c->x + (n * p->in_h + ih) * p->in_w * C + c->channel_offset;
  const int64_t iw0 = ow * p->stride_w - p->pad_left + kw0 * p->dil_w;
  const int64_t iw_last = iw0 + (k->taps_per_segment - 1) * p->dil_w;
  if (iw0 >= 0 && iw_last < p->in_w)
    return row + iw0 * C; /* taps of a run are adjacent when taps_per_segment > 1 */
  if (k->taps_per_segment == 1)
    return p->pad_row;
  const int64_t cg = k->segment_len / k->taps_per_segment;
  for (int64_t t = 0; t < k->taps_per_segment; t++) {
    int64_t iw = iw0 + t * p->dil_w;
    if (iw >= 0 && iw < p->in_w)
      memcpy(scratch + t * cg, row + iw * C, (size_t)cg);
    else
      memset(scratch + t * cg, p->x_zero_point & 0xFF, (size_t)cg);
  }
  return scratch;
}

static void fill_im2col_panel(const void *ctx, int64_t row0, int64_t rows, int16_t *panel) {
  const im2col_ctx *c = ctx;
  const wq_qconv_plan *p = c->p;
  const wq_qconv_k_layout *k = &p->k_layout;
  /* Output pixel of each panel row (rows past `rows` repeat the last). */
  int64_t n[4], oh[4], ow[4];
  int64_t ow0 = row0 % p->out_w, rest = row0 / p->out_w;
  n[0] = rest / p->out_h;
  oh[0] = rest - n[0] * p->out_h;
  ow[0] = ow0;
  for (int r = 1; r < 4; r++) {
    n[r] = n[r - 1];
    oh[r] = oh[r - 1];
    ow[r] = ow[r - 1];
    if (r >= rows)
      continue;
    if (++ow[r] == p->out_w) {
      ow[r] = 0;
      if (++oh[r] == p->out_h) {
        oh[r] = 0;
        n[r]++;
      }
    }
  }
  /* Windows entirely inside the input read every segment at a fixed offset
   * from their top-left pixel. */
  const uint8_t *base[4];
  const int64_t span_h = (p->kernel_h - 1) * p->dil_h, span_w = (p->kernel_w - 1) * p->dil_w;
  for (int r = 0; r < 4; r++) {
    const int64_t ih0 = oh[r] * p->stride_h - p->pad_top, iw0 = ow[r] * p->stride_w - p->pad_left;
    base[r] =
        ih0 >= 0 && ih0 + span_h < p->in_h && iw0 >= 0 && iw0 + span_w < p->in_w
            ? c->x + ((n[r] * p->in_h + ih0) * p->in_w + iw0) * p->in_channels + c->channel_offset
            : NULL;
  }
  for (int64_t s = 0; s < k->segments; s++) {
    const void *src[4];
    for (int r = 0; r < 4; r++)
      src[r] = base[r] ? base[r] + c->segment_offset[s]
                       : segment_source(c, n[r], oh[r], ow[r], s, c->border + r * k->segment_len);
    wq_simd_panel_pack(panel, s * k->segment_stride, src, k->segment_len, p->x_dtype,
                       p->x_zero_point);
  }
  int64_t written = (k->segments - 1) * k->segment_stride + k->segment_len + (k->segment_len & 1);
  wq_simd_panel_fill(panel, written, c->gemm->k_padded, p->x_zero_point);
}

/* 16 channels of one output pixel: the bias plus, per tap pair, the two
 * taps' raw bytes interleaved, widened and dotted with the pair's weights.
 * is_unsigned is a constant at each call site, so the loop specialises. */
static inline void dw_chunk(const uint8_t *const *src, int64_t offset, int64_t pairs,
                            const int16_t *w, const int32_t *bias, const int is_unsigned,
                            v128_t acc[4]) {
  v128_t a0 = wasm_v128_load(bias), a1 = wasm_v128_load(bias + 4);
  v128_t a2 = wasm_v128_load(bias + 8), a3 = wasm_v128_load(bias + 12);
  for (int64_t tp = 0; tp < pairs; tp++) {
    v128_t x0 = wasm_v128_load(src[2 * tp] + offset), x1 = wasm_v128_load(src[2 * tp + 1] + offset);
    v128_t lo = wasm_i8x16_shuffle(x0, x1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    v128_t hi =
        wasm_i8x16_shuffle(x0, x1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    v128_t v0, v1, v2, v3;
    if (is_unsigned) {
      v0 = wasm_u16x8_extend_low_u8x16(lo);
      v1 = wasm_u16x8_extend_high_u8x16(lo);
      v2 = wasm_u16x8_extend_low_u8x16(hi);
      v3 = wasm_u16x8_extend_high_u8x16(hi);
    } else {
      v0 = wasm_i16x8_extend_low_i8x16(lo);
      v1 = wasm_i16x8_extend_high_i8x16(lo);
      v2 = wasm_i16x8_extend_low_i8x16(hi);
      v3 = wasm_i16x8_extend_high_i8x16(hi);
    }
    a0 = wasm_i32x4_add(a0, wasm_i32x4_dot_i16x8(v0, wasm_v128_load(w)));
    a1 = wasm_i32x4_add(a1, wasm_i32x4_dot_i16x8(v1, wasm_v128_load(w + 8)));
    a2 = wasm_i32x4_add(a2, wasm_i32x4_dot_i16x8(v2, wasm_v128_load(w + 16)));
    a3 = wasm_i32x4_add(a3, wasm_i32x4_dot_i16x8(v3, wasm_v128_load(w + 24)));
    w += 2 * DW_LANES;
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
}

static wq_status run_depthwise(const wq_qconv_plan *p, const uint8_t *x, uint8_t *y,
                               wq_error *err) {
  const int64_t C = p->in_channels, c16 = round_up(C, DW_LANES);
  const int64_t taps = p->kernel_h * p->kernel_w, pairs = (taps + 1) / 2;
  const int64_t tail = C % DW_LANES, full = C - tail;
  /* Per pixel: a source pointer per tap (an even count; the extra tap reads
   * the zero-point row against zero weights); for the channel tail, copies
   * padded to 16 lanes. */
  const uint8_t **src = malloc(sizeof *src * (size_t)(4 * pairs));
  uint8_t *tail_rows = tail ? malloc((size_t)(2 * pairs * DW_LANES)) : NULL;
  if (!src || (tail && !tail_rows)) {
    free((void *)src);
    free(tail_rows);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "qconv: out of memory");
  }
  wq_qgemm_packed requant_view = {
      .y_min = p->y_min, .y_max = p->y_max, .y_zero_point = p->y_zero_point, .y_dtype = p->y_dtype};
  const wq_simd_requant q = wq_simd_requant_init(&requant_view);
  const int is_unsigned_x = p->x_dtype == WQ_DT_UINT8;
  const uint8_t **tail_src = src + 2 * pairs;
  for (int64_t t = taps; t < 2 * pairs; t++)
    src[t] = p->pad_row;
  /* Offsets of the taps from the window's top-left input pixel. */
  int64_t tap_offset[WQ_QCONV_DW_MAX_TAPS];
  const bool offsets = taps <= WQ_QCONV_DW_MAX_TAPS;
  for (int64_t t = 0; offsets && t < taps; t++)
    tap_offset[t] = ((t / p->kernel_w) * p->dil_h * p->in_w + (t % p->kernel_w) * p->dil_w) * C;
  const int64_t span_h = (p->kernel_h - 1) * p->dil_h, span_w = (p->kernel_w - 1) * p->dil_w;
  for (int64_t n = 0; n < p->batch; n++)
    for (int64_t oh = 0; oh < p->out_h; oh++) {
      const int64_t ih0 = oh * p->stride_h - p->pad_top;
      const bool rows_inside = ih0 >= 0 && ih0 + span_h < p->in_h;
      for (int64_t ow = 0; ow < p->out_w; ow++) {
        const int64_t iw0 = ow * p->stride_w - p->pad_left;
        if (offsets && rows_inside && iw0 >= 0 && iw0 + span_w < p->in_w) {
          const uint8_t *base = x + ((n * p->in_h + ih0) * p->in_w + iw0) * C;
          for (int64_t t = 0; t < taps; t++)
            src[t] = base + tap_offset[t];
        } else {
          int64_t t = 0;
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            const int64_t ih = ih0 + kh * p->dil_h;
            const bool row_inside = ih >= 0 && ih < p->in_h;
            const uint8_t *row = x + (n * p->in_h + ih) * p->in_w * C;
            for (int64_t kw = 0; kw < p->kernel_w; kw++, t++) {
              const int64_t iw = iw0 + kw * p->dil_w;
              src[t] = row_inside && iw >= 0 && iw < p->in_w ? row + iw * C : p->pad_row;
            }
          }
        }
        uint8_t *out = y + ((n * p->out_h + oh) * p->out_w + ow) * C;
        for (int64_t c0 = 0; c0 < c16; c0 += DW_LANES) {
          const bool partial = c0 == full;
          const uint8_t *const *chunk_src = src;
          int64_t offset = c0;
          if (partial) { /* the channel tail, copied into 16-lane rows */
            for (int64_t t = 0; t < 2 * pairs; t++) {
              memset(tail_rows + t * DW_LANES, p->x_zero_point & 0xFF, DW_LANES);
              memcpy(tail_rows + t * DW_LANES, src[t] + c0, (size_t)tail);
              tail_src[t] = tail_rows + t * DW_LANES;
            }
            chunk_src = tail_src;
            offset = 0;
          }
          const int16_t *w = p->weights.w16 + (c0 / DW_LANES) * pairs * 2 * DW_LANES;
          v128_t acc[4];
          if (is_unsigned_x)
            dw_chunk(chunk_src, offset, pairs, w, p->weights.bias + c0, 1, acc);
          else
            dw_chunk(chunk_src, offset, pairs, w, p->weights.bias + c0, 0, acc);
          v128_t o[4];
          for (int i = 0; i < 4; i++)
            o[i] = wq_simd_requant4(&q, acc[i], wasm_v128_load(p->weights.multiplier + c0 + 4 * i));
          v128_t bytes = wq_simd_narrow16(&q, o[0], o[1], o[2], o[3]);
          if (partial) {
            uint8_t tmp[DW_LANES];
            wasm_v128_store(tmp, bytes);
            memcpy(out + c0, tmp, (size_t)tail);
          } else {
            wasm_v128_store(out + c0, bytes);
          }
        }
      }
    }
  free((void *)src);
  free(tail_rows);
  return WQ_OK;
}

wq_status wq_simd_qconv_run(const wq_qconv_plan *p, const void *x, void *y, wq_error *err) {
  if (p->batch == 0)
    return WQ_OK;
  const int64_t pixels = p->batch * p->out_h * p->out_w;
  switch (p->algo) {
  case WQ_QCONV_DEPTHWISE: return run_depthwise(p, x, y, err);
  case WQ_QCONV_GEMM_1X1:
    return wq_simd_qgemm_run(&p->gemms[0], pixels, x, p->in_channels, y, p->out_channels, err);
  case WQ_QCONV_IM2COL_GEMM:
  case WQ_QCONV_GROUPED_GEMM: break;
  }
  const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
  const wq_qconv_k_layout *k = &p->k_layout;
  uint8_t *border = malloc((size_t)(4 * k->segment_len));
  int64_t *offsets = malloc(sizeof(int64_t) * (size_t)k->segments);
  if (!border || !offsets) {
    free(border);
    free(offsets);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "qconv: out of memory");
  }
  for (int64_t s = 0; s < k->segments; s++) {
    const int64_t tap = s * k->taps_per_segment;
    const int64_t kh = tap / p->kernel_w, kw = tap % p->kernel_w;
    offsets[s] = (kh * p->dil_h * p->in_w + kw * p->dil_w) * p->in_channels;
  }
  wq_status st = WQ_OK;
  for (int64_t g = 0; g < p->group && st == WQ_OK; g++) {
    im2col_ctx c = {p, &p->gemms[g], x, g * cg, border, offsets};
    st = wq_simd_qgemm_run_panels(&p->gemms[g], pixels, fill_im2col_panel, &c,
                                  (uint8_t *)y + g * mg, p->out_channels, err);
  }
  free(border);
  free(offsets);
  return st;
}
