#include "int8_eltwise_ref.h"

#include "quant_ref.h"

void wq_int8_lookup_ref(wq_dtype x_dtype, const void *x, int64_t n, const uint8_t *table, void *y) {
  uint8_t *out = y;
  for (int64_t i = 0; i < n; i++)
    out[i] = table[wq_int8_table_index(x_dtype, x, i)];
}

void wq_int8_dequant_table(wq_dtype dtype, float scale, int32_t zero_point, float *real) {
  int32_t lo = dtype == WQ_DT_INT8 ? -128 : 0;
  for (int i = 0; i < 256; i++)
    real[i] = (float)(lo + i - zero_point) * scale;
}

void wq_int8_binary_ref(const wq_int8_binary_params *p, const wq_value *a, const wq_value *b,
                        wq_value *y) {
  /* Strides of a and b over y's dims (0 along broadcast dims). */
  int rank = y->rank;
  int64_t a_stride[WQ_MAX_RANK], b_stride[WQ_MAX_RANK];
  int64_t sa = 1, sb = 1;
  for (int d = rank - 1; d >= 0; d--) {
    int da = d - (rank - a->rank), db = d - (rank - b->rank);
    int64_t na = da >= 0 ? a->dims[da] : 1, nb = db >= 0 ? b->dims[db] : 1;
    a_stride[d] = na == 1 ? 0 : sa;
    b_stride[d] = nb == 1 ? 0 : sb;
    sa *= na;
    sb *= nb;
  }
  int64_t total = wq_value_numel(y);
  int64_t coord[WQ_MAX_RANK] = {0};
  int64_t ai = 0, bi = 0;
  for (int64_t i = 0; i < total; i++) {
    float va = p->a_real[wq_int8_table_index(a->dtype, a->data, ai)];
    float vb = p->b_real[wq_int8_table_index(b->dtype, b->data, bi)];
    float v = p->kind == WQ_INT8_ADD ? va + vb : va * vb;
    wq_ref_q_store(y->data, p->y_dtype, i,
                   wq_ref_quantize_value(v, p->y_scale, p->y_zero_point, p->y_min, p->y_max));
    for (int d = rank - 1; d >= 0; d--) {
      ai += a_stride[d];
      bi += b_stride[d];
      if (++coord[d] < y->dims[d])
        break;
      ai -= a_stride[d] * y->dims[d];
      bi -= b_stride[d] * y->dims[d];
      coord[d] = 0;
    }
  }
}
