/* Helpers shared by wasmq's own int8 ops (domain "wasmq": QConv, QGemm,
 * QAdd, QMul, QAveragePool, QGlobalAveragePool, QConcat, QLookup). These ops
 * carry no scales in their inputs: the lowering pass puts quantization
 * parameters on the tensors (wq_tensor.qparams) and each op's plan hook
 * reads them once into node->op_state. */
#ifndef WQ_OPS_INT8_COMMON_H
#define WQ_OPS_INT8_COMMON_H

#include <stdbool.h>

#include "../quant/qparams.h"
#include "nn_window.h"
#include "op.h"

#define WQ_INT8_DOMAIN "wasmq"

/* The quantized dtype of the op's output: attribute y_dtype (an ONNX dtype
 * code), which must be int8 or uint8 (or int32 when allow_int32: the raw
 * accumulator of QConv/QGemm, ConvInteger/MatMulInteger semantics). */
wq_status wq_int8_read_y_dtype(const wq_node *node, bool allow_int32, wq_dtype *out, wq_error *err);

/* Fused activation clamp: attributes act_min/act_max (defaults: the
 * dtype's range) checked to lie within the range and be ordered. */
wq_status wq_int8_read_act_range(const wq_node *node, wq_dtype y_dtype, int32_t *act_min,
                                 int32_t *act_max, wq_error *err);
/* Fused LeakyRelu: attribute act_alpha (float in [0, 1]; 8-bit y only).
 * *leaky is false when the node has none. */
wq_status wq_int8_read_act_alpha(const wq_node *node, wq_dtype y_dtype, bool *leaky, float *alpha,
                                 wq_error *err);

/* Fails unless `dtype` is int8 or uint8, naming `what`. */
wq_status wq_int8_expect_8bit(const wq_node *node, const char *what, wq_dtype dtype, wq_error *err);

/* The qparams of the tensor at input k (output when `output` is true);
 * fails naming the tensor when it has none or its dtype differs from the
 * tensor's. */
wq_status wq_int8_tensor_qparams(const wq_node *node, const wq_graph *g, int k, bool output,
                                 const wq_qparams **out, wq_error *err);

/* The single (scale, zero point) of a per-tensor qparams; fails naming
 * `what` for per-channel or blocked ones. */
wq_status wq_int8_per_tensor(const wq_node *node, const wq_qparams *qp, const char *what,
                             float *scale, int32_t *zero_point, wq_error *err);

/* The constant data of input k, or a failure naming it ("<Op>: <what> must
 * be a constant"). */
wq_status wq_int8_constant_input(const wq_node *node, const wq_graph *g, int k, const char *what,
                                 const wq_tensor **out, wq_error *err);

/* Bytes of the arrays wq_int8_prepare_weights makes for numel centered
 * weights (0 without the copy) in rows rows (at most: bias and multiplier
 * are optional). */
static inline int64_t wq_int8_weights_bytes(int64_t numel, int64_t rows) {
  return numel * (int64_t)sizeof(int32_t) + rows * 8;
}

/* The constant weights of QConv/QGemm, prepared once at plan time: `wv`
 * (input 1, quantized by `qw` per tensor or per row along axis 0) viewed as
 * [rows, numel/rows] is centered (w - zp_w) into *w (w NULL: no such copy,
 * for a caller that packs the weights for its kernels itself: 4 bytes per
 * weight it would never read), the optional int32 bias at input 2 ([rows])
 * copied into *bias, and, when `requantize`, the per-row multiplier
 * (in_scale * s_w[row]) / out_scale into *multiplier. Arrays the pointers
 * already hold are freed first; the caller owns the new ones. */
wq_status wq_int8_prepare_weights(const wq_node *node, const wq_graph *g, const wq_value *wv,
                                  const wq_qparams *qw, float in_scale, float out_scale,
                                  bool requantize, int32_t **w, int32_t **bias, float **multiplier,
                                  wq_error *err);

/* The attributes of QConv: window (kernel, pads, strides, dilations),
 * group >= 1, y_dtype (int8, uint8, or int32: the raw accumulator) and the
 * fused clamp. */
wq_status wq_int8_conv_attrs_parse(const wq_node *node, wq_window_attrs *win, int64_t *group,
                                   wq_dtype *y_dtype, int32_t *act_min, int32_t *act_max,
                                   wq_error *err);

/* Error for an op run before its plan hook. */
wq_status wq_int8_not_planned(const wq_node *node, wq_error *err);

#endif
