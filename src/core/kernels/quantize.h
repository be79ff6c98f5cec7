/* Per-tensor QuantizeLinear / DequantizeLinear between float32 and
 * int8/uint8 — the region boundaries of every int8 model. Results equal
 * quant_ref.h's wq_ref_quantize_linear / wq_ref_dequantize_linear bit for
 * bit: y = saturate(round_half_even(x / scale) + zero_point) with a float32
 * division (NaN gives qmin), x = (q - zero_point) * scale. Through the
 * build's wq_quantize_config (kernels/config.h: f32x4 in the wasm build,
 * the scalar reference natively). */
#ifndef WQ_KERNELS_QUANTIZE_H
#define WQ_KERNELS_QUANTIZE_H

#include <stdint.h>

#include "../ir/dtype.h"

/* dtype int8 or uint8; [qmin, qmax] within its range. */
void wq_quantize_f32_q8(const float *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                        int32_t qmin, int32_t qmax, void *y);
void wq_dequantize_q8_f32(const void *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                          float *y);

#endif
