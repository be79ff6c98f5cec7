/* Reference DepthToSpace kernel (NCHW, any dtype by element size). */
#ifndef WQ_KERNELS_REF_DEPTH_TO_SPACE_REF_H
#define WQ_KERNELS_REF_DEPTH_TO_SPACE_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* src [N, C, H, W] -> dst [N, C/(b*b), H*b, W*b]. DCR (crd=false) takes
 * output channel c, block offset (i, j) from input channel (i*b + j)*C' + c;
 * CRD takes it from c*b*b + i*b + j (C' = C/(b*b)). */
void wq_ref_depth_to_space(const void *src, void *dst, size_t elem, const int64_t *in_dims,
                           int64_t block, bool crd);

#endif
