#include <math.h>
#include <string.h>

#include "../common/vexp.h"
#include "ew_norm.h"

#ifdef __wasm_simd128__
/* One contiguous row (softmax over the last axis, attention's case) on four
 * lanes: e^x by wq_exp4 instead of libm's scalar expf, summed in float lanes.
 * x - max below -87 gives 0 like expf's underflow (wq_exp4 clamps there); NaN
 * stays NaN. The last partial vector (maybe empty) is a copy t padded with
 * -Inf, whose e^x are 0. */
static void softmax_row4(const float *x, float *y, size_t n) {
  const size_t full = n & ~(size_t)3; /* a row fits wasm32's memory */
  float max = x[0], t[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, lanes[4];
  for (size_t i = 1; i < n; i++)
    max = x[i] > max ? x[i] : max;
  memcpy(t, x + full, (n - full) * sizeof *t);
  v128_t vsum = wasm_f32x4_splat(0.0f);
  for (size_t i = 0; i <= full; i += 4) {
    float *v = i < full ? y + i : t;
    const v128_t d = wasm_f32x4_sub(wasm_v128_load(i < full ? x + i : t), wasm_f32x4_splat(max));
    const v128_t e = wasm_v128_andnot(wq_exp4(d), wasm_f32x4_lt(d, wasm_f32x4_splat(-87.0f)));
    vsum = wasm_f32x4_add(vsum, e);
    wasm_v128_store(v, e);
  }
  memcpy(y + full, t, (n - full) * sizeof *t);
  wasm_v128_store(lanes, vsum);
  const float inv = 1.0f / ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
  for (size_t i = 0; i < n; i++)
    y[i] *= inv;
}
#endif

void ew_softmax_float(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  if (n <= 0)
    return;
  for (int64_t o = 0; o < outer; o++) {
#ifdef __wasm_simd128__
    if (inner == 1) {
      softmax_row4(x + o * n, y + o * n, (size_t)n);
      continue;
    }
#endif
    for (int64_t j = 0; j < inner; j++) {
      const float *xs = x + o * n * inner + j;
      float *ys = y + o * n * inner + j;
      /* Subtracting the max keeps every exp() in (0, 1]: no overflow. */
      float max = xs[0];
      for (int64_t i = 1; i < n; i++)
        if (xs[i * inner] > max)
          max = xs[i * inner];
      double sum = 0.0;
      for (int64_t i = 0; i < n; i++) {
        float e = expf(xs[i * inner] - max);
        ys[i * inner] = e;
        sum += e;
      }
      float inv = (float)(1.0 / sum);
      for (int64_t i = 0; i < n; i++)
        ys[i * inner] *= inv;
    }
  }
}
