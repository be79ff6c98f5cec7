/* The one float GEMM behind Conv, ConvTranspose, Gemm and MatMul.
 * Scalar, cache-blocked (packed panels + a register-tiled micro-kernel the
 * compiler can vectorise); the SIMD variant keeps this signature. */
#ifndef WQ_KERNELS_REF_GEMM_F32_H
#define WQ_KERNELS_REF_GEMM_F32_H

#include "../common/kernel_config.h"

/* The reference variant's record (named "ref"). */
extern const wq_sgemm_config wq_sgemm_config_ref;

/* C = alpha * A * B + beta * C for an m x k matrix A, a k x n matrix B and a
 * row-major m x n matrix C with row stride ldc. Element strides describe any
 * transpose: A(i,p) = a[i * a_row_stride + p * a_col_stride] and
 * B(p,j) = b[p * b_row_stride + j * b_col_stride]. When beta == 0 C is never
 * read (it may hold garbage). Returns WQ_ERR_OUT_OF_MEMORY if the packing
 * scratch cannot be allocated (C is then unspecified), else WQ_OK. */
/* Bytes of the packing buffers one wq_ref_sgemm(m, n, k) allocates. */
int64_t wq_ref_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k);

wq_status wq_ref_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                       int64_t a_row_stride, int64_t a_col_stride, const float *b,
                       int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                       int64_t ldc);

#endif
