#include "int8_requant.h"

#include "quant_ref.h"

void wq_int8_requant_store(const wq_int8_requant *rq, int64_t c, int32_t acc, void *y, int64_t i) {
  if (rq->y_dtype == WQ_DT_INT32) {
    ((int32_t *)y)[i] = acc;
    return;
  }
  int32_t q = wq_ref_requantize_leaky(acc, rq->multiplier[c], rq->leaky ? rq->leaky_alpha : 1.0f,
                                      rq->zero_point, rq->act_min, rq->act_max);
  wq_ref_q_store(y, rq->y_dtype, i, q);
}
