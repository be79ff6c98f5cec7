/* Scalar NHWC transitions and pools (kernels/nhwc.h): the reference
 * variant, and the pool arithmetic every variant shares. */
#ifndef WQ_KERNELS_REF_REF_NHWC_H
#define WQ_KERNELS_REF_REF_NHWC_H

#include <stddef.h>

#include "../common/kernel_config.h"
#include "int8_pool_ref.h"

extern const wq_nhwc_config wq_nhwc_config_ref;

void wq_ref_nchw_to_nhwc(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x, void *y);
void wq_ref_nhwc_to_nchw(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x, void *y);
void wq_ref_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                      const void *x, void *y);
void wq_ref_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                          const void *x, void *y);
void wq_ref_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);

/* The divisor of output pixel (oh, ow) of an average pool. */
int64_t wq_pool2d_count(const wq_pool2d *p, bool count_include_pad, int64_t oh, int64_t ow);

/* The quantized mean both implementations store (exactly
 * ref/int8_pool_ref.c's arithmetic). */
int32_t wq_qpool_mean_code(const wq_int8_pool_quant *q, int64_t sum, int64_t count);

#endif
