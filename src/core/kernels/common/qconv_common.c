/* What every int8 convolution variant shares: validation, geometry, the
 * algorithm choice, the K layout of the GEMM-based algorithms, per-channel
 * data and the padded input copy. */
#include <stdlib.h>
#include <string.h>

#include "../../ir/checked.h"
#include "../../runtime/parallel.h"
#include "qconv_types.h"

static void plan_padded_copy(wq_qconv_plan *p);

const char *wq_qconv_algo_name(wq_qconv_algo algo) {
  switch (algo) {
  case WQ_QCONV_GEMM_1X1: return "gemm_1x1";
  case WQ_QCONV_IM2COL_GEMM: return "im2col_gemm";
  case WQ_QCONV_DEPTHWISE: return "depthwise";
  case WQ_QCONV_GROUPED_GEMM: return "grouped_gemm";
  }
  return "unknown";
}

static bool is_q8(wq_dtype t) { return t == WQ_DT_INT8 || t == WQ_DT_UINT8; }
static int32_t q8_min(wq_dtype t) { return t == WQ_DT_UINT8 ? 0 : -128; }
static int32_t q8_max(wq_dtype t) { return t == WQ_DT_UINT8 ? 255 : 127; }

static wq_status check_desc(const wq_qconv_desc *d, const char *node, wq_error *err) {
  const wq_conv_geometry *g = &d->geo;
  if (g->n_spatial < 1 || g->n_spatial > 2)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node,
                   "qconv: %d spatial dims (the NHWC kernels take 1 or 2)", g->n_spatial);
  if (d->batch < 0 || d->in_channels < 1 || d->out_channels < 1 || d->group < 1 ||
      d->in_channels % d->group || d->out_channels % d->group)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qconv: channels %lld -> %lld do not split into %lld groups",
                   (long long)d->in_channels, (long long)d->out_channels, (long long)d->group);
  for (int i = 0; i < g->n_spatial; i++)
    if (g->in[i] < 1 || g->kernel[i] < 1 || g->stride[i] < 1 || g->dilation[i] < 1 ||
        g->out[i] < 1 || g->pad_begin[i] < 0)
      return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                     "qconv: bad geometry on spatial axis %d (in %lld kernel %lld stride %lld "
                     "dilation %lld pad %lld out %lld)",
                     i, (long long)g->in[i], (long long)g->kernel[i], (long long)g->stride[i],
                     (long long)g->dilation[i], (long long)g->pad_begin[i], (long long)g->out[i]);
  /* The weights, the input and output images and a padded input row (kernel
   * width x channels) within the element limit: every buffer the plan sizes
   * from them (packed weights, pad row, im2col panels) is then a checked
   * product, none overflows. */
  const int64_t weights[4] = {d->out_channels, d->in_channels / d->group, g->kernel[0],
                              g->n_spatial > 1 ? g->kernel[1] : 1};
  const int64_t input[4] = {d->batch, d->in_channels, g->in[0], g->n_spatial > 1 ? g->in[1] : 1};
  const int64_t output[4] = {d->batch, d->out_channels, g->out[0],
                             g->n_spatial > 1 ? g->out[1] : 1};
  const int64_t pad_row[2] = {g->kernel[g->n_spatial - 1], d->in_channels};
  int64_t count;
  if (!wq_product_within(weights, 4, WQ_MAX_ELEMENTS, &count) ||
      !wq_product_within(input, 4, WQ_MAX_ELEMENTS, &count) ||
      !wq_product_within(output, 4, WQ_MAX_ELEMENTS, &count) ||
      !wq_product_within(pad_row, 2, WQ_MAX_ELEMENTS, &count))
    return wq_fail(err, WQ_ERR_SHAPE, node,
                   "qconv: %lld -> %lld channels with kernel %lldx%lld on %lldx%lld pass the "
                   "%lld-element limit",
                   (long long)d->in_channels, (long long)d->out_channels, (long long)weights[2],
                   (long long)weights[3], (long long)input[2], (long long)input[3],
                   (long long)WQ_MAX_ELEMENTS);
  if (!is_q8(d->x_dtype) || !is_q8(d->w_dtype) || (!is_q8(d->y_dtype) && d->y_dtype != WQ_DT_FLOAT))
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qconv: x and w must be int8 or uint8, y int8, uint8 or float (got %s, %s, %s)",
                   wq_dtype_name(d->x_dtype), wq_dtype_name(d->w_dtype), wq_dtype_name(d->y_dtype));
  if (!d->w || !d->multiplier)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qconv: weights and multipliers are required");
  if (d->x_zero_point < q8_min(d->x_dtype) || d->x_zero_point > q8_max(d->x_dtype))
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qconv: x zero point %d outside %s",
                   (int)d->x_zero_point, wq_dtype_name(d->x_dtype));
  if (d->w_zero_point && d->w_zero_point_count != 1 && d->w_zero_point_count != d->out_channels)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qconv: %lld weight zero points for %lld channels",
                   (long long)d->w_zero_point_count, (long long)d->out_channels);
  if (d->w_zero_point)
    for (int64_t m = 0; m < d->w_zero_point_count; m++)
      if (d->w_zero_point[m] < q8_min(d->w_dtype) || d->w_zero_point[m] > q8_max(d->w_dtype))
        return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                       "qconv: weight zero point [%lld] = %d outside %s", (long long)m,
                       (int)d->w_zero_point[m], wq_dtype_name(d->w_dtype));
  if (d->multiplier_count != 1 && d->multiplier_count != d->out_channels)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qconv: %lld multipliers for %lld channels",
                   (long long)d->multiplier_count, (long long)d->out_channels);
  if (d->y_dtype == WQ_DT_FLOAT)
    return WQ_OK;
  if (d->y_zero_point < q8_min(d->y_dtype) || d->y_zero_point > q8_max(d->y_dtype) ||
      d->y_min < q8_min(d->y_dtype) || d->y_max > q8_max(d->y_dtype) || d->y_min > d->y_max)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qconv: output zero point %d / range [%d, %d] invalid for %s",
                   (int)d->y_zero_point, (int)d->y_min, (int)d->y_max, wq_dtype_name(d->y_dtype));
  return WQ_OK;
}

