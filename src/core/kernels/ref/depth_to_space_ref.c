#include "depth_to_space_ref.h"

#include <string.h>

void wq_ref_depth_to_space(const void *src, void *dst, size_t elem, const int64_t *in_dims,
                           int64_t block, bool crd) {
  const int64_t n_batch = in_dims[0], c_in = in_dims[1], h = in_dims[2], w = in_dims[3];
  const int64_t b = block, c_out = c_in / (b * b), plane = h * w;
  const unsigned char *s = src;
  unsigned char *o = dst;
  for (int64_t n = 0; n < n_batch; n++)
    for (int64_t c = 0; c < c_out; c++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t i = 0; i < b; i++)
          for (int64_t x = 0; x < w; x++)
            for (int64_t j = 0; j < b; j++, o += elem) {
              int64_t ch = crd ? (c * b + i) * b + j : (i * b + j) * c_out + c;
              memcpy(o, s + (size_t)((n * c_in + ch) * plane + y * w + x) * elem, elem);
            }
}
