#include "sgemm.h"

#include "ref/ref_gemm_f32.h"

wq_status wq_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t a_row_stride, int64_t a_col_stride, const float *b, int64_t b_row_stride,
                   int64_t b_col_stride, float beta, float *c, int64_t ldc) {
#ifdef __wasm_simd128__
  return wq_simd_sgemm(m, n, k, alpha, a, a_row_stride, a_col_stride, b, b_row_stride, b_col_stride,
                       beta, c, ldc);
#else
  return wq_ref_sgemm(m, n, k, alpha, a, a_row_stride, a_col_stride, b, b_row_stride, b_col_stride,
                      beta, c, ldc);
#endif
}
