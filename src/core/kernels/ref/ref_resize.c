#include "ref_resize.h"

#include <math.h>
#include <string.h>

double wq_resize_source_coord(const wq_resize_axis *ax, int64_t x_out) {
  double x = (double)x_out, s = ax->scale, in = (double)ax->in_len;
  /* ONNX measures the "resized length" as scale * in, which differs from
   * out_len when the scale does not divide evenly. */
  double out_f = s * in;
  switch (ax->coord) {
  case WQ_RESIZE_ALIGN_CORNERS: return out_f == 1.0 ? 0.0 : x * (in - 1.0) / (out_f - 1.0);
  case WQ_RESIZE_ASYMMETRIC: return x / s;
  case WQ_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
  case WQ_RESIZE_PYTORCH_HALF_PIXEL: return out_f == 1.0 ? -0.5 : (x + 0.5) / s - 0.5;
  case WQ_RESIZE_HALF_PIXEL_SYMMETRIC: {
    double adjustment = (double)ax->out_len / out_f;
    double offset = in / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / s - 0.5;
  }
  case WQ_RESIZE_TF_CROP_AND_RESIZE: {
    double span = (ax->roi_end - ax->roi_start) * (in - 1.0);
    double x_ori = out_f == 1.0 ? span / 2.0 : x * span / (out_f - 1.0);
    return x_ori + ax->roi_start * (in - 1.0);
  }
  case WQ_RESIZE_HALF_PIXEL:
  default: return (x + 0.5) / s - 0.5;
  }
}

bool wq_resize_outside(const wq_resize_axis *ax, double x_ori) {
  return ax->coord == WQ_RESIZE_TF_CROP_AND_RESIZE &&
         (x_ori < 0.0 || x_ori > (double)(ax->in_len - 1));
}

int64_t wq_resize_nearest_index(const wq_resize_axis *ax, wq_resize_nearest_mode mode,
                                double x_ori) {
  double fl = floor(x_ori), frac = x_ori - fl;
  double pick;
  switch (mode) {
  case WQ_RESIZE_ROUND_PREFER_CEIL: pick = frac < 0.5 ? fl : fl + 1.0; break;
  case WQ_RESIZE_FLOOR: pick = fl; break;
  case WQ_RESIZE_CEIL: pick = ceil(x_ori); break;
  case WQ_RESIZE_NEAREST_LEGACY: pick = ax->scale < 1.0 ? ceil(x_ori) : trunc(x_ori); break;
  case WQ_RESIZE_ROUND_PREFER_FLOOR:
  default: pick = frac == 0.0 ? fl : (frac <= 0.5 ? fl : fl + 1.0); break;
  }
  if (pick < 0.0)
    return 0;
  if (pick > (double)(ax->in_len - 1))
    return ax->in_len - 1;
  return (int64_t)pick;
}

static double kernel_support(wq_resize_mode mode) { return mode == WQ_RESIZE_CUBIC ? 2.0 : 1.0; }

/* Antialiasing stretches the kernel by 1/scale when downsampling. */
static double kernel_scale(bool antialias, double scale) {
  return antialias && scale < 1.0 ? scale : 1.0;
}

static int64_t first_tap(wq_resize_mode mode, bool antialias, double scale) {
  return (int64_t)floor(-kernel_support(mode) / kernel_scale(antialias, scale)) + 1;
}

int wq_resize_tap_count(wq_resize_mode mode, bool antialias, double scale) {
  return (int)(2 - 2 * first_tap(mode, antialias, scale));
}

