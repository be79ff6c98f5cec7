#include "quantize.h"

#include "config.h"

void wq_quantize_f32_q8(const float *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                        int32_t qmin, int32_t qmax, void *y) {
  wq_kernel_set_default()->quantize->quantize(x, n, scale, zero_point, dtype, qmin, qmax, y);
}

void wq_dequantize_q8_f32(const void *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                          float *y) {
  wq_kernel_set_default()->quantize->dequantize(x, n, scale, zero_point, dtype, y);
}
