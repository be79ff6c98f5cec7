/* Dynamic quantization of a float ONNX model, in the form onnxruntime's
 * quantize_dynamic writes: weights int8 (or uint8) constants, activations
 * quantized at run time. Every MatMul and Gemm whose weight is a constant
 * 2-D float matrix becomes
 *   DynamicQuantizeLinear(A) -> (A_quantized, A_scale, A_zero_point)
 *   MatMulInteger(A_quantized, B_quantized, A_zero_point, B_zero_point)
 *   -> Cast(float) -> Mul(., Mul(A_scale, B_scale)) [-> Add(bias)]
 * with one DynamicQuantizeLinear per activation however many products read
 * it. Gemm is written as that MatMul form ([K, N] weight times alpha, the
 * bias beta * C as the Add) since onnxruntime's tool leaves Gemm float;
 * a Gemm with transA, or a C that is not 1 or N constant values, stays
 * float. Weights: int8 symmetric in [-127, 127] with zero point 0, or
 * uint8 affine over [min(0, w), max(0, w)]; per output column (B_scale and
 * B_zero_point of N values) or per tensor (scalars). No calibration. */
#ifndef WQ_QUANT_DYNAMIC_H
#define WQ_QUANT_DYNAMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/status.h"

typedef struct {
  bool per_tensor;    /* one scale for the whole weight (default: per column) */
  bool uint8_weights; /* uint8 affine weights (default: int8 symmetric) */
} wq_dynamic_options;

typedef struct {
  int quantized;     /* MatMul/Gemm nodes written in the dynamic form */
  int kept;          /* MatMul/Gemm nodes left float (weight not a constant, transA, ...) */
  char summary[160]; /* one line: what was written */
} wq_dynamic_stats;

/* *onnx (malloc'ed, caller frees) gets the written model. Fails for a model
 * already quantized, one with nothing to quantize, or an ai.onnx opset
 * below 11 (DynamicQuantizeLinear), naming the reason. opts may be NULL. */
wq_status wq_quantize_dynamic(const uint8_t *model, size_t n, const wq_dynamic_options *opts,
                              uint8_t **onnx, size_t *onnx_len, wq_dynamic_stats *stats,
                              wq_error *err);

#endif
