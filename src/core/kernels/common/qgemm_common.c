/* What every int8 GEMM variant shares: validation, the packed record's
 * common arrays (per-column data, column sums of W') and freeing it. */
#include <stdlib.h>
#include <string.h>

#include "../../ir/checked.h"
#include "qgemm_types.h"

static bool is_q8(wq_dtype t) { return t == WQ_DT_INT8 || t == WQ_DT_UINT8; }

static int32_t q8_min(wq_dtype t) { return t == WQ_DT_UINT8 ? 0 : -128; }
static int32_t q8_max(wq_dtype t) { return t == WQ_DT_UINT8 ? 255 : 127; }

wq_status wq_qgemm_desc_check(const wq_qgemm_desc *d, const char *node, wq_error *err) {
  if (d->n < 1 || d->k < 1)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qgemm: n and k must be >= 1 (got n=%lld k=%lld)",
                   (long long)d->n, (long long)d->k);
  /* k x n within the element limit: the packs' padded sizes (k_padded x
   * n_padded bytes) are then checked products, none overflows. */
  const int64_t kn[2] = {d->k, d->n};
  int64_t count;
  if (!wq_product_within(kn, 2, WQ_MAX_ELEMENTS, &count))
    return wq_fail(err, WQ_ERR_SHAPE, node,
                   "qgemm: %lld x %lld weights pass the %lld-element limit", (long long)d->k,
                   (long long)d->n, (long long)WQ_MAX_ELEMENTS);
  if (!is_q8(d->a_dtype) || !is_q8(d->w_dtype) || (!is_q8(d->y_dtype) && d->y_dtype != WQ_DT_FLOAT))
    return wq_fail(
        err, WQ_ERR_INVALID_ARG, node,
        "qgemm: activation and weight dtypes must be int8 or uint8, the output's int8, uint8 or "
        "float (got %s, %s, %s)",
        wq_dtype_name(d->a_dtype), wq_dtype_name(d->w_dtype), wq_dtype_name(d->y_dtype));
  if (!d->w || !d->multiplier)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qgemm: weights and multipliers are required");
  if (d->a_zero_point < q8_min(d->a_dtype) || d->a_zero_point > q8_max(d->a_dtype))
    return wq_fail(err, WQ_ERR_INVALID_ARG, node, "qgemm: activation zero point %d outside %s",
                   (int)d->a_zero_point, wq_dtype_name(d->a_dtype));
  if (d->w_zero_point && d->w_zero_point_count != 1 && d->w_zero_point_count != d->n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qgemm: %lld weight zero points for %lld columns (need 1 or n)",
                   (long long)d->w_zero_point_count, (long long)d->n);
  if (d->w_zero_point)
    for (int64_t j = 0; j < d->w_zero_point_count; j++)
      if (d->w_zero_point[j] < q8_min(d->w_dtype) || d->w_zero_point[j] > q8_max(d->w_dtype))
        return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                       "qgemm: weight zero point [%lld] = %d outside %s", (long long)j,
                       (int)d->w_zero_point[j], wq_dtype_name(d->w_dtype));
  if (d->multiplier_count != 1 && d->multiplier_count != d->n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qgemm: %lld multipliers for %lld columns (need 1 or n)",
                   (long long)d->multiplier_count, (long long)d->n);
  if (d->y_dtype == WQ_DT_FLOAT)
    return WQ_OK;
  if (d->y_zero_point < q8_min(d->y_dtype) || d->y_zero_point > q8_max(d->y_dtype) ||
      d->y_min < q8_min(d->y_dtype) || d->y_max > q8_max(d->y_dtype) || d->y_min > d->y_max)
    return wq_fail(err, WQ_ERR_INVALID_ARG, node,
                   "qgemm: output zero point %d / range [%d, %d] invalid for %s",
                   (int)d->y_zero_point, (int)d->y_min, (int)d->y_max, wq_dtype_name(d->y_dtype));
  return WQ_OK;
}

void wq_qgemm_packed_free(wq_qgemm_packed *p) {
  free(p->w);
  free(p->bias);
  free(p->column_sum);
  free(p->w_zero_point);
  free(p->multiplier);
  free(p->float_bias);
  memset(p, 0, sizeof *p);
}

static int64_t round_up(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

wq_status wq_qgemm_packed_alloc(wq_qgemm_packed *p, const wq_qgemm_desc *d, int64_t k_multiple,
                                int64_t n_multiple, int64_t w_bytes, const char *node,
                                wq_error *err) {
  memset(p, 0, sizeof *p);
  size_t w_size;
  if (!wq_bytes_size(w_bytes, 1, &w_size))
    return wq_fail(err, WQ_ERR_SHAPE, node, "qgemm: %lld bytes of packed weights pass the limit",
                   (long long)w_bytes);
  p->n = d->n;
  p->k = d->k;
  p->k_padded = round_up(d->k, k_multiple);
  p->n_padded = round_up(d->n, n_multiple);
  p->a_dtype = d->a_dtype;
  p->a_zero_point = d->a_zero_point;
  p->y_dtype = d->y_dtype;
  p->y_zero_point = d->y_zero_point;
  p->y_min = d->y_min;
  p->y_max = d->y_max;
  size_t cols = (size_t)p->n_padded;
  p->w = calloc(w_size > 0 ? w_size : 1, 1);
  p->bias = calloc(cols, sizeof *p->bias);
  p->column_sum = calloc(cols, sizeof *p->column_sum);
  p->w_zero_point = calloc(cols, sizeof *p->w_zero_point);
  p->multiplier = calloc(cols, sizeof *p->multiplier);
  p->float_relu = d->y_dtype == WQ_DT_FLOAT && d->float_relu;
  p->leaky = d->y_dtype != WQ_DT_FLOAT && d->leaky;
  p->leaky_alpha = d->leaky_alpha;
  if (d->y_dtype == WQ_DT_FLOAT)
    p->float_bias = calloc(cols, sizeof *p->float_bias);
  p->bytes = (int64_t)w_size + (int64_t)cols * (d->y_dtype == WQ_DT_FLOAT ? 20 : 16);
  if (!p->w || !p->bias || !p->column_sum || !p->w_zero_point || !p->multiplier ||
      (d->y_dtype == WQ_DT_FLOAT && !p->float_bias)) {
    wq_qgemm_packed_free(p);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node,
                   "qgemm: cannot allocate packed weights (%lld bytes)", (long long)w_bytes);
  }
  int32_t stored_shift = d->w_dtype == WQ_DT_UINT8 ? 128 : 0;
  for (int64_t j = 0; j < d->n; j++) {
    int32_t zp = d->w_zero_point ? d->w_zero_point[d->w_zero_point_count == 1 ? 0 : j] : 0;
    p->w_zero_point[j] = zp - stored_shift;
    if (p->w_zero_point[j] != 0)
      p->has_w_zero_point = true;
    p->bias[j] = d->bias ? d->bias[j] : 0;
    p->multiplier[j] = d->multiplier[d->multiplier_count == 1 ? 0 : j];
    if (p->float_bias) /* -0 when absent: x + -0 == x for every x, -0 included */
      p->float_bias[j] = d->float_bias ? d->float_bias[j] : -0.0f;
    uint32_t sum = 0;
    for (int64_t k = 0; k < d->k; k++)
      sum += (uint32_t)wq_qgemm_stored_weight(d, k, j);
    p->column_sum[j] = (int32_t)sum;
  }
  return WQ_OK;
}
