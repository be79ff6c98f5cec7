#include "int8_pool_ref.h"

#include "quant_ref.h"
#include "ref_nhwc.h"

static void store_mean(const wq_int8_pool_quant *q, int64_t sum, int64_t count, void *y,
                       int64_t i) {
  wq_ref_q_store(y, q->y_dtype, i, wq_qpool_mean_code(q, sum, count));
}

/* Number of taps of a window starting at input coordinate `start` along one
 * axis that land in [lo, hi]. */
static int64_t taps_within(int64_t start, int64_t dilation, int64_t kernel, int64_t lo,
                           int64_t hi) {
  int64_t first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
  int64_t last = hi - start < 0 ? -1 : (hi - start) / dilation;
  if (last > kernel - 1)
    last = kernel - 1;
  return last >= first ? last - first + 1 : 0;
}

void wq_int8_avgpool_ref(const wq_conv_geometry *g, int64_t planes, bool count_include_pad,
                         const wq_int8_pool_quant *q, const void *x, void *y) {
  const int n = g->n_spatial;
  const int64_t in_size = wq_conv_geometry_in_size(g), out_size = wq_conv_geometry_out_size(g);
  const int64_t k_size = wq_conv_geometry_kernel_size(g);
  for (int64_t p = 0; p < planes; p++) {
    int64_t opos[WQ_CONV_MAX_SPATIAL] = {0};
    for (int64_t o = 0; o < out_size; o++) {
      int64_t start[WQ_CONV_MAX_SPATIAL], count = 1;
      for (int d = 0; d < n; d++) {
        start[d] = opos[d] * g->stride[d] - g->pad_begin[d];
        int64_t lo = count_include_pad ? -g->pad_begin[d] : 0;
        int64_t hi = count_include_pad ? g->in[d] + g->pad_end[d] - 1 : g->in[d] - 1;
        count *= taps_within(start[d], g->dilation[d], g->kernel[d], lo, hi);
      }
      int64_t sum = 0;
      for (int64_t kk = 0; kk < k_size; kk++) {
        int64_t kt = kk, idx = 0, stride = 1;
        int inside = 1;
        for (int d = n - 1; d >= 0 && inside; d--) {
          int64_t ic = start[d] + (kt % g->kernel[d]) * g->dilation[d];
          kt /= g->kernel[d];
          inside = ic >= 0 && ic < g->in[d];
          idx += ic * stride;
          stride *= g->in[d];
        }
        if (inside)
          sum += wq_ref_q_load(x, q->x_dtype, p * in_size + idx) - q->x_zero_point;
      }
      store_mean(q, sum, count, y, p * out_size + o);
      for (int d = n - 1; d >= 0; d--) {
        if (++opos[d] < g->out[d])
          break;
        opos[d] = 0;
      }
    }
  }
}

void wq_int8_global_avgpool_ref(int64_t planes, int64_t plane_size, const wq_int8_pool_quant *q,
                                const void *x, void *y) {
  for (int64_t p = 0; p < planes; p++) {
    int64_t sum = 0;
    for (int64_t i = 0; i < plane_size; i++)
      sum += wq_ref_q_load(x, q->x_dtype, p * plane_size + i) - q->x_zero_point;
    store_mean(q, sum, plane_size, y, p);
  }
}
