/* Helpers shared by the quantized ops' glue (quant_linear.c, quant_matmul.c,
 * quant_conv.c): dtype checks with the uniform "dtype <name> is not
 * supported" message, and the operand qparams of the matmul/conv families. */
#ifndef WQ_OPS_QUANT_COMMON_H
#define WQ_OPS_QUANT_COMMON_H

#include "../quant/qparams.h"
#include "op.h"

#define WQ_QDT_BIT(dt) (1u << (unsigned)(dt))
#define WQ_QDT_8BIT (WQ_QDT_BIT(WQ_DT_INT8) | WQ_QDT_BIT(WQ_DT_UINT8))
#define WQ_QDT_16BIT (WQ_QDT_BIT(WQ_DT_INT16) | WQ_QDT_BIT(WQ_DT_UINT16))

/* OK when `allowed` (a WQ_QDT_BIT mask) has the dtype. Otherwise
 * WQ_ERR_UNSUPPORTED "<Op>: <what> dtype <name> is not supported" when the
 * runtime cannot hold the dtype at all (float16, float8, int4 ...), else
 * WQ_ERR_INVALID_MODEL naming the dtype the input may not have. */
wq_status wq_quant_expect_dtype(const wq_node *node, const char *what, wq_dtype dtype,
                                unsigned allowed, wq_error *err);

/* Where a matmul operand's 1-D (or full-rank) parameters vary: per row of a
 * (and of the output), per column of b (ONNX QLinearMatMul/MatMulInteger). */
typedef enum { WQ_QMATMUL_PER_ROW, WQ_QMATMUL_PER_COLUMN } wq_qmatmul_role;

/* qparams of a matmul operand `data` (shape known) from its scale (NULL for
 * zero-point-only MatMulInteger) and zero point (may be NULL/omitted): a
 * scalar or 1-element tensor is per-tensor; a 1-D tensor has one entry per
 * row (M) or column (N); a tensor of the data's rank has size 1 along K (the
 * dim the product sums over) and 1 or the data's size along every other dim.
 * Shape-only when values are unknown. */
wq_status wq_qmatmul_operand_qparams(wq_qparams *qp, const wq_node *node, const char *what,
                                     wq_qmatmul_role role, const wq_value *data,
                                     const wq_value *scale, const wq_value *zero_point,
                                     wq_error *err);

/* qparams of a conv operand [N or M, C, spatial...] varying at most along
 * `axis` (0 for weights' output channels, 1 for activations' channels):
 * scale and zero point are each a scalar/1-element tensor or a 1-D tensor of
 * data_dims[axis] entries; a scalar one is expanded explicitly to match the
 * other. scale NULL: unit scales (ConvInteger). */
wq_status wq_qconv_operand_qparams(wq_qparams *qp, const wq_node *node, const char *what, int axis,
                                   const wq_value *data, const wq_value *scale,
                                   const wq_value *zero_point, wq_error *err);

/* True when every listed present input has data. */
/* Dtype checks shared by the QLinear ops, whose first eight inputs are
 * (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
 * y_zero_point); `a` and `b` name the two data operands ("x"/"w" for conv). */
wq_status wq_quant_check_qlinear_inputs(const wq_node *node, const wq_value *in, const char *a,
                                        const char *b, wq_error *err);

/* Input i when the node has it and it is not an omitted optional input. */
const wq_value *wq_quant_optional_input(const wq_node *node, const wq_value *in, int i);

/* Dtype checks shared by ConvInteger and MatMulInteger: 8-bit data operands
 * `a` and `b` (inputs 0 and 1) and optional zero points (inputs 2 and 3) of
 * the same dtype as their operand. */
wq_status wq_quant_check_integer_inputs(const wq_node *node, const wq_value *in, const char *a,
                                        const char *b, const char *a_zero_point,
                                        const char *b_zero_point, wq_error *err);

bool wq_quant_values_known(const wq_value *in, int n_inputs);

/* DynamicQuantizeLinear's uint8 scale and zero point for x[0..n) (ONNX's
 * rule); fails naming `node` when the range is not finite or the scale
 * would be subnormal. */
wq_status wq_dynamic_qparams(const wq_node *node, const float *x, int64_t n, float *scale,
                             int32_t *zero_point, wq_error *err);

#endif
