/* wasm SIMD128 implementation of kernels/qgemm.h (compiled only with
 * -msimd128; the dispatch in qgemm.c picks it).
 *
 * Packed weights: column tiles of WQ_QGEMM_NR = 8 columns, one after the
 * other, each k_padded / 2 blocks of 16 bytes; block kp holds, for columns
 * c = 0..7, the pair W'(2kp, c), W'(2kp + 1, c). i16x8.extend_{low,high}
 * of a block gives two vectors whose i32 lanes are column pairs, ready for
 * i32x4.dot_i16x8_s against an activation pair broadcast by
 * v128.load32_splat. k_padded is a multiple of 4 (two pairs per loop step);
 * padding weights are 0. */
#ifndef WQ_KERNELS_SIMD_QGEMM_SIMD_H
#define WQ_KERNELS_SIMD_QGEMM_SIMD_H

#include "../qgemm.h"

enum { WQ_QGEMM_MR = 4, WQ_QGEMM_NR = 8, WQ_QGEMM_KR = 4 };

wq_status wq_simd_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                             wq_error *err);

wq_status wq_simd_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda,
                            void *y, int64_t ldy, wq_error *err);

#endif
