/* Scalar int8 elementwise and data-movement kernels (kernels/qeltwise.h). */
#include <string.h>

#include "quant_ref.h"
#include "ref_qeltwise.h"

void wq_ref_qbinary_row(const wq_qbinary_params *p, int64_t n, const void *a, int a_step,
                        const void *b, int b_step, void *y) {
  for (int64_t i = 0; i < n; i++) {
    /* DequantizeLinear's float32 product, exactly the dequantization table
     * entries of ref/int8_eltwise_ref.c. */
    float va = (float)(wq_ref_q_load(a, p->a_dtype, i * a_step) - p->a_zero_point) * p->a_scale;
    float vb = (float)(wq_ref_q_load(b, p->b_dtype, i * b_step) - p->b_zero_point) * p->b_scale;
    float v = p->mul ? va * vb : va + vb;
    wq_ref_q_store(y, p->y_dtype, i,
                   wq_ref_quantize_value(v, p->y_scale, p->y_zero_point, p->y_min, p->y_max));
  }
}

void wq_ref_lookup_q8(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const uint8_t flip =
      x_signed ? 0x80 : 0; /* q + 128 for int8 is its byte with the top bit flipped */
  for (int64_t i = 0; i < n; i++)
    out[i] = table[in[i] ^ flip];
}

void wq_ref_copy_rows_q8(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                         const uint8_t *table, bool x_signed, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  for (int64_t r = 0; r < rows && row_len > 0; r++) {
    if (table)
      wq_ref_lookup_q8(table, x_signed, row_len, in + r * x_stride, out + r * y_stride);
    else
      memcpy(out + r * y_stride, in + r * x_stride, (size_t)row_len);
  }
}

void wq_ref_resize_nearest_nhwc_q8(const wq_resize_nhwc *r, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const int64_t C = r->channels;
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t oh = 0; oh < r->out_h; oh++)
      for (int64_t ow = 0; ow < r->out_w; ow++)
        memcpy(out + ((b * r->out_h + oh) * r->out_w + ow) * C,
               in + ((b * r->in_h + r->src_h[oh]) * r->in_w + r->src_w[ow]) * C, (size_t)C);
}

void wq_ref_depth_to_space_nhwc_q8(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block,
                                   bool crd, const void *x, void *y) {
  const uint8_t *in = x;
  uint8_t *out = y;
  const int64_t oc = c / (block * block), oh = h * block, ow = w * block;
  for (int64_t n = 0; n < batch; n++)
    for (int64_t yh = 0; yh < oh; yh++)
      for (int64_t yw = 0; yw < ow; yw++)
        for (int64_t ch = 0; ch < oc; ch++) {
          const int64_t i = yh % block, j = yw % block;
          const int64_t src_c = crd ? (ch * block + i) * block + j : (i * block + j) * oc + ch;
          out[((n * oh + yh) * ow + yw) * oc + ch] =
              in[((n * h + yh / block) * w + yw / block) * c + src_c];
        }
}

const wq_qeltwise_config wq_qeltwise_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .binary_row = wq_ref_qbinary_row,
    .lookup = wq_ref_lookup_q8,
    .copy_rows = wq_ref_copy_rows_q8,
    .resize_nearest = wq_ref_resize_nearest_nhwc_q8,
    .depth_to_space = wq_ref_depth_to_space_nhwc_q8,
};
