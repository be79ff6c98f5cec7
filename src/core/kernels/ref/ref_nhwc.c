/* Scalar NHWC transitions and pools (kernels/nhwc.h). */
#include <string.h>

#include "quant_ref.h"
#include "ref_nhwc.h"

void wq_ref_nchw_to_nhwc(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x,
                         void *y) {
  const uint8_t *src = x;
  uint8_t *dst = y;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < s; i++)
        memcpy(dst + ((b * s + i) * c + ch) * elem_size, src + ((b * c + ch) * s + i) * elem_size,
               elem_size);
}

void wq_ref_nhwc_to_nchw(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x,
                         void *y) {
  const uint8_t *src = x;
  uint8_t *dst = y;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < s; i++)
        memcpy(dst + ((b * c + ch) * s + i) * elem_size, src + ((b * s + i) * c + ch) * elem_size,
               elem_size);
}

int32_t wq_qpool_mean_code(const wq_int8_pool_quant *q, int64_t sum, int64_t count) {
  float mean = count > 0 ? (float)((double)sum * (double)q->x_scale / (double)count) : 0.0f;
  return wq_ref_quantize_value(mean, q->y_scale, q->y_zero_point, q->y_min, q->y_max);
}

void wq_ref_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                      const void *x, void *y) {
  for (int64_t b = 0; b < batch; b++)
    for (int64_t c = 0; c < channels; c++) {
      int64_t sum = 0;
      for (int64_t i = 0; i < pixels; i++)
        sum += wq_ref_q_load(x, q->x_dtype, (b * pixels + i) * channels + c) - q->x_zero_point;
      wq_ref_q_store(y, q->y_dtype, b * channels + c, wq_qpool_mean_code(q, sum, pixels));
    }
}

/* Taps of a window starting at `start` (stride `dil`, `k` taps) inside
 * [lo, hi]. */
static int64_t taps_within(int64_t start, int64_t dil, int64_t k, int64_t lo, int64_t hi) {
  int64_t first = start >= lo ? 0 : (lo - start + dil - 1) / dil;
  int64_t last = hi - start < 0 ? -1 : (hi - start) / dil;
  if (last > k - 1)
    last = k - 1;
  return last >= first ? last - first + 1 : 0;
}

int64_t wq_pool2d_count(const wq_pool2d *p, bool count_include_pad, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * p->stride_h - p->pad_top, w0 = ow * p->stride_w - p->pad_left;
  if (count_include_pad)
    return taps_within(h0, p->dil_h, p->kernel_h, -p->pad_top, p->in_h + p->pad_bottom - 1) *
           taps_within(w0, p->dil_w, p->kernel_w, -p->pad_left, p->in_w + p->pad_right - 1);
  return taps_within(h0, p->dil_h, p->kernel_h, 0, p->in_h - 1) *
         taps_within(w0, p->dil_w, p->kernel_w, 0, p->in_w - 1);
}

void wq_ref_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                          const void *x, void *y) {
  const int64_t C = p->channels;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t oh = 0; oh < p->out_h; oh++)
      for (int64_t ow = 0; ow < p->out_w; ow++) {
        const int64_t h0 = oh * p->stride_h - p->pad_top, w0 = ow * p->stride_w - p->pad_left;
        const int64_t count = wq_pool2d_count(p, count_include_pad, oh, ow);
        for (int64_t c = 0; c < C; c++) {
          int64_t sum = 0;
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            int64_t ih = h0 + kh * p->dil_h;
            if (ih < 0 || ih >= p->in_h)
              continue;
            for (int64_t kw = 0; kw < p->kernel_w; kw++) {
              int64_t iw = w0 + kw * p->dil_w;
              if (iw < 0 || iw >= p->in_w)
                continue;
              sum += wq_ref_q_load(x, q->x_dtype, ((b * p->in_h + ih) * p->in_w + iw) * C + c) -
                     q->x_zero_point;
            }
          }
          wq_ref_q_store(y, q->y_dtype, ((b * p->out_h + oh) * p->out_w + ow) * C + c,
                         wq_qpool_mean_code(q, sum, count));
        }
      }
}

void wq_ref_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y) {
  const int64_t C = p->channels;
  const wq_dtype dt = is_unsigned ? WQ_DT_UINT8 : WQ_DT_INT8;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t oh = 0; oh < p->out_h; oh++)
      for (int64_t ow = 0; ow < p->out_w; ow++)
        for (int64_t c = 0; c < C; c++) {
          int32_t best = is_unsigned ? 0 : -128;
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dil_h;
            if (ih < 0 || ih >= p->in_h)
              continue;
            for (int64_t kw = 0; kw < p->kernel_w; kw++) {
              int64_t iw = ow * p->stride_w - p->pad_left + kw * p->dil_w;
              if (iw < 0 || iw >= p->in_w)
                continue;
              int32_t v = wq_ref_q_load(x, dt, ((b * p->in_h + ih) * p->in_w + iw) * C + c);
              if (v > best)
                best = v;
            }
          }
          wq_ref_q_store(y, dt, ((b * p->out_h + oh) * p->out_w + ow) * C + c, best);
        }
}

static void ref_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  wq_ref_nchw_to_nhwc(n, c, s, 1, x, y);
}

static void ref_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  wq_ref_nhwc_to_nchw(n, c, s, 1, x, y);
}

const wq_nhwc_config wq_nhwc_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .nchw_to_nhwc = ref_nchw_to_nhwc_u8,
    .nhwc_to_nchw = ref_nhwc_to_nchw_u8,
    .qgap = wq_ref_qgap_nhwc,
    .qavgpool = wq_ref_qavgpool_nhwc,
    .maxpool = wq_ref_maxpool_nhwc_q8,
};
