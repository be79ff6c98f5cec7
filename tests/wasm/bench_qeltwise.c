/* Microbenchmark of the int8 elementwise / data-movement kernels: SIMD vs
 * scalar reference on activation-sized data (best of rounds). Not a test.
 * Build and run (from the repo root, after wasm_build/build_tests.sh):
 *   emcc -O3 -msimd128 -Isrc/core -Itests/wasm tests/wasm/bench_qeltwise.c \
 *     $(ls wasm_build/out/test-obj/src__core__*.o) -sENVIRONMENT=node \
 *     -sALLOW_MEMORY_GROWTH=1 -o /tmp/bench_qeltwise.cjs && node /tmp/bench_qeltwise.cjs */
#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nhwc.h"
#include "kernels/qeltwise.h"
#include "kernels/ref/ref_qeltwise.h"
#include "kernels/simd/nhwc_simd.h"
#include "kernels/simd/qeltwise_simd.h"

enum { H = 56, W = 56, C = 64, N_ELEMS = H * W * C };

typedef struct {
  uint8_t *a, *b, *y, *table;
  int32_t src_h[2 * H], src_w[2 * W];
  wq_qbinary_params bin;
  wq_int8_pool_quant pool;
} bench_data;

typedef void (*bench_fn)(bench_data *d, int simd);

static void run_add(bench_data *d, int simd) {
  (simd ? wq_simd_qbinary_row : wq_ref_qbinary_row)(&d->bin, N_ELEMS, d->a, 1, d->b, 1, d->y);
}

static void run_add_channel(bench_data *d, int simd) {
  /* per-channel operand on NHWC: one run per pixel, as wq_qbinary walks it */
  for (int p = 0; p < H * W; p++)
    (simd ? wq_simd_qbinary_row : wq_ref_qbinary_row)(&d->bin, C, d->a + p * C, 1, d->b, 1,
                                                      d->y + p * C);
}

static void run_lookup(bench_data *d, int simd) {
  (simd ? wq_simd_lookup_q8 : wq_ref_lookup_q8)(d->table, true, N_ELEMS, d->a, d->y);
}

static void run_concat(bench_data *d, int simd) {
  /* two 32-channel inputs into 64 channels, one requantized */
  (simd ? wq_simd_copy_rows_q8 : wq_ref_copy_rows_q8)(H * W, 32, 32, 64, NULL, true, d->a, d->y);
  (simd ? wq_simd_copy_rows_q8 : wq_ref_copy_rows_q8)(H * W, 32, 32, 64, d->table, true, d->b,
                                                      d->y + 32);
}

static void run_resize(bench_data *d, int simd) {
  wq_resize_nhwc r = {.batch = 1,
                      .in_h = H / 2,
                      .in_w = W / 2,
                      .out_h = H,
                      .out_w = W,
                      .channels = C,
                      .src_h = d->src_h,
                      .src_w = d->src_w};
  (simd ? wq_simd_resize_nearest_nhwc_q8 : wq_ref_resize_nearest_nhwc_q8)(&r, d->a, d->y);
}

static void run_d2s_dcr(bench_data *d, int simd) {
  (simd ? wq_simd_depth_to_space_nhwc_q8 : wq_ref_depth_to_space_nhwc_q8)(1, H / 2, W / 2, 4 * C, 2,
                                                                          false, d->a, d->y);
}

static void run_d2s_crd(bench_data *d, int simd) {
  (simd ? wq_simd_depth_to_space_nhwc_q8 : wq_ref_depth_to_space_nhwc_q8)(1, H / 2, W / 2, 4 * C, 2,
                                                                          true, d->a, d->y);
}

static void run_avgpool(bench_data *d, int simd) {
  wq_pool2d p = {.batch = 1,
                 .channels = C,
                 .in_h = H,
                 .in_w = W,
                 .out_h = H,
                 .out_w = W,
                 .kernel_h = 3,
                 .kernel_w = 3,
                 .stride_h = 1,
                 .stride_w = 1,
                 .dil_h = 1,
                 .dil_w = 1,
                 .pad_top = 1,
                 .pad_left = 1,
                 .pad_bottom = 1,
                 .pad_right = 1};
  (simd ? wq_simd_qavgpool_nhwc : wq_ref_qavgpool_nhwc)(&p, false, &d->pool, d->a, d->y);
}

static double best_ms(bench_fn fn, bench_data *d, int simd, int iters) {
  double best = 1e30;
  for (int round = 0; round < 7; round++) {
    double t0 = emscripten_get_now();
    for (int i = 0; i < iters; i++)
      fn(d, simd);
    double ms = (emscripten_get_now() - t0) / iters;
    if (ms < best)
      best = ms;
  }
  return best;
}

int main(void) {
  bench_data d;
  d.a = malloc(N_ELEMS);
  d.b = malloc(N_ELEMS);
  d.y = malloc(N_ELEMS);
  d.table = malloc(256);
  uint32_t s = 12345;
  for (int i = 0; i < N_ELEMS; i++) {
    s = s * 1664525u + 1013904223u;
    d.a[i] = (uint8_t)(s >> 24);
    d.b[i] = (uint8_t)(s >> 16);
  }
  for (int i = 0; i < 256; i++)
    d.table[i] = (uint8_t)(255 - i);
  for (int i = 0; i < H; i++)
    d.src_h[i] = i / 2;
  for (int i = 0; i < W; i++)
    d.src_w[i] = i / 2;
  d.bin = (wq_qbinary_params){.a_dtype = WQ_DT_UINT8,
                              .b_dtype = WQ_DT_UINT8,
                              .y_dtype = WQ_DT_UINT8,
                              .a_scale = 0.02f,
                              .b_scale = 0.03f,
                              .y_scale = 0.04f,
                              .a_zero_point = 128,
                              .b_zero_point = 120,
                              .y_zero_point = 100,
                              .y_min = 0,
                              .y_max = 255};
  d.pool = (wq_int8_pool_quant){.x_dtype = WQ_DT_UINT8,
                                .y_dtype = WQ_DT_UINT8,
                                .x_scale = 0.02f,
                                .y_scale = 0.015f,
                                .x_zero_point = 128,
                                .y_zero_point = 130,
                                .y_min = 0,
                                .y_max = 255};
  static const struct {
    const char *name;
    bench_fn fn;
  } cases[] = {{"QAdd equal shapes", run_add},
               {"QAdd per-channel", run_add_channel},
               {"QLookup", run_lookup},
               {"QConcat 32+32 ch", run_concat},
               {"resize nearest 2x", run_resize},
               {"depth_to_space DCR", run_d2s_dcr},
               {"depth_to_space CRD", run_d2s_crd},
               {"avgpool 3x3 s1", run_avgpool}};
  printf("kernel                 scalar ms    simd ms  speedup   (56x56x64 int8)\n");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double r = best_ms(cases[i].fn, &d, 0, 5), v = best_ms(cases[i].fn, &d, 1, 5);
    d.bin.mul = false;
    printf("%-20s %10.3f %10.3f %7.1fx\n", cases[i].name, r, v, r / v);
  }
  d.bin.mul = true;
  double r = best_ms(run_add, &d, 0, 5), v = best_ms(run_add, &d, 1, 5);
  printf("%-20s %10.3f %10.3f %7.1fx\n", "QMul equal shapes", r, v, r / v);
  free(d.a), free(d.b), free(d.y), free(d.table);
  return 0;
}
