#include "qparams.h"
#include "../ir/format.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

wq_status wq_qdtype_range(wq_dtype dtype, int32_t *qmin, int32_t *qmax, const char *node,
                          const char *what, wq_error *err) {
  switch (dtype) {
  case WQ_DT_INT8: *qmin = INT8_MIN, *qmax = INT8_MAX; return WQ_OK;
  case WQ_DT_UINT8: *qmin = 0, *qmax = UINT8_MAX; return WQ_OK;
  case WQ_DT_INT16: *qmin = INT16_MIN, *qmax = INT16_MAX; return WQ_OK;
  case WQ_DT_UINT16: *qmin = 0, *qmax = UINT16_MAX; return WQ_OK;
  case WQ_DT_INT32: *qmin = INT32_MIN, *qmax = INT32_MAX; return WQ_OK;
  default:
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node,
                   "%s: dtype %s is not supported as a quantized type", what, wq_dtype_name(dtype));
  }
}

void wq_qparams_free(wq_qparams *qp) {
  if (!qp)
    return;
  free(qp->scale);
  free(qp->zero_point);
  memset(qp, 0, sizeof *qp);
}

/* Element count of a value whose shape is known, else -1. */
static int64_t known_numel(const wq_value *v) { return wq_value_numel(v); }

static bool value_given(const wq_value *v) { return v != NULL && wq_value_present(v); }

/* Fills qp's shape part (dims, blocks, strides, count). */
/* dims as "[2,3]" in buf, for error messages. */
static const char *dims_text(const int64_t *dims, int rank, char buf[96]) {
  wq_dims_format(dims, rank, buf, 96);
  return buf;
}

static wq_status set_layout(wq_qparams *qp, int rank, const int64_t *data_dims,
                            const int64_t *scale_dims, const int64_t *block, const char *node,
                            const char *what, wq_error *err) {
  if (rank < 0 || rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node, "%s: data rank %d is outside 0..%d", what, rank,
                   WQ_MAX_RANK);
  qp->rank = rank;
  char sd[96], dd[96]; /* formatted only on the failure paths below */
  for (int i = 0; i < rank; i++) {
    int64_t d = data_dims[i], s = scale_dims[i];
    qp->data_dims[i] = d;
    qp->scale_dims[i] = s;
    if (s < 0 || (s == 0 && d != 0))
      return wq_fail(err, WQ_ERR_SHAPE, node, "%s: scale shape %s has an invalid dim %d (%lld)",
                     what, dims_text(scale_dims, rank, sd), i, (long long)s);
    if (s <= 1) {
      /* One parameter along this dim (or an empty dim): the block is the
       * whole dim, which may be unknown until run time. */
      qp->block[i] = s == 0 ? 1 : d;
      if (block && s == 1 && d > 0 && block[i] > 0 && block[i] < d)
        return wq_fail(err, WQ_ERR_SHAPE, node,
                       "%s: block %lld along dim %d needs %lld scales, scale shape %s has 1", what,
                       (long long)block[i], i, (long long)((d + block[i] - 1) / block[i]),
                       dims_text(scale_dims, rank, sd));
      continue;
    }
    if (d < 0)
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: data dim %d is unknown but the scale shape %s has %lld entries along it",
                     what, i, dims_text(scale_dims, rank, sd), (long long)s);
    if (block) {
      int64_t b = block[i];
      if (b <= 0)
        return wq_fail(err, WQ_ERR_SHAPE, node, "%s: block size %lld along dim %d is not positive",
                       what, (long long)b, i);
      if ((d + b - 1) / b != s)
        return wq_fail(err, WQ_ERR_SHAPE, node,
                       "%s: data shape %s with block %lld along dim %d needs %lld scales, scale "
                       "shape %s has %lld",
                       what, dims_text(data_dims, rank, dd), (long long)b, i,
                       (long long)((d + b - 1) / b), dims_text(scale_dims, rank, sd), (long long)s);
      qp->block[i] = b;
    } else {
      if (d % s != 0)
        return wq_fail(err, WQ_ERR_SHAPE, node,
                       "%s: scale shape %s does not divide data shape %s into whole blocks (dim "
                       "%d: %lld / %lld)",
                       what, dims_text(scale_dims, rank, sd), dims_text(data_dims, rank, dd), i,
                       (long long)d, (long long)s);
      qp->block[i] = d / s;
    }
  }
  int64_t count = 1;
  for (int i = rank - 1; i >= 0; i--) {
    qp->scale_strides[i] = count;
    count *= qp->scale_dims[i];
  }
  qp->count = count;
  return WQ_OK;
}

