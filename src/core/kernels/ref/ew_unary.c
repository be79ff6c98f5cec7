#include "ew_unary.h"

#include <float.h>
#include <math.h>

#include "ew_types.h"

static inline float sigmoid(float x) {
  /* e^-|x| never overflows; both branches are the same function. */
  if (x >= 0.0f)
    return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

static inline float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

void ew_unary_float(ew_unary_kind kind, float alpha, float beta, const float *x, float *y,
                    int64_t n) {
  switch (kind) {
  case EW_UNARY_SQRT:
    for (int64_t i = 0; i < n; i++)
      y[i] = sqrtf(x[i]);
    break;
  case EW_UNARY_EXP:
    for (int64_t i = 0; i < n; i++)
      y[i] = expf(x[i]);
    break;
  case EW_UNARY_RELU:
    /* `<` keeps NaN as NaN, like numpy's maximum(x, 0). */
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] < 0.0f ? 0.0f : x[i];
    break;
  case EW_UNARY_LEAKY_RELU:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
    break;
  case EW_UNARY_SIGMOID:
    for (int64_t i = 0; i < n; i++)
      y[i] = sigmoid(x[i]);
    break;
  case EW_UNARY_TANH:
    for (int64_t i = 0; i < n; i++)
      y[i] = tanhf(x[i]);
    break;
  case EW_UNARY_HARD_SIGMOID:
    for (int64_t i = 0; i < n; i++)
      y[i] = clamp01(alpha * x[i] + beta);
    break;
  case EW_UNARY_HARD_SWISH:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] * clamp01(x[i] * (1.0f / 6.0f) + 0.5f);
    break;
  case EW_UNARY_ELU:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] < 0.0f ? alpha * (expf(x[i]) - 1.0f) : x[i];
    break;
  case EW_UNARY_SOFTPLUS:
    /* ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|): e^-|x| never overflows. */
    for (int64_t i = 0; i < n; i++)
      y[i] = (x[i] > 0.0f ? x[i] : 0.0f) + log1pf(expf(-fabsf(x[i])));
    break;
  case EW_UNARY_GELU:
    for (int64_t i = 0; i < n; i++) {
      float v = x[i];
      y[i] = beta != 0.0f ? 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))
                          : 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
    break;
  }
}

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
#define EW_LIMITS_float -FLT_MAX, FLT_MAX
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

bool ew_clip(wq_dtype dtype, const void *x, void *y, int64_t n, const void *lo, const void *hi) {
  switch (dtype) {
    EW_NUMERIC_TYPES(EW_CLIP_CASE)
  default: return false;
  }
}
