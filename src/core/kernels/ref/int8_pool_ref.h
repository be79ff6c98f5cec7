/* Scalar reference kernels of wasmq's QAveragePool and QGlobalAveragePool:
 * the window sum of zero-point-free codes is exact in 64 bits; the mean is
 * taken in double, rounded to float32 (the float op's result type) and
 * quantized like QuantizeLinear. */
#ifndef WQ_KERNELS_REF_INT8_POOL_REF_H
#define WQ_KERNELS_REF_INT8_POOL_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/conv_geometry.h"
#include "../common/nhwc_types.h"

/* Divisor rules as wq_ref_avgpool_f32 (count_include_pad counts taps inside
 * the padded extent); an empty window gives quantize(0). */
void wq_int8_avgpool_ref(const wq_conv_geometry *g, int64_t planes, bool count_include_pad,
                         const wq_int8_pool_quant *q, const void *x, void *y);

/* y[p] = quantize(mean of plane p). */
void wq_int8_global_avgpool_ref(int64_t planes, int64_t plane_size, const wq_int8_pool_quant *q,
                                const void *x, void *y);

#endif
