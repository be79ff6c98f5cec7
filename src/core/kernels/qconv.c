#include "qconv.h"

wq_status wq_qconv_plan_init(wq_qconv_plan *p, const wq_qconv_config *config,
                             const wq_qconv_desc *d, const char *node, wq_error *err) {
  WQ_TRY(wq_qconv_plan_common(p, d, node, err));
  p->config = config;
  wq_status st = config->pack(p, d, node, err);
  if (st != WQ_OK)
    wq_qconv_plan_free(p);
  return st;
}

int wq_qconv_isa(const wq_qconv_plan *p) {
  return p->algo == WQ_QCONV_DEPTHWISE ? p->config->depthwise_isa : p->config->isa;
}

int64_t wq_qconv_scratch_bytes(const wq_qconv_plan *p) {
  return p->config ? p->config->scratch_bytes(p) : 0;
}

wq_status wq_qconv_run(const wq_qconv_plan *p, const void *x, void *y, wq_error *err) {
  return p->config->run(p, x, y, err);
}
