/* wasm SIMD128 NHWC int8 convolutions: GEMM-based algorithms feed the
 * packed GEMM (qgemm_wasmsimd.c) with im2col panels built per block of 4
 * output pixels; depthwise runs channels across lanes, two taps per
 * i32x4.dot_i16x8_s, on activations interleaved once per input row. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "../../ir/checked.h"
#include "../../runtime/parallel.h"
#include "qconv_simd.h"
#include "qgemm_ukernel.h"

enum { DW_LANES = 16 };

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
      .float_bias = p->weights.float_bias ? p->weights.float_bias + g * mg : NULL,
      .float_relu = d->float_relu,
      .leaky = d->leaky,
      .leaky_alpha = d->leaky_alpha,
  };
  wq_status st = wq_qgemm_desc_check(&gd, node, err);
  if (st == WQ_OK)
    st = wq_simd_qgemm_pack(&p->gemms[g], &gd, node, err);
  free(w);
  return st;
}

/* Depthwise pairs two taps per i32x4.dot_i16x8_s lane pair. The pairs are
 * interleaved once per input row into int8 "pair rows" (below), so the pixel
 * loop only loads (widening), dots and adds. Pairs run down the kernel's columns (taps kh,
 * kh + 1 of one kw) unless pairing along its rows wastes fewer slots (an odd
 * kernel height against an even width, e.g. 1-D kernels). */
typedef struct {
  bool vertical;
  int64_t rows;     /* pair rows per output row: ceil(KH / 2) or KH */
  int64_t taps;     /* pairs per pair row: KW or ceil(KW / 2) */
  int64_t row_step; /* input rows between pair rows */
  int64_t col_step; /* pair-row columns between taps */
  int64_t cols;     /* pair-row width in columns (input column = column - pad_left) */
  int64_t stride;   /* columns per chunk: cols and the spare ones 4-pixel blocks read */
} dw_pairing;

static dw_pairing dw_pairing_of(const wq_qconv_plan *p) {
  dw_pairing d;
  d.vertical = p->kernel_w * (p->kernel_h & 1) <= p->kernel_h * (p->kernel_w & 1);
  d.rows = d.vertical ? (p->kernel_h + 1) / 2 : p->kernel_h;
  d.taps = d.vertical ? p->kernel_w : (p->kernel_w + 1) / 2;
  d.row_step = d.vertical ? 2 * p->dil_h : p->dil_h;
  d.col_step = d.vertical ? p->dil_w : 2 * p->dil_w;
  d.cols = (p->out_w - 1) * p->stride_w + (d.taps - 1) * d.col_step + 1;
  d.stride = d.cols + 3 * p->stride_w;
  return d;
}

/* Whether the float clamp of the depthwise epilogue (dw_requant) is
 * needed: some channel's accumulator bound (|bias| + 128 * sum |w|, the
 * activations being int8 after the flip) times its multiplier passes 2^22. */
static bool dw_needs_float_clamp(const wq_qconv_plan *p, const dw_pairing *dp) {
  const int64_t pairs = dp->rows * dp->taps;
  for (int64_t c = 0; c < p->in_channels; c++) {
    const int16_t *w = p->weights.w16 + (c / DW_LANES) * pairs * 2 * DW_LANES + (c % DW_LANES) * 2;
    double bound = 0.0;
    for (int64_t t = 0; t < pairs; t++)
      bound += 128.0 * (abs(w[t * 2 * DW_LANES]) + abs(w[t * 2 * DW_LANES + 1]));
    bound += fabs((double)p->weights.bias[c]);
    if (!(bound * (double)p->weights.multiplier[c] < 4194304.0))
      return true;
  }
  return false;
}

/* Depthwise weights: per chunk of 16 channels, pair row r, tap t, 32 int16:
 * w16[((chunk * rows + r) * taps + t) * 32 + (c % 16) * 2 + i] = W(c, tap i
 * of the pair) - w_zp(c), 0 past the kernel and the channels. The bias
 * absorbs -x_zp * sum (W - w_zp) (x_zp - 128 for uint8, whose codes the
 * pair rows flip) so raw activations can be multiplied
 * (padding reads x_zp and contributes exactly 0). */
