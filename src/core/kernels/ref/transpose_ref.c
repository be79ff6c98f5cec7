#include "transpose_ref.h"

void wq_ref_transpose(const void *src, void *dst, size_t elem, int rank, const int64_t *in_dims,
                      const int *perm) {
  int64_t numel = 1;
  for (int d = 0; d < rank; d++)
    numel *= in_dims[d];
  if (numel == 0)
    return;
  if (rank == 0) {
    memcpy(dst, src, elem);
    return;
  }
  int64_t in_stride[8], out_dims[8], step[8];
  in_stride[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; d--)
    in_stride[d] = in_stride[d + 1] * in_dims[d + 1];
  for (int j = 0; j < rank; j++) {
    out_dims[j] = in_dims[perm[j]];
    step[j] = in_stride[perm[j]]; /* input elements per step of output dim j */
  }
  /* Odometer over output rows; the last output dim is a strided gather. */
  int64_t idx[8] = {0}, row_len = out_dims[rank - 1], rows = numel / row_len;
  const unsigned char *s = src;
  unsigned char *o = dst;
  int64_t off = 0; /* input element offset of the current row's start */
  for (int64_t r = 0; r < rows; r++) {
    wq_ref_gather_strided(o, s + (size_t)off * elem, row_len, step[rank - 1], elem);
    o += (size_t)row_len * elem;
    for (int d = rank - 2; d >= 0; d--) {
      off += step[d];
      if (++idx[d] < out_dims[d])
        break;
      off -= step[d] * out_dims[d];
      idx[d] = 0;
    }
  }
}
