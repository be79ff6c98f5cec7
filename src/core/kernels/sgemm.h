/* The float GEMM every float Conv/Gemm/MatMul uses: wq_sgemm picks the
 * wasm SIMD128 kernel (kernels/simd/sgemm_wasmsimd.c, f32x4) under
 * __wasm_simd128__ and the scalar reference (ref/ref_gemm_f32.h) otherwise.
 * Same contract as wq_ref_sgemm; results agree with it to float rounding
 * (summation order differs), not bit for bit. */
#ifndef WQ_KERNELS_SGEMM_H
#define WQ_KERNELS_SGEMM_H

#include <stdint.h>

#include "../ir/status.h"

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
enum { WQ_SGEMV_NR = 16 };
float *wq_sgemv_pack(int64_t n, int64_t k, const float *b, int64_t b_row_stride,
                     int64_t b_col_stride);
void wq_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride, const float *bp,
                     float *c);

#ifdef __wasm_simd128__
/* One output plane of a float depthwise conv (strided, or 3x3 stride 1)
 * read from its zero-padded input plane xp (rows pw floats apart, 8 floats
 * readable past the last):
 * y[oh * out_w + ow] = bias + the taps (ki, kj) in order of
 * w[ki * kw + kj] * xp[(oh * sh + ki * dh) * pw + ow * sw + kj * dw], four
 * outputs per f32x4 accumulator (one store per output). */
void wq_simd_dw_plane(const float *xp, int64_t pw, int64_t out_h, int64_t out_w, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *w,
                      float bias, float *y);
void wq_simd_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride,
                          const float *bp, float *c);
/* Bytes of the packing buffers one wq_simd_sgemm(m, n, k) allocates at most. */
int64_t wq_simd_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k);
wq_status wq_simd_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                        int64_t a_row_stride, int64_t a_col_stride, const float *b,
                        int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                        int64_t ldc);
/* A (m >= 4 rows) packed once into the blocked GEMM's panels,
 * WQ_SIMD_SGEMM_PACKED_A_FLOATS(m, k) floats, then products of column
 * slices reading it (threads' shares: each would pack all of A again). */
#define WQ_SIMD_SGEMM_PACKED_A_FLOATS(m, k) (((m) + 3) / 4 * 4 * (k))
void wq_simd_sgemm_pack_a(int64_t m, int64_t k, const float *a, int64_t a_row_stride,
                          int64_t a_col_stride, float *a_full);
wq_status wq_simd_sgemm_packed_a(int64_t m, int64_t n, int64_t k, float alpha, const float *a_full,
                                 const float *b, int64_t b_row_stride, int64_t b_col_stride,
                                 float beta, float *c, int64_t ldc);
#endif

#endif