static wq_status pack_depthwise(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                                wq_error *err) {
  const int64_t C = d->in_channels, c16 = round_up(C, DW_LANES);
  const dw_pairing dp = dw_pairing_of(p);
  const int32_t x_zero_point = d->x_zero_point - (d->x_dtype == WQ_DT_UINT8 ? 128 : 0);
  /* The packed weights and a run's pair-row cache (dw_block) as checked
   * sizes: 16-channel chunks and pair rows as wide as the strided input
   * row can pass any limit although the weights and images are within it. */
  const int64_t w16_dims[4] = {dp.rows, dp.taps, c16, 2 * (int64_t)sizeof(int16_t)};
  const int64_t cache_dims[4] = {2 * dp.rows, dp.stride, c16, 2};
  int64_t w16_bytes, cache_bytes;
  if (!wq_product_within(w16_dims, 4, WQ_MAX_TENSOR_BYTES, &w16_bytes) ||
      !wq_product_within(cache_dims, 4, WQ_MAX_TENSOR_BYTES, &cache_bytes))
    return wq_fail(err, WQ_ERR_SHAPE, node,
                   "qconv: depthwise %lldx%lld kernel over %lld channels (output width %lld, "
                   "stride %lld) needs buffers past the %lld-byte limit",
                   (long long)p->kernel_h, (long long)p->kernel_w, (long long)C,
                   (long long)p->out_w, (long long)p->stride_w, (long long)WQ_MAX_TENSOR_BYTES);
  WQ_TRY(wq_qconv_channel_data(p, d, c16, node, err));
  p->weights.w16 = calloc((size_t)w16_bytes, 1);
  p->bytes += w16_bytes;
  if (!p->weights.w16)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  for (int64_t c = 0; c < C; c++) {
    uint32_t sum = 0;
    for (int64_t kh = 0; kh < p->kernel_h; kh++)
      for (int64_t kw = 0; kw < p->kernel_w; kw++) {
        int32_t v = wq_qconv_stored_weight(d, p, c, 0, kh, kw) - p->weights.w_zero_point[c];
        int64_t r = dp.vertical ? kh / 2 : kh, t = dp.vertical ? kw : kw / 2;
        int64_t i = dp.vertical ? kh & 1 : kw & 1;
        p->weights.w16[(((c / DW_LANES) * dp.rows + r) * dp.taps + t) * 2 * DW_LANES +
                       (c % DW_LANES) * 2 + i] = (int16_t)v;
        sum += (uint32_t)v;
      }
    p->weights.bias[c] = (int32_t)((uint32_t)p->weights.bias[c] - (uint32_t)x_zero_point * sum);
  }
  p->weights.dw_float_clamp = dw_needs_float_clamp(p, &dp);
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
  p->bytes += d->group * (int64_t)sizeof *p->gemms;
  for (int64_t g = 0; g < d->group; g++) {
    WQ_TRY(pack_group_gemm(p, d, g, node, err));
    p->bytes += p->gemms[g].bytes;
  }
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
  const uint8_t *x_end;          /* one past the last byte of x */
} im2col_ctx;

/* Source of segment s of output pixel (n, oh, ow): a pointer into x when
 * the whole run is inside, the zero-point row when it is all padding, else
 * a run assembled in `scratch`. */
__attribute__((noinline)) static const uint8_t *segment_source(const im2col_ctx *c, int64_t n,
                                                               int64_t oh, int64_t ow, int64_t s,
                                                               uint8_t *scratch) {
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
    const uint8_t *src = iw >= 0 && iw < p->in_w ? row + iw * C : p->pad_row;
    if (cg < 16) /* a call to memcpy costs more than a few bytes */
#pragma clang loop vectorize(disable) unroll(disable)
      for (int64_t e = 0; e < cg; e++)
        scratch[t * cg + e] = src[e];
    else
      memcpy(scratch + t * cg, src, (size_t)cg);
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
  /* Segments whose length leaves 3 or more past a multiple of 8 end in a
   * costly scalar tail of the packer (a 5x5 kernel on one channel: every
   * slot). When all
   * four windows are inside x and x extends 7 bytes past the last one, the
   * packer reads whole groups of 8 instead: the extra slots it writes are
   * overwritten by the next segment or the fill below (the panel scratch
   * has room past k_padded), and an odd length's spare slot is set back
   * to the zero point. */
  const int64_t len = k->segment_len, len8 = (len + 7) & ~(int64_t)7;
  const bool overread = (len & 7) >= 3 && base[0] && base[1] && base[2] && base[3] &&
                        c->x_end - base[3] >= c->segment_offset[k->segments - 1] + len8;
  for (int64_t s = 0; s < k->segments; s++) {
    const void *src[4];
#pragma clang loop unroll(full)
    for (int r = 0; r < 4; r++)
      src[r] = base[r] ? base[r] + c->segment_offset[s]
                       : segment_source(c, n[r], oh[r], ow[r], s, c->border + r * len);
    const int64_t k0 = s * k->segment_stride;
    wq_simd_panel_pack(panel, k0, src, overread ? len8 : len, p->x_dtype, p->x_zero_point);
    if (overread && (len & 1))
#pragma clang loop unroll(full)
      for (int r = 0; r < 4; r++)
        panel[(k0 + len) / 2 * 2 * WQ_QGEMM_MR + r * 2 + 1] = (int16_t)p->x_zero_point;
  }
  int64_t written = (k->segments - 1) * k->segment_stride + k->segment_len + (k->segment_len & 1);
  wq_simd_panel_fill(panel, written, c->gemm->k_padded, p->x_zero_point);
}

