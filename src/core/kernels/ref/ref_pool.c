#include "ref_pool.h"

#include <string.h>

/* Per-axis window of one output position: kernel taps [k_lo, k_hi] land
 * inside the input; `start` is the input coordinate of tap 0. */
typedef struct {
  int64_t start[WQ_CONV_MAX_SPATIAL];
  int64_t k_lo[WQ_CONV_MAX_SPATIAL];
  int64_t k_hi[WQ_CONV_MAX_SPATIAL];
} window_span;

/* Fills the window of output position opos; false when it has no
 * in-bounds tap on some axis. */
static bool window_at(const wq_conv_geometry *g, const int64_t *opos, window_span *w) {
  bool any = true;
  for (int d = 0; d < g->n_spatial; d++) {
    int64_t start = opos[d] * g->stride[d] - g->pad_begin[d], dil = g->dilation[d];
    int64_t lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t hi = g->in[d] - 1 - start < 0 ? -1 : (g->in[d] - 1 - start) / dil;
    if (hi > g->kernel[d] - 1)
      hi = g->kernel[d] - 1;
    w->start[d] = start;
    w->k_lo[d] = lo;
    w->k_hi[d] = hi;
    if (hi < lo)
      any = false;
  }
  return any;
}

static void next_index(int64_t *idx, const int64_t *dims, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return;
    idx[d] = 0;
  }
}

/* Advances tap k through the box [k_lo, k_hi]; false after the last one. */
static bool next_tap(int64_t *k, const window_span *w, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++k[d] <= w->k_hi[d])
      return true;
    k[d] = w->k_lo[d];
  }
  return false;
}

static int64_t plane_offset(const wq_conv_geometry *g, const window_span *w, const int64_t *k,
                            bool column_major) {
  int64_t off = 0;
  if (column_major) {
    for (int d = g->n_spatial - 1; d >= 0; d--)
      off = off * g->in[d] + w->start[d] + k[d] * g->dilation[d];
  } else {
    for (int d = 0; d < g->n_spatial; d++)
      off = off * g->in[d] + w->start[d] + k[d] * g->dilation[d];
  }
  return off;
}

/* The 2-D, undilated, index-free case with clipped row/column ranges instead
 * of per-tap odometers (MaxPool of every CNN; the generic walk cost ~15 ns
 * per output of a 2x2 pool). Same taps in the same order, so the same
 * result, NaN and ties included. */
