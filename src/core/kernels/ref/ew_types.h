/* X-macro lists of the element types the elementwise kernels handle, so a
 * kernel is written once and stamped per dtype. Each entry is
 * X(WQ_DT_enum, short_name, c_type, unsigned_twin, wide_unsigned):
 * integer arithmetic is done in `wide_unsigned` (at least unsigned int, so no
 * promotion to signed int can overflow) and converted back, which wraps
 * modulo 2^bits instead of overflowing (the conversion back to a signed type
 * is the two's-complement one on every compiler we target). */
#ifndef WQ_KERNELS_REF_EW_TYPES_H
#define WQ_KERNELS_REF_EW_TYPES_H

#include <stdint.h>

#include "../../ir/dtype.h"

#define EW_SIGNED_INT_TYPES(X)                                                                     \
  X(WQ_DT_INT8, int8, int8_t, uint8_t, uint32_t)                                                   \
  X(WQ_DT_INT16, int16, int16_t, uint16_t, uint32_t)                                               \
  X(WQ_DT_INT32, int32, int32_t, uint32_t, uint32_t)                                               \
  X(WQ_DT_INT64, int64, int64_t, uint64_t, uint64_t)

#define EW_UNSIGNED_INT_TYPES(X)                                                                   \
  X(WQ_DT_UINT8, uint8, uint8_t, uint8_t, uint32_t)                                                \
  X(WQ_DT_UINT16, uint16, uint16_t, uint16_t, uint32_t)                                            \
  X(WQ_DT_UINT32, uint32, uint32_t, uint32_t, uint32_t)                                            \
  X(WQ_DT_UINT64, uint64, uint64_t, uint64_t, uint64_t)

#define EW_INT_TYPES(X) EW_SIGNED_INT_TYPES(X) EW_UNSIGNED_INT_TYPES(X)

/* float32 and the integers: the dtypes of ONNX's numeric arithmetic ops. */
#define EW_NUMERIC_TYPES(X) X(WQ_DT_FLOAT, float, float, float, float) EW_INT_TYPES(X)

#endif
