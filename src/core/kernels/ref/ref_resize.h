/* Resize building blocks: ONNX's coordinate transforms, nearest rounding,
 * interpolation taps (linear, cubic, antialiased) and the N-D kernels.
 * Interpolation is separable: one pass per resized axis, last axis first,
 * which is exactly the nested 1-D interpolation ONNX defines. */
#ifndef WQ_KERNELS_REF_RESIZE_H
#define WQ_KERNELS_REF_RESIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../ir/status.h"

typedef enum { WQ_RESIZE_NEAREST, WQ_RESIZE_LINEAR, WQ_RESIZE_CUBIC } wq_resize_mode;

typedef enum {
  WQ_RESIZE_HALF_PIXEL,
  WQ_RESIZE_HALF_PIXEL_SYMMETRIC,
  WQ_RESIZE_PYTORCH_HALF_PIXEL,
  WQ_RESIZE_ALIGN_CORNERS,
  WQ_RESIZE_ASYMMETRIC,
  WQ_RESIZE_TF_HALF_PIXEL_FOR_NN, /* opset 11 only */
  WQ_RESIZE_TF_CROP_AND_RESIZE
} wq_resize_coord_mode;

typedef enum {
  WQ_RESIZE_ROUND_PREFER_FLOOR,
  WQ_RESIZE_ROUND_PREFER_CEIL,
  WQ_RESIZE_FLOOR,
  WQ_RESIZE_CEIL,
  /* opset 10 (and Upsample): truncate when upsampling, ceil when downsampling */
  WQ_RESIZE_NEAREST_LEGACY
} wq_resize_nearest_mode;

/* How one axis maps: `scale` is the (possibly fractional) output/input
 * ratio, in_len/out_len the integer lengths, roi the crop box (only used by
 * tf_crop_and_resize). */
typedef struct {
  wq_resize_coord_mode coord;
  double scale;
  int64_t in_len, out_len;
  double roi_start, roi_end;
} wq_resize_axis;

/* Input coordinate of output index x_out. */
double wq_resize_source_coord(const wq_resize_axis *ax, int64_t x_out);

/* True when tf_crop_and_resize puts x_ori outside [0, in_len - 1]: the output
 * element is then the extrapolation value. */
bool wq_resize_outside(const wq_resize_axis *ax, double x_ori);

/* Nearest input index for x_ori, clamped to [0, in_len - 1]. */
int64_t wq_resize_nearest_index(const wq_resize_axis *ax, wq_resize_nearest_mode mode,
                                double x_ori);

/* Number of taps per output element of a linear/cubic axis. */
int wq_resize_tap_count(wq_resize_mode mode, bool antialias, double scale);

/* Taps of every output index of one axis: index[o * n_taps + t] (clamped to
 * the input, i.e. edge padding) and weight[o * n_taps + t]; outside[o] set
 * for tf_crop_and_resize extrapolation. */
void wq_resize_axis_taps(const wq_resize_axis *ax, wq_resize_mode mode, bool antialias,
                         double cubic_a, bool exclude_outside, int n_taps, int64_t *index,
                         float *weight, uint8_t *outside);

/* Nearest-neighbour gather of an N-D tensor of elem_size-byte elements:
 * y[o] = x[index_tables[d][o_d] ...], or *extrapolation when any table entry
 * is -1. */
void wq_ref_resize_nearest(int rank, const int64_t *in_dims, const int64_t *out_dims,
                           size_t elem_size, const void *x, void *y,
                           const int64_t *const *index_tables, const void *extrapolation);

/* One separable pass along `axis`: x has dims in_dims, y the same dims but
 * out_len on axis. */
void wq_ref_resize_axis_f32(int rank, const int64_t *in_dims, int axis, int64_t out_len, int n_taps,
                            const int64_t *index, const float *weight, const uint8_t *outside,
                            float extrapolation, const float *x, float *y);

#endif
