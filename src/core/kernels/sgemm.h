/* The float GEMM every float Conv/Gemm/MatMul uses: wq_sgemm picks the
 * wasm SIMD128 kernel (kernels/simd/sgemm_wasmsimd.c, f32x4) under
 * __wasm_simd128__ and the scalar reference (ref/ref_gemm_f32.h) otherwise.
 * Same contract as wq_ref_sgemm; results agree with it to float rounding
 * (summation order differs), not bit for bit. */
#ifndef WQ_KERNELS_SGEMM_H
#define WQ_KERNELS_SGEMM_H

#include <stdint.h>

#include "../ir/status.h"

/* C = alpha * A * B + beta * C; see wq_ref_sgemm for the stride contract. */
wq_status wq_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t a_row_stride, int64_t a_col_stride, const float *b, int64_t b_row_stride,
                   int64_t b_col_stride, float beta, float *c, int64_t ldc);

#ifdef __wasm_simd128__
wq_status wq_simd_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                        int64_t a_row_stride, int64_t a_col_stride, const float *b,
                        int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                        int64_t ldc);
#endif

#endif
