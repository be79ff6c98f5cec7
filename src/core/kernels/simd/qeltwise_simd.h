/* wasm SIMD128 int8 elementwise and data-movement kernels
 * (kernels/qeltwise.h; record listed by kernels/config.c). */
#ifndef WQ_KERNELS_SIMD_QELTWISE_SIMD_H
#define WQ_KERNELS_SIMD_QELTWISE_SIMD_H

#include "../common/kernel_config.h"

extern const wq_qeltwise_config wq_qeltwise_config_simd128;

void wq_simd_qbinary_row(const wq_qbinary_params *p, int64_t n, const void *a, int a_step,
                         const void *b, int b_step, void *y);
void wq_simd_lookup_q8(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y);
void wq_simd_copy_rows_q8(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                          const uint8_t *table, bool x_signed, const void *x, void *y);
void wq_simd_resize_nearest_nhwc_q8(const wq_resize_nhwc *r, const void *x, void *y);
void wq_simd_depth_to_space_nhwc_q8(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block,
                                    bool crd, const void *x, void *y);

#endif