#define DEFINE_MAXPOOL_2D(name, T)                                                                 \
  static void name(const wq_conv_geometry *g, int64_t planes, const T *x, T *y) {                  \
    int64_t ih_n = g->in[0], iw_n = g->in[1], oh_n = g->out[0], ow_n = g->out[1];                  \
    for (int64_t p = 0; p < planes; p++) {                                                         \
      const T *xp = x + p * ih_n * iw_n;                                                           \
      T *yp = y + p * oh_n * ow_n;                                                                 \
      for (int64_t oh = 0; oh < oh_n; oh++) {                                                      \
        int64_t h0 = oh * g->stride[0] - g->pad_begin[0], h1 = h0 + g->kernel[0];                  \
        h0 = h0 < 0 ? 0 : h0;                                                                      \
        h1 = h1 > ih_n ? ih_n : h1;                                                                \
        for (int64_t ow = 0; ow < ow_n; ow++) {                                                    \
          int64_t w0 = ow * g->stride[1] - g->pad_begin[1], w1 = w0 + g->kernel[1];                \
          w0 = w0 < 0 ? 0 : w0;                                                                    \
          w1 = w1 > iw_n ? iw_n : w1;                                                              \
          if (h0 >= h1 || w0 >= w1) {                                                              \
            yp[oh * ow_n + ow] = 0;                                                                \
            continue;                                                                              \
          }                                                                                        \
          T best = xp[h0 * iw_n + w0];                                                             \
          for (int64_t ih = h0; ih < h1; ih++)                                                     \
            for (int64_t iw = ih == h0 ? w0 + 1 : w0; iw < w1; iw++) {                             \
              T v = xp[ih * iw_n + iw];                                                            \
              if (v > best)                                                                        \
                best = v;                                                                          \
            }                                                                                      \
          yp[oh * ow_n + ow] = best;                                                               \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

#define DEFINE_MAXPOOL(name, T)                                                                    \
  DEFINE_MAXPOOL_2D(name##_2d, T)                                                                  \
  void name(const wq_conv_geometry *g, int64_t planes, const T *x, T *y, int64_t *indices,         \
            bool column_major) {                                                                   \
    int n = g->n_spatial;                                                                          \
    if (n == 2 && !indices && g->dilation[0] == 1 && g->dilation[1] == 1) {                        \
      name##_2d(g, planes, x, y);                                                                  \
      return;                                                                                      \
    }                                                                                              \
    int64_t in_size = wq_conv_geometry_in_size(g), out_size = wq_conv_geometry_out_size(g);        \
    for (int64_t p = 0; p < planes; p++) {                                                         \
      const T *xp = x + p * in_size;                                                               \
      int64_t opos[WQ_CONV_MAX_SPATIAL] = {0};                                                     \
      for (int64_t o = 0; o < out_size; o++, next_index(opos, g->out, n)) {                        \
        window_span w;                                                                             \
        int64_t out_at = p * out_size + o;                                                         \
        if (!window_at(g, opos, &w)) {                                                             \
          y[out_at] = 0;                                                                           \
          if (indices)                                                                             \
            indices[out_at] = -1;                                                                  \
          continue;                                                                                \
        }                                                                                          \
        int64_t k[WQ_CONV_MAX_SPATIAL], best_k[WQ_CONV_MAX_SPATIAL];                               \
        memcpy(k, w.k_lo, sizeof(int64_t) * (size_t)n);                                            \
        memcpy(best_k, k, sizeof(int64_t) * (size_t)n);                                            \
        T best = xp[plane_offset(g, &w, k, false)];                                                \
        while (next_tap(k, &w, n)) {                                                               \
          T v = xp[plane_offset(g, &w, k, false)];                                                 \
          if (v > best) {                                                                          \
            best = v;                                                                              \
            memcpy(best_k, k, sizeof(int64_t) * (size_t)n);                                        \
          }                                                                                        \
        }                                                                                          \
        y[out_at] = best;                                                                          \
        if (indices)                                                                               \
          indices[out_at] = p * in_size + plane_offset(g, &w, best_k, column_major);               \
      }                                                                                            \
    }                                                                                              \
  }

DEFINE_MAXPOOL(wq_ref_maxpool_f32, float)
DEFINE_MAXPOOL(wq_ref_maxpool_i8, int8_t)
DEFINE_MAXPOOL(wq_ref_maxpool_u8, uint8_t)

void wq_ref_avgpool_f32(const wq_conv_geometry *g, int64_t planes, bool count_include_pad,
                        const float *x, float *y) {
  int n = g->n_spatial;
  int64_t in_size = wq_conv_geometry_in_size(g), out_size = wq_conv_geometry_out_size(g);
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = x + p * in_size;
    int64_t opos[WQ_CONV_MAX_SPATIAL] = {0};
    for (int64_t o = 0; o < out_size; o++, next_index(opos, g->out, n)) {
      window_span w;
      bool any = window_at(g, opos, &w);
      int64_t count = 1;
      for (int d = 0; d < n; d++) {
        int64_t taps;
        if (count_include_pad) {
          /* Taps inside [-pad_begin, in + pad_end). */
          int64_t lo_c = -g->pad_begin[d], hi_c = g->in[d] + g->pad_end[d] - 1;
          int64_t s = w.start[d], dil = g->dilation[d];
          int64_t lo = s >= lo_c ? 0 : (lo_c - s + dil - 1) / dil;
          int64_t hi = hi_c - s < 0 ? -1 : (hi_c - s) / dil;
          if (hi > g->kernel[d] - 1)
            hi = g->kernel[d] - 1;
          taps = hi >= lo ? hi - lo + 1 : 0;
        } else {
          taps = w.k_hi[d] >= w.k_lo[d] ? w.k_hi[d] - w.k_lo[d] + 1 : 0;
        }
        count *= taps;
      }
      if (!any || count == 0) {
        y[p * out_size + o] = 0.0f;
        continue;
      }
      int64_t k[WQ_CONV_MAX_SPATIAL];
      memcpy(k, w.k_lo, sizeof(int64_t) * (size_t)n);
      double sum = 0.0;
      do
        sum += xp[plane_offset(g, &w, k, false)];
      while (next_tap(k, &w, n));
      y[p * out_size + o] = (float)(sum / (double)count);
    }
  }
}

void wq_ref_global_avgpool_f32(int64_t planes, int64_t plane_size, const float *x, float *y) {
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = x + p * plane_size;
    /* Eight independent double sums: one chain of dependent adds ran at a
     * tenth of memory speed (smallcnn's 32x112x112 pool: 0.56 ms). */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    int64_t i = 0;
    for (; i + 8 <= plane_size; i += 8) {
      s0 += xp[i];
      s1 += xp[i + 1];
      s2 += xp[i + 2];
      s3 += xp[i + 3];
      s4 += xp[i + 4];
      s5 += xp[i + 5];
      s6 += xp[i + 6];
      s7 += xp[i + 7];
    }
    double sum = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    for (; i < plane_size; i++)
      sum += xp[i];
    y[p] = plane_size > 0 ? (float)(sum / (double)plane_size) : 0.0f;
  }
}

void wq_ref_global_maxpool_f32(int64_t planes, int64_t plane_size, const float *x, float *y) {
  for (int64_t p = 0; p < planes; p++) {
    const float *xp = x + p * plane_size;
    float best = plane_size > 0 ? xp[0] : 0.0f;
    for (int64_t i = 1; i < plane_size; i++)
      if (xp[i] > best)
        best = xp[i];
    y[p] = best;
  }
}
