#include "ref_pool.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

#include <string.h>

#include "../../runtime/parallel.h"
#include "ref_pool_impl.h"

DEFINE_MAXPOOL(wq_ref_maxpool_f32, float)
/* int8 / uint8: ref_pool_int.c. */

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

typedef struct {
  int64_t plane_size;
  const float *x;
  float *y;
} gap_job;

/* Planes [p0, p1): independent, so threads take shares of them. */
static void global_avgpool_planes(void *ctx, int64_t p0, int64_t p1) {
  const gap_job *j = ctx;
  const int64_t plane_size = j->plane_size;
  const float *x = j->x;
  float *y = j->y;
  for (int64_t p = p0; p < p1; p++) {
    const float *xp = x + p * plane_size;
    /* Eight independent double sums: one chain of dependent adds ran at a
     * tenth of memory speed (smallcnn's 32x112x112 pool: 0.56 ms). */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    int64_t i = 0;
#ifdef __wasm_simd128__
    /* The same eight sums as f64x2 pairs (s0 s1 | s2 s3 | s4 s5 | s6 s7),
     * the same order: the same bits, 4x fewer adds (smallcnn's 64x112x112
     * pool 0.247 -> 0.124 ms, A/B in one process). */
    v128_t a0 = wasm_f64x2_splat(0.0), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 8 <= plane_size; i += 8) {
      v128_t v = wasm_v128_load(xp + i), w = wasm_v128_load(xp + i + 4);
      a0 = wasm_f64x2_add(a0, wasm_f64x2_promote_low_f32x4(v));
      a1 = wasm_f64x2_add(a1, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(v, v, 1, 0)));
      a2 = wasm_f64x2_add(a2, wasm_f64x2_promote_low_f32x4(w));
      a3 = wasm_f64x2_add(a3, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(w, w, 1, 0)));
    }
    s0 = wasm_f64x2_extract_lane(a0, 0);
    s1 = wasm_f64x2_extract_lane(a0, 1);
    s2 = wasm_f64x2_extract_lane(a1, 0);
    s3 = wasm_f64x2_extract_lane(a1, 1);
    s4 = wasm_f64x2_extract_lane(a2, 0);
    s5 = wasm_f64x2_extract_lane(a2, 1);
    s6 = wasm_f64x2_extract_lane(a3, 0);
    s7 = wasm_f64x2_extract_lane(a3, 1);
#endif
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

/* Pools of fewer elements stay on one thread (~0.3 ns per element). */
#define GAP_PARALLEL_MIN ((int64_t)1 << 17)

void wq_ref_global_avgpool_f32(int64_t planes, int64_t plane_size, const float *x, float *y) {
  gap_job job = {plane_size, x, y};
  if (wq_parallel_threads() > 1 && planes > 1 && planes * plane_size >= GAP_PARALLEL_MIN)
    wq_parallel_for(planes, (planes + 7) / 8, global_avgpool_planes, &job);
  else
    global_avgpool_planes(&job, 0, planes);
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
