/* Helpers shared by the elementwise op files (not part of the registry API). */
#ifndef WQ_OPS_ELEMENTWISE_COMMON_H
#define WQ_OPS_ELEMENTWISE_COMMON_H

#include "op.h"

/* Copies in's dtype and shape to out and checks the element count. */
wq_status ew_infer_same_shape(const wq_node *node, const wq_value *in, wq_dtype dtype,
                              wq_value *out, wq_error *err);

/* Fails naming `what` unless dtype is one of the `n` in `allowed`. */
wq_status ew_check_dtype(const wq_node *node, const char *what, wq_dtype dtype,
                         const wq_dtype *allowed, int n, wq_error *err);

/* Normalises an axis in [-rank, rank) to [0, rank), failing otherwise. */
wq_status ew_normalize_axis(const wq_node *node, int64_t axis, int rank, int *out, wq_error *err);

/* A Softmax input x viewed as [outer, n, inner]. legacy (Softmax opset <
 * 13, QLinearSoftmax's opset attribute < 13) coerces x to 2-D at `axis`
 * (default 1) and normalises each row: n = prod(dims[axis:]), inner = 1;
 * otherwise along the single dim `axis` (default -1). All 1 while x's rank
 * is unknown. */
typedef struct {
  int64_t outer, n, inner;
} ew_softmax_dims;

wq_status ew_softmax_view(const wq_node *node, const wq_value *x, bool legacy, ew_softmax_dims *v,
                          wq_error *err);

#endif
