/* Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops
 * (float, int8 and SIMD kernels alike): auto_pad parsing, output sizes and
 * the pads that auto_pad implies. Pure arithmetic, no allocation. */
#ifndef WQ_KERNELS_COMMON_CONV_GEOMETRY_H
#define WQ_KERNELS_COMMON_CONV_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/value.h"

/* Spatial axes are the dims after N and C. */
#define WQ_CONV_MAX_SPATIAL (WQ_MAX_RANK - 2)

typedef enum {
  WQ_AUTO_PAD_NOTSET = 0,
  WQ_AUTO_PAD_SAME_UPPER,
  WQ_AUTO_PAD_SAME_LOWER,
  WQ_AUTO_PAD_VALID
} wq_auto_pad;

/* Parses ONNX's auto_pad string; false for an unknown name. */
bool wq_auto_pad_parse(const char *name, wq_auto_pad *out);

typedef struct {
  int n_spatial;
  int64_t in[WQ_CONV_MAX_SPATIAL];       /* input spatial dims */
  int64_t kernel[WQ_CONV_MAX_SPATIAL];   /* kernel spatial dims */
  int64_t stride[WQ_CONV_MAX_SPATIAL];   /* >= 1 */
  int64_t dilation[WQ_CONV_MAX_SPATIAL]; /* >= 1 */
  int64_t pad_begin[WQ_CONV_MAX_SPATIAL];
  int64_t pad_end[WQ_CONV_MAX_SPATIAL];
  int64_t out[WQ_CONV_MAX_SPATIAL]; /* output spatial dims (filled by resolve) */
} wq_conv_geometry;

/* Extent of a dilated kernel: (k - 1) * d + 1. */
static inline int64_t wq_conv_effective_kernel(int64_t kernel, int64_t dilation) {
  return (kernel - 1) * dilation + 1;
}

/* Computes out[] (and, for SAME_* / VALID, pad_begin/pad_end) of a forward
 * sliding window (Conv, MaxPool, AveragePool). in, kernel, stride, dilation
 * and — for NOTSET — the explicit pads must be filled in. ceil_mode (pools)
 * rounds the window count up but drops a last window that would start in the
 * end padding. Returns -1 on success, else the first spatial axis whose
 * output would be empty (the caller reports it). */
int wq_conv_geometry_resolve(wq_conv_geometry *g, wq_auto_pad auto_pad, bool ceil_mode);

/* Length of one spatial axis of the input with its padding written out:
 * enough for every window of `out` outputs and for the input after
 * pad_begin (padded copies, where every window lies inside). */
static inline int64_t wq_conv_padded_extent(int64_t out, int64_t stride, int64_t kernel,
                                            int64_t dilation, int64_t pad_begin, int64_t in) {
  const int64_t windows = (out - 1) * stride + (kernel - 1) * dilation + 1;
  return windows > pad_begin + in ? windows : pad_begin + in;
}

/* Product of out[] (or in[], kernel[]) over the spatial axes. */
int64_t wq_conv_geometry_out_size(const wq_conv_geometry *g);
int64_t wq_conv_geometry_in_size(const wq_conv_geometry *g);
int64_t wq_conv_geometry_kernel_size(const wq_conv_geometry *g);

#endif
