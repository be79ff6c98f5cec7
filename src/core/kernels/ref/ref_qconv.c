#include "ref_qconv.h"

void wq_ref_qconv_acc(const wq_qconv_shape *s, const int32_t *x, const int32_t *w,
                      const int32_t *bias, int32_t *acc) {
  const wq_conv_geometry *g = &s->geo;
  const int ns = g->n_spatial;
  const int64_t in_size = wq_conv_geometry_in_size(g);
  const int64_t out_size = wq_conv_geometry_out_size(g);
  const int64_t k_size = wq_conv_geometry_kernel_size(g);
  const int64_t c_per_group = s->C / s->group, m_per_group = s->M / s->group;
  for (int64_t n = 0; n < s->N; n++)
    for (int64_t m = 0; m < s->M; m++) {
      const int64_t grp = m / m_per_group;
      const int32_t *xg = x + (n * s->C + grp * c_per_group) * in_size;
      const int32_t *wm = w + m * c_per_group * k_size;
      int32_t *out = acc + (n * s->M + m) * out_size;
      for (int64_t o = 0; o < out_size; o++) {
        int64_t ocoord[WQ_CONV_MAX_SPATIAL];
        int64_t t = o;
        for (int i = ns - 1; i >= 0; i--) {
          ocoord[i] = t % g->out[i];
          t /= g->out[i];
        }
        int64_t sum = bias ? bias[m] : 0;
        for (int64_t kk = 0; kk < k_size; kk++) {
          int64_t kt = kk, in_index = 0, in_stride = 1;
          int inside = 1;
          for (int i = ns - 1; i >= 0; i--) {
            int64_t kc = kt % g->kernel[i];
            kt /= g->kernel[i];
            int64_t ic = ocoord[i] * g->stride[i] - g->pad_begin[i] + kc * g->dilation[i];
            if (ic < 0 || ic >= g->in[i]) {
              inside = 0;
              break;
            }
            in_index += ic * in_stride;
            in_stride *= g->in[i];
          }
          if (!inside)
            continue;
          for (int64_t c = 0; c < c_per_group; c++)
            sum += (int64_t)xg[c * in_size + in_index] * wm[c * k_size + kk];
        }
        out[o] = (int32_t)(uint32_t)(uint64_t)sum;
      }
    }
}
