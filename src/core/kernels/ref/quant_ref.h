/* Scalar int8 reference kernels: the numerical truth for ONNX's quantized
 * ops (QuantizeLinear, DequantizeLinear, QLinearMatMul, QLinearConv,
 * MatMulInteger, ConvInteger, DynamicQuantizeLinear). Every rounding is
 * round-half-to-even in the default floating-point environment (nearbyintf),
 * every store saturates to [qmin, qmax], every (scale, zero point) comes from
 * a wq_qparams by explicit block arithmetic. */
#ifndef WQ_KERNELS_REF_QUANT_REF_H
#define WQ_KERNELS_REF_QUANT_REF_H

#include <stdint.h>

#include "../../ir/value.h"
#include "../../quant/qparams.h"

/* Element i of an int8/uint8/int16/uint16/int32 buffer, widened. */
int32_t wq_ref_q_load(const void *data, wq_dtype dtype, int64_t i);
/* Stores v (already within the dtype's range) as element i. */
void wq_ref_q_store(void *data, wq_dtype dtype, int64_t i, int32_t v);

/* saturate(round_half_even(x / scale) + zero_point) to [qmin, qmax]. The
 * division is float32, as ONNX's float32 y_scale prescribes. NaN gives qmin. */
int32_t wq_ref_quantize_value(float x, float scale, int32_t zero_point, int32_t qmin, int32_t qmax);

/* saturate(round_half_even(acc * multiplier) + zero_point): requantizing an
 * int32 accumulator whose real value is acc * s_in * s_w, with
 * multiplier = s_in * s_w / s_out computed in float32. */
int32_t wq_ref_requantize_value(int32_t acc, float multiplier, int32_t zero_point, int32_t qmin,
                                int32_t qmax);
/* The same with a fused LeakyRelu: t = acc * multiplier, t < 0 scaled by
 * alpha (float32 products, the order the QDQ graph rounds them in when the
 * scales are powers of two), then rounded and saturated. alpha 1 is
 * wq_ref_requantize_value (times 1 is exact). */
int32_t wq_ref_requantize_leaky(int32_t acc, float multiplier, float alpha, int32_t zero_point,
                                int32_t qmin, int32_t qmax);

/* y[i] = quantize(x[i]) with the qparams of element i; y has qp->dtype. */
void wq_ref_quantize_linear(const float *x, int64_t n, const wq_qparams *qp, void *y);

/* y[i] = (x[i] - zp(i)) * scale(i); x has qp->dtype. The subtraction is
 * exact in integers, the product float32. */
void wq_ref_dequantize_linear(const void *x, int64_t n, const wq_qparams *qp, float *y);

/* out[i] = q[i] - zp(i) as int32 (q has qp->dtype): the zero-point-free
 * operand the integer matmul/conv kernels consume. */
void wq_ref_q_center(const void *q, int64_t n, const wq_qparams *qp, int32_t *out);

/* Matrix-product geometry, numpy.matmul style: a 1-D a is a [1,K] row, a
 * 1-D b a [K,1] column (and those dims are dropped from the output); batch
 * dims broadcast. */
typedef struct {
  int64_t M, K, N;
  int batch_rank;
  int64_t batch_dims[WQ_MAX_RANK];
  int64_t a_batch_strides[WQ_MAX_RANK]; /* in matrices; 0 along broadcast dims */
  int64_t b_batch_strides[WQ_MAX_RANK];
  int64_t batch_count;
  int out_rank;
  int64_t out_dims[WQ_MAX_RANK];
} wq_qmatmul_geometry;

/* a and b shapes must be known. `op` names the op in errors. */
wq_status wq_qmatmul_geometry_init(const wq_value *a, const wq_value *b, wq_qmatmul_geometry *g,
                                   const char *node, const char *op, wq_error *err);

/* Element offsets of the a and b matrices used by output batch `batch`. */
void wq_qmatmul_batch_offsets(const wq_qmatmul_geometry *g, int64_t batch, int64_t *a_offset,
                              int64_t *b_offset);

/* acc[batch, m, n] = sum_k a[.., m, k] * b[.., k, n] over centered operands,
 * accumulated exactly in 64 bits and wrapped to int32 (ONNX lets only the
 * 32-bit accumulation overflow). */
void wq_ref_qmatmul_acc(const wq_qmatmul_geometry *g, const int32_t *a, const int32_t *b,
                        int32_t *acc);

#endif
