#include "value.h"
#include "format.h"

#include <string.h>

int64_t wq_value_numel(const wq_value *v) {
  if (v->rank < 0)
    return -1;
  for (int i = 0; i < v->rank; i++)
    if (v->dims[i] < 0)
      return -1;
  int64_t n;
  return wq_product_within(v->dims, v->rank, WQ_MAX_ELEMENTS, &n) ? n : WQ_MAX_ELEMENTS + 1;
}

size_t wq_value_nbytes(const wq_value *v) {
  int64_t n = wq_value_numel(v);
  return n < 0 ? 0 : (size_t)n * wq_dtype_size(v->dtype);
}

bool wq_value_present(const wq_value *v) { return v->dtype != WQ_DT_UNDEFINED; }

bool wq_value_shape_known(const wq_value *v) { return wq_value_numel(v) >= 0; }

wq_status wq_shape_check(const int64_t *dims, int rank, const char *node, const char *what,
                         wq_error *err) {
  if (rank < 0 || rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node, "%s: rank %d is outside 0..%d", what, rank,
                   WQ_MAX_RANK);
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return wq_fail(err, WQ_ERR_SHAPE, node, "%s: dim %d is negative (%lld)", what, i,
                     (long long)dims[i]);
    /* A zero dim makes the count 0, but its other dims must still be sane. */
    if (dims[i] > WQ_MAX_DIM)
      return wq_fail(err, WQ_ERR_SHAPE, node,
                     "%s: element count overflows the %lld limit (dim %d is %lld)", what,
                     (long long)WQ_MAX_ELEMENTS, i, (long long)dims[i]);
  }
  int64_t n;
  if (!wq_product_within(dims, rank, WQ_MAX_ELEMENTS, &n))
    return wq_fail(err, WQ_ERR_SHAPE, node, "%s: element count overflows the %lld limit", what,
                   (long long)WQ_MAX_ELEMENTS);
  return WQ_OK;
}

wq_status wq_broadcast_shapes(const wq_value *a, const wq_value *b, int *out_rank,
                              int64_t *out_dims, const char *node, wq_error *err) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da == db || db == 1)
      out_dims[i] = da;
    else if (da == 1)
      out_dims[i] = db;
    else {
      char sa[96], sb[96];
      wq_dims_format(a->dims, a->rank, sa, sizeof sa);
      wq_dims_format(b->dims, b->rank, sb, sizeof sb);
      return wq_fail(err, WQ_ERR_SHAPE, node, "shapes %s and %s do not broadcast", sa, sb);
    }
  }
  *out_rank = r;
  return WQ_OK;
}

int64_t wq_value_get_int(const wq_value *v, int64_t i) {
  switch (v->dtype) {
  case WQ_DT_INT8: return ((const int8_t *)v->data)[i];
  case WQ_DT_UINT8:
  case WQ_DT_BOOL: return ((const uint8_t *)v->data)[i];
  case WQ_DT_INT16: return ((const int16_t *)v->data)[i];
  case WQ_DT_UINT16: return ((const uint16_t *)v->data)[i];
  case WQ_DT_INT32: return ((const int32_t *)v->data)[i];
  case WQ_DT_UINT32: return ((const uint32_t *)v->data)[i];
  case WQ_DT_INT64: return ((const int64_t *)v->data)[i];
  case WQ_DT_UINT64: return (int64_t)((const uint64_t *)v->data)[i];
  case WQ_DT_FLOAT: return (int64_t)((const float *)v->data)[i];
  case WQ_DT_DOUBLE: return (int64_t)((const double *)v->data)[i];
  default: return 0;
  }
}

double wq_value_get_double(const wq_value *v, int64_t i) {
  switch (v->dtype) {
  case WQ_DT_FLOAT: return ((const float *)v->data)[i];
  case WQ_DT_DOUBLE: return ((const double *)v->data)[i];
  case WQ_DT_UINT64: return (double)((const uint64_t *)v->data)[i];
  default: return (double)wq_value_get_int(v, i);
  }
}

void wq_dims_format(const int64_t *dims, int rank, char *buf, size_t cap) {
  if (cap == 0)
    return;
  if (rank < 0) {
    wq_format(buf, cap, "[?]");
    return;
  }
  size_t used = 0;
  buf[0] = '\0';
  used += (size_t)wq_format(buf, cap, "[");
  for (int i = 0; i < rank && used < cap; i++)
    used += (size_t)wq_format(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (used < cap)
    wq_format(buf + used, cap - used, "]");
}

const char *wq_layout_name(wq_layout l, int rank) {
  return wq_layout_channels_last(l, rank) ? "NHWC" : rank == 4 ? "NCHW" : "plain";
}

int wq_layout_logical_dim(wq_layout l, int rank, int pos) {
  if (!wq_layout_channels_last(l, rank) || pos == 0)
    return pos;
  return pos == rank - 1 ? 1 : pos + 1;
}

int wq_layout_memory_pos(wq_layout l, int rank, int d) {
  if (!wq_layout_channels_last(l, rank) || d == 0)
    return d;
  return d == 1 ? rank - 1 : d - 1;
}

bool wq_layout_same_bytes(wq_layout a, wq_layout b, int rank, const int64_t *dims) {
  if ((a.block || b.block) && (a.block != b.block || a.packed_dim != b.packed_dim))
    return false;
  int pa = 0, pb = 0; /* memory positions in a and in b */
  for (;;) {
    while (pa < rank && dims[wq_layout_logical_dim(a, rank, pa)] == 1)
      pa++;
    while (pb < rank && dims[wq_layout_logical_dim(b, rank, pb)] == 1)
      pb++;
    if (pa == rank || pb == rank)
      return pa == rank && pb == rank;
    if (wq_layout_logical_dim(a, rank, pa++) != wq_layout_logical_dim(b, rank, pb++))
      return false;
  }
}

void wq_value_strides(const wq_value *v, int64_t strides[WQ_MAX_RANK]) {
  int64_t step = 1;
  for (int pos = v->rank - 1; pos >= 0; pos--) {
    const int d = wq_layout_logical_dim(v->layout, v->rank, pos);
    strides[d] = step;
    step *= v->dims[d];
  }
}

wq_value wq_value_memory_order(const wq_value *v) {
  wq_value m = *v;
  for (int pos = 0; pos < v->rank; pos++)
    m.dims[pos] = v->dims[wq_layout_logical_dim(v->layout, v->rank, pos)];
  return m;
}
