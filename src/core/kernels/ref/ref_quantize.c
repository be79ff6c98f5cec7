#include "ref_quantize.h"

#include "quant_ref.h"

void wq_ref_quantize_f32_q8(const float *x, int64_t n, float scale, int32_t zero_point,
                            wq_dtype dtype, int32_t qmin, int32_t qmax, void *y) {
  for (int64_t i = 0; i < n; i++)
    wq_ref_q_store(y, dtype, i, wq_ref_quantize_value(x[i], scale, zero_point, qmin, qmax));
}

void wq_ref_dequantize_q8_f32(const void *x, int64_t n, float scale, int32_t zero_point,
                              wq_dtype dtype, float *y) {
  for (int64_t i = 0; i < n; i++)
    y[i] = (float)(wq_ref_q_load(x, dtype, i) - zero_point) * scale;
}

const wq_quantize_config wq_quantize_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .quantize = wq_ref_quantize_f32_q8,
    .dequantize = wq_ref_dequantize_q8_f32,
};