/* Interleaves `columns` pixels' 16 bytes from a and b (advancing by the
 * steps; 0 repeats the zero-point row), flipping uint8 codes to int8. */
static void dw_interleave(const uint8_t *a, int64_t a_step, const uint8_t *b, int64_t b_step,
                          int8_t *dst, int64_t columns, v128_t flip) {
  for (int64_t i = 0; i < columns; i++, a += a_step, b += b_step, dst += 2 * DW_LANES) {
    const v128_t x0 = wasm_v128_xor(wasm_v128_load(a), flip);
    const v128_t x1 = wasm_v128_xor(wasm_v128_load(b), flip);
    wasm_v128_store(
        dst, wasm_i8x16_shuffle(x0, x1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
    wasm_v128_store(dst + 16, wasm_i8x16_shuffle(x0, x1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                                 29, 14, 30, 15, 31));
  }
}

/* Columns from input column iw on for which a row's source (the row, or
 * the zero-point row past its edges) stays the same. */
static int64_t dw_same_source(const uint8_t *row, int64_t iw, int64_t in_w) {
  return !row ? INT64_MAX : iw < 0 ? -iw : iw < in_w ? in_w - iw : INT64_MAX;
}

/* One pair row: for input row ih (the pair's first tap) and every column,
 * per chunk of 16 channels the two taps' activations interleaved:
 * row[(chunk * stride + col) * 32 + (c % 16) * 2 + i]. Inputs outside the
 * image read the zero-point row; runs of columns whose sources advance
 * alike go through dw_interleave at once. uint8 codes are flipped to int8
 * (x - 128; pack_depthwise lowers the zero point to match), so one signed
 * widening load serves both types. */
static void dw_build_pair_row(const wq_qconv_plan *p, const dw_pairing *dp, const uint8_t *image,
                              int64_t ih, int8_t *row, int64_t k0, int64_t k1) {
  const int64_t C = p->in_channels;
  const int64_t ih1 = ih + (dp->vertical ? p->dil_h : 0), dw = dp->vertical ? 0 : p->dil_w;
  const uint8_t *row0 = ih >= 0 && ih < p->in_h ? image + ih * p->in_w * C : NULL;
  const uint8_t *row1 = ih1 >= 0 && ih1 < p->in_h ? image + ih1 * p->in_w * C : NULL;
  const v128_t flip = wasm_i8x16_splat(p->x_dtype == WQ_DT_UINT8 ? -128 : 0);
  /* The last chunk's 16-byte loads read past channel C into the next
   * pixel, whose lanes meet zero weights; only a load past the image's end
   * (its last pixel) goes through a copy. The zero-point row is long enough. */
  const uint8_t *image_end = image + p->in_h * p->in_w * C;
  /* 16-channel chunks [k0, k1) only. */
  row += k0 * dp->stride * 2 * DW_LANES;
  for (int64_t c0 = k0 * DW_LANES; c0 < C && c0 < k1 * DW_LANES;
       c0 += DW_LANES, row += dp->stride * 2 * DW_LANES) {
    const bool tail = c0 + DW_LANES > C;
    for (int64_t col = 0, n; col < dp->cols; col += n) {
      const int64_t iw0 = col - p->pad_left, iw1 = iw0 + dw;
      const bool in0 = row0 && iw0 >= 0 && iw0 < p->in_w, in1 = row1 && iw1 >= 0 && iw1 < p->in_w;
      const uint8_t *a = (in0 ? row0 + iw0 * C : p->pad_row) + c0;
      const uint8_t *b = (in1 ? row1 + iw1 * C : p->pad_row) + c0;
      n = dp->cols - col;
      const int64_t run0 = dw_same_source(row0, iw0, p->in_w);
      const int64_t run1 = dw_same_source(row1, iw1, p->in_w);
      n = n < run0 ? n : run0;
      n = n < run1 ? n : run1;
      if (tail && ((in0 && image_end - (a + (n - 1) * C) < DW_LANES) ||
                   (in1 && image_end - (b + (n - 1) * C) < DW_LANES))) {
        if (n > 1) {
          n--; /* the last column on its own next time */
        } else {
          uint8_t copy[2][DW_LANES] = {{0}};
          memcpy(copy[0], a, (size_t)(C - c0));
          memcpy(copy[1], b, (size_t)(C - c0));
          dw_interleave(copy[0], 0, copy[1], 0, row + col * 2 * DW_LANES, 1, flip);
          continue;
        }
      }
      dw_interleave(a, in0 ? C : 0, b, in1 ? C : 0, row + col * 2 * DW_LANES, n, flip);
    }
  }
}

#define DW_DOT(acc, data, w) acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(data, w))

/* T taps (weights w_[0..T-1], adjacent columns) of one pair row for N
 * pixels at stride S: the (N - 1) * S + T columns they read are loaded
 * once each and feed every tap that reads them (pixel i, tap col - S i). */
#define DW_TAPS(N, S, T, d, w_, a)                                                                 \
  do {                                                                                             \
    _Pragma("clang loop unroll(full)") for (int col = 0; col < ((N)-1) * (S) + (T); col++) {       \
      const v128_t c_ = wasm_i16x8_load8x8((d) + 32 * col);                                        \
      _Pragma("clang loop unroll(full)") for (int i = 0; i < (N);                                  \
                                              i++) if (col - (S)*i >= 0 && col - (S)*i < (T))      \
          DW_DOT(a[i], c_, w_[col - (S)*i]);                                                       \
    }                                                                                              \
  } while (0)

#define DW_THREE_TAPS(N, S, d, w0, w1, w2, a)                                                      \
  do {                                                                                             \
    const v128_t w3_[3] = {w0, w1, w2};                                                            \
    DW_TAPS(N, S, 3, d, w3_, a);                                                                   \
  } while (0)

/* The depthwise epilogue: y = clamp(round_half_even(acc * m) + y_zp), with
 * the rounding by the 1.5 * 2^23 magic add (exact while |acc * m| <= 2^22),
 * the saturation by the narrows (the float bits of larger values still
 * order like the values, and saturate) and the fused clamp [y_min, y_max]
 * on the bytes. Only a value below -1.5 * 2^23 would wrap, so the float
 * clamp at y_min - y_zp runs only when some channel's accumulator bound
 * times its multiplier can pass 2^22 (weights.dw_float_clamp). Kept in
 * memory and read through a pointer: V8 would rebuild v128 constants
 * inside the loops. */
typedef struct {
  v128_t lo, magic, magic_less_zp, y_min, y_max, flip, alpha;
  int float_clamp, leaky;
} dw_requant;

/* int8 outputs are computed as uint8 codes + 128 (saturating alike) and
 * flipped back, so one narrowing path serves both dtypes. */
static void dw_requant_init(dw_requant *q, const wq_qconv_plan *p) {
  const int32_t shift = p->y_dtype == WQ_DT_UINT8 ? 0 : 128;
  q->lo = wasm_f32x4_splat((float)(p->y_min - p->y_zero_point));
  q->magic = wasm_f32x4_splat(12582912.0f);
  q->magic_less_zp = wasm_i32x4_splat(0x4B400000 - p->y_zero_point - shift);
  q->y_min = wasm_u8x16_splat((uint8_t)(p->y_min + shift));
  q->y_max = wasm_u8x16_splat((uint8_t)(p->y_max + shift));
  q->flip = wasm_u8x16_splat((uint8_t)shift);
  q->float_clamp = p->weights.dw_float_clamp;
  q->alpha = wasm_f32x4_splat(p->leaky_alpha);
  q->leaky = p->leaky;
}

/* Four pixels' accumulators of 4 channels to 16 bytes, pixel-major. */
static inline v128_t dw_bytes(const dw_requant *q, const v128_t a[4], v128_t m) {
  v128_t r[4];
#pragma clang loop unroll(full)
  for (int i = 0; i < 4; i++)
    r[i] = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a[i]), m);
  if (q->leaky)
    WQ_SIMD_LEAKY(r, 4, q->alpha);
#pragma clang loop unroll(full)
  for (int i = 0; i < 4; i++) {
    v128_t v = r[i];
    if (q->float_clamp)
      v = wasm_f32x4_pmax(q->lo, v);
    r[i] = wasm_i32x4_sub(wasm_f32x4_add(v, q->magic), q->magic_less_zp);
  }
  const v128_t lo = wasm_i16x8_narrow_i32x4(r[0], r[1]), hi = wasm_i16x8_narrow_i32x4(r[2], r[3]);
  const v128_t u =
      wasm_u8x16_min(wasm_u8x16_max(wasm_u8x16_narrow_i16x8(lo, hi), q->y_min), q->y_max);
  return wasm_v128_xor(u, q->flip);
}

