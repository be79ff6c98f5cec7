/* int8 GEMM with requantization: Y = requant(A * W + bias), the kernel
 * behind QGemm/QMatMul and 1x1 / im2col convolutions.
 *
 * Semantics (identical to quant_ref.h's QLinearMatMul/QLinearConv):
 *   acc[i][j] = bias[j] + sum_k (A[i][k] - a_zp) * (W[k][j] - w_zp[j])
 *               (exact, wrapped to int32 like ONNX's 32-bit accumulator)
 *   Y[i][j]   = clamp(round_half_even((float)acc * multiplier[j]) + y_zp,
 *                     y_min, y_max)
 * where y_min/y_max are the output dtype's range intersected with a fused
 * activation clamp (Relu/Clip folded into the requantization).
 *
 * Float output (y_dtype WQ_DT_FLOAT, the rescale of dynamically quantized
 * models: ConvInteger/MatMulInteger -> Cast -> Mul -> Add -> Relu fused):
 *   t = (float)acc * multiplier[j];  Y[i][j] = t + float_bias[j];
 *   then, with float_relu, Y < 0 ? 0 : Y
 * — each step rounded to float32 as the op-by-op graph rounds it, so the
 * result is bit-identical to Cast, Mul, Add, Relu run one after another.
 *
 * Weights are packed once (wq_qgemm_pack, at plan time) and stay int8 in
 * memory: uint8 weights are stored as W' = W - 128 with zero point
 * w_zp - 128, which leaves every (W - w_zp) unchanged. The SIMD kernels
 * multiply raw activations by W' and correct for the zero points with the
 * column sums of W' (precomputed here) and, only when some w_zp != 0, with
 * row sums of A.
 *
 * One entry point per operation; the build picks the implementation once
 * (qgemm.c): wasm SIMD128 under __wasm_simd128__ (kernels/simd), the scalar
 * reference otherwise (kernels/ref). Both give the same bits. */
#ifndef WQ_KERNELS_QGEMM_H
#define WQ_KERNELS_QGEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/dtype.h"
#include "../ir/status.h"

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
typedef struct {
  int64_t n, k;     /* logical sizes */
  int64_t k_padded; /* k rounded up to the packing's K granularity */
  int64_t n_padded; /* n rounded up to the packing's column tile */
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

/* The most scratch one wq_qgemm_run of p allocates on one thread, for any
 * m (activation panels, the GEMV's widened row); a run on T threads
 * allocates at most T times this. */
int64_t wq_qgemm_scratch_bytes(const wq_qgemm_packed *p);

/* Validates d (dtypes, sizes, ranges; `node` names the caller in errors) and
 * packs it into *p, which owns its arrays afterwards (wq_qgemm_packed_free).
 * On failure *p holds nothing. */
wq_status wq_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                        wq_error *err);

/* Y[i][j] for i < m: A row i at a + i * lda (elements of p->a_dtype), Y row
 * i at y + i * ldy (elements of p->y_dtype, 4 bytes for float). Uses a batch-1 GEMV kernel when
 * m == 1. Fails only when scratch cannot be allocated. */
wq_status wq_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                       int64_t ldy, wq_error *err);

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
