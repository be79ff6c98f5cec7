/* Shared by the com.microsoft contrib ops (ops/contrib_qlinear*.c) and their
 * lowering (passes/lower_contrib.c). */
#ifndef WQ_OPS_CONTRIB_QLINEAR_H
#define WQ_OPS_CONTRIB_QLINEAR_H

#include <stdbool.h>
#include <stdint.h>

#include "op.h"

/* The 256-entry code table of a prepared QLinearSigmoid / QLinearLeakyRelu
 * node: table[index(q)] = quantize_y(f(dequantize_x(q))) (index as QLookup:
 * q + 128 for int8), entries in y's dtype. false for any other node. */
bool wq_contrib_lookup_table(const wq_node *node, wq_dtype x_dtype, float x_scale,
                             int32_t x_zero_point, wq_dtype y_dtype, float y_scale,
                             int32_t y_zero_point, uint8_t table[256]);

#endif