/* Stores dw_bytes' 16 bytes at o + i * C for 4 pixels of 4 channels. */
static inline void dw_store4(uint8_t *o, int C, v128_t bytes) {
  wasm_v128_store32_lane(o, bytes, 0);
  wasm_v128_store32_lane(o + C, bytes, 1);
  wasm_v128_store32_lane(o + 2 * C, bytes, 2);
  wasm_v128_store32_lane(o + 3 * C, bytes, 3);
}

/* The same for the `pixels` (up to 4) pixels and n_ch (up to 4) channels
 * that exist. */
static inline void dw_finish(const dw_requant *q, const v128_t a[4], v128_t m, uint8_t *o, int C,
                             int pixels, int n_ch) {
  const v128_t bytes = dw_bytes(q, a, m);
  if (n_ch >= 4) {
    if (pixels >= 4) {
      dw_store4(o, C, bytes);
      return;
    }
    wasm_v128_store32_lane(o, bytes, 0);
    if (pixels > 1)
      wasm_v128_store32_lane(o + C, bytes, 1);
    if (pixels > 2)
      wasm_v128_store32_lane(o + 2 * C, bytes, 2);
    return;
  }
  uint8_t tmp[16];
  wasm_v128_store(tmp, bytes);
  for (int i = 0; i < pixels && i < 4; i++)
    for (int c = 0; c < n_ch && c < 4; c++)
      o[i * C + c] = tmp[4 * i + c];
}

