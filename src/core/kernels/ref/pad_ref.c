#include "pad_ref.h"

#include <stdlib.h>
#include <string.h>

#include "../../ir/checked.h"

int64_t wq_ref_pad_source(int64_t o, int64_t dim, int64_t begin, int64_t end, wq_pad_mode mode) {
  int64_t lo = begin < 0 ? -begin : 0;           /* first input index kept */
  int64_t len = dim - lo - (end < 0 ? -end : 0); /* kept region length */
  int64_t r = o - (begin > 0 ? begin : 0);       /* position in the region */
  if (r >= 0 && r < len)
    return lo + r;
  switch (mode) {
  case WQ_PAD_CONSTANT: return -1;
  case WQ_PAD_EDGE: return lo + (r < 0 ? 0 : len - 1);
  case WQ_PAD_REFLECT: {
    if (len == 1)
      return lo;
    int64_t period = 2 * (len - 1), m = r % period;
    if (m < 0)
      m += period;
    return lo + (m < len ? m : period - m);
  }
  case WQ_PAD_WRAP: {
    int64_t m = r % len;
    return lo + (m < 0 ? m + len : m);
  }
  }
  return -1;
}

bool wq_ref_pad(const void *src, void *dst, size_t elem, int rank, const int64_t *in_dims,
                const int64_t *begin, const int64_t *end, wq_pad_mode mode, const void *fill) {
  int64_t out_dims[8], in_stride[8], numel = 1, table_len = 0;
  for (int d = 0; d < rank; d++) {
    out_dims[d] = in_dims[d] + begin[d] + end[d];
    numel *= out_dims[d];
    table_len += out_dims[d];
  }
  if (numel == 0)
    return true;
  if (rank == 0) {
    memcpy(dst, src, elem);
    return true;
  }
  /* One source-index table per dim, so the inner loop is a lookup. */
  size_t table_bytes;
  int64_t *table =
      wq_bytes_size(table_len, (int64_t)sizeof *table, &table_bytes) ? malloc(table_bytes) : NULL;
  if (!table)
    return false;
  int64_t *map[8];
  int64_t at = 0;
  for (int d = 0; d < rank; d++) {
    map[d] = table + at;
    for (int64_t o = 0; o < out_dims[d]; o++)
      map[d][o] = wq_ref_pad_source(o, in_dims[d], begin[d], end[d], mode);
    at += out_dims[d];
  }
  in_stride[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; d--)
    in_stride[d] = in_stride[d + 1] * in_dims[d + 1];

  const unsigned char *s = src;
  unsigned char *o = dst;
  int64_t idx[8] = {0}, row_len = out_dims[rank - 1], rows = numel / row_len;
  const int64_t *inner = map[rank - 1];
  for (int64_t r = 0; r < rows; r++) {
    int64_t base = 0;
    bool filled = false; /* some outer index reads padding: the row is fill */
    for (int d = 0; d < rank - 1; d++) {
      int64_t i = map[d][idx[d]];
      if (i < 0) {
        filled = true;
        break;
      }
      base += i * in_stride[d];
    }
    for (int64_t k = 0, n; k < row_len; k += n, o += (size_t)n * elem) {
      int64_t i = filled ? -1 : inner[k];
      /* A run of consecutive source elements is one copy. */
      for (n = 1; i >= 0 && k + n < row_len && inner[k + n] == i + n;)
        n++;
      memcpy(o, i < 0 ? fill : s + (size_t)(base + i) * elem, (size_t)n * elem);
    }
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < out_dims[d])
        break;
      idx[d] = 0;
    }
  }
  free(table);
  return true;
}
