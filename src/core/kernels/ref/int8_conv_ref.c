#include "int8_conv_ref.h"

#include "quant_ref.h"

void wq_int8_conv_ref(const wq_int8_conv_params *p, const void *x, void *y) {
  const wq_qconv_shape *s = &p->shape;
  const wq_conv_geometry *g = &s->geo;
  const int ns = g->n_spatial;
  const int64_t in_size = wq_conv_geometry_in_size(g);
  const int64_t out_size = wq_conv_geometry_out_size(g);
  const int64_t k_size = wq_conv_geometry_kernel_size(g);
  const int64_t c_per_group = s->C / s->group, m_per_group = s->M / s->group;
  for (int64_t n = 0; n < s->N; n++)
    for (int64_t m = 0; m < s->M; m++) {
      const int64_t x_base = (n * s->C + (m / m_per_group) * c_per_group) * in_size;
      const int32_t *wm = p->w + m * c_per_group * k_size;
      const int64_t y_base = (n * s->M + m) * out_size;
      int64_t ocoord[WQ_CONV_MAX_SPATIAL] = {0};
      for (int64_t o = 0; o < out_size; o++) {
        int64_t sum = p->bias ? p->bias[m] : 0;
        for (int64_t kk = 0; kk < k_size; kk++) {
          /* Input offset of tap kk; a tap in the padding reads x_zero_point,
           * which contributes nothing once centered. */
          int64_t kt = kk, in_index = 0, in_stride = 1;
          int inside = 1;
          for (int i = ns - 1; i >= 0 && inside; i--) {
            int64_t kc = kt % g->kernel[i];
            kt /= g->kernel[i];
            int64_t ic = ocoord[i] * g->stride[i] - g->pad_begin[i] + kc * g->dilation[i];
            inside = ic >= 0 && ic < g->in[i];
            in_index += ic * in_stride;
            in_stride *= g->in[i];
          }
          if (!inside)
            continue;
          for (int64_t c = 0; c < c_per_group; c++) {
            int32_t xv = wq_ref_q_load(x, p->x_dtype, x_base + c * in_size + in_index);
            sum += (int64_t)(xv - p->x_zero_point) * wm[c * k_size + kk];
          }
        }
        wq_int8_requant_store(&p->out, m, (int32_t)(uint32_t)(uint64_t)sum, y, y_base + o);
        for (int i = ns - 1; i >= 0; i--) {
          if (++ocoord[i] < g->out[i])
            break;
          ocoord[i] = 0;
        }
      }
    }
}