wq_status wq_qconv_plan_common(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                               wq_error *err) {
  memset(p, 0, sizeof *p);
  WQ_TRY(check_desc(d, node, err));
  const wq_conv_geometry *g = &d->geo;
  const int h = g->n_spatial == 2 ? 0 : -1, w = g->n_spatial - 1; /* axis of H (or none), W */
  p->batch = d->batch;
  p->in_channels = d->in_channels;
  p->out_channels = d->out_channels;
  p->group = d->group;
  p->in_h = h >= 0 ? g->in[h] : 1;
  p->out_h = h >= 0 ? g->out[h] : 1;
  p->kernel_h = h >= 0 ? g->kernel[h] : 1;
  p->stride_h = h >= 0 ? g->stride[h] : 1;
  p->dil_h = h >= 0 ? g->dilation[h] : 1;
  p->pad_top = h >= 0 ? g->pad_begin[h] : 0;
  p->in_w = g->in[w];
  p->out_w = g->out[w];
  p->kernel_w = g->kernel[w];
  p->stride_w = g->stride[w];
  p->dil_w = g->dilation[w];
  p->pad_left = g->pad_begin[w];
  p->x_dtype = d->x_dtype;
  p->y_dtype = d->y_dtype;
  p->x_zero_point = d->x_zero_point;
  p->y_zero_point = d->y_zero_point;
  p->y_min = d->y_min;
  p->y_max = d->y_max;
  p->float_relu = d->y_dtype == WQ_DT_FLOAT && d->float_relu;
  p->leaky = d->y_dtype != WQ_DT_FLOAT && d->leaky;
  p->leaky_alpha = d->leaky_alpha;

  const int64_t cg = d->in_channels / d->group;
  const bool pointwise = p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 &&
                         p->stride_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
                         p->out_h == p->in_h && p->out_w == p->in_w;
  if (d->group == 1)
    p->algo = pointwise ? WQ_QCONV_GEMM_1X1 : WQ_QCONV_IM2COL_GEMM;
  else if (d->group == d->in_channels && d->group == d->out_channels && d->y_dtype != WQ_DT_FLOAT)
    p->algo = WQ_QCONV_DEPTHWISE;
  else
    p->algo = WQ_QCONV_GROUPED_GEMM;

  /* K runs: whole kernel rows (kw taps x C, contiguous in NHWC) when the
   * group spans all channels and taps are adjacent, else single taps. */
  wq_qconv_k_layout *k = &p->k_layout;
  if (d->group == 1 && p->dil_w == 1) {
    k->segments = p->kernel_h;
    k->taps_per_segment = p->kernel_w;
    k->segment_len = p->kernel_w * cg;
  } else {
    k->segments = p->kernel_h * p->kernel_w;
    k->taps_per_segment = 1;
    k->segment_len = cg;
  }
  k->segment_stride = k->segments > 1 ? k->segment_len + (k->segment_len & 1) : k->segment_len;

  p->pad_row_len = p->kernel_w * d->in_channels + 32; /* covers any segment and a 16-lane load */
  p->pad_row = malloc((size_t)p->pad_row_len);
  if (!p->pad_row)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  memset(p->pad_row, d->x_zero_point & 0xFF, (size_t)p->pad_row_len);
  p->bytes = p->pad_row_len;
  plan_padded_copy(p);
  return WQ_OK;
}

