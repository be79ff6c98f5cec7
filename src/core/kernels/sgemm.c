#include "sgemm.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "../ir/checked.h"
#include "../runtime/parallel.h"
#include "config.h"

/* The build's float GEMM variant. */
static const wq_sgemm_config *sgemm_config(void) { return wq_kernel_set_default()->sgemm; }

/* Products smaller than this many multiply-adds run on one thread: waking
 * the workers costs more than they save (at 2^19, mnist-8 float and the
 * 1x1024x1024 GEMV ran 0.7x as fast on 2 threads as on one). */
#define SGEMM_PARALLEL_MIN_MACS ((int64_t)1 << 21)
#define SGEMM_TIMED_MACS ((int64_t)1 << 23)

typedef struct {
  int64_t m, k;
  float alpha, beta;
  const float *a, *b;
  const float *a_packed; /* A packed once for every slice (variants with pack_a), or NULL */
  int64_t a_row_stride, a_col_stride, b_row_stride, b_col_stride, ldc;
  float *c;
  atomic_int status;
} sgemm_job;

/* Columns [j0, j1) of C: every element sums its products in the same order
 * whichever slice it is in, so the split changes no bit. */
static void sgemm_columns(void *ctx, int64_t j0, int64_t j1) {
  sgemm_job *job = ctx;
  const wq_sgemm_config *cfg = sgemm_config();
  wq_status st;
  if (job->a_packed)
    st = cfg->gemm_packed_a(job->m, j1 - j0, job->k, job->alpha, job->a_packed,
                            job->b + j0 * job->b_col_stride, job->b_row_stride, job->b_col_stride,
                            job->beta, job->c + j0, job->ldc);
  else
    st = cfg->gemm(job->m, j1 - j0, job->k, job->alpha, job->a, job->a_row_stride,
                   job->a_col_stride, job->b + j0 * job->b_col_stride, job->b_row_stride,
                   job->b_col_stride, job->beta, job->c + j0, job->ldc);
  if (st != WQ_OK)
    atomic_store(&job->status, (int)st);
}

int64_t wq_sgemm_scratch_bytes(int64_t m, int64_t n, int64_t k) {
  const wq_sgemm_config *cfg = sgemm_config();
  int64_t bytes = cfg->scratch_bytes(m, n, k);
  const int64_t mnk[3] = {m, n, k};
  int64_t macs;
  if (cfg->pack_a && m >= 4 && !(wq_product_within(mnk, 3, SGEMM_PARALLEL_MIN_MACS - 1, &macs)))
    bytes += cfg->packed_a_floats(m, k) * (int64_t)sizeof(float); /* threads only */
  return bytes;
}

wq_status wq_sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t a_row_stride, int64_t a_col_stride, const float *b, int64_t b_row_stride,
                   int64_t b_col_stride, float beta, float *c, int64_t ldc) {
  /* Column slices of at least 64 (a multiple of the 8-column tile), at most
   * 8 of them: the split depends on n alone. */
  const wq_sgemm_config *cfg = sgemm_config();
  int64_t grain = (n / 8 + 7) / 8 * 8;
  if (grain < 64)
    grain = 64;
  /* Under a time limit, slices of about SGEMM_TIMED_MACS (at least 64
   * columns; on one thread no smaller a product is split), so the limit
   * is checked between them. Builds without threads carry no split code
   * (size): there the limit is checked between nodes only. */
#ifdef WQ_THREADS
  const bool timed = wq_deadline_current() != NULL;
#else
  const bool timed = false;
#endif
  if (timed && m * k > 0) {
    int64_t cols = (SGEMM_TIMED_MACS / (m * k) + 7) / 8 * 8;
    if (cols < 64)
      cols = 64;
    if (cols < grain || wq_parallel_threads() == 1)
      grain = cols;
  }
  if ((wq_parallel_threads() > 1 || timed) && n > grain && m * n * k >= SGEMM_PARALLEL_MIN_MACS) {
    sgemm_job job = {.m = m,
                     .k = k,
                     .alpha = alpha,
                     .beta = beta,
                     .a = a,
                     .b = b,
                     .a_row_stride = a_row_stride,
                     .a_col_stride = a_col_stride,
                     .b_row_stride = b_row_stride,
                     .b_col_stride = b_col_stride,
                     .ldc = ldc,
                     .c = c};
    atomic_init(&job.status, (int)WQ_OK);
    /* Every slice reads all of A: packed here once, not once per slice (a
     * 256^3 product's 4 slices packed it 4 times). */
    float *packed = NULL;
    if (cfg->pack_a && m >= 4) {
      size_t bytes;
      if (!wq_bytes_size(cfg->packed_a_floats(m, k), (int64_t)sizeof(float), &bytes) ||
          !(packed = malloc(bytes)))
        return WQ_ERR_OUT_OF_MEMORY;
      cfg->pack_a(m, k, a, a_row_stride, a_col_stride, packed);
      job.a_packed = packed;
    }
    wq_parallel_for(n, grain, sgemm_columns, &job);
    free(packed);
    return (wq_status)atomic_load(&job.status);
  }
  return cfg->gemm(m, n, k, alpha, a, a_row_stride, a_col_stride, b, b_row_stride, b_col_stride,
                   beta, c, ldc);
}

/* Load time only: cold (optimized for size). */
__attribute__((cold)) float *wq_sgemv_pack(int64_t n, int64_t k, const float *b,
                                           int64_t b_row_stride, int64_t b_col_stride) {
  int64_t panels = (n + WQ_SGEMV_NR - 1) / WQ_SGEMV_NR;
  float *bp = malloc(sizeof(float) * (size_t)(panels * k * WQ_SGEMV_NR)), *d = bp;
  for (int64_t j0 = 0; bp && j0 < n; j0 += WQ_SGEMV_NR)
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = j0; j < j0 + WQ_SGEMV_NR; j++)
        *d++ = j < n ? b[p * b_row_stride + j * b_col_stride] : 0.0f;
  return bp;
}

void wq_sgemv_packed(int64_t n, int64_t k, const float *a, int64_t a_col_stride, const float *bp,
                     float *c) {
  sgemm_config()->gemv_packed(n, k, a, a_col_stride, bp, c);
}
