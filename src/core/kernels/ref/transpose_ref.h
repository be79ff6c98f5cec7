/* Reference data-movement kernels shared by Transpose and any pass that
 * needs to permute a tensor (weights repacking, layout transitions). They
 * copy elements of `elem` bytes and never look at them, so every dtype works.
 * Callers validate shapes first; the kernels trust their arguments. */
#ifndef WQ_KERNELS_REF_TRANSPOSE_REF_H
#define WQ_KERNELS_REF_TRANSPOSE_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies n elements from src (stride src_step elements, may be negative)
 * to dst (dense). */
static inline void wq_ref_gather_strided(unsigned char *dst, const unsigned char *src, int64_t n,
                                         int64_t src_step, size_t elem) {
  switch (elem) {
  case 1:
    for (int64_t i = 0; i < n; i++)
      dst[i] = src[i * src_step];
    break;
  case 2:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + i * 2, src + i * src_step * 2, 2);
    break;
  case 4:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + i * 4, src + i * src_step * 4, 4);
    break;
  case 8:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + i * 8, src + i * src_step * 8, 8);
    break;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)i * elem, src + (ptrdiff_t)(i * src_step) * (ptrdiff_t)elem, elem);
    break;
  }
}

/* dst[i0..ik] = src at the input position whose dim perm[j] is i_j:
 * output dim j has size in_dims[perm[j]]. rank 0..8. */
void wq_ref_transpose(const void *src, void *dst, size_t elem, int rank, const int64_t *in_dims,
                      const int *perm);

#endif
