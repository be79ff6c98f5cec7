/* The one broadcasting iteration every binary elementwise op uses.
 *
 * Shapes are aligned numpy-style, size-1 dims of the output are dropped and
 * adjacent dims along which both operands advance the same way are merged,
 * so the work becomes a few nested loops around one contiguous inner run.
 * Same-shape operands collapse to a single run of numel elements, a scalar
 * operand to a single run with step 0; anything else runs the inner loop
 * once per outer index. The per-op, per-dtype work is the inner loop. */
#ifndef WQ_KERNELS_REF_EW_BROADCAST_H
#define WQ_KERNELS_REF_EW_BROADCAST_H

#include <stddef.h>
#include <stdint.h>

#include "../../ir/value.h"

/* Inner loop: out[i] = f(a[i * a_step], b[i * b_step]) for i in [0, n), with
 * steps in elements, each 0 (operand broadcast along the run) or 1. */
typedef void (*ew_binary_loop)(const void *a, int a_step, const void *b, int b_step, void *out,
                               int64_t n);

/* Runs `loop` over out's shape. a and b must broadcast to out (shape
 * inference checked it); a_size, b_size and out_size are element sizes in
 * bytes. An empty output does nothing. */
void ew_broadcast_run(const wq_value *a, size_t a_size, const wq_value *b, size_t b_size,
                      wq_value *out, size_t out_size, ew_binary_loop loop);

#endif
