/* The float GEMM every float Conv/Gemm/MatMul uses, through the build's
 * wq_sgemm_config (kernels/config.h: wasm SIMD128 f32x4 in the wasm build,
 * the scalar reference natively; the float families have no per-model
 * choice). Same contract as wq_ref_sgemm; variants agree with it to float
 * rounding (summation order differs), not bit for bit. */
#ifndef WQ_KERNELS_SGEMM_H
#define WQ_KERNELS_SGEMM_H

#include "common/kernel_config.h"

/* The most scratch one wq_sgemm(m, n, k) allocates on one thread (packing
 * buffers; with threads, A packed once for every column slice); a run on T
 * threads allocates at most T times this. */
int64_t wq_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k);

/* C = alpha * A * B + beta * C; see wq_ref_sgemm for the stride contract. */
wq_status wq_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t a_row_stride, int64_t a_col_stride, const float *b, int64_t b_row_stride,
                   int64_t b_col_stride, float beta, float *c, int64_t ldc);

/* Batch-1 products against a constant B, packed once (at plan time):
 * panels of WQ_SGEMV_NR columns, each k rows of WQ_SGEMV_NR floats
 * contiguous (zero past n), so the whole of B streams through once in
 * memory order. wq_sgemv_pack returns NULL when out of memory (free() the
 * result). wq_sgemv_packed: c[j] = sum_p a[p * a_col_stride] * B(p, j),
 * summed in p order like wq_sgemm's batch-1 path (same bits). */
float *wq_sgemv_pack(int64_t n, int64_t k, const float *b, int64_t b_row_stride,
                     int64_t b_col_stride);
void wq_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride, const float *bp,
                     float *c);

#endif
