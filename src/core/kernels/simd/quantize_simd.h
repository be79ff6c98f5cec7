/* wasm SIMD128 variant of QuantizeLinear / DequantizeLinear
 * (kernels/quantize.h; listed by kernels/config.c). */
#ifndef WQ_KERNELS_SIMD_QUANTIZE_SIMD_H
#define WQ_KERNELS_SIMD_QUANTIZE_SIMD_H

#include "../common/kernel_config.h"

extern const wq_quantize_config wq_quantize_config_simd128;

#endif
