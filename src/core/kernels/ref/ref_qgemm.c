#include "ref_qgemm.h"

#include "../../runtime/parallel.h"
#include "quant_ref.h"

wq_status wq_ref_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                            wq_error *err) {
  WQ_TRY(wq_qgemm_packed_alloc(p, d, 1, 1, d->n * d->k, node, err));
  for (int64_t j = 0; j < d->n; j++)
    for (int64_t kk = 0; kk < d->k; kk++)
      p->w[j * d->k + kk] = (int8_t)wq_qgemm_stored_weight(d, kk, j);
  return WQ_OK;
}

void wq_ref_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                      int64_t ldy) {
  /* Under a time limit (wq_deadline_passed), checked once per row. */
  const bool timed = wq_deadline_current() != NULL;
  for (int64_t i = 0; i < m; i++) {
    if (timed && wq_deadline_passed())
      return;
    for (int64_t j = 0; j < p->n; j++) {
      const int8_t *wj = p->w + j * p->k;
      int64_t sum = p->bias[j];
      for (int64_t kk = 0; kk < p->k; kk++)
        sum += (int64_t)(wq_ref_q8_load(a, p->a_dtype, i * lda + kk) - p->a_zero_point) *
               (wj[kk] - p->w_zero_point[j]);
      int32_t acc = (int32_t)(uint32_t)(uint64_t)sum;
      if (p->y_dtype == WQ_DT_FLOAT) {
        ((float *)y)[i * ldy + j] =
            wq_ref_float_stage(acc, p->multiplier[j], p->float_bias[j], p->float_relu);
        continue;
      }
      int32_t q = wq_ref_requantize_leaky(acc, p->multiplier[j], p->leaky ? p->leaky_alpha : 1.0f,
                                          p->y_zero_point, p->y_min, p->y_max);
      wq_ref_q8_store(y, p->y_dtype, i * ldy + j, q);
    }
  }
}

static wq_status ref_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                         int64_t ldy, wq_error *err) {
  (void)err;
  wq_ref_qgemm_run(p, m, a, lda, y, ldy);
  return WQ_OK;
}

/* The reference allocates nothing while it runs. */
static int64_t ref_scratch(const wq_qgemm_packed *p) {
  (void)p;
  return 0;
}

const wq_qgemm_config wq_qgemm_config_ref = {
    .name = "ref",
    .isa = WQ_ISA_REF,
    .mr = 1,
    .nr = 1,
    .kr = 1,
    .pack = wq_ref_qgemm_pack,
    .run = ref_run,
    .gemv = NULL,
    .scratch_bytes = ref_scratch,
};
