#include "quant_ref.h"

#include <math.h>
#include <string.h>

int32_t wq_ref_q_load(const void *data, wq_dtype dtype, int64_t i) {
  switch (dtype) {
  case WQ_DT_INT8: return ((const int8_t *)data)[i];
  case WQ_DT_UINT8: return ((const uint8_t *)data)[i];
  case WQ_DT_INT16: return ((const int16_t *)data)[i];
  case WQ_DT_UINT16: return ((const uint16_t *)data)[i];
  case WQ_DT_INT32: return ((const int32_t *)data)[i];
  default: return 0;
  }
}

void wq_ref_q_store(void *data, wq_dtype dtype, int64_t i, int32_t v) {
  switch (dtype) {
  case WQ_DT_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
  case WQ_DT_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case WQ_DT_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
  case WQ_DT_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; break;
  case WQ_DT_INT32: ((int32_t *)data)[i] = v; break;
  default: break;
  }
}

/* Rounds half to even and saturates; the clamp happens in float so huge or
 * infinite values never reach an out-of-range float->int conversion. */
static int32_t round_saturate(float v, int32_t zero_point, int32_t qmin, int32_t qmax) {
  if (isnan(v))
    return qmin;
  double r = (double)nearbyintf(v) + (double)zero_point; /* exact: both are integers < 2^53 */
  if (r < (double)qmin)
    return qmin;
  if (r > (double)qmax)
    return qmax;
  return (int32_t)r;
}

int32_t wq_ref_quantize_value(float x, float scale, int32_t zero_point, int32_t qmin,
                              int32_t qmax) {
  return round_saturate(x / scale, zero_point, qmin, qmax);
}

int32_t wq_ref_requantize_value(int32_t acc, float multiplier, int32_t zero_point, int32_t qmin,
                                int32_t qmax) {
  return round_saturate((float)acc * multiplier, zero_point, qmin, qmax);
}

int32_t wq_ref_requantize_leaky(int32_t acc, float multiplier, float alpha, int32_t zero_point,
                                int32_t qmin, int32_t qmax) {
  float t = (float)acc * multiplier;
  return round_saturate(t < 0 ? t * alpha : t, zero_point, qmin, qmax);
}

void wq_ref_quantize_linear(const float *x, int64_t n, const wq_qparams *qp, void *y) {
  for (int64_t i = 0; i < n; i++) {
    int64_t p = wq_qparams_index_of(qp, i);
    int32_t q = wq_ref_quantize_value(x[i], qp->scale[p], qp->zero_point[p], qp->qmin, qp->qmax);
    wq_ref_q_store(y, qp->dtype, i, q);
  }
}

void wq_ref_dequantize_linear(const void *x, int64_t n, const wq_qparams *qp, float *y) {
  for (int64_t i = 0; i < n; i++) {
    int64_t p = wq_qparams_index_of(qp, i);
    int64_t centered = (int64_t)wq_ref_q_load(x, qp->dtype, i) - qp->zero_point[p];
    y[i] = (float)centered * qp->scale[p];
  }
}

void wq_ref_q_center(const void *q, int64_t n, const wq_qparams *qp, int32_t *out) {
  for (int64_t i = 0; i < n; i++)
    out[i] = (int32_t)((int64_t)wq_ref_q_load(q, qp->dtype, i) -
                       qp->zero_point[wq_qparams_index_of(qp, i)]);
}

wq_status wq_qmatmul_geometry_init(const wq_value *a, const wq_value *b, wq_qmatmul_geometry *g,
                                   const char *node, const char *op, wq_error *err) {
  memset(g, 0, sizeof *g);
  if (a->rank < 1 || b->rank < 1)
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: inputs must have rank >= 1 (got %d and %d)", op,
                   a->rank, b->rank);
  int64_t am = a->rank >= 2 ? a->dims[a->rank - 2] : 1, ak = a->dims[a->rank - 1];
  int64_t bk = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  int64_t bn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  if (ak != bk) {
    char sa[96], sb[96];
    wq_dims_format(a->dims, a->rank, sa, sizeof sa);
    wq_dims_format(b->dims, b->rank, sb, sizeof sb);
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: inner dims differ: a %s, b %s", op, sa, sb);
  }
  g->M = am, g->K = ak, g->N = bn;
  int a_batch = a->rank > 2 ? a->rank - 2 : 0, b_batch = b->rank > 2 ? b->rank - 2 : 0;
  int r = a_batch > b_batch ? a_batch : b_batch;
  if (r + 2 > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node, "%s: output rank %d exceeds %d", op, r + 2,
                   WQ_MAX_RANK);
  g->batch_rank = r;
  int64_t a_stride = 1, b_stride = 1;
  for (int i = r - 1; i >= 0; i--) {
    int ia = i - (r - a_batch), ib = i - (r - b_batch);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[96], sb[96];
      wq_dims_format(a->dims, a->rank, sa, sizeof sa);
      wq_dims_format(b->dims, b->rank, sb, sizeof sb);
      return wq_fail(err, WQ_ERR_SHAPE, node, "%s: batch dims of a %s and b %s do not broadcast",
                     op, sa, sb);
    }
    g->batch_dims[i] = da == 1 ? db : da;
    g->a_batch_strides[i] = da == 1 ? 0 : a_stride;
    g->b_batch_strides[i] = db == 1 ? 0 : b_stride;
    a_stride *= da;
    b_stride *= db;
  }
  g->batch_count = 1;
  for (int i = 0; i < r; i++)
    g->batch_count *= g->batch_dims[i];
  int o = 0;
  for (int i = 0; i < r; i++)
    g->out_dims[o++] = g->batch_dims[i];
  if (a->rank >= 2)
    g->out_dims[o++] = g->M;
  if (b->rank >= 2)
    g->out_dims[o++] = g->N;
  g->out_rank = o;
  return WQ_OK;
}

void wq_qmatmul_batch_offsets(const wq_qmatmul_geometry *g, int64_t batch, int64_t *a_offset,
                              int64_t *b_offset) {
  int64_t am = 0, bm = 0;
  for (int i = g->batch_rank - 1; i >= 0; i--) {
    int64_t coord = batch % g->batch_dims[i];
    batch /= g->batch_dims[i];
    am += coord * g->a_batch_strides[i];
    bm += coord * g->b_batch_strides[i];
  }
  *a_offset = am * g->M * g->K;
  *b_offset = bm * g->K * g->N;
}

void wq_ref_qmatmul_acc(const wq_qmatmul_geometry *g, const int32_t *a, const int32_t *b,
                        int32_t *acc) {
  for (int64_t bt = 0; bt < g->batch_count; bt++) {
    int64_t a_off, b_off;
    wq_qmatmul_batch_offsets(g, bt, &a_off, &b_off);
    const int32_t *am = a + a_off, *bm = b + b_off;
    int32_t *out = acc + bt * g->M * g->N;
    for (int64_t m = 0; m < g->M; m++)
      for (int64_t n = 0; n < g->N; n++) {
        int64_t sum = 0;
        for (int64_t k = 0; k < g->K; k++)
          sum += (int64_t)am[m * g->K + k] * bm[k * g->N + n];
        out[m * g->N + n] = (int32_t)(uint32_t)(uint64_t)sum;
      }
  }
}
