/* Parameter records of the NHWC pools (kernels/nhwc.h has the semantics),
 * shared by every variant and the NCHW int8 pool references. */
#ifndef WQ_KERNELS_COMMON_NHWC_TYPES_H
#define WQ_KERNELS_COMMON_NHWC_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

/* Quantization of an int8 pool's input and output. */
typedef struct {
  wq_dtype x_dtype, y_dtype;
  float x_scale, y_scale;
  int32_t x_zero_point, y_zero_point, y_min, y_max;
} wq_int8_pool_quant;

/* Window geometry of a 2-D NHWC pool (a 1-D pool has in_h = kernel_h = 1). */
typedef struct {
  int64_t batch, channels, in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
} wq_pool2d;

#endif
