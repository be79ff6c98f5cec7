/* wasm SIMD128 variant of the float GEMM (kernels/sgemm.h; record
 * wq_sgemm_config_simd128, listed by kernels/config.c). */
#ifndef WQ_KERNELS_SIMD_SGEMM_SIMD_H
#define WQ_KERNELS_SIMD_SGEMM_SIMD_H

#include "../common/kernel_config.h"

extern const wq_sgemm_config wq_sgemm_config_simd128;

#endif
