/* The output stage shared by wasmq's int8 ops (DESIGN.md "Kernels"): an
 * int32 accumulator whose real value is acc * s_in * s_w[c] becomes
 * saturate(round_half_even(acc * multiplier[c]) + zero_point), with
 * multiplier[c] = (s_in * s_w[c]) / s_out in float32 — the same arithmetic
 * as the ONNX QLinearConv/QLinearMatMul reference, so results are bit-exact
 * with it. A fused relu/clip narrows [act_min, act_max] inside [qmin, qmax]
 * (seed 003: the clamp comes from the activation's output qparams, for any
 * zero point). */
#ifndef WQ_KERNELS_REF_INT8_REQUANT_H
#define WQ_KERNELS_REF_INT8_REQUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

typedef struct {
  wq_dtype y_dtype;        /* int8/uint8: requantize; int32: store the raw accumulator */
  const float *multiplier; /* one per output channel; NULL for int32 output */
  int32_t zero_point;
  int32_t act_min, act_max; /* clamp within the dtype's range */
  bool leaky;               /* fused LeakyRelu: negative values scaled by leaky_alpha */
  float leaky_alpha;
} wq_int8_requant;

/* Stores output element `i` of channel `c` from accumulator `acc`. */
void wq_int8_requant_store(const wq_int8_requant *rq, int64_t c, int32_t acc, void *y, int64_t i);

#endif