static double cubic_weight(double x, double a) {
  x = fabs(x);
  if (x <= 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0)
    return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

void wq_resize_axis_taps(const wq_resize_axis *ax, wq_resize_mode mode, bool antialias,
                         double cubic_a, bool exclude_outside, int n_taps, int64_t *index,
                         float *weight, uint8_t *outside) {
  double ks = kernel_scale(antialias, ax->scale);
  int64_t start = first_tap(mode, antialias, ax->scale);
  for (int64_t o = 0; o < ax->out_len; o++) {
    double x = wq_resize_source_coord(ax, o);
    outside[o] = wq_resize_outside(ax, x) ? 1 : 0;
    /* base is the input index left of x, with x == base + ratio, ratio in
     * (0, 1] (an integral x counts as ratio 1 from the index below). */
    double base = floor(x);
    if (base == x)
      base -= 1.0;
    double ratio = x - base;
    float *w = weight + o * n_taps;
    double sum = 0.0;
    for (int t = 0; t < n_taps; t++) {
      double arg = ((double)(start + t) - ratio) * ks;
      double v = mode == WQ_RESIZE_CUBIC ? cubic_weight(arg, cubic_a)
                                         : (fabs(arg) < 1.0 ? 1.0 - fabs(arg) : 0.0);
      w[t] = (float)v;
      sum += v;
    }
    int64_t b = (int64_t)base + start;
    if (exclude_outside) {
      sum = 0.0;
      for (int t = 0; t < n_taps; t++) {
        if (b + t < 0 || b + t >= ax->in_len)
          w[t] = 0.0f;
        sum += w[t];
      }
    }
    /* Antialiased kernels and exclude_outside renormalise to a unit sum. */
    if ((antialias || exclude_outside) && sum != 0.0)
      for (int t = 0; t < n_taps; t++)
        w[t] = (float)(w[t] / sum);
    for (int t = 0; t < n_taps; t++) {
      int64_t i = b + t;
      index[o * n_taps + t] = i < 0 ? 0 : (i >= ax->in_len ? ax->in_len - 1 : i);
    }
  }
}

static void copy_elem(void *dst, const void *src, size_t size) {
  switch (size) {
  case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  default: memcpy(dst, src, size);
  }
}

void wq_ref_resize_nearest(int rank, const int64_t *in_dims, const int64_t *out_dims,
                           size_t elem_size, const void *x, void *y,
                           const int64_t *const *index_tables, const void *extrapolation) {
  const uint8_t *xb = x;
  uint8_t *yb = y;
  int64_t in_stride[16];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    in_stride[d] = s;
    s *= in_dims[d];
  }
  int64_t total = 1;
  for (int d = 0; d < rank; d++)
    total *= out_dims[d];
  if (total == 0)
    return;
  if (rank == 0) {
    copy_elem(yb, xb, elem_size);
    return;
  }
  int last = rank - 1;
  int64_t row_len = out_dims[last], rows = total / row_len;
  const int64_t *last_table = index_tables[last];
  int64_t opos[16] = {0};
  for (int64_t r = 0; r < rows; r++) {
    int64_t base = 0;
    bool row_outside = false;
    for (int d = 0; d < last; d++) {
      int64_t i = index_tables[d][opos[d]];
      if (i < 0)
        row_outside = true;
      base += i * in_stride[d];
    }
    uint8_t *dst = yb + (size_t)(r * row_len) * elem_size;
    for (int64_t o = 0; o < row_len; o++) {
      int64_t i = last_table[o];
      const void *src = (row_outside || i < 0)
                            ? extrapolation
                            : (const void *)(xb + (size_t)(base + i) * elem_size);
      copy_elem(dst + (size_t)o * elem_size, src, elem_size);
    }
    for (int d = last - 1; d >= 0; d--) {
      if (++opos[d] < out_dims[d])
        break;
      opos[d] = 0;
    }
  }
}

void wq_ref_resize_axis_f32(int rank, const int64_t *in_dims, int axis, int64_t out_len, int n_taps,
                            const int64_t *index, const float *weight, const uint8_t *outside,
                            float extrapolation, const float *x, float *y) {
  int64_t outer = 1, inner = 1, in_len = in_dims[axis];
  for (int d = 0; d < axis; d++)
    outer *= in_dims[d];
  for (int d = axis + 1; d < rank; d++)
    inner *= in_dims[d];
  for (int64_t b = 0; b < outer; b++) {
    const float *xs = x + b * in_len * inner;
    float *ys = y + b * out_len * inner;
    for (int64_t o = 0; o < out_len; o++) {
      float *dst = ys + o * inner;
      if (outside[o]) {
        for (int64_t i = 0; i < inner; i++)
          dst[i] = extrapolation;
        continue;
      }
      const int64_t *idx = index + o * n_taps;
      const float *w = weight + o * n_taps;
      if (inner == 1) {
        float acc = 0.0f;
        for (int t = 0; t < n_taps; t++)
          acc += w[t] * xs[idx[t]];
        dst[0] = acc;
        continue;
      }
      for (int64_t i = 0; i < inner; i++)
        dst[i] = 0.0f;
      for (int t = 0; t < n_taps; t++) {
        if (w[t] == 0.0f)
          continue;
        const float *src = xs + idx[t] * inner;
        float wt = w[t];
        for (int64_t i = 0; i < inner; i++)
          dst[i] += wt * src[i];
      }
    }
  }
}
