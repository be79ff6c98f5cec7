/* The int8 GEMM's data types (kernels/qgemm.h has the semantics): the
 * description a caller gives, the packed form every variant fills, and the
 * helpers all variants share (common/qgemm_common.c). A leaf: the
 * reference, SIMD and other variants include it, never kernels/qgemm.h. */
#ifndef WQ_KERNELS_COMMON_QGEMM_TYPES_H
#define WQ_KERNELS_COMMON_QGEMM_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"
#include "../../ir/status.h"

/* Everything a packed int8 GEMM needs to know, given once at pack time. */
typedef struct {
  int64_t n, k; /* output columns (channels) and reduction depth, >= 1 */

  wq_dtype a_dtype; /* activations: WQ_DT_INT8 or WQ_DT_UINT8 */
  int32_t a_zero_point;

  /* W(k, j) = w[k * w_k_stride + j * w_n_stride] (element strides), dtype
   * int8 or uint8. Gemm's B [K,N] has (n, 1); a conv weight [M, K] (1, k). */
  wq_dtype w_dtype;
  const void *w;
  int64_t w_k_stride, w_n_stride;
  const int32_t *w_zero_point; /* 1 (per-tensor) or n values; NULL = zeros */
  int64_t w_zero_point_count;

  const int32_t *bias; /* n values or NULL */

  const float *multiplier; /* 1 or n values: a_scale * w_scale[j] / y_scale */
  int64_t multiplier_count;

  wq_dtype y_dtype; /* WQ_DT_INT8, WQ_DT_UINT8 or WQ_DT_FLOAT */
  int32_t y_zero_point;
  int32_t y_min, y_max; /* within the dtype's range, y_min <= y_max (8-bit y) */

  const float *float_bias; /* float y: n values added after the scale, or NULL */
  bool float_relu;         /* float y: Relu after the bias */
  /* 8-bit y: a fused LeakyRelu, acc * multiplier[j] < 0 scaled by
   * leaky_alpha before rounding (quant_ref.h wq_ref_requantize_leaky). */
  bool leaky;
  float leaky_alpha;
} wq_qgemm_desc;

/* Packed weights plus per-column requantization data. Layout of `w` depends
 * on the implementation (see kernels/simd/qgemm_simd.h and
 * kernels/ref/ref_qgemm.h); the rest is common. */
typedef struct wq_qgemm_packed {
  const struct wq_qgemm_config *config; /* the variant that packed it (runs it) */
  int64_t n, k;                         /* logical sizes */
  int64_t k_padded;                     /* k rounded up to the packing's K granularity */
  int64_t n_padded;                     /* n rounded up to the packing's column tile */
  wq_dtype a_dtype;
  int32_t a_zero_point;
  int8_t *w;             /* owned; implementation layout of W' */
  int32_t *bias;         /* owned, n_padded: bias (0 when absent or past n) */
  int32_t *column_sum;   /* owned, n_padded: sum_k W'[k][j] (wrapping) */
  int32_t *w_zero_point; /* owned, n_padded: zero points of the stored W' */
  float *multiplier;     /* owned, n_padded */
  bool has_w_zero_point; /* some w_zero_point != 0: row sums of A needed */
  wq_dtype y_dtype;
  int32_t y_zero_point, y_min, y_max;
  float *float_bias; /* owned, n_padded (float y only, else NULL) */
  bool float_relu;
  bool leaky; /* 8-bit y: fused LeakyRelu (wq_qgemm_desc) */
  float leaky_alpha;
  int64_t bytes; /* of the owned arrays (the memory limit counts them) */
} wq_qgemm_packed;

void wq_qgemm_packed_free(wq_qgemm_packed *p);

/* The requantization multiplier ONNX's QLinear ops use, computed the same
 * way (float32): (a_scale * w_scale) / y_scale. */
static inline float wq_qgemm_multiplier(float a_scale, float w_scale, float y_scale) {
  return (a_scale * w_scale) / y_scale;
}

/* Validation shared by the implementations: fails with WQ_ERR_INVALID_ARG
 * naming the bad field. */
wq_status wq_qgemm_desc_check(const wq_qgemm_desc *d, const char *node, wq_error *err);

/* Fills the implementation-independent part of *p (sizes, per-column
 * arrays of n_padded entries, zero past n; column sums of W') and allocates
 * p->w with w_bytes zero bytes, for the implementation to fill. k_multiple /
 * n_multiple give the padding granularity. */
wq_status wq_qgemm_packed_alloc(wq_qgemm_packed *p, const wq_qgemm_desc *d, int64_t k_multiple,
                                int64_t n_multiple, int64_t w_bytes, const char *node,
                                wq_error *err);

/* The stored (int8) value W'(k, j): W - 128 for uint8 weights. */
static inline int32_t wq_qgemm_stored_weight(const wq_qgemm_desc *d, int64_t k, int64_t j) {
  int64_t at = k * d->w_k_stride + j * d->w_n_stride;
  if (d->w_dtype == WQ_DT_UINT8)
    return (int32_t)((const uint8_t *)d->w)[at] - 128;
  return ((const int8_t *)d->w)[at];
}

#endif