wq_status wq_qconv_channel_data(wq_qconv_plan *p, const wq_qconv_desc *d, int64_t n_padded,
                                const char *node, wq_error *err) {
  wq_qconv_weights *w = &p->weights;
  w->bias = calloc((size_t)n_padded, sizeof *w->bias);
  w->w_zero_point = calloc((size_t)n_padded, sizeof *w->w_zero_point);
  w->multiplier = calloc((size_t)n_padded, sizeof *w->multiplier);
  if (d->y_dtype == WQ_DT_FLOAT)
    w->float_bias = calloc((size_t)n_padded, sizeof *w->float_bias);
  p->bytes += n_padded * (d->y_dtype == WQ_DT_FLOAT ? 16 : 12);
  if (!w->bias || !w->w_zero_point || !w->multiplier ||
      (d->y_dtype == WQ_DT_FLOAT && !w->float_bias))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  const int32_t shift = d->w_dtype == WQ_DT_UINT8 ? 128 : 0;
  for (int64_t m = 0; m < d->out_channels; m++) {
    w->bias[m] = d->bias ? d->bias[m] : 0;
    int32_t zp = d->w_zero_point ? d->w_zero_point[d->w_zero_point_count == 1 ? 0 : m] : 0;
    w->w_zero_point[m] = zp - shift;
    w->multiplier[m] = d->multiplier[d->multiplier_count == 1 ? 0 : m];
    if (w->float_bias)
      w->float_bias[m] = d->float_bias ? d->float_bias[m] : -0.0f;
  }
  return WQ_OK;
}

void wq_qconv_plan_free(wq_qconv_plan *p) {
  if (p->gemms) {
    for (int64_t g = 0; g < p->group; g++)
      wq_qgemm_packed_free(&p->gemms[g]);
    free(p->gemms);
  }
  free(p->weights.w);
  free(p->weights.w16);
  free(p->weights.bias);
  free(p->weights.w_zero_point);
  free(p->weights.multiplier);
  free(p->weights.float_bias);
  free(p->pad_row);
  memset(p, 0, sizeof *p);
}

/* Whether the im2col algorithms run on a copy of x with its padding
 * written out (the zero point), so every window lies inside the input:
 * windows cut by the border are otherwise assembled tap by tap, which
 * costs more than one copy per run on small images (mnist's 28x28 5x5
 * convs: 2.2x and 1.5x faster). Only with padding, when at least a tenth
 * of the windows are cut, and when the copy stays within 8 MB. Sets
 * p->padded_h/w (0: no copy). */
static void plan_padded_copy(wq_qconv_plan *p) {
  p->padded_h = p->padded_w = 0;
  if (p->algo != WQ_QCONV_IM2COL_GEMM && p->algo != WQ_QCONV_GROUPED_GEMM)
    return;
  const int64_t h =
      wq_conv_padded_extent(p->out_h, p->stride_h, p->kernel_h, p->dil_h, p->pad_top, p->in_h);
  const int64_t w =
      wq_conv_padded_extent(p->out_w, p->stride_w, p->kernel_w, p->dil_w, p->pad_left, p->in_w);
  if (p->pad_top == 0 && p->pad_left == 0 && h == p->in_h && w == p->in_w)
    return;
  const int64_t span_h = (p->kernel_h - 1) * p->dil_h + 1,
                span_w = (p->kernel_w - 1) * p->dil_w + 1;
  int64_t inside_h = 0, inside_w = 0;
#ifdef __clang__
#pragma clang loop vectorize(disable)
#endif
  for (int64_t o = 0, i0 = -p->pad_top; o < p->out_h; o++, i0 += p->stride_h)
    inside_h += i0 >= 0 && i0 + span_h <= p->in_h;
#ifdef __clang__
#pragma clang loop vectorize(disable)
#endif
  for (int64_t o = 0, i0 = -p->pad_left; o < p->out_w; o++, i0 += p->stride_w)
    inside_w += i0 >= 0 && i0 + span_w <= p->in_w;
  /* The copy's size as a checked product (huge pads make h x w x C overflow). */
  const int64_t copy[4] = {p->batch, h, w, p->in_channels};
  int64_t bytes;
  if (10 * (p->out_h * p->out_w - inside_h * inside_w) < p->out_h * p->out_w ||
      !wq_product_within(copy, 4, (int64_t)8 << 20, &bytes))
    return;
  p->padded_h = h;
  p->padded_w = w;
}

uint8_t *wq_qconv_padded_copy(const wq_qconv_plan *p, const uint8_t *x, wq_qconv_plan *q) {
  if (p->padded_h == 0)
    return NULL;
  const int64_t C = p->in_channels, h = p->padded_h, w = p->padded_w;
  const size_t bytes = (size_t)(p->batch * h * w * C); /* checked at plan time */
  uint8_t *padded = wq_scratch_take((int64_t)bytes);
  if (!padded)
    return NULL;
  memset(padded, p->x_zero_point & 0xFF, bytes);
  for (int64_t n = 0; n < p->batch; n++)
    for (int64_t ih = 0; ih < p->in_h; ih++)
      memcpy(padded + ((n * h + ih + p->pad_top) * w + p->pad_left) * C,
             x + (n * p->in_h + ih) * p->in_w * C, (size_t)(p->in_w * C));
  *q = *p;
  q->in_h = h;
  q->in_w = w;
  q->pad_top = 0;
  q->pad_left = 0;
  q->padded_h = q->padded_w = 0;
  return padded;
}
