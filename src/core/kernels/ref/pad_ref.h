/* Reference Pad kernel (ONNX Pad semantics, any dtype by element size). */
#ifndef WQ_KERNELS_REF_PAD_REF_H
#define WQ_KERNELS_REF_PAD_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { WQ_PAD_CONSTANT, WQ_PAD_EDGE, WQ_PAD_REFLECT, WQ_PAD_WRAP } wq_pad_mode;

/* Input index that output index `o` of one dim reads, or -1 for the fill
 * value. Negative pads crop first; edge/reflect/wrap then extend the
 * cropped region (the caller guarantees it is non-empty for those modes). */
int64_t wq_ref_pad_source(int64_t o, int64_t dim, int64_t begin, int64_t end, wq_pad_mode mode);

/* Pads src (shape in_dims) into dst (shape in_dims[d] + begin[d] + end[d]).
 * `fill` is one element used by WQ_PAD_CONSTANT. Returns false only when
 * its scratch allocation fails. */
bool wq_ref_pad(const void *src, void *dst, size_t elem, int rank, const int64_t *in_dims,
                const int64_t *begin, const int64_t *end, wq_pad_mode mode, const void *fill);

#endif
