/* Channels-last (NHWC) kernels for the int8 regions the layout pass builds
 * (passes/layout_int8.c): the layout transitions and the pooling ops.
 * Semantics equal the NCHW reference ops element for element (pools: the
 * sums, the double/float mean and QuantizeLinear rounding of
 * ref/int8_pool_ref.c). One entry point per kernel; the wasm build runs the
 * SIMD128 versions (simd/nhwc_wasmsimd.c), native builds the scalar ones
 * (ref/ref_nhwc.c). */
#ifndef WQ_KERNELS_NHWC_H
#define WQ_KERNELS_NHWC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ref/int8_pool_ref.h"

/* [N, C, S] -> [N, S, C] or [N, S, C] -> [N, C, S] for 8-bit codes (S: the
 * product of the spatial dims). */
void wq_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);
void wq_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y);

/* Window geometry of a 2-D NHWC pool (a 1-D pool has in_h = kernel_h = 1). */
typedef struct {
  int64_t batch, channels, in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
} wq_pool2d;

/* y[n, c] = quantize(mean over the pixels of (x - x_zp) * x_scale). */
void wq_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                  const void *x, void *y);

/* AveragePool on NHWC codes, divisor rules of wq_int8_avgpool_ref. */
void wq_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                      const void *x, void *y);

/* MaxPool on NHWC int8/uint8 codes (padding taps ignored; a window entirely
 * in the padding gives the dtype's minimum). */
void wq_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);

/* The scalar versions (the reference) and, in wasm, the SIMD ones. */
void wq_ref_nchw_to_nhwc(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x, void *y);
void wq_ref_nhwc_to_nchw(int64_t n, int64_t c, int64_t s, size_t elem_size, const void *x, void *y);
void wq_ref_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                      const void *x, void *y);
void wq_ref_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                          const void *x, void *y);
void wq_ref_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);
#ifdef __wasm_simd128__
void wq_simd_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const uint8_t *x, uint8_t *y);
void wq_simd_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const uint8_t *x, uint8_t *y);
void wq_simd_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                       const void *x, void *y);
void wq_simd_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);
void wq_simd_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                           const void *x, void *y);
#endif

/* The divisor of output pixel (oh, ow) of an average pool. */
int64_t wq_pool2d_count(const wq_pool2d *p, bool count_include_pad, int64_t oh, int64_t ow);

/* The quantized mean both implementations store (exactly
 * ref/int8_pool_ref.c's arithmetic). */
int32_t wq_qpool_mean_code(const wq_int8_pool_quant *q, int64_t sum, int64_t count);

#endif
