/* Float convolution kernels on NC[spatial] tensors: im2col + the shared GEMM
 * for the general case, a direct loop for depthwise (one input channel per
 * group), and col2im for ConvTranspose. Geometry (pads, output sizes) comes
 * resolved from conv_geometry.h; these functions trust it. */
#ifndef WQ_KERNELS_CONV_F32_H
#define WQ_KERNELS_CONV_F32_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/status.h"
#include "common/conv_geometry.h"

/* Y[N, M, out...] = conv(X[N, C, in...], W[M, C/group, kernel...]) + bias[M]
 * (bias may be NULL), then with `relu` max(y, 0) as the Relu op computes it
 * (NaN stays NaN): bias and activation applied to each block of output while
 * it is in cache. Returns WQ_ERR_OUT_OF_MEMORY when scratch cannot be
 * allocated. */
/* The most scratch one wq_conv_f32 of these sizes allocates on one
 * thread (im2col columns and the GEMM's packing, a padded plane or input);
 * a run on T threads allocates at most T times this. */
int64_t wq_conv_f32_scratch_bytes(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                                  int64_t out_channels, int64_t group);

wq_status wq_conv_f32(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                      int64_t out_channels, int64_t group, const float *x, const float *w,
                      const float *bias, bool relu, float *y);

/* The most scratch one wq_conv_transpose_f32 of these sizes allocates
 * on one thread (col2im columns and the GEMM's packing). */
int64_t wq_conv_transpose_f32_scratch_bytes(const wq_conv_geometry *g, int64_t in_channels,
                                            int64_t out_channels, int64_t group);

/* Y[N, M, out...] = conv_transpose(X[N, C, in...], W[C, M/group, kernel...])
 * + bias[M]. Here g->in is the input (the small side), g->out the output, and
 * g->pad_begin the amount cropped from the start of each output axis. */
wq_status wq_conv_transpose_f32(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                                int64_t out_channels, int64_t group, const float *x, const float *w,
                                const float *bias, float *y);

/* Rows (channel, kernel offset) x output positions [col_begin, col_begin +
 * col_count) of the im2col matrix of channels x[channels, in...] into
 * col[channels * kernel_size, col_count]; padding reads as 0. */
void wq_im2col_f32(const wq_conv_geometry *g, const float *x, int64_t channels, int64_t col_begin,
                   int64_t col_count, float *col);

#endif
