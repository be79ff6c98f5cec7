/* SIMD NHWC transitions, global average pool and max pool vs the scalar
 * references, bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/nhwc.h"
#include "kernels/simd/nhwc_simd.h"

void wq_ktest_nhwc(wq_ktest *t) {
  char what[200];
  for (int c = 0; c < 40; c++) {
    int64_t n = wq_ktest_int(t, 1, 2), ch = wq_ktest_int(t, 1, 67), s = wq_ktest_int(t, 1, 300);
    size_t bytes = (size_t)(n * ch * s);
    uint8_t *x = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
      x[i] = (uint8_t)wq_ktest_u32(t);
    wq_ref_nchw_to_nhwc(n, ch, s, 1, x, a);
    wq_simd_nchw_to_nhwc_u8(n, ch, s, x, b);
    wq_simd_nhwc_to_nchw_u8(n, ch, s, b, back);
    int ok = memcmp(a, b, bytes) == 0 && memcmp(back, x, bytes) == 0;
    snprintf(what, sizeof what, "transpose n=%lld c=%lld s=%lld", (long long)n, (long long)ch,
             (long long)s);
    wq_ktest_case(t, ok, what);

    wq_int8_pool_quant q = {.x_dtype = wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8,
                            .y_dtype = wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8,
                            .x_scale = wq_ktest_float(t, 0.001f, 0.1f),
                            .y_scale = wq_ktest_float(t, 0.001f, 0.1f)};
    q.x_zero_point =
        q.x_dtype == WQ_DT_UINT8 ? wq_ktest_int(t, 0, 255) : wq_ktest_int(t, -128, 127);
    q.y_zero_point =
        q.y_dtype == WQ_DT_UINT8 ? wq_ktest_int(t, 0, 255) : wq_ktest_int(t, -128, 127);
    q.y_min = q.y_dtype == WQ_DT_UINT8 ? 0 : -128;
    q.y_max = q.y_dtype == WQ_DT_UINT8 ? 255 : 127;
    uint8_t gr[200], gs[200];
    wq_ref_qgap_nhwc(n, s, ch, &q, x, gr);
    wq_simd_qgap_nhwc(n, s, ch, &q, x, gs);
    ok = memcmp(gr, gs, (size_t)(n * ch)) == 0;
    snprintf(what, sizeof what, "global average pool n=%lld pixels=%lld c=%lld %s->%s",
             (long long)n, (long long)s, (long long)ch, wq_dtype_name(q.x_dtype),
             wq_dtype_name(q.y_dtype));
    wq_ktest_case(t, ok, what);

    wq_pool2d p = {.batch = n,
                   .channels = ch,
                   .in_h = wq_ktest_int(t, 1, 9),
                   .in_w = wq_ktest_int(t, 1, 9),
                   .kernel_h = wq_ktest_int(t, 1, 3),
                   .kernel_w = wq_ktest_int(t, 1, 3),
                   .stride_h = wq_ktest_int(t, 1, 2),
                   .stride_w = wq_ktest_int(t, 1, 2),
                   .dil_h = wq_ktest_int(t, 1, 2),
                   .dil_w = 1,
                   .pad_top = wq_ktest_int(t, 0, 1),
                   .pad_left = wq_ktest_int(t, 0, 1)};
    p.out_h = (p.in_h + 2 * p.pad_top - (p.kernel_h - 1) * p.dil_h - 1) / p.stride_h + 1;
    p.out_w = (p.in_w + 2 * p.pad_left - (p.kernel_w - 1) * p.dil_w - 1) / p.stride_w + 1;
    if (p.out_h >= 1 && p.out_w >= 1 && p.in_h * p.in_w <= s) {
      size_t out_bytes = (size_t)(n * p.out_h * p.out_w * ch);
      uint8_t *mr = malloc(out_bytes), *ms = malloc(out_bytes);
      bool is_unsigned = wq_ktest_int(t, 0, 1);
      wq_ref_maxpool_nhwc_q8(&p, is_unsigned, x, mr);
      wq_simd_maxpool_nhwc_q8(&p, is_unsigned, x, ms);
      ok = memcmp(mr, ms, out_bytes) == 0;
      snprintf(what, sizeof what, "max pool %lldx%lld c=%lld k=%lldx%lld s=%lldx%lld",
               (long long)p.in_h, (long long)p.in_w, (long long)ch, (long long)p.kernel_h,
               (long long)p.kernel_w, (long long)p.stride_h, (long long)p.stride_w);
      wq_ktest_case(t, ok, what);
      free(mr);
      free(ms);
    }
    free(x), free(a), free(b), free(back);
  }
}
