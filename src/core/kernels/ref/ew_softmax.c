#include <math.h>

#include "ew_norm.h"

void ew_softmax_float(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  if (n <= 0)
    return;
  for (int64_t o = 0; o < outer; o++) {
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