wq_status wq_qparams_validate(const wq_qparams *qp, const char *node, const char *what,
                              wq_error *err) {
  int32_t qmin = 0, qmax = 0;
  WQ_TRY(wq_qdtype_range(qp->dtype, &qmin, &qmax, node, what, err));
  if (qp->qmin != qmin || qp->qmax != qmax || qp->qmin > qp->qmax)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "%s: range [%ld, %ld] does not match dtype %s",
                   what, (long)qp->qmin, (long)qp->qmax, wq_dtype_name(qp->dtype));
  int64_t count = 1;
  for (int i = 0; i < qp->rank; i++) {
    int64_t d = qp->data_dims[i], s = qp->scale_dims[i], b = qp->block[i];
    count *= s;
    if (s > 1 && (d < 0 || b <= 0 || (d + b - 1) / b != s))
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: blocks of %lld along dim %d do not cover the data dim %lld with %lld "
                     "scales",
                     what, (long long)b, i, (long long)d, (long long)s);
  }
  if (count != qp->count)
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: %lld parameters for a scale shape of %lld", what,
                   (long long)qp->count, (long long)count);
  if (qp->scale)
    for (int64_t i = 0; i < qp->count; i++) {
      float s = qp->scale[i];
      if (!isfinite(s))
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "%s: scale[%lld] = %g is not finite", what,
                       (long long)i, (double)s);
      if (s <= 0.0f)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "%s: scale[%lld] = %g is not positive",
                       what, (long long)i, (double)s);
      if (fpclassify(s) != FP_NORMAL)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node,
                       "%s: scale[%lld] = %g is subnormal (below %g)", what, (long long)i,
                       (double)s, 1.17549435e-38);
    }
  if (qp->zero_point)
    for (int64_t i = 0; i < qp->count; i++) {
      int32_t z = qp->zero_point[i];
      if (z < qp->qmin || z > qp->qmax)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node,
                       "%s: zero point[%lld] = %ld is outside the %s range [%ld, %ld]", what,
                       (long long)i, (long)z, wq_dtype_name(qp->dtype), (long)qp->qmin,
                       (long)qp->qmax);
    }
  return WQ_OK;
}

wq_status wq_qparams_init(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                          const int64_t *scale_dims, const int64_t *block, const wq_value *scale,
                          const wq_value *zero_point, const char *node, const char *what,
                          wq_error *err) {
  memset(qp, 0, sizeof *qp);
  wq_status st = wq_qdtype_range(dtype, &qp->qmin, &qp->qmax, node, what, err);
  if (st == WQ_OK)
    st = set_layout(qp, rank, data_dims, scale_dims, block, node, what, err);
  if (st != WQ_OK) {
    memset(qp, 0, sizeof *qp);
    return st;
  }
  qp->dtype = dtype;
  bool have_scale = value_given(scale), have_zp = value_given(zero_point);
  if (have_scale) {
    if (scale->dtype != WQ_DT_FLOAT)
      st = wq_fail(err, WQ_ERR_UNSUPPORTED, node, "%s: scale dtype %s is not supported", what,
                   wq_dtype_name(scale->dtype));
    else if (known_numel(scale) >= 0 && known_numel(scale) != qp->count)
      st = wq_fail(err, WQ_ERR_SHAPE, node, "%s: scale has %lld elements, expected %lld", what,
                   (long long)known_numel(scale), (long long)qp->count);
  }
  if (st == WQ_OK && have_zp) {
    if (!wq_dtype_supported(zero_point->dtype))
      st = wq_fail(err, WQ_ERR_UNSUPPORTED, node, "%s: zero point dtype %s is not supported", what,
                   wq_dtype_name(zero_point->dtype));
    else if (zero_point->dtype != dtype)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, node,
                   "%s: zero point dtype %s does not match the quantized dtype %s", what,
                   wq_dtype_name(zero_point->dtype), wq_dtype_name(dtype));
    else if (known_numel(zero_point) >= 0 && known_numel(zero_point) != qp->count)
      st = wq_fail(err, WQ_ERR_SHAPE, node, "%s: zero point has %lld elements, expected %lld", what,
                   (long long)known_numel(zero_point), (long long)qp->count);
  }
  if (st != WQ_OK) {
    wq_qparams_free(qp);
    return st;
  }
  bool values_known = (!have_scale || (scale->data && known_numel(scale) >= 0)) &&
                      (!have_zp || (zero_point->data && known_numel(zero_point) >= 0));
  if (values_known) {
    size_t n = qp->count > 0 ? (size_t)qp->count : 1;
    qp->scale = malloc(n * sizeof *qp->scale);
    qp->zero_point = malloc(n * sizeof *qp->zero_point);
    if (!qp->scale || !qp->zero_point) {
      wq_qparams_free(qp);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node, "%s: out of memory for %lld qparams", what,
                     (long long)qp->count);
    }
    for (int64_t i = 0; i < qp->count; i++) {
      qp->scale[i] = have_scale ? ((const float *)scale->data)[i] : 1.0f;
      int64_t z = have_zp ? wq_value_get_int(zero_point, i) : 0;
      qp->zero_point[i] = (int32_t)z; /* same dtype as the data: always in range */
    }
  }
  st = wq_qparams_validate(qp, node, what, err);
  if (st != WQ_OK)
    wq_qparams_free(qp);
  return st;
}

