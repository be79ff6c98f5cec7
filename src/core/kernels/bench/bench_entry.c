#include "bench_entry.h"

#include <emscripten.h>
#include <stdint.h>
#include <stdlib.h>
#include <wasm_simd128.h>

#include "../../runtime/parallel.h"
#include "../config.h"
#include "../qconv.h"
#include "../qgemm.h"
#include "../sgemm.h"

/* Binds `bytes` of scratch for the runs that follow (one thread, as the
 * timings run); the caller frees the result. NULL with bytes > 0: failed. */
static void *bind_scratch(int64_t bytes) {
  void *block = bytes > 0 ? aligned_alloc(16, (size_t)wq_scratch_round(bytes)) : NULL;
  wq_scratch_bind((wq_scratch){block, block ? (size_t)wq_scratch_round(bytes) : 0});
  return block;
}

static uint32_t next_random(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

EMSCRIPTEN_KEEPALIVE double wqx_bench_qgemm(int m, int n, int k, int iters) {
  if (m < 1 || n < 1 || k < 1 || iters < 1)
    return -1.0;
  int8_t *a = malloc((size_t)m * (size_t)k), *w = malloc((size_t)k * (size_t)n);
  int8_t *y = malloc((size_t)m * (size_t)n);
  float *mult = malloc(sizeof(float) * (size_t)n);
  int32_t *bias = malloc(sizeof(int32_t) * (size_t)n);
  double seconds = -1.0;
  wq_qgemm_packed packed = {0};
  void *scratch = NULL;
  if (!a || !w || !y || !mult || !bias)
    goto done;
  uint32_t s = 12345;
  for (size_t i = 0; i < (size_t)m * (size_t)k; i++)
    a[i] = (int8_t)next_random(&s);
  for (size_t i = 0; i < (size_t)k * (size_t)n; i++)
    w[i] = (int8_t)next_random(&s);
  for (int j = 0; j < n; j++) {
    mult[j] = 1.0f / (float)(64 * k) * (float)(1 + j % 7);
    bias[j] = (int32_t)(next_random(&s) % 2001) - 1000;
  }
  wq_qgemm_desc d = {.n = n,
                     .k = k,
                     .a_dtype = WQ_DT_INT8,
                     .a_zero_point = 3,
                     .w_dtype = WQ_DT_INT8,
                     .w = w,
                     .w_k_stride = n,
                     .w_n_stride = 1,
                     .bias = bias,
                     .multiplier = mult,
                     .multiplier_count = n,
                     .y_dtype = WQ_DT_INT8,
                     .y_zero_point = -5,
                     .y_min = -128,
                     .y_max = 127};
  if (wq_qgemm_pack(&packed, wq_kernel_set_default()->qgemm, &d, "bench", NULL) != WQ_OK)
    goto done;
  if (!(scratch = bind_scratch(wq_qgemm_scratch_bytes(&packed))) && wq_qgemm_scratch_bytes(&packed))
    goto done;
  if (wq_qgemm_run(&packed, m, a, k, y, n, NULL) != WQ_OK)
    goto done;
  double t0 = emscripten_get_now();
  for (int it = 0; it < iters; it++)
    if (wq_qgemm_run(&packed, m, a, k, y, n, NULL) != WQ_OK)
      goto done;
  seconds = (emscripten_get_now() - t0) * 1e-3;
done:
  wq_scratch_bind((wq_scratch){NULL, 0});
  free(scratch);
  wq_qgemm_packed_free(&packed);
  free(a);
  free(w);
  free(y);
  free(mult);
  free(bias);
  return seconds;
}

EMSCRIPTEN_KEEPALIVE double wqx_bench_qconv(int h, int w, int c, int m, int k, int stride,
                                            int group, int iters) {
  if (h < 1 || w < 1 || c < 1 || m < 1 || k < 1 || stride < 1 || group < 1 || c % group ||
      m % group || iters < 1)
    return -1.0;
  wq_qconv_desc d = {.batch = 1,
                     .in_channels = c,
                     .out_channels = m,
                     .group = group,
                     .x_dtype = WQ_DT_UINT8,
                     .x_zero_point = 128,
                     .w_dtype = WQ_DT_INT8,
                     .multiplier_count = m,
                     .y_dtype = WQ_DT_UINT8,
                     .y_zero_point = 0,
                     .y_min = 0,
                     .y_max = 255};
  d.geo.n_spatial = 2;
  for (int i = 0; i < 2; i++) {
    d.geo.in[i] = i == 0 ? h : w;
    d.geo.kernel[i] = k;
    d.geo.stride[i] = stride;
    d.geo.dilation[i] = 1;
    d.geo.pad_begin[i] = d.geo.pad_end[i] = (k - 1) / 2;
  }
  if (wq_conv_geometry_resolve(&d.geo, WQ_AUTO_PAD_NOTSET, false) >= 0)
    return -1.0;
  size_t in_size = (size_t)h * (size_t)w * (size_t)c;
  size_t out_size = (size_t)wq_conv_geometry_out_size(&d.geo) * (size_t)m;
  size_t w_size = (size_t)m * (size_t)(c / group) * (size_t)k * (size_t)k;
  uint8_t *x = malloc(in_size), *y = malloc(out_size);
  int8_t *wt = malloc(w_size);
  float *mult = malloc(sizeof(float) * (size_t)m);
  double seconds = -1.0;
  wq_qconv_plan plan = {0};
  void *scratch = NULL;
  if (!x || !y || !wt || !mult)
    goto done;
  uint32_t s = 4242;
  for (size_t i = 0; i < in_size; i++)
    x[i] = (uint8_t)next_random(&s);
  for (size_t i = 0; i < w_size; i++)
    wt[i] = (int8_t)next_random(&s);
  for (int j = 0; j < m; j++)
    mult[j] = 1.0f / (float)(64 * (c / group) * k * k);
  d.w = wt;
  d.multiplier = mult;
  if (wq_qconv_plan_init(&plan, wq_kernel_set_default()->qconv, &d, "bench", NULL) != WQ_OK)
    goto done;
  if (!(scratch = bind_scratch(wq_qconv_scratch_bytes(&plan))) && wq_qconv_scratch_bytes(&plan))
    goto done;
  if (wq_qconv_run(&plan, x, y, NULL) != WQ_OK)
    goto done;
  double t0 = emscripten_get_now();
  for (int it = 0; it < iters; it++)
    if (wq_qconv_run(&plan, x, y, NULL) != WQ_OK)
      goto done;
  seconds = (emscripten_get_now() - t0) * 1e-3;
done:
  wq_scratch_bind((wq_scratch){NULL, 0});
  free(scratch);
  wq_qconv_plan_free(&plan);
  free(x);
  free(y);
  free(wt);
  free(mult);
  return seconds;
}

enum { PEAK_INNER = 1 << 16 };

EMSCRIPTEN_KEEPALIVE double wqx_bench_dot_peak_ops(int iters) {
  return (double)iters * PEAK_INNER * 8 * 16; /* 8 dots of 8 multiply-adds */
}

EMSCRIPTEN_KEEPALIVE double wqx_bench_dot_peak(int iters) {
  if (iters < 1)
    return -1.0;
  /* A small ring of int16 vectors: the loads keep the compiler from folding
   * the loop, and stay in L1. */
  static const int ring = 64;
  int16_t *data = malloc(sizeof(int16_t) * 8 * ring);
  if (!data)
    return -1.0;
  for (int i = 0; i < 8 * ring; i++)
    data[i] = (int16_t)(i * 37 % 255 - 127);
  v128_t x0 = wasm_i16x8_splat(1), x1 = wasm_i16x8_splat(-2), x2 = wasm_i16x8_splat(3),
         x3 = wasm_i16x8_splat(-4);
  v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  double t0 = emscripten_get_now();
  for (int it = 0; it < iters; it++)
    for (int i = 0; i < PEAK_INNER; i++) {
      const int16_t *p = data + (i & (ring / 2 - 1)) * 16;
      v128_t w0 = wasm_v128_load(p), w1 = wasm_v128_load(p + 8);
      c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(x0, w0));
      c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(x0, w1));
      c2 = wasm_i32x4_add(c2, wasm_i32x4_dot_i16x8(x1, w0));
      c3 = wasm_i32x4_add(c3, wasm_i32x4_dot_i16x8(x1, w1));
      c4 = wasm_i32x4_add(c4, wasm_i32x4_dot_i16x8(x2, w0));
      c5 = wasm_i32x4_add(c5, wasm_i32x4_dot_i16x8(x2, w1));
      c6 = wasm_i32x4_add(c6, wasm_i32x4_dot_i16x8(x3, w0));
      c7 = wasm_i32x4_add(c7, wasm_i32x4_dot_i16x8(x3, w1));
    }
  double seconds = (emscripten_get_now() - t0) * 1e-3;
  v128_t sum = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_add(c0, c1), wasm_i32x4_add(c2, c3)),
                              wasm_i32x4_add(wasm_i32x4_add(c4, c5), wasm_i32x4_add(c6, c7)));
  /* Publish the result so the loop is not dead code. */
  volatile int32_t sink = wasm_i32x4_extract_lane(sum, 0);
  (void)sink;
  free(data);
  return seconds;
}

EMSCRIPTEN_KEEPALIVE double wqx_bench_sgemm(int m, int n, int k, int iters) {
  if (m < 1 || n < 1 || k < 1 || iters < 1)
    return -1.0;
  float *a = malloc(sizeof(float) * (size_t)m * (size_t)k);
  float *b = malloc(sizeof(float) * (size_t)k * (size_t)n);
  float *c = malloc(sizeof(float) * (size_t)m * (size_t)n);
  double seconds = -1.0;
  if (!a || !b || !c)
    goto done;
  uint32_t s = 777;
  for (size_t i = 0; i < (size_t)m * (size_t)k; i++)
    a[i] = (float)(next_random(&s) % 1000) * 1e-3f - 0.5f;
  for (size_t i = 0; i < (size_t)k * (size_t)n; i++)
    b[i] = (float)(next_random(&s) % 1000) * 1e-3f - 0.5f;
  if (wq_sgemm(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n) != WQ_OK)
    goto done;
  double t0 = emscripten_get_now();
  for (int it = 0; it < iters; it++)
    if (wq_sgemm(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n) != WQ_OK)
      goto done;
  seconds = (emscripten_get_now() - t0) * 1e-3;
done:
  free(a);
  free(b);
  free(c);
  return seconds;
}
