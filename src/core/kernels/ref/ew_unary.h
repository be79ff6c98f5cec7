/* Reference kernels of the unary elementwise ops. x and y may alias (in-place). */
#ifndef WQ_KERNELS_REF_EW_UNARY_H
#define WQ_KERNELS_REF_EW_UNARY_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

typedef enum {
  EW_UNARY_SQRT,
  EW_UNARY_EXP,
  EW_UNARY_RELU,
  EW_UNARY_LEAKY_RELU, /* x >= 0 ? x : alpha * x */
  EW_UNARY_SIGMOID,    /* 1 / (1 + e^-x), evaluated without overflow */
  EW_UNARY_TANH,
  EW_UNARY_HARD_SIGMOID, /* max(0, min(1, alpha * x + beta)) */
  EW_UNARY_HARD_SWISH,   /* x * max(0, min(1, x / 6 + 1/2)) */
  EW_UNARY_ELU,          /* x >= 0 ? x : alpha * (e^x - 1) */
  EW_UNARY_SOFTPLUS,     /* ln(1 + e^x), evaluated without overflow */
  EW_UNARY_GELU,         /* x/2 (1 + erf(x / sqrt 2)); beta = 1: the tanh approximation */
  EW_UNARY_LOG,
  EW_UNARY_NEG
} ew_unary_kind;

/* Float32 kernel of `kind`; alpha/beta are used by LeakyRelu, HardSigmoid,
 * Elu and Gelu (beta selects its approximation). */
void ew_unary_float(ew_unary_kind kind, float alpha, float beta, const float *x, float *y,
                    int64_t n);

/* Relu on an integer dtype (max(x, 0); unsigned types copy). False when the
 * dtype is not an integer. */
bool ew_relu_int(wq_dtype dtype, const void *x, void *y, int64_t n);

/* Clip: y = min(max(x, lo), hi), so lo > hi yields hi everywhere (as ONNX
 * specifies). lo / hi point at one element of `dtype`, or are NULL for the
 * type's lowest / highest value. Float NaN passes through. False when the
 * dtype is not float32 or an integer. */
bool ew_clip(wq_dtype dtype, const void *x, void *y, int64_t n, const void *lo, const void *hi);

/* ew_clip on the integer dtypes only (false for any other). */
bool ew_clip_int(wq_dtype dtype, const void *x, void *y, int64_t n, const void *lo, const void *hi);

#endif
