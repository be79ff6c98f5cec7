/* Pooling kernels over `planes` = N * C independent spatial planes, N-D,
 * with the window geometry resolved by conv_geometry.h. */
#ifndef WQ_KERNELS_REF_POOL_H
#define WQ_KERNELS_REF_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/conv_geometry.h"

/* Max over each window's in-bounds elements (padding never wins). When
 * `indices` is not NULL it receives ONNX's flattened index of the chosen
 * element: plane * in_size + the row-major (or, with column_major, the
 * column-major) offset within the plane. An empty window gives 0 / -1. */
void wq_ref_maxpool_f32(const wq_conv_geometry *g, int64_t planes, const float *x, float *y,
                        int64_t *indices, bool column_major);
void wq_ref_maxpool_i8(const wq_conv_geometry *g, int64_t planes, const int8_t *x, int8_t *y,
                       int64_t *indices, bool column_major);
void wq_ref_maxpool_u8(const wq_conv_geometry *g, int64_t planes, const uint8_t *x, uint8_t *y,
                       int64_t *indices, bool column_major);

/* Mean over each window. The divisor counts in-bounds elements, or with
 * count_include_pad every window position inside the padded extent
 * [-pad_begin, in + pad_end) (positions past it, which only ceil_mode
 * creates, never count). */
void wq_ref_avgpool_f32(const wq_conv_geometry *g, int64_t planes, bool count_include_pad,
                        const float *x, float *y);

/* y[p] = mean (or max) of x[p * plane_size .. (p + 1) * plane_size). */
void wq_ref_global_avgpool_f32(int64_t planes, int64_t plane_size, const float *x, float *y);
void wq_ref_global_maxpool_f32(int64_t planes, int64_t plane_size, const float *x, float *y);

#endif
