/* Parameter records of the int8 elementwise and data-movement kernels
 * (kernels/qeltwise.h has the semantics), shared by every variant. */
#ifndef WQ_KERNELS_COMMON_QELTWISE_TYPES_H
#define WQ_KERNELS_COMMON_QELTWISE_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

typedef struct {
  bool mul; /* QMul, else QAdd */
  wq_dtype a_dtype, b_dtype, y_dtype;
  float a_scale, b_scale, y_scale;
  int32_t a_zero_point, b_zero_point, y_zero_point;
  int32_t y_min, y_max; /* fused clamp within y's range */
} wq_qbinary_params;

/* Nearest-neighbour resize of 8-bit NHWC data: output pixel (oh, ow) is
 * input pixel (src_h[oh], src_w[ow]) (indices within the input). */
typedef struct {
  int64_t batch, in_h, in_w, out_h, out_w, channels;
  const int32_t *src_h, *src_w;
} wq_resize_nhwc;

#endif
