/* Kernel timing harness: GOPS (2 ops per multiply-add) of the int8 GEMM on
 * the shapes beside the dot_i16x8 peak. Not a test: asserts nothing.
 * Usage: node kernel_bench.cjs [iterations-scale]
 *        node kernel_bench.cjs conv H W C M K S G ITERS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bench/bench_entry.h"

/* One convolution (node kernel_bench.cjs conv H W C M K S G ITERS): its
 * best of 5 rounds, to compare kernel changes on a model's layer shape. */
static int bench_one_conv(char **v) {
  int c[8];
  for (int i = 0; i < 8; i++)
    c[i] = atoi(v[i]);
  double s = 1e30;
  for (int round = 0; round < 5; round++) {
    double r = wqx_bench_qconv(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    if (r < s)
      s = r;
  }
  if (s < 0) {
    printf("qconv: bad shape\n");
    return 1;
  }
  int oh = (c[0] - 1) / c[5] + 1, ow = (c[1] - 1) / c[5] + 1;
  double ops = 2.0 * oh * ow * c[3] * (c[2] / c[6]) * c[4] * c[4];
  printf("qconv %dx%dx%d->%d k%d s%d g%d: %8.4f ms  %5.1f GOPS\n", c[0], c[1], c[2], c[3], c[4],
         c[5], c[6], s / c[7] * 1e3, ops * c[7] / s * 1e-9);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 10 && strcmp(argv[1], "conv") == 0)
    return bench_one_conv(argv + 2);
  double scale = argc > 1 ? atof(argv[1]) : 1.0;
  /* Best of several rounds: the machines are shared and V8 tiers up late. */
  double peak_s = 1e30;
  for (int round = 0; round < 5; round++) {
    double s = wqx_bench_dot_peak((int)(40 * scale) + 1);
    if (s < peak_s)
      peak_s = s;
  }
  double peak = wqx_bench_dot_peak_ops((int)(40 * scale) + 1) / peak_s * 1e-9;
  printf("dot_i16x8 peak: %.1f GOPS\n", peak);
  static const int shapes[][4] = {{256, 256, 256, 20}, {1, 1024, 1024, 100}, {3136, 64, 576, 3}};
  for (int i = 0; i < 3; i++) {
    int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2], iters = (int)(shapes[i][3] * scale);
    if (iters < 1)
      iters = 1;
    double s = 1e30;
    for (int round = 0; round < 5; round++) {
      double r = wqx_bench_qgemm(m, n, k, iters);
      if (r < s)
        s = r;
    }
    if (s < 0) {
      printf("qgemm %dx%dx%d: failed\n", m, n, k);
      continue;
    }
    double gops = 2.0 * m * n * k * iters / s * 1e-9;
    printf("qgemm %4dx%4dx%4d: %8.3f ms  %5.1f GOPS  %3.0f%% of peak\n", m, n, k, s / iters * 1e3,
           gops, 100.0 * gops / peak);
  }
  /* The small CNN's convolutions (smallcnn_qdq, 224x224 input). */
  static const int convs[][8] = {{224, 224, 3, 32, 3, 2, 1, 20},
                                 {112, 112, 32, 32, 3, 1, 32, 20},
                                 {112, 112, 32, 64, 1, 1, 1, 20}};
  for (int i = 0; i < 3; i++) {
    const int *c = convs[i];
    double s = 1e30;
    for (int round = 0; round < 3; round++) {
      double r = wqx_bench_qconv(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
      if (r < s)
        s = r;
    }
    int oh = (c[0] - 1) / c[5] + 1, ow = (c[1] - 1) / c[5] + 1;
    double ops = 2.0 * oh * ow * c[3] * (c[2] / c[6]) * c[4] * c[4];
    printf("qconv %dx%dx%d->%d k%d s%d g%d: %7.3f ms  %5.1f GOPS\n", c[0], c[1], c[2], c[3], c[4],
           c[5], c[6], s / c[7] * 1e3, ops * c[7] / s * 1e-9);
  }
  double fs = wqx_bench_sgemm(256, 256, 256, (int)(10 * scale) + 1);
  if (fs > 0)
    printf("sgemm  256x 256x 256: %8.3f ms  %5.1f GFLOPS\n", fs / ((int)(10 * scale) + 1) * 1e3,
           2.0 * 256 * 256 * 256 * ((int)(10 * scale) + 1) / fs * 1e-9);
  return 0;
}
