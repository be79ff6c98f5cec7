/* Cast between float32, the eight integer types and bool.
 *
 * Conversions (all defined for every input, never UB):
 *  - float -> integer: truncation toward zero (C semantics) for values in
 *    range; NaN gives 0; values beyond the target range saturate to its
 *    minimum / maximum (so -1.5 -> uint8 gives 0, 1e10 -> int32 gives
 *    INT32_MAX).
 *  - integer -> integer: two's-complement wrap-around (modulo 2^bits), as
 *    numpy's astype does.
 *  - anything -> bool: 1 when the value is non-zero (NaN counts as
 *    non-zero), else 0. bool -> anything: 0 or 1 (any non-zero byte is 1).
 *  - integer -> float: nearest float (round to nearest even). */
#ifndef WQ_KERNELS_REF_EW_CAST_H
#define WQ_KERNELS_REF_EW_CAST_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

/* True when ew_cast handles from -> to. */
bool ew_cast_supported(wq_dtype from, wq_dtype to);

/* Converts n elements; src and dst must not overlap unless from == to.
 * Returns false (doing nothing) for an unsupported pair. */
bool ew_cast(wq_dtype from, const void *src, wq_dtype to, void *dst, int64_t n);

#endif
