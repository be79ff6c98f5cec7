/* Scalar reference kernel of wasmq's QConv: N-D, grouped and depthwise
 * convolution of an int8/uint8 activation with prepacked, zero-point-free
 * int32 weights, int32 accumulation and the shared requantizing output
 * stage. The SIMD kernels replace this function with the same parameters. */
#ifndef WQ_KERNELS_REF_INT8_CONV_REF_H
#define WQ_KERNELS_REF_INT8_CONV_REF_H

#include <stdint.h>

#include "int8_requant.h"
#include "ref_qconv.h"

typedef struct {
  wq_qconv_shape shape; /* N, C, M, group and the resolved window geometry */
  wq_dtype x_dtype;     /* int8 or uint8 */
  int32_t x_zero_point; /* padding taps hold this value, i.e. real 0 */
  const int32_t *w;     /* w[m][c][k...] - w_zero_point[m], [M, C/group, kernel...] */
  const int32_t *bias;  /* [M] in accumulator units (s_x * s_w[m]), or NULL */
  wq_int8_requant out;  /* multiplier per output channel m */
} wq_int8_conv_params;

/* y[n, m, o...] = requant_m(bias[m] + sum over the group's channels and the
 * kernel window of (x - x_zero_point) * w). The sum is exact in 64 bits and
 * wrapped to int32 like ONNX's accumulator. */
void wq_int8_conv_ref(const wq_int8_conv_params *p, const void *x, void *y);

#endif