/* One output row of 4 channels (n_ch of them real) of a 3x3 kernel paired
 * down its columns (two pair rows r0, r1 at the channels' offset; w the
 * chunk's weights at the channels' offset) at stride 1 or 2, in blocks of
 * 4 pixels: weights, bias and multiplier stay in registers for the row. */
__attribute__((noinline)) static void dw3x3_row(const int8_t *r0, const int8_t *r1,
                                                const int16_t *w, const int32_t *bias,
                                                const float *multiplier, const dw_requant *q,
                                                int out_w, int stride, int C, int n_ch,
                                                uint8_t *o) {
  const v128_t w00 = wasm_v128_load(w), w01 = wasm_v128_load(w + 32), w02 = wasm_v128_load(w + 64),
               w10 = wasm_v128_load(w + 96), w11 = wasm_v128_load(w + 128),
               w12 = wasm_v128_load(w + 160);
  const v128_t b = wasm_v128_load(bias), m = wasm_v128_load(multiplier);
  /* 32-bit indices: int64_t arithmetic costs wasm32 extra wraps. */
  const int step = stride * 4 * 2 * DW_LANES, block = 4 * C;
  for (int ow = 0; ow < out_w; ow += 4, r0 += step, r1 += step, o += block) {
    v128_t a[4] = {b, b, b, b};
    if (stride == 1) {
      DW_THREE_TAPS(4, 1, r0, w00, w01, w02, a);
      DW_THREE_TAPS(4, 1, r1, w10, w11, w12, a);
    } else {
      DW_THREE_TAPS(4, 2, r0, w00, w01, w02, a);
      DW_THREE_TAPS(4, 2, r1, w10, w11, w12, a);
    }
    dw_finish(q, a, m, o, C, out_w - ow, n_ch);
  }
}

/* The same for any pairing: rows[r] are the pair rows at the channels'
 * offset, taps read tap_step bytes apart. Rows of 5 adjacent taps at
 * stride 1 (5x5 kernels) load each of a block's 8 columns once. */
static void dw_any_row(const wq_qconv_plan *p, const dw_pairing *dp, const int8_t *const *rows,
                       int64_t offset, const int16_t *w, const int32_t *bias,
                       const float *multiplier, const dw_requant *q, int64_t n_ch, uint8_t *o) {
  const int64_t C = p->in_channels, pixel_step = p->stride_w * 2 * DW_LANES;
  const int64_t tap_step = dp->col_step * 2 * DW_LANES;
  const bool five = dp->taps == 5 && tap_step == 2 * DW_LANES && pixel_step == 2 * DW_LANES;
  const v128_t b = wasm_v128_load(bias), m = wasm_v128_load(multiplier);
  for (int64_t ow = 0; ow < p->out_w; ow += 4, o += 4 * C) {
    v128_t a[4] = {b, b, b, b};
    const int16_t *wt = w;
    for (int64_t r = 0; r < dp->rows; r++) {
      const int8_t *d = rows[r] + offset + ow * pixel_step;
      if (five) {
        const v128_t w5[5] = {wasm_v128_load(wt), wasm_v128_load(wt + 32), wasm_v128_load(wt + 64),
                              wasm_v128_load(wt + 96), wasm_v128_load(wt + 128)};
        DW_TAPS(4, 1, 5, d, w5, a);
        wt += 5 * 2 * DW_LANES;
        continue;
      }
      for (int64_t t = 0; t < dp->taps; t++, wt += 2 * DW_LANES, d += tap_step) {
        const v128_t wv = wasm_v128_load(wt);
        DW_DOT(a[0], wasm_i16x8_load8x8(d), wv);
        DW_DOT(a[1], wasm_i16x8_load8x8(d + pixel_step), wv);
        DW_DOT(a[2], wasm_i16x8_load8x8(d + 2 * pixel_step), wv);
        DW_DOT(a[3], wasm_i16x8_load8x8(d + 3 * pixel_step), wv);
      }
    }
    dw_finish(q, a, m, o, C, p->out_w - ow, n_ch);
  }
}

