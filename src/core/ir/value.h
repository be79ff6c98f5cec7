/* wq_value: a typed, shaped view of one tensor's elements. Kernels and shape
 * inference see tensors only through values. A value does not own its data. */
#ifndef WQ_IR_VALUE_H
#define WQ_IR_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checked.h"
#include "dtype.h"
#include "status.h"

/* How a tensor's elements sit in memory. `order`: WQ_ORDER_DECLARED keeps
 * the dims in the order ONNX declares them (NCHW for images);
 * WQ_ORDER_CHANNELS_LAST stores dim 1 last (NHWC, for rank >= 3). A packed
 * layout also stores logical dim `packed_dim` in blocks of `block` elements
 * (block 0: not packed; no op writes one yet: the SIMD kernels block their
 * weights, not their activations). All zero is the declared, unpacked
 * layout. Dims
 * stay logical (declared order) in every layout: shape inference never
 * depends on the layout; kernels that walk memory take the dims in memory
 * order from wq_value_memory_order. */
typedef struct {
  unsigned char order;
  unsigned char block;
  signed char packed_dim;
} wq_layout;

enum { WQ_ORDER_DECLARED = 0, WQ_ORDER_CHANNELS_LAST = 1 };

typedef struct {
  wq_dtype dtype; /* WQ_DT_UNDEFINED for an omitted optional input */
  int rank;       /* -1 when the shape is unknown */
  int64_t dims[WQ_MAX_RANK];
  void *data; /* NULL when only the shape is known (shape inference) */
  wq_layout layout;
} wq_value;

/* Channels-last storage of a value of rank >= 3: the layout kernels of a
 * family (QConv, pools, Resize, DepthToSpace, Quantize/DequantizeLinear)
 * pick their channels-last variant by. */
static inline bool wq_layout_channels_last(wq_layout l, int rank) {
  return l.order == WQ_ORDER_CHANNELS_LAST && rank >= 3;
}

/* "NHWC" (channels-last), "NCHW" (declared, rank 4) or "plain". */
const char *wq_layout_name(wq_layout l, int rank);

/* The logical (declared-order) dim stored at memory position pos, and the
 * memory position of logical dim d. */
int wq_layout_logical_dim(wq_layout l, int rank, int pos);
int wq_layout_memory_pos(wq_layout l, int rank, int d);

/* True when a tensor of these logical dims holds the same bytes in the
 * same order under layouts a and b, so a reader expecting one may read the
 * other as it is: the dims longer than 1 (unknown ones count as long) come
 * in the same order in memory. Channels-last and declared agree when every
 * spatial dim is 1 or there is one channel. Packed layouts agree only with
 * the same packing. */
bool wq_layout_same_bytes(wq_layout a, wq_layout b, int rank, const int64_t *dims);

/* v with its dims in memory order (a channels-last [N, C, H, W] reads
 * [N, H, W, C]), for kernels that walk its elements. */
wq_value wq_value_memory_order(const wq_value *v);

/* Element strides of v's logical dims in memory (strides[d] for logical dim
 * d; the layout's dim order, without packing). */
void wq_value_strides(const wq_value *v, int64_t strides[WQ_MAX_RANK]);

/* Element count of a known shape; 1 for rank 0. Returns -1 for unknown rank or
 * any unknown (negative) dim, and WQ_MAX_ELEMENTS + 1 for any count past the
 * limit (never a wrapped product; wq_shape_check rejects such shapes). */
int64_t wq_value_numel(const wq_value *v);
size_t wq_value_nbytes(const wq_value *v);
bool wq_value_present(const wq_value *v); /* not an omitted optional input */
bool wq_value_shape_known(const wq_value *v);

/* Checks dims are >= 0 and the element count stays below WQ_MAX_ELEMENTS;
 * on failure fills err naming `what` (e.g. the tensor name). */
wq_status wq_shape_check(const int64_t *dims, int rank, const char *node, const char *what,
                         wq_error *err);

/* Numpy/ONNX multidirectional broadcast of a and b into out (rank = max). */
wq_status wq_broadcast_shapes(const wq_value *a, const wq_value *b, int *out_rank,
                              int64_t *out_dims, const char *node, wq_error *err);

/* Element i of an integer-typed (int8..uint64, bool) value as int64. */
int64_t wq_value_get_int(const wq_value *v, int64_t i);
/* Element i of any numeric value as double. */
double wq_value_get_double(const wq_value *v, int64_t i);

/* Formats dims as "[1,3,224,224]" into buf. */
void wq_dims_format(const int64_t *dims, int rank, char *buf, size_t cap);

#endif
