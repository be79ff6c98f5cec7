/* wasm SIMD128 variant of kernels/qconv.h (record wq_qconv_config_simd128,
 * listed by kernels/config.c). GEMM algorithms keep one packed GEMM per group (p->gemms);
 * depthwise keeps tap-pair interleaved int16 weights (p->weights.w16). */
#ifndef WQ_KERNELS_SIMD_QCONV_SIMD_H
#define WQ_KERNELS_SIMD_QCONV_SIMD_H

#include "../common/kernel_config.h"

extern const wq_qconv_config wq_qconv_config_simd128;

/* Expects wq_qconv_plan_common to have filled *p. */
wq_status wq_simd_qconv_pack(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                             wq_error *err);

/* wq_qconv_scratch_bytes of this implementation. */
int64_t wq_simd_qconv_scratch_bytes(const wq_qconv_plan *p);

wq_status wq_simd_qconv_run(const wq_qconv_plan *p, const void *x, void *y, wq_error *err);

#endif
