/* Scalar reference of the packed int8 GEMM (kernels/qgemm.h): the
 * numerical truth the SIMD kernels are tested against bit for bit. The
 * "packing" keeps W' = stored weights row-major by column: w[j * k + kk]. */
#ifndef WQ_KERNELS_REF_REF_QGEMM_H
#define WQ_KERNELS_REF_REF_QGEMM_H

#include "../common/kernel_config.h"

/* The reference variant's record (named "ref", always linked). */
extern const wq_qgemm_config wq_qgemm_config_ref;

wq_status wq_ref_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                            wq_error *err);

/* Y = requant(bias + sum_k (A - a_zp)(W' - w_zp')), exact in 64 bits and
 * wrapped to int32, then quant_ref's requantization saturated to
 * [y_min, y_max]. */
void wq_ref_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                      int64_t ldy);

/* The float output stage (qgemm.h): Cast, Mul, Add, Relu, each
 * rounded to float32 on its own (separate statements: no contraction). */
static inline float wq_ref_float_stage(int32_t acc, float multiplier, float bias, bool relu) {
  float v = (float)acc * multiplier;
  v = v + bias;
  return relu && v < 0.0f ? 0.0f : v;
}

/* Element i of an int8 or uint8 buffer. */
static inline int32_t wq_ref_q8_load(const void *data, wq_dtype dtype, int64_t i) {
  return dtype == WQ_DT_UINT8 ? (int32_t)((const uint8_t *)data)[i]
                              : (int32_t)((const int8_t *)data)[i];
}

static inline void wq_ref_q8_store(void *data, wq_dtype dtype, int64_t i, int32_t v) {
  if (dtype == WQ_DT_UINT8)
    ((uint8_t *)data)[i] = (uint8_t)v;
  else
    ((int8_t *)data)[i] = (int8_t)v;
}

#endif