/* One output row of one 16-channel chunk (valid: channels that exist), 4
 * channels at a time (4 accumulators, 4 pixels each). rows[r] points at
 * pair row r's chunk. */
static void dw_row_chunk(const wq_qconv_plan *p, const dw_pairing *dp, const int8_t *const *rows,
                         const int16_t *w, const int32_t *bias, const float *multiplier,
                         const dw_requant *q, uint8_t *out, int64_t valid) {
  const bool three = dp->vertical && dp->rows == 2 && dp->taps == 3 && dp->col_step == 1 &&
                     (p->stride_w == 1 || p->stride_w == 2);
  for (int v = 0; v < 4 && 4 * v < valid; v++) {
    if (three)
      dw3x3_row(rows[0] + 8 * v, rows[1] + 8 * v, w + 8 * v, bias + 4 * v, multiplier + 4 * v, q,
                (int)p->out_w, (int)p->stride_w, (int)p->in_channels, (int)(valid - 4 * v),
                out + 4 * v);
    else
      dw_any_row(p, dp, rows, 8 * v, w + 8 * v, bias + 4 * v, multiplier + 4 * v, q, valid - 4 * v,
                 out + 4 * v);
  }
}

typedef struct {
  const wq_qconv_plan *p;
  const uint8_t *x;
  uint8_t *y;
  /* Shares: row_blocks blocks of output rows x chunk_blocks blocks of
   * 16-channel chunks (share s: row block s / chunk_blocks). */
  int64_t row_blocks, chunk_blocks;
  atomic_int status;
} dw_job;

/* Output rows [r0, r1) of the flattened (image, row) space, 16-channel
 * chunks [k0, k1), with this block's own pair-row cache (which only decides
 * what gets rebuilt: every output is computed the same way in any block). */
static void dw_block(dw_job *job, int64_t r0, int64_t r1, int64_t k0, int64_t k1) {
  const wq_qconv_plan *p = job->p;
  const uint8_t *x = job->x;
  uint8_t *y = job->y;
  const int64_t C = p->in_channels, c16 = round_up(C, DW_LANES);
  const dw_pairing dp = dw_pairing_of(p);
  /* A cache of 2 * rows pair rows tagged by input row: with stride 1 each
   * pair row is built once and serves every output row that needs it. */
  const int64_t slots = 2 * dp.rows, row_len = dp.stride * c16 * 2;
  /* Within WQ_MAX_TENSOR_BYTES: checked when the plan was packed. Sizes as
   * in wq_simd_qconv_scratch_bytes. */
  /* Not zeroed: a block builds only its chunks, and the spare columns past
   * the last pixel feed only outputs that are never stored. */
  int8_t *pair_mem = wq_scratch_take(slots * row_len + 64);
  int8_t *pair_rows = (int8_t *)(((uintptr_t)pair_mem + 63) & ~(uintptr_t)63);
  int64_t *tag = wq_scratch_take((int64_t)sizeof(int64_t) * (slots + dp.rows));
  const int8_t **rows = wq_scratch_take((int64_t)sizeof *rows * dp.rows);
  if (!pair_mem || !tag || !rows) {
    wq_scratch_give(pair_mem);
    atomic_store(&job->status, (int)WQ_ERR_OUT_OF_MEMORY);
    return;
  }
  int64_t *slot_of = tag + slots; /* slot of each pair row of the current output row */
  dw_requant q;
  dw_requant_init(&q, p);
  for (int64_t row = r0; row < r1; row++) {
    const int64_t n = row / p->out_h, oh = row % p->out_h;
    const uint8_t *image = x + n * p->in_h * p->in_w * C;
    if (row == r0 || oh == 0)
      for (int64_t s = 0; s < slots; s++)
        tag[s] = INT64_MIN;
    {
      const int64_t ih0 = oh * p->stride_h - p->pad_top;
      for (int64_t r = 0; r < dp.rows; r++) {
        slot_of[r] = -1;
        for (int64_t s = 0; s < slots; s++)
          if (tag[s] == ih0 + r * dp.row_step)
            slot_of[r] = s;
      }
      for (int64_t r = 0; r < dp.rows; r++) {
        if (slot_of[r] >= 0)
          continue;
        int64_t pick = -1; /* the oldest row no pair row of this output row uses */
        for (int64_t s = 0; s < slots; s++) {
          bool used = false;
          for (int64_t u = 0; u < dp.rows; u++)
            used = used || slot_of[u] == s;
          if (!used && (pick < 0 || tag[s] < tag[pick]))
            pick = s;
        }
        const int64_t ih = ih0 + r * dp.row_step;
        dw_build_pair_row(p, &dp, image, ih, pair_rows + pick * row_len, k0, k1);
        tag[pick] = ih;
        slot_of[r] = pick;
      }
      uint8_t *out = y + (n * p->out_h + oh) * p->out_w * C;
      for (int64_t k = k0; k < k1; k++) {
        for (int64_t r = 0; r < dp.rows; r++)
          rows[r] = pair_rows + slot_of[r] * row_len + k * dp.stride * 2 * DW_LANES;
        const int64_t c0 = k * DW_LANES;
        dw_row_chunk(p, &dp, rows, p->weights.w16 + k * dp.rows * dp.taps * 2 * DW_LANES,
                     p->weights.bias + c0, p->weights.multiplier + c0, &q, out + c0,
                     C - c0 < DW_LANES ? C - c0 : DW_LANES);
      }
    }
  }
  wq_scratch_give(pair_mem);
}

