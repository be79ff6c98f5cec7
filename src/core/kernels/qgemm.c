#include "qgemm.h"

#include <string.h>

wq_status wq_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_config *config, const wq_qgemm_desc *d,
                        const char *node, wq_error *err) {
  memset(p, 0, sizeof *p);
  WQ_TRY(wq_qgemm_desc_check(d, node, err));
  WQ_TRY(config->pack(p, d, node, err));
  p->config = config;
  return WQ_OK;
}

int64_t wq_qgemm_scratch_bytes(const wq_qgemm_packed *p) {
  return p->config ? p->config->scratch_bytes(p) : 0;
}

const char *wq_qgemm_kernel_name(int64_t m) { return m == 1 ? "gemv" : "gemm"; }

wq_status wq_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                       int64_t ldy, wq_error *err) {
  const wq_qgemm_config *c = p->config;
  return (m == 1 && c->gemv ? c->gemv : c->run)(p, m, a, lda, y, ldy, err);
}