wq_status wq_qparams_init_arrays(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                                 const int64_t *scale_dims, const int64_t *block,
                                 const float *scale, const int32_t *zero_point, const char *node,
                                 const char *what, wq_error *err) {
  int64_t count = 1;
  for (int i = 0; i < rank && i < WQ_MAX_RANK; i++)
    count *= scale_dims[i] > 0 ? scale_dims[i] : 0;
  wq_value sv = {.dtype = WQ_DT_FLOAT, .rank = 1, .dims = {count}, .data = (void *)scale};
  wq_status st = wq_qparams_init(qp, dtype, rank, data_dims, scale_dims, block, scale ? &sv : NULL,
                                 NULL, node, what, err);
  if (st != WQ_OK || !zero_point || !qp->zero_point)
    return st;
  /* Zero points come as int32 here, so range-check them explicitly. */
  memcpy(qp->zero_point, zero_point, (size_t)qp->count * sizeof *zero_point);
  st = wq_qparams_validate(qp, node, what, err);
  if (st != WQ_OK)
    wq_qparams_free(qp);
  return st;
}

wq_status wq_qparams_init_per_tensor(wq_qparams *qp, wq_dtype dtype, int rank,
                                     const int64_t *data_dims, float scale, int32_t zero_point,
                                     const char *node, const char *what, wq_error *err) {
  int64_t ones[WQ_MAX_RANK];
  for (int i = 0; i < WQ_MAX_RANK; i++)
    ones[i] = 1;
  return wq_qparams_init_arrays(qp, dtype, rank, data_dims, ones, NULL, &scale, &zero_point, node,
                                what, err);
}

wq_status wq_qparams_from_onnx(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                               const wq_value *scale, const wq_value *zero_point, int64_t axis,
                               int64_t block_size, const char *node, const char *what,
                               wq_error *err) {
  memset(qp, 0, sizeof *qp);
  if (rank < 0 || rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: data rank %d is unknown or above %d", what, rank,
                   WQ_MAX_RANK);
  int64_t n = known_numel(scale);
  if (n < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: scale shape is unknown", what);
  /* A scalar and a 1-element tensor are the same per-tensor parameter. */
  if (value_given(zero_point) && !(n == 1 && known_numel(zero_point) == 1)) {
    if (zero_point->rank != scale->rank ||
        memcmp(zero_point->dims, scale->dims, (size_t)scale->rank * sizeof(int64_t)) != 0) {
      char zs[96], ss[96];
      wq_dims_format(zero_point->dims, zero_point->rank, zs, sizeof zs);
      wq_dims_format(scale->dims, scale->rank, ss, sizeof ss);
      return wq_fail(err, WQ_ERR_SHAPE, node, "%s: zero point shape %s differs from scale shape %s",
                     what, zs, ss);
    }
  }
  int64_t scale_dims[WQ_MAX_RANK], block[WQ_MAX_RANK];
  for (int i = 0; i < WQ_MAX_RANK; i++)
    scale_dims[i] = 1, block[i] = 1;
  if (n == 1) /* a scalar or any 1-element tensor is per-tensor */
    return wq_qparams_init(qp, dtype, rank, data_dims, scale_dims, NULL, scale, zero_point, node,
                           what, err);
  if (block_size < 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "%s: block_size %lld is negative", what,
                   (long long)block_size);
  if (axis < -rank || axis >= rank)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node, "%s: axis %lld is outside [%d, %d]", what,
                   (long long)axis, -rank, rank - 1);
  int ax = (int)(axis < 0 ? axis + rank : axis);
  char ss[96], ds[96];
  wq_dims_format(scale->dims, scale->rank, ss, sizeof ss);
  wq_dims_format(data_dims, rank, ds, sizeof ds);
  if (block_size == 0) {
    if (scale->rank != 1)
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: scale shape %s must be a scalar or 1-D without block_size", what, ss);
    if (data_dims[ax] >= 0 && scale->dims[0] != data_dims[ax])
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: per-axis scale of %lld elements does not match dim %d of data shape %s",
                     what, (long long)scale->dims[0], ax, ds);
    scale_dims[ax] = scale->dims[0];
    for (int i = 0; i < rank; i++)
      block[i] = data_dims[i];
    block[ax] = 1;
  } else {
    if (scale->rank != rank)
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: blocked scale shape %s must have the data's rank %d (data shape %s)",
                     what, ss, rank, ds);
    for (int i = 0; i < rank; i++) {
      scale_dims[i] = scale->dims[i];
      if (i != ax && data_dims[i] >= 0 && scale->dims[i] != data_dims[i])
        return wq_fail(err, WQ_ERR_SHAPE, node,
                       "%s: blocked scale shape %s must equal data shape %s except along axis %d",
                       what, ss, ds, ax);
    }
    block[ax] = block_size;
  }
  return wq_qparams_init(qp, dtype, rank, data_dims, scale_dims, block, scale, zero_point, node,
                         what, err);
}

