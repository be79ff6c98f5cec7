/* The int8 NHWC convolution's data types (kernels/qconv.h has the
 * semantics): the description, the plan every variant fills and the
 * helpers all variants share (common/qconv_common.c). A leaf: variants
 * include it, never kernels/qconv.h. */
#ifndef WQ_KERNELS_COMMON_QCONV_TYPES_H
#define WQ_KERNELS_COMMON_QCONV_TYPES_H

#include "conv_geometry.h"
#include "qgemm_types.h"

typedef enum {
  WQ_QCONV_GEMM_1X1 = 0,
  WQ_QCONV_IM2COL_GEMM,
  WQ_QCONV_DEPTHWISE,
  WQ_QCONV_GROUPED_GEMM,
} wq_qconv_algo;

typedef struct {
  int64_t batch, in_channels, out_channels, group;
  wq_conv_geometry geo; /* n_spatial 1 or 2, resolved (out[] and pads filled) */

  wq_dtype x_dtype; /* int8 or uint8 */
  int32_t x_zero_point;

  wq_dtype w_dtype;            /* int8 or uint8 */
  const void *w;               /* [M, C/group, KH, KW] */
  const int32_t *w_zero_point; /* 1 or M values; NULL = zeros */
  int64_t w_zero_point_count;

  const int32_t *bias; /* M values or NULL */

  const float *multiplier; /* 1 or M values: x_scale * w_scale[m] / y_scale */
  int64_t multiplier_count;

  wq_dtype y_dtype; /* int8, uint8 or float */
  int32_t y_zero_point;
  int32_t y_min, y_max; /* within the dtype's range (fused clamp) */

  const float *float_bias; /* float y: M values or NULL */
  bool float_relu;         /* float y: Relu after the bias */
  bool leaky;              /* 8-bit y: fused LeakyRelu (qgemm.h) */
  float leaky_alpha;
} wq_qconv_desc;

/* How a GEMM-based plan lays out the K dimension: `segments` runs of
 * `segment_len` input elements, each padded to `segment_stride` (even when
 * there is more than one run, so every run starts on an activation pair).
 * A run is one kernel row (kw taps x C channels, contiguous in NHWC) when
 * group == 1 and dilation_w == 1, else one tap (C/group channels). */
typedef struct {
  int64_t segments, segment_len, segment_stride;
  int64_t taps_per_segment;
} wq_qconv_k_layout;

/* Per-output-channel data and non-GEMM weights of a plan; each
 * implementation fills the fields it uses (all owned, NULL otherwise). */
typedef struct {
  int8_t *w;             /* reference: W' as [M][KH][KW][C/group] */
  int16_t *w16;          /* SIMD depthwise: tap-pair interleaved (w - w_zp) */
  int32_t *bias;         /* [M] (0 when absent); SIMD depthwise: zero-point folded */
  int32_t *w_zero_point; /* [M] zero points of W' */
  float *multiplier;     /* [M] (SIMD depthwise: padded to 16) */
  float *float_bias;     /* [M] float y only (-0 when absent: adds nothing) */
  bool dw_float_clamp;   /* SIMD depthwise: some |acc * multiplier| may pass 2^22 */
} wq_qconv_weights;

typedef struct wq_qconv_plan {
  const struct wq_qconv_config *config; /* the variant that packed it (runs it) */
  wq_qconv_algo algo;
  int64_t batch, in_channels, out_channels, group;
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w; /* 1-D: in_h = out_h = kernel_h = 1 */
  int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
  wq_dtype x_dtype, y_dtype;
  int32_t x_zero_point, y_zero_point, y_min, y_max;
  bool float_relu;
  bool leaky; /* 8-bit y: fused LeakyRelu (qgemm.h) */
  float leaky_alpha;
  wq_qconv_k_layout k_layout; /* GEMM-based algorithms */
  wq_qgemm_packed *gemms;     /* owned: one packed GEMM per group (SIMD GEMM algorithms) */
  wq_qconv_weights weights;
  uint8_t *pad_row; /* owned: pad_row_len copies of x_zp, the source of padding taps */
  int64_t pad_row_len;
  /* The im2col algorithms' padded input copy (wq_qconv_padded_copy): its
   * rows and columns, 0 when the plan runs on x as it is. */
  int64_t padded_h, padded_w;
  int64_t bytes; /* of everything the plan owns (the memory limit counts them) */
} wq_qconv_plan;

const char *wq_qconv_algo_name(wq_qconv_algo algo);

void wq_qconv_plan_free(wq_qconv_plan *p);

/* The implementation-independent half of wq_qconv_plan_init: validation,
 * geometry, algorithm, K layout and the zero-point row (for tests that pack
 * one desc with both implementations). */
wq_status wq_qconv_plan_common(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                               wq_error *err);

/* x with the plan's padding written out as the zero point, and *q a copy
 * of the plan for it without padding (same output); NULL when the plan
 * chose no copy (padded_h == 0; see qconv.c) or this thread's scratch
 * (runtime/parallel.h) has no room for it. The caller gives it back
 * (wq_scratch_give). */
uint8_t *wq_qconv_padded_copy(const wq_qconv_plan *p, const uint8_t *x, wq_qconv_plan *q);

/* Fills weights.{bias, w_zero_point, multiplier} (and float_bias) with
 * n_padded entries (n_padded >= M, zero past M) from d. */
wq_status wq_qconv_channel_data(wq_qconv_plan *p, const wq_qconv_desc *d, int64_t n_padded,
                                const char *node, wq_error *err);

/* The stored (int8) weight W'[m][c][kh][kw] as the GEMM sees it (W - 128
 * for uint8 weights), exposed for the implementations. */
static inline int32_t wq_qconv_stored_weight(const wq_qconv_desc *d, const wq_qconv_plan *p,
                                             int64_t m, int64_t c, int64_t kh, int64_t kw) {
  int64_t cg = d->in_channels / d->group;
  int64_t at = ((m * cg + c) * p->kernel_h + kh) * p->kernel_w + kw;
  if (d->w_dtype == WQ_DT_UINT8)
    return (int32_t)((const uint8_t *)d->w)[at] - 128;
  return ((const int8_t *)d->w)[at];
}

#endif
