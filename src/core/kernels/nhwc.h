/* Channels-last (NHWC) kernels for the int8 regions the layout pass builds
 * (passes/layout_int8.c): the layout transitions and the pooling ops.
 * Semantics equal the NCHW reference ops element for element (pools: the
 * sums, the double/float mean and QuantizeLinear rounding of
 * ref/int8_pool_ref.c). One entry point per kernel, through the build's
 * wq_nhwc_config (kernels/config.h: SIMD128 in the wasm build,
 * simd/nhwc_wasmsimd.c; the scalar ones natively, ref/ref_nhwc.c). */
#ifndef WQ_KERNELS_NHWC_H
#define WQ_KERNELS_NHWC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/kernel_config.h"
#include "ref/ref_nhwc.h"

/* [N, C, S] -> [N, S, C] or [N, S, C] -> [N, C, S] for 8-bit codes (S: the
 * product of the spatial dims). */
void wq_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);
void wq_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);

/* y[n, c] = quantize(mean over the pixels of (x - x_zp) * x_scale). */
void wq_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                  const void *x, void *y);

/* AveragePool on NHWC codes, divisor rules of wq_int8_avgpool_ref. */
void wq_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                      const void *x, void *y);

/* MaxPool on NHWC int8/uint8 codes (padding taps ignored; a window entirely
 * in the padding gives the dtype's minimum). */
void wq_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);

#endif
