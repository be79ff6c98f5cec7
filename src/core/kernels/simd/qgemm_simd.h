/* wasm SIMD128 variant of kernels/qgemm.h (compiled only with -msimd128;
 * its record wq_qgemm_config_simd128 is listed by kernels/config.c).
 *
 * Packed weights: column tiles of WQ_QGEMM_NR = 8 columns, one after the
 * other, each k_padded / 2 blocks of 16 bytes; block kp holds, for columns
 * c = 0..7, the pair W'(2kp, c), W'(2kp + 1, c). i16x8.extend_{low,high}
 * of a block gives two vectors whose i32 lanes are column pairs, ready for
 * i32x4.dot_i16x8_s against an activation pair broadcast by
 * v128.load32_splat. k_padded is even (whole pairs);
 * padding weights are 0. */
#ifndef WQ_KERNELS_SIMD_QGEMM_SIMD_H
#define WQ_KERNELS_SIMD_QGEMM_SIMD_H

#include "../common/kernel_config.h"

/* The relaxed-SIMD build (or its SIMD128 emulation in the kernel tests)
 * packs groups of four K values for the byte dot (qgemm_usdot.h). */
#if defined(__wasm_relaxed_simd__) || defined(WQ_USDOT_EMULATE)
#define WQ_QGEMM_USDOT 1
enum { WQ_QGEMM_MR = 4, WQ_QGEMM_NR = 8, WQ_QGEMM_KR = 4 };
#else
enum { WQ_QGEMM_MR = 4, WQ_QGEMM_NR = 8, WQ_QGEMM_KR = 2 };
#endif

extern const wq_qgemm_config wq_qgemm_config_simd128;

wq_status wq_simd_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                             wq_error *err);

wq_status wq_simd_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda,
                            void *y, int64_t ldy, wq_error *err);
/* The batch-1 GEMV (m == 1; lda and ldy unused). */
wq_status wq_simd_qgemv_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda,
                            void *y, int64_t ldy, wq_error *err);

/* wq_qgemm_scratch_bytes of this implementation. */
int64_t wq_simd_qgemm_scratch_bytes(const wq_qgemm_packed *p);

/* Fills one activation panel (see qgemm_ukernel.h) with rows
 * [row0, row0 + rows) of A, rows <= WQ_QGEMM_MR; every one of the
 * p->k_padded slots of all MR panel rows must be written (rows past `rows`
 * may repeat a valid row; slots without input hold the zero point). */
typedef void (*wq_simd_panel_fn)(const void *ctx, int64_t row0, int64_t rows, int16_t *panel);

/* The GEMM with A's rows produced by `fill` (im2col convolutions): Y row i
 * at y + i * ldy for i < m. */
wq_status wq_simd_qgemm_run_panels(const wq_qgemm_packed *p, int64_t m, wq_simd_panel_fn fill,
                                   const void *ctx, void *y, int64_t ldy, wq_error *err);
/* Rows [r0, r1) of that product only (fill and y still indexed by absolute
 * row): one thread's share. Each row's result is independent of the range. */
wq_status wq_simd_qgemm_run_rows(const wq_qgemm_packed *p, int64_t r0, int64_t r1,
                                 wq_simd_panel_fn fill, const void *ctx, void *y, int64_t ldy,
                                 wq_error *err);
/* Rows [r0, r1) x column tiles [t0, t1) (of WQ_QGEMM_NR columns) only. */
wq_status wq_simd_qgemm_run_block(const wq_qgemm_packed *p, int64_t r0, int64_t r1, int64_t t0,
                                  int64_t t1, wq_simd_panel_fn fill, const void *ctx, void *y,
                                  int64_t ldy, wq_error *err);

/* How a product of m rows is cut into shares for threads: row_chunks row
 * blocks times col_chunks column blocks, balanced (block i of R over P
 * panels: panels [i * P / R, (i + 1) * P / R)); share c is row block
 * c / col_chunks, column block c % col_chunks. row_grain (whole panels) is
 * the uniform row cut for callers that split rows alone. Depends on the shape
 * alone, never on the thread count; each output is computed the same way
 * in any share, so results are bit-identical for any number of threads. */
typedef struct {
  int64_t m, tiles;
  int64_t row_grain;
  int64_t row_chunks, col_chunks, chunks;
} wq_simd_qgemm_split;
/* Fills *s and returns its share count (1: too small to split); `columns`
 * 0 keeps whole rows (im2col: a row's packing is its costly part). */
int64_t wq_simd_qgemm_split_plan(const wq_qgemm_packed *p, int64_t m, int columns,
                                 wq_simd_qgemm_split *s);

#endif
