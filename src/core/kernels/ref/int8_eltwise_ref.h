/* Scalar reference kernels of wasmq's elementwise int8 ops. Each mirrors
 * the float Q/DQ arithmetic exactly (DequantizeLinear's float32 product,
 * the float op, QuantizeLinear's division and round half to even), so a
 * lowered graph gives the same integers as the QDQ graph run op by op. */
#ifndef WQ_KERNELS_REF_INT8_ELTWISE_REF_H
#define WQ_KERNELS_REF_INT8_ELTWISE_REF_H

#include <stdint.h>

#include "../../ir/value.h"

/* Index of an int8/uint8 value in a 256-entry table: q + 128 for int8, q
 * for uint8. */
static inline int wq_int8_table_index(wq_dtype dtype, const void *data, int64_t i) {
  return dtype == WQ_DT_INT8 ? (int)((const int8_t *)data)[i] + 128
                             : (int)((const uint8_t *)data)[i];
}

/* y[i] = table[index(x[i])]; x and y are int8/uint8 (y's table holds y's
 * dtype, one byte per entry). */
void wq_int8_lookup_ref(wq_dtype x_dtype, const void *x, int64_t n, const uint8_t *table, void *y);

/* The float32 real value of every code: real[index(q)] = (q - zp) * scale. */
void wq_int8_dequant_table(wq_dtype dtype, float scale, int32_t zero_point, float *real);

typedef enum { WQ_INT8_ADD, WQ_INT8_MUL } wq_int8_binary_kind;

typedef struct {
  wq_int8_binary_kind kind;
  const float *a_real, *b_real; /* 256-entry dequantization tables */
  float y_scale;
  int32_t y_zero_point, y_min, y_max;
  wq_dtype y_dtype;
} wq_int8_binary_params;

/* y = quantize(a_real[a] (+ or *) b_real[b]) with numpy broadcasting of a
 * and b into y's shape (shape inference checked it). */
void wq_int8_binary_ref(const wq_int8_binary_params *p, const wq_value *a, const wq_value *b,
                        wq_value *y);

#endif