static void dw_share(void *ctx, int64_t s0, int64_t s1) {
  dw_job *job = ctx;
  const int64_t rows = job->p->batch * job->p->out_h;
  const int64_t chunks = round_up(job->p->in_channels, DW_LANES) / DW_LANES;
  /* Balanced blocks: sizes differ by one row (one chunk) at most. */
  for (int64_t s = s0; s < s1; s++) {
    const int64_t rb = s / job->chunk_blocks, cb = s % job->chunk_blocks;
    dw_block(job, rb * rows / job->row_blocks, (rb + 1) * rows / job->row_blocks,
             cb * chunks / job->chunk_blocks, (cb + 1) * chunks / job->chunk_blocks);
  }
}

/* Depthwise layers below this many multiply-adds run on one thread; a share
 * holds at least a quarter of it, at most 16 shares per layer. */
#define DW_PARALLEL_MIN_MACS ((int64_t)1 << 18)
#define DW_SHARE_MIN_MACS ((int64_t)1 << 16)

static wq_status run_depthwise(const wq_qconv_plan *p, const uint8_t *x, uint8_t *y,
                               wq_error *err) {
  dw_job job = {.p = p, .x = x, .y = y};
  atomic_init(&job.status, (int)WQ_OK);
  const int64_t rows = p->batch * p->out_h;
  const int64_t chunks = round_up(p->in_channels, DW_LANES) / DW_LANES;
  const int64_t work = rows * p->out_w * p->in_channels * p->kernel_h * p->kernel_w;
  if (wq_parallel_threads() > 1 && work >= DW_PARALLEL_MIN_MACS) {
    /* Blocks of >= 4 output rows (a block rebuilds its first pair rows),
     * then channel chunks for small maps (7x7, 14x14 of many channels).
     * The cut depends on the layer's shape alone. */
    int64_t target = work / DW_SHARE_MIN_MACS;
    target = target > 16 ? 16 : target;
    int64_t row_blocks = rows / 4 < target ? rows / 4 : target;
    job.row_blocks = row_blocks < 1 ? 1 : row_blocks;
    int64_t chunk_blocks = (target + job.row_blocks - 1) / job.row_blocks;
    /* An even share count where the chunks allow (two threads end together). */
    chunk_blocks += job.row_blocks * chunk_blocks % 2;
    job.chunk_blocks = chunk_blocks > chunks ? chunks : chunk_blocks;
    wq_parallel_for(job.row_blocks * job.chunk_blocks, 1, dw_share, &job);
  } else {
    dw_block(&job, 0, rows, 0, chunks);
  }
  return atomic_load(&job.status) == WQ_OK
             ? WQ_OK
             : wq_scratch_missing(err, "qconv depthwise", wq_simd_qconv_scratch_bytes(p));
}

typedef struct {
  const wq_qconv_plan *p;
  const void *x;
  const uint8_t *x_end;
  void *y;
  atomic_int status;
} im2col_job;

