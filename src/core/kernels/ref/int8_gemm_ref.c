#include "int8_gemm_ref.h"

#include "quant_ref.h"

void wq_int8_gemm_ref(const wq_int8_gemm_params *p, const void *a, void *y) {
  const int64_t a_row = p->trans_a ? 1 : p->K, a_col = p->trans_a ? p->M : 1;
  for (int64_t m = 0; m < p->M; m++)
    for (int64_t n = 0; n < p->N; n++) {
      const int32_t *wn = p->w + n * p->K;
      int64_t sum = p->bias ? p->bias[n] : 0;
      for (int64_t k = 0; k < p->K; k++) {
        int32_t av = wq_ref_q_load(a, p->a_dtype, m * a_row + k * a_col);
        sum += (int64_t)(av - p->a_zero_point) * wn[k];
      }
      wq_int8_requant_store(&p->out, n, (int32_t)(uint32_t)(uint64_t)sum, y, m * p->N + n);
    }
}
