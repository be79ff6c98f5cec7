#include "ew_binary.h"

#include <math.h>
#include <stdint.h>

#include "ew_binary_loop.h"
#include "ew_types.h"

/* float32 add/sub/mul/div/equal live in ew_binary_float.c (built for speed;
 * this file is built for size in wasm: integer arithmetic is index and shape
 * work, Pow's time is powf's). */

/* Float base, exponent of any numeric dtype. Squaring (variance, magnitude)
 * is the common exponent and powf's slowest case; x * x is its exact,
 * correctly rounded value. */
static inline float ew_powf(float x, float y) { return y == 2.0f ? x * x : powf(x, y); }
#define EW_POW_FLOAT_EXP(E, name, T, U, W)                                                         \
  EW_LOOP_SMALL(ew_pow_float_##name, float, T, float, ew_powf(x, (float)y))
EW_NUMERIC_TYPES(EW_POW_FLOAT_EXP)

/* PRelu: the slope scales negative inputs only (a NaN input stays NaN). */
EW_LOOP_SMALL(ew_prelu_float, float, float, float, x < 0.0f ? y * x : x)

/* bool is stored one byte per element; any non-zero byte counts as true. */
EW_LOOP_SMALL(ew_equal_bool, uint8_t, uint8_t, uint8_t, (uint8_t)((x != 0) == (y != 0)))

/* ---- integers ---- */
#define EW_INT_ARITH(E, name, T, U, W)                                                             \
  EW_LOOP_SMALL(ew_add_##name, T, T, T, (T)((W)x + (W)y))                                          \
  EW_LOOP_SMALL(ew_sub_##name, T, T, T, (T)((W)x - (W)y))                                          \
  EW_LOOP_SMALL(ew_mul_##name, T, T, T, (T)((W)x * (W)y))                                          \
  EW_LOOP_SMALL(ew_equal_##name, T, T, uint8_t, (uint8_t)(x == y))                                 \
  EW_LOOP_SMALL(ew_div_##name, T, T, T, ew_div_scalar_##name(x, y))
#define EW_SIGNED_DIV(E, name, T, U, W)                                                            \
  static inline T ew_div_scalar_##name(T x, T y) {                                                 \
    if (y == 0)                                                                                    \
      return 0;                                                                                    \
    if (y == -1)                                                                                   \
      return (T)((W)0 - (W)x); /* MIN / -1 would overflow: wrap instead */                         \
    return (T)(x / y);                                                                             \
  }
#define EW_UNSIGNED_DIV(E, name, T, U, W)                                                          \
  static inline T ew_div_scalar_##name(T x, T y) { return y == 0 ? 0 : (T)(x / y); }
EW_SIGNED_INT_TYPES(EW_SIGNED_DIV)
EW_UNSIGNED_INT_TYPES(EW_UNSIGNED_DIV)
EW_INT_TYPES(EW_INT_ARITH)

/* Integer power by squaring in wrapping arithmetic (see ew_binary.h). */
#define EW_INT_POW_SCALAR(E, name, T, U, W)                                                        \
  static inline T ew_ipow_##name(T base, int64_t e) {                                              \
    if (e < 0) {                                                                                   \
      if (base == 1)                                                                               \
        return 1;                                                                                  \
      if (base == (T)-1)                                                                           \
        return (e % 2 == 0) ? 1 : base;                                                            \
      return 0;                                                                                    \
    }                                                                                              \
    W result = 1, b = (W)base;                                                                     \
    uint64_t k = (uint64_t)e;                                                                      \
    while (k) {                                                                                    \
      if (k & 1u)                                                                                  \
        result = (W)(result * b);                                                                  \
      b = (W)(b * b);                                                                              \
      k >>= 1;                                                                                     \
    }                                                                                              \
    return (T)result;                                                                              \
  }
EW_INT_POW_SCALAR(WQ_DT_INT32, int32, int32_t, uint32_t, uint32_t)
EW_INT_POW_SCALAR(WQ_DT_INT64, int64, int64_t, uint64_t, uint64_t)
EW_LOOP_SMALL(ew_pow_int32_int32, int32_t, int32_t, int32_t, ew_ipow_int32(x, y))
EW_LOOP_SMALL(ew_pow_int32_int64, int32_t, int64_t, int32_t, ew_ipow_int32(x, y))
EW_LOOP_SMALL(ew_pow_int64_int32, int64_t, int32_t, int64_t, ew_ipow_int64(x, y))
EW_LOOP_SMALL(ew_pow_int64_int64, int64_t, int64_t, int64_t, ew_ipow_int64(x, y))

#define EW_CASE(E, name, T, U, W, prefix)                                                          \
  case E:                                                                                          \
    return prefix##name;
#define EW_CASE_ADD(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_add_)
#define EW_CASE_SUB(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_sub_)
#define EW_CASE_MUL(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_mul_)
#define EW_CASE_DIV(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_div_)
#define EW_CASE_EQUAL(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_equal_)
#define EW_CASE_POW_FLOAT(E, name, T, U, W) EW_CASE(E, name, T, U, W, ew_pow_float_)

static ew_binary_loop pow_loop_for(wq_dtype a, wq_dtype b) {
  if (a == WQ_DT_FLOAT) {
    switch (b) {
      EW_NUMERIC_TYPES(EW_CASE_POW_FLOAT)
    default: return NULL;
    }
  }
  if (a == WQ_DT_INT32 && b == WQ_DT_INT32)
    return ew_pow_int32_int32;
  if (a == WQ_DT_INT32 && b == WQ_DT_INT64)
    return ew_pow_int32_int64;
  if (a == WQ_DT_INT64 && b == WQ_DT_INT32)
    return ew_pow_int64_int32;
  if (a == WQ_DT_INT64 && b == WQ_DT_INT64)
    return ew_pow_int64_int64;
  return NULL;
}

ew_binary_loop ew_binary_loop_for(ew_binary_kind kind, wq_dtype a, wq_dtype b) {
  if (kind == EW_BINARY_POW)
    return pow_loop_for(a, b);
  if (kind == EW_BINARY_PRELU)
    return a == WQ_DT_FLOAT && b == WQ_DT_FLOAT ? ew_prelu_float : NULL;
  if (a != b)
    return NULL;
  if (a == WQ_DT_FLOAT)
    return ew_binary_float_loop(kind);
  switch (kind) {
  case EW_BINARY_ADD:
    switch (a) {
      EW_INT_TYPES(EW_CASE_ADD)
    default: return NULL;
    }
  case EW_BINARY_SUB:
    switch (a) {
      EW_INT_TYPES(EW_CASE_SUB)
    default: return NULL;
    }
  case EW_BINARY_MUL:
    switch (a) {
      EW_INT_TYPES(EW_CASE_MUL)
    default: return NULL;
    }
  case EW_BINARY_DIV:
    switch (a) {
      EW_INT_TYPES(EW_CASE_DIV)
    default: return NULL;
    }
  case EW_BINARY_EQUAL:
    switch (a) {
      EW_INT_TYPES(EW_CASE_EQUAL)
    case WQ_DT_BOOL: return ew_equal_bool;
    default: return NULL;
    }
  case EW_BINARY_POW:
  case EW_BINARY_PRELU: break;
  }
  return NULL;
}

wq_dtype ew_binary_result_dtype(ew_binary_kind kind, wq_dtype a_dtype) {
  return kind == EW_BINARY_EQUAL ? WQ_DT_BOOL : a_dtype;
}
