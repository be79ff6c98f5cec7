/* Scalar reference kernel of wasmq's QGemm: an int8/uint8 activation
 * [M, K] (or [K, M] with trans_a) times a constant weight in the canonical
 * [N, K] layout (one row per output feature, zero point removed), int32
 * accumulation, the shared requantizing output stage per output feature. */
#ifndef WQ_KERNELS_REF_INT8_GEMM_REF_H
#define WQ_KERNELS_REF_INT8_GEMM_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "int8_requant.h"

typedef struct {
  int64_t M, K, N;
  bool trans_a;     /* a is stored [K, M] */
  wq_dtype a_dtype; /* int8 or uint8 */
  int32_t a_zero_point;
  const int32_t *w;    /* [N, K]: w[n][k] - w_zero_point[n] */
  const int32_t *bias; /* [N] in accumulator units, or NULL */
  wq_int8_requant out; /* multiplier per output feature n */
} wq_int8_gemm_params;

/* y[m, n] = requant_n(bias[n] + sum_k (a[m, k] - a_zero_point) * w[n, k]). */
void wq_int8_gemm_ref(const wq_int8_gemm_params *p, const void *a, void *y);

#endif
