#include "ref_qconv_nhwc.h"

#include <stdlib.h>

#include "../../runtime/parallel.h"
#include "quant_ref.h"
#include "ref_qgemm.h"

wq_status wq_ref_qconv_pack(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                            wq_error *err) {
  const int64_t cg = d->in_channels / d->group;
  const int64_t per_channel = p->kernel_h * p->kernel_w * cg;
  WQ_TRY(wq_qconv_channel_data(p, d, d->out_channels, node, err));
  p->weights.w = malloc((size_t)(d->out_channels * per_channel));
  p->bytes += d->out_channels * per_channel;
  if (!p->weights.w)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "qconv: out of memory");
  for (int64_t m = 0; m < d->out_channels; m++)
    for (int64_t kh = 0; kh < p->kernel_h; kh++)
      for (int64_t kw = 0; kw < p->kernel_w; kw++)
        for (int64_t c = 0; c < cg; c++)
          p->weights.w[m * per_channel + (kh * p->kernel_w + kw) * cg + c] =
              (int8_t)wq_qconv_stored_weight(d, p, m, c, kh, kw);
  return WQ_OK;
}

/* One tap over a group's channels, summed mod 2^32 as the int32 accumulator
 * keeps it (unsigned: wrapping is defined); the dtype test is outside the
 * loop so the loop vectorizes. */
static uint32_t tap_dot(const void *x, wq_dtype dtype, int64_t at, const int8_t *w, int64_t n,
                        uint32_t zx, uint32_t zw) {
  uint32_t sum = 0;
  if (dtype == WQ_DT_UINT8) {
    const uint8_t *xp = (const uint8_t *)x + at;
    for (int64_t c = 0; c < n; c++)
      sum += ((uint32_t)xp[c] - zx) * ((uint32_t)w[c] - zw);
  } else {
    const int8_t *xp = (const int8_t *)x + at;
    for (int64_t c = 0; c < n; c++)
      sum += ((uint32_t)xp[c] - zx) * ((uint32_t)w[c] - zw);
  }
  return sum;
}

void wq_ref_qconv_run(const wq_qconv_plan *p, const void *x, void *y) {
  const int64_t C = p->in_channels, M = p->out_channels;
  const int64_t cg = C / p->group, mg = M / p->group;
  const int64_t per_channel = p->kernel_h * p->kernel_w * cg;
  /* Under a time limit (wq_deadline_passed), checked once per output row. */
  const bool timed = wq_deadline_current() != NULL;
  for (int64_t n = 0; n < p->batch; n++)
    for (int64_t oh = 0; oh < p->out_h; oh++) {
      if (timed && wq_deadline_passed())
        return;
      for (int64_t ow = 0; ow < p->out_w; ow++) {
        const int64_t out_pixel = (n * p->out_h + oh) * p->out_w + ow;
        for (int64_t m = 0; m < M; m++) {
          const int64_t g = m / mg;
          const int8_t *wm = p->weights.w + m * per_channel;
          uint32_t sum = (uint32_t)p->weights.bias[m];
          for (int64_t kh = 0; kh < p->kernel_h; kh++) {
            int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dil_h;
            if (ih < 0 || ih >= p->in_h)
              continue;
            for (int64_t kw = 0; kw < p->kernel_w; kw++) {
              int64_t iw = ow * p->stride_w - p->pad_left + kw * p->dil_w;
              if (iw < 0 || iw >= p->in_w)
                continue;
              sum += tap_dot(x, p->x_dtype, ((n * p->in_h + ih) * p->in_w + iw) * C + g * cg,
                             wm + (kh * p->kernel_w + kw) * cg, cg, (uint32_t)p->x_zero_point,
                             (uint32_t)p->weights.w_zero_point[m]);
            }
          }
          int32_t acc = (int32_t)sum;
          if (p->y_dtype == WQ_DT_FLOAT) {
            ((float *)y)[out_pixel * M + m] = wq_ref_float_stage(
                acc, p->weights.multiplier[m], p->weights.float_bias[m], p->float_relu);
            continue;
          }
          int32_t q = wq_ref_requantize_leaky(acc, p->weights.multiplier[m],
                                              p->leaky ? p->leaky_alpha : 1.0f, p->y_zero_point,
                                              p->y_min, p->y_max);
          wq_ref_q8_store(y, p->y_dtype, out_pixel * M + m, q);
        }
      }
    }
}

static wq_status ref_run(const wq_qconv_plan *p, const void *x, void *y, wq_error *err) {
  (void)err;
  wq_ref_qconv_run(p, x, y);
  return WQ_OK;
}

/* The reference allocates nothing while it runs. */
static int64_t ref_scratch(const wq_qconv_plan *p) {
  (void)p;
  return 0;
}

const wq_qconv_config wq_qconv_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .depthwise_isa = WQ_ISA_REF,
    .gemm = &wq_qgemm_config_ref,
    .pack = wq_ref_qconv_pack,
    .run = ref_run,
    .scratch_bytes = ref_scratch,
};
