/* Every linked float GEMM variant (kernels/config.h) vs the scalar
 * reference variant, within float rounding: they sum the same products in
 * different orders, so |diff| <= k * eps * sum|a*b|. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/config.h"
#include "kernels/sgemm.h"

static int run_case(wq_ktest *t, const wq_sgemm_config *ref, const wq_sgemm_config *var, int64_t m,
                    int64_t n, int64_t k, char *what, size_t cap) {
  int trans_a = wq_ktest_int(t, 0, 1), trans_b = wq_ktest_int(t, 0, 1);
  float alpha = wq_ktest_int(t, 0, 1) ? 1.0f : wq_ktest_float(t, -2.0f, 2.0f);
  float beta = wq_ktest_int(t, 0, 2) == 0 ? 0.0f : wq_ktest_float(t, -1.0f, 1.0f);
  int64_t ldc = n + wq_ktest_int(t, 0, 2);
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c_ref = malloc(sizeof(float) * (size_t)(m * ldc));
  float *c_simd = malloc(sizeof(float) * (size_t)(m * ldc));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = wq_ktest_float(t, -1.0f, 1.0f);
  for (int64_t i = 0; i < k * n; i++)
    b[i] = wq_ktest_float(t, -1.0f, 1.0f);
  for (int64_t i = 0; i < m * ldc; i++)
    c_ref[i] = c_simd[i] = wq_ktest_float(t, -1.0f, 1.0f);
  int64_t ars = trans_a ? 1 : k, acs = trans_a ? m : 1;
  int64_t brs = trans_b ? 1 : n, bcs = trans_b ? k : 1;
  int ok = ref->gemm(m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c_ref, ldc) == WQ_OK &&
           var->gemm(m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c_simd, ldc) == WQ_OK;
  double worst = 0;
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; j < ldc; j++) {
      double bound = 0;
      if (j < n) {
        for (int64_t p = 0; p < k; p++)
          bound += fabs((double)a[i * ars + p * acs] * b[p * brs + j * bcs]);
        bound = (double)(k + 2) * FLT_EPSILON * (fabs(alpha) * bound + 2.0) + 1e-6;
      }
      double diff = fabs((double)c_ref[i * ldc + j] - c_simd[i * ldc + j]);
      if (diff > bound) /* columns past n must stay untouched (bound 0) */
        ok = 0;
      if (diff > worst)
        worst = diff;
    }
  snprintf(what, cap,
           "sgemm[%s] m=%lld n=%lld k=%lld trans_a=%d trans_b=%d alpha=%g beta=%g (max diff %g)",
           var->name, (long long)m, (long long)n, (long long)k, trans_a, trans_b, alpha, beta,
           worst);
  free(a);
  free(b);
  free(c_ref);
  free(c_simd);
  return ok;
}

/* One variant against the reference (variants[0]). */
static void variant_cases(wq_ktest *t, const wq_sgemm_config *ref, const wq_sgemm_config *var) {
  char what[256];
  for (int c = 0; c < 80; c++) {
    int64_t m = wq_ktest_int(t, 0, 3) == 0 ? 1 : wq_ktest_int(t, 1, 130);
    int64_t n = wq_ktest_int(t, 1, 70), k = wq_ktest_int(t, 0, 300);
    int ok = run_case(t, ref, var, m, n, k, what, sizeof what);
    wq_ktest_case(t, ok, what);
  }
  /* Fewer rows than a register tile (the unpacked batch-1 paths), with
   * column chunks and k tails: n past 2048 columns, k not a multiple of 8. */
  for (int c = 0; c < 12; c++) {
    int64_t m = wq_ktest_int(t, 1, 3), n = wq_ktest_int(t, 1, 4200), k = wq_ktest_int(t, 1, 530);
    int ok = run_case(t, ref, var, m, n, k, what, sizeof what);
    wq_ktest_case(t, ok, what);
  }
  int ok = run_case(t, ref, var, 100, 600, 700, what, sizeof what); /* several cache blocks */
  wq_ktest_case(t, ok, what);
  /* B packed once for batch-1 products (MatMul with a constant B): the same
   * bits as the variant's unpacked batch-1 GEMM (both sum in k order). */
  for (int c = 0; c < 24; c++) {
    int64_t n = wq_ktest_int(t, 1, c < 20 ? 70 : 2100), k = wq_ktest_int(t, 1, 530);
    float *a = malloc(sizeof(float) * (size_t)k), *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c_sgemm = malloc(sizeof(float) * (size_t)n),
          *c_packed = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < k; i++)
      a[i] = wq_ktest_float(t, -1.0f, 1.0f);
    for (int64_t i = 0; i < k * n; i++)
      b[i] = wq_ktest_float(t, -1.0f, 1.0f);
    c_packed[n] = 7.0f; /* must stay untouched */
    float *bp = wq_sgemv_pack(n, k, b, n, 1);
    ok = bp && var->gemm(1, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c_sgemm, n) == WQ_OK;
    if (ok) {
      var->gemv_packed(n, k, a, 1, bp, c_packed);
      ok = memcmp(c_sgemm, c_packed, sizeof(float) * (size_t)n) == 0 && c_packed[n] == 7.0f;
    }
    snprintf(what, sizeof what,
             "sgemv[%s] packed n=%lld k=%lld: bit-identical to the batch-1 sgemm", var->name,
             (long long)n, (long long)k);
    wq_ktest_case(t, ok, what);
    free(bp);
    free(a);
    free(b);
    free(c_sgemm);
    free(c_packed);
  }
}

void wq_ktest_sgemm(wq_ktest *t) {
  const wq_sgemm_config *const *variants;
  const int n_variants = wq_sgemm_variants(&variants);
  wq_ktest_case(t, n_variants > 1 && variants[0]->isa == WQ_ISA_REF,
                "sgemm: the reference and at least one other variant are linked");
  for (int v = 1; v < n_variants; v++)
    variant_cases(t, variants[0], variants[v]);
}