wq_status wq_qparams_clone(wq_qparams *dst, const wq_qparams *src, wq_error *err) {
  *dst = *src;
  dst->scale = NULL;
  dst->zero_point = NULL;
  if (!src->scale)
    return WQ_OK;
  size_t n = src->count > 0 ? (size_t)src->count : 1;
  dst->scale = malloc(n * sizeof *dst->scale);
  dst->zero_point = malloc(n * sizeof *dst->zero_point);
  if (!dst->scale || !dst->zero_point) {
    wq_qparams_free(dst);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory copying qparams");
  }
  memcpy(dst->scale, src->scale, (size_t)src->count * sizeof *dst->scale);
  memcpy(dst->zero_point, src->zero_point, (size_t)src->count * sizeof *dst->zero_point);
  return WQ_OK;
}

bool wq_qparams_is_per_tensor(const wq_qparams *qp) { return qp->count == 1; }

int wq_qparams_channel_axis(const wq_qparams *qp) {
  int axis = 0, non_unit = 0;
  for (int i = 0; i < qp->rank; i++)
    if (qp->scale_dims[i] != 1) {
      non_unit++;
      axis = i;
    }
  return non_unit <= 1 ? axis : -1;
}

int64_t wq_qparams_index_at(const wq_qparams *qp, const int64_t *coords) {
  int64_t p = 0;
  for (int i = 0; i < qp->rank; i++)
    if (qp->scale_dims[i] > 1)
      p += (coords[i] / qp->block[i]) * qp->scale_strides[i];
  return p;
}

int64_t wq_qparams_index_of(const wq_qparams *qp, int64_t elem) {
  if (qp->count == 1)
    return 0;
  int64_t p = 0;
  for (int i = qp->rank - 1; i >= 0 && elem > 0; i--) {
    int64_t d = qp->data_dims[i];
    if (d <= 0) /* an empty or unknown dim has no elements to look up */
      break;
    int64_t coord = elem % d;
    elem /= d;
    if (qp->scale_dims[i] > 1)
      p += (coord / qp->block[i]) * qp->scale_strides[i];
  }
  return p;
}

void wq_qparams_at(const wq_qparams *qp, int64_t elem, float *scale, int32_t *zero_point) {
  int64_t p = wq_qparams_index_of(qp, elem);
  *scale = qp->scale[p];
  *zero_point = qp->zero_point[p];
}

void wq_qparams_describe(const wq_qparams *qp, char *buf, size_t cap) {
  if (cap == 0)
    return;
  const char *dt = wq_dtype_name(qp->dtype);
  if (qp->count == 1) {
    if (qp->scale)
      wq_format(buf, cap, "%s per-tensor scale=%.9g zp=%ld", dt, (double)qp->scale[0],
                (long)qp->zero_point[0]);
    else
      wq_format(buf, cap, "%s per-tensor", dt);
    return;
  }
  char sd[96], bd[96];
  wq_dims_format(qp->scale_dims, qp->rank, sd, sizeof sd);
  wq_dims_format(qp->block, qp->rank, bd, sizeof bd);
  int axis = wq_qparams_channel_axis(qp);
  if (axis >= 0 && qp->block[axis] == 1)
    wq_format(buf, cap, "%s per-channel axis %d [%lld]", dt, axis, (long long)qp->scale_dims[axis]);
  else
    wq_format(buf, cap, "%s blockwise scale %s block %s", dt, sd, bd);
}
