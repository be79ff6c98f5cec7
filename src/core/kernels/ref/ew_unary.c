#include "ew_unary.h"

#include <float.h>
#include <math.h>

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
  case EW_UNARY_LOG:
    for (int64_t i = 0; i < n; i++)
      y[i] = logf(x[i]);
    break;
  case EW_UNARY_NEG:
    for (int64_t i = 0; i < n; i++)
      y[i] = -x[i];
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

/* The float32 clip; the integer types are in ew_unary_int.c (built for
 * size: integer Clip/Relu are rare in models). NaN passes through. */
bool ew_clip(wq_dtype dtype, const void *x, void *y, int64_t n, const void *lo, const void *hi) {
  if (dtype != WQ_DT_FLOAT)
    return ew_clip_int(dtype, x, y, n, lo, hi);
  const float *xs = x;
  float *ys = y;
  const float l = lo ? *(const float *)lo : -FLT_MAX;
  const float h = hi ? *(const float *)hi : FLT_MAX;
  for (int64_t i = 0; i < n; i++) {
    float v = xs[i];
    v = v < l ? l : v;
    ys[i] = v > h ? h : v;
  }
  return true;
}