/* Output pixels [r0, r1) of every group, with this share's own scratch. */
static void im2col_share(void *ctx, int64_t r0, int64_t r1) {
  im2col_job *job = ctx;
  const wq_qconv_plan *p = job->p;
  const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
  const wq_qconv_k_layout *k = &p->k_layout;
  uint8_t *border = wq_scratch_take(4 * k->segment_len);
  int64_t *offsets = wq_scratch_take((int64_t)sizeof(int64_t) * k->segments);
  if (!border || !offsets) {
    wq_scratch_give(border);
    atomic_store(&job->status, (int)WQ_ERR_OUT_OF_MEMORY);
    return;
  }
  for (int64_t s = 0; s < k->segments; s++) {
    const int64_t tap = s * k->taps_per_segment;
    const int64_t kh = tap / p->kernel_w, kw = tap % p->kernel_w;
    offsets[s] = (kh * p->dil_h * p->in_w + kw * p->dil_w) * p->in_channels;
  }
  wq_error err;
  wq_error_clear(&err);
  const int64_t y_size = p->y_dtype == WQ_DT_FLOAT ? 4 : 1;
  for (int64_t g = 0; g < p->group; g++) {
    im2col_ctx c = {p, &p->gemms[g], job->x, g * cg, border, offsets, job->x_end};
    if (wq_simd_qgemm_run_rows(&p->gemms[g], r0, r1, fill_im2col_panel, &c,
                               (uint8_t *)job->y + g * mg * y_size, p->out_channels,
                               &err) != WQ_OK) {
      atomic_store(&job->status, (int)err.code);
      break;
    }
  }
  wq_scratch_give(border);
}

int64_t wq_simd_qconv_scratch_bytes(const wq_qconv_plan *p) {
  const wq_qconv_k_layout *k = &p->k_layout;
  switch (p->algo) {
  case WQ_QCONV_DEPTHWISE: { /* dw_block: the pair-row cache, its tags, row pointers */
    const dw_pairing dp = dw_pairing_of(p);
    const int64_t slots = 2 * dp.rows, c16 = round_up(p->in_channels, DW_LANES);
    return wq_scratch_round(slots * dp.stride * c16 * 2 + 64) +
           wq_scratch_round((int64_t)sizeof(int64_t) * (slots + dp.rows)) +
           wq_scratch_round((int64_t)sizeof(int8_t *) * dp.rows);
  }
  case WQ_QCONV_GEMM_1X1: return wq_simd_qgemm_scratch_bytes(&p->gemms[0]);
  case WQ_QCONV_IM2COL_GEMM:
  case WQ_QCONV_GROUPED_GEMM: break;
  }
  /* The padded copy, then im2col_share's border rows and offsets and the
   * GEMM's panels (every group's GEMM has the same K). */
  const int64_t padded = p->padded_h ? p->batch * p->padded_h * p->padded_w * p->in_channels : 0;
  return wq_scratch_round(padded) + wq_scratch_round(4 * k->segment_len) +
         wq_scratch_round((int64_t)sizeof(int64_t) * k->segments) +
         wq_simd_qgemm_scratch_bytes(&p->gemms[0]);
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
  wq_qconv_plan unpadded;
  uint8_t *padded = wq_qconv_padded_copy(p, x, &unpadded);
  if (padded) {
    p = &unpadded;
    x = padded;
  }
  im2col_job job = {.p = p,
                    .x = x,
                    .x_end = (const uint8_t *)x + p->batch * p->in_h * p->in_w * p->in_channels,
                    .y = y};
  atomic_init(&job.status, (int)WQ_OK);
  wq_simd_qgemm_split split;
  if (wq_parallel_threads() > 1 && wq_simd_qgemm_split_plan(&p->gemms[0], pixels, 0, &split) > 1)
    wq_parallel_for(pixels, split.row_grain, im2col_share, &job);
  else
    im2col_share(&job, 0, pixels);
  wq_scratch_give(padded);
  return atomic_load(&job.status) == WQ_OK
             ? WQ_OK
             : wq_scratch_missing(err, "qconv im2col", wq_simd_qconv_scratch_bytes(p));
}

#ifdef WQ_QGEMM_USDOT
/* The relaxed-SIMD build: the same convolutions on the relaxed GEMM
 * (1x1, im2col and grouped run through it; depthwise is SIMD128 code). */
extern const wq_qgemm_config wq_qgemm_config_relaxed;
const wq_qconv_config wq_qconv_config_relaxed = {
    .name = "relaxed_usdot",
    .isa = WQ_ISA_RELAXED,
    .gemm = &wq_qgemm_config_relaxed,
#else
const wq_qconv_config wq_qconv_config_simd128 = {
    .name = "simd128",
    .isa = WQ_ISA_SIMD128,
    .gemm = &wq_qgemm_config_simd128,
#endif
    .depthwise_isa = WQ_ISA_SIMD128,
    .pack = wq_simd_qconv_pack,
    .run = wq_simd_qconv_run,
    .scratch_bytes = wq_simd_qconv_scratch_bytes,
};
