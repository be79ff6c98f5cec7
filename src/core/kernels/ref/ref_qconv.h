/* Integer convolution reference kernel shared by QLinearConv and
 * ConvInteger: operands arrive zero-point-free (wq_ref_q_center), the sum is
 * exact in 64 bits and wrapped to int32 like ONNX's 32-bit accumulator. */
#ifndef WQ_KERNELS_REF_REF_QCONV_H
#define WQ_KERNELS_REF_REF_QCONV_H

#include <stdint.h>

#include "../common/conv_geometry.h"

typedef struct {
  int64_t N, C, M, group; /* batch, input channels, output channels, groups */
  wq_conv_geometry geo;   /* spatial sizes, strides, dilations, resolved pads */
} wq_qconv_shape;

/* acc[n, m, out...] = bias[m] + sum over the group's input channels and the
 * kernel window of x[n, c, in...] * w[m, c % (C/group), k...], where window
 * taps in the padding contribute nothing (the padding value of a centered
 * operand is 0, i.e. the zero point). bias may be NULL. */
void wq_ref_qconv_acc(const wq_qconv_shape *s, const int32_t *x, const int32_t *w,
                      const int32_t *bias, int32_t *acc);

#endif
