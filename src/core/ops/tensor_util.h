/* Helpers shared by the data-movement ops (tensor family): axis handling,
 * reading shape-like integer inputs, and byte-wise copies. These ops move
 * elements without looking at them, so they work on element size only. */
#ifndef WQ_OPS_TENSOR_UTIL_H
#define WQ_OPS_TENSOR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "op.h"

/* True when input k exists and is not an omitted optional input. */
bool wq_tu_has_input(const wq_node *node, const wq_value *in, int k);

/* Bytes per element of `dtype`; fails (WQ_ERR_UNSUPPORTED) for types that
 * cannot be moved byte-wise (string, sub-byte, undefined). */
wq_status wq_tu_elem_size(const wq_node *node, wq_dtype dtype, const char *what, size_t *out,
                          wq_error *err);

/* Maps `axis` from [-rank, rank) to [0, rank), failing naming `what`. */
wq_status wq_tu_axis(const wq_node *node, int64_t axis, int rank, const char *what, int *out,
                     wq_error *err);

/* True when the rank is known and every dim is >= 0. */
bool wq_tu_shape_known(const wq_value *v);

/* Product of dims[from..to); -1 if any is unknown (negative). Saturates at
 * WQ_MAX_ELEMENTS + 1 so absurd dims cannot overflow (wq_shape_check then
 * rejects the shape). */
int64_t wq_tu_prod(const int64_t *dims, int from, int to);

/* Sets dtype and rank and marks every dim unknown (-1). rank may be -1. */
void wq_tu_set_unknown(wq_value *out, wq_dtype dtype, int rank);

/* Checks a shape-like input (starts, pads, axes, shape...) is an integer
 * tensor of rank 0 or 1 and gives its element count, -1 when unknown. */
wq_status wq_tu_int_list_len(const wq_node *node, const wq_value *v, const char *what, int64_t *len,
                             wq_error *err);

/* Reads a shape-like input whose data is known into out[0..*count). Fails
 * when it holds more than `cap` elements. */
wq_status wq_tu_read_ints(const wq_node *node, const wq_value *v, const char *what, int64_t *out,
                          int cap, int *count, wq_error *err);

/* Copies an ints attribute into out[0..*count) (absent: *count = 0 and
 * *present = false). Fails when it has more than `cap` elements. */
wq_status wq_tu_attr_ints(const wq_node *node, const char *name, int64_t *out, int cap, int *count,
                          bool *present, wq_error *err);

/* Normalizes axes[0..n) in place against `rank` and rejects repeats. */
wq_status wq_tu_unique_axes(const wq_node *node, int64_t *axes, int n, int rank, const char *what,
                            wq_error *err);

/* memcpy that tolerates n == 0 with NULL pointers (zero-size tensors). */
void wq_tu_copy(void *dst, const void *src, size_t n);

/* Shared run for ops whose output holds the input's bytes unchanged
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity-like views). */
wq_status wq_tu_run_copy(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err);

#endif
