/* wasm SIMD128 NHWC transitions and pools (kernels/nhwc.h; record listed
 * by kernels/config.c). */
#ifndef WQ_KERNELS_SIMD_NHWC_SIMD_H
#define WQ_KERNELS_SIMD_NHWC_SIMD_H

#include "../common/kernel_config.h"

extern const wq_nhwc_config wq_nhwc_config_simd128;

void wq_simd_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);
void wq_simd_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);
void wq_simd_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                       const void *x, void *y);
void wq_simd_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);
void wq_simd_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                           const void *x, void *y);

#endif
