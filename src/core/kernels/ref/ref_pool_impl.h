/* The window walk and the max-pool loop of ref_pool.c, shared with
 * ref_pool_int.c (the int8/uint8 max pools, built for size). Internal to
 * those two files. */
#ifndef WQ_KERNELS_REF_POOL_IMPL_H
#define WQ_KERNELS_REF_POOL_IMPL_H

#include <string.h>

#include "ref_pool.h"

/* Per-axis window of one output position: kernel taps [k_lo, k_hi] land
 * inside the input; `start` is the input coordinate of tap 0. */
typedef struct {
  int64_t start[WQ_CONV_MAX_SPATIAL];
  int64_t k_lo[WQ_CONV_MAX_SPATIAL];
  int64_t k_hi[WQ_CONV_MAX_SPATIAL];
} window_span;

/* Fills the window of output position opos; false when it has no
 * in-bounds tap on some axis. */
static inline bool window_at(const wq_conv_geometry *g, const int64_t *opos, window_span *w) {
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

static inline void next_index(int64_t *idx, const int64_t *dims, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return;
    idx[d] = 0;
  }
}

/* Advances tap k through the box [k_lo, k_hi]; false after the last one. */
static inline bool next_tap(int64_t *k, const window_span *w, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++k[d] <= w->k_hi[d])
      return true;
    k[d] = w->k_lo[d];
  }
  return false;
}

static inline int64_t plane_offset(const wq_conv_geometry *g, const window_span *w,
                                   const int64_t *k, bool column_major) {
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

#endif
