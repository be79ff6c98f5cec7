/* Every linked QuantizeLinear / DequantizeLinear variant (kernels/config.h)
 * vs the scalar reference variant (itself checked against quant_ref.h's
 * per-element path), bit for bit, including ties, NaN, infinities and
 * values far outside the range. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/config.h"
#include "kernels/ref/quant_ref.h"

void wq_ktest_quantize(wq_ktest *t) {
  char what[200];
  const wq_quantize_config *const *variants;
  const int n_variants = wq_quantize_variants(&variants);
  wq_ktest_case(t, n_variants > 1 && variants[0]->isa == WQ_ISA_REF,
                "quantize: the reference and at least one other variant are linked");
  for (int c = 0; c < 60 * (n_variants - 1); c++) {
    const wq_quantize_config *ref = variants[0], *var = variants[1 + c % (n_variants - 1)];
    const int64_t n = wq_ktest_int(t, 0, 300);
    const wq_dtype dt = wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8;
    const int32_t lo = dt == WQ_DT_UINT8 ? 0 : -128, hi = dt == WQ_DT_UINT8 ? 255 : 127;
    const int32_t zp = wq_ktest_int(t, lo, hi);
    const float scale = wq_ktest_int(t, 0, 2) == 0 ? 1.0f / (float)(1 << wq_ktest_int(t, 0, 8))
                                                   : wq_ktest_float(t, 1e-4f, 0.5f);
    int32_t qmin = lo, qmax = hi;
    if (wq_ktest_int(t, 0, 3) == 0) { /* a symmetric-style narrowed range */
      qmin = lo + 1;
      qmax = hi - 1;
    }
    float *x = malloc(sizeof(float) * (size_t)(n + 1)),
          *dq_ref = malloc(sizeof(float) * (size_t)(n + 1));
    float *dq_simd = malloc(sizeof(float) * (size_t)(n + 1));
    uint8_t *q_ref = malloc((size_t)n + 1), *q_simd = malloc((size_t)n + 1);
    for (int64_t i = 0; i < n; i++) {
      switch (wq_ktest_int(t, 0, 9)) {
      case 0: x[i] = ((float)wq_ktest_int(t, -300, 300) + 0.5f) * scale; break; /* ties */
      case 1: x[i] = NAN; break;
      case 2: x[i] = wq_ktest_int(t, 0, 1) ? INFINITY : -INFINITY; break;
      case 3: x[i] = wq_ktest_float(t, -1e9f, 1e9f); break;
      default: x[i] = wq_ktest_float(t, -200.0f, 200.0f) * scale; break;
      }
    }
    ref->quantize(x, n, scale, zp, dt, qmin, qmax, q_ref);
    var->quantize(x, n, scale, zp, dt, qmin, qmax, q_simd);
    int ok = memcmp(q_ref, q_simd, (size_t)n) == 0;
    /* The per-tensor reference itself equals quant_ref's per-element path. */
    for (int64_t i = 0; i < n && ok; i++)
      ok = wq_ref_q_load(q_ref, dt, i) == wq_ref_quantize_value(x[i], scale, zp, qmin, qmax);
    snprintf(what, sizeof what, "quantize[%s] n=%lld %s scale=%g zp=%d [%d,%d]", var->name,
             (long long)n, wq_dtype_name(dt), scale, (int)zp, (int)qmin, (int)qmax);
    wq_ktest_case(t, ok, what);
    ref->dequantize(q_ref, n, scale, zp, dt, dq_ref);
    var->dequantize(q_ref, n, scale, zp, dt, dq_simd);
    ok = memcmp(dq_ref, dq_simd, sizeof(float) * (size_t)n) == 0;
    snprintf(what, sizeof what, "dequantize[%s] n=%lld %s scale=%g zp=%d", var->name, (long long)n,
             wq_dtype_name(dt), scale, (int)zp);
    wq_ktest_case(t, ok, what);
    free(x), free(dq_ref), free(dq_simd), free(q_ref), free(q_simd);
  }
}
