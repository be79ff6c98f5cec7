/* Inner loops of the binary elementwise ops (run by ew_broadcast_run).
 *
 * Integer semantics (defined for every input, never UB):
 *  - Add, Sub, Mul wrap modulo 2^bits (computed in unsigned, converted back).
 *  - Div truncates toward zero. x / 0 gives 0. For signed types, MIN / -1
 *    gives MIN (the wrapped negation), like the other wrapping ops.
 *  - Pow with an integer base takes an integer exponent only; it multiplies
 *    with wrap-around; a negative exponent gives 1 / x^|e| truncated toward
 *    zero (1 for x == 1, +-1 for x == -1, 0 otherwise; 0^negative gives 0).
 * Float Pow takes an exponent of any numeric dtype (converted to float). */
#ifndef WQ_KERNELS_REF_EW_BINARY_H
#define WQ_KERNELS_REF_EW_BINARY_H

#include "../../ir/dtype.h"
#include "ew_broadcast.h"

typedef enum {
  EW_BINARY_ADD,
  EW_BINARY_SUB,
  EW_BINARY_MUL,
  EW_BINARY_DIV,
  EW_BINARY_POW,
  EW_BINARY_EQUAL,
  EW_BINARY_PRELU /* x < 0 ? slope * x : x, float32 */
} ew_binary_kind;

/* The inner loop for `kind` on operands of these dtypes, or NULL when the
 * combination is not supported (shape inference uses this to validate). */
ew_binary_loop ew_binary_loop_for(ew_binary_kind kind, wq_dtype a_dtype, wq_dtype b_dtype);

/* The float32 loop of `kind` (NULL for pow, which ew_binary_loop_for picks
 * by exponent dtype). */
ew_binary_loop ew_binary_float_loop(ew_binary_kind kind);

/* Result dtype of `kind` for a base/left operand of dtype a. */
wq_dtype ew_binary_result_dtype(ew_binary_kind kind, wq_dtype a_dtype);

#endif
