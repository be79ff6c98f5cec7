/* Scalar reference of per-tensor QuantizeLinear / DequantizeLinear
 * (kernels/quantize.h), element by element through quant_ref.h. */
#ifndef WQ_KERNELS_REF_REF_QUANTIZE_H
#define WQ_KERNELS_REF_REF_QUANTIZE_H

#include "../common/kernel_config.h"

extern const wq_quantize_config wq_quantize_config_ref;

void wq_ref_quantize_f32_q8(const float *x, int64_t n, float scale, int32_t zero_point,
                            wq_dtype dtype, int32_t qmin, int32_t qmax, void *y);
void wq_ref_dequantize_q8_f32(const void *x, int64_t n, float scale, int32_t zero_point,
                              wq_dtype dtype, float *y);

#endif
