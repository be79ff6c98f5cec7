/* int8 elementwise and data-movement kernels behind QAdd/QMul, QLookup,
 * QConcat, ResizeNearestNHWC and DepthToSpaceNHWC. Every element is an
 * int8/uint8 code; results equal the scalar references (wq_ref_*, in
 * ref/ref_qeltwise.c) bit for bit, and those equal the float Q/DQ
 * arithmetic of ref/int8_eltwise_ref.h:
 *   binary   y = quantize(float(a - a_zp) * a_scale  (+ or *)
 *                         float(b - b_zp) * b_scale), all in float32, the
 *            quantization a float32 division rounded half to even and
 *            clamped to [y_min, y_max] — no parameter combination needs a
 *            scalar fallback: f32x4 performs the same IEEE operations;
 *   lookup   y = table[q + 128] (int8 x) or table[q] (uint8 x).
 * Through the build's wq_qeltwise_config (kernels/config.h: SIMD128 in the
 * wasm build, simd/qeltwise_wasmsimd.c; the references natively). */
#ifndef WQ_KERNELS_QELTWISE_H
#define WQ_KERNELS_QELTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/value.h"
#include "common/kernel_config.h"

/* One run: y[i] = a[i * a_step] op b[i * b_step] for i < n, steps 0
 * (broadcast one code) or 1. */
void wq_qbinary_row(const wq_qbinary_params *p, int64_t n, const void *a, int a_step, const void *b,
                    int b_step, void *y);

/* Numpy broadcasting of a and b into y's shape (logical dims, checked by
 * shape inference), each of the three in its own layout (unpacked): y is
 * walked in its memory order, its dims folded into the longest run both
 * operands walk contiguously or broadcast, and the runs go through
 * wq_qbinary_row; an operand whose layout puts the run's elements apart
 * (another dim order than y's, for dims larger than 1) is gathered. */
void wq_qbinary(const wq_qbinary_params *p, const wq_value *a, const wq_value *b, wq_value *y);

/* y[i] = table[index(x[i])]. */
void wq_lookup_q8(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y);

/* `rows` runs of row_len codes from x (row i at x + i * x_stride) to y (at
 * y + i * y_stride), through `table` when given (then x_signed picks the
 * index rule), else copied. The concat of channels-last data. */
void wq_copy_rows_q8(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                     const uint8_t *table, bool x_signed, const void *x, void *y);

void wq_resize_nearest_nhwc_q8(const wq_resize_nhwc *r, const void *x, void *y);

/* DepthToSpace of 8-bit NHWC data: x [N, H, W, C] -> y [N, H*b, W*b, C/b²];
 * DCR (crd false) takes output channel c at block offset (i, j) from input
 * channel (i*b + j) * C/b² + c, CRD from c*b² + i*b + j. */
void wq_depth_to_space_nhwc_q8(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block,
                               bool crd, const void *x, void *y);

#endif
