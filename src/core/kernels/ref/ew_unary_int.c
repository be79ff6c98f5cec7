/* Relu and Clip on the integer dtypes: one loop per dtype, built for size
 * (wasm_build/build.sh); the float kernels are in ew_unary.c. */
#include <stdint.h>

#include "ew_types.h"
#include "ew_unary.h"

#define EW_RELU_SIGNED(E, name, T, U, W)                                                           \
  case E: {                                                                                        \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    for (int64_t i = 0; i < n; i++)                                                                \
      ys[i] = xs[i] < 0 ? 0 : xs[i];                                                               \
    return true;                                                                                   \
  }
#define EW_RELU_UNSIGNED(E, name, T, U, W)                                                         \
  case E: {                                                                                        \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    for (int64_t i = 0; i < n; i++)                                                                \
      ys[i] = xs[i];                                                                               \
    return true;                                                                                   \
  }

bool ew_relu_int(wq_dtype dtype, const void *x, void *y, int64_t n) {
  switch (dtype) {
    EW_SIGNED_INT_TYPES(EW_RELU_SIGNED)
    EW_UNSIGNED_INT_TYPES(EW_RELU_UNSIGNED)
  default: return false;
  }
}

/* Lowest and highest value of each clip type (ONNX's numeric_limits
 * defaults for an omitted min / max). */
#define EW_LIMITS_int8 INT8_MIN, INT8_MAX
#define EW_LIMITS_int16 INT16_MIN, INT16_MAX
#define EW_LIMITS_int32 INT32_MIN, INT32_MAX
#define EW_LIMITS_int64 INT64_MIN, INT64_MAX
#define EW_LIMITS_uint8 0, UINT8_MAX
#define EW_LIMITS_uint16 0, UINT16_MAX
#define EW_LIMITS_uint32 0, UINT32_MAX
#define EW_LIMITS_uint64 0, UINT64_MAX
#define EW_LOWEST(lo, hi) lo
#define EW_HIGHEST(lo, hi) hi
#define EW_APPLY(m, args) m(args)

#define EW_CLIP_CASE(E, name, T, U, W)                                                             \
  case E: {                                                                                        \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    const T l = lo ? *(const T *)lo : (T)EW_APPLY(EW_LOWEST, EW_LIMITS_##name);                    \
    const T h = hi ? *(const T *)hi : (T)EW_APPLY(EW_HIGHEST, EW_LIMITS_##name);                   \
    for (int64_t i = 0; i < n; i++) {                                                              \
      T v = xs[i];                                                                                 \
      v = v < l ? l : v;                                                                           \
      ys[i] = v > h ? h : v;                                                                       \
    }                                                                                              \
    return true;                                                                                   \
  }

bool ew_clip_int(wq_dtype dtype, const void *x, void *y, int64_t n, const void *lo,
                 const void *hi) {
  switch (dtype) {
    EW_INT_TYPES(EW_CLIP_CASE)
  default: return false;
  }
}
