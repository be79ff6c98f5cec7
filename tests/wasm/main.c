/* Kernel test runner: every SIMD kernel against its scalar reference, bit
 * for bit, on randomized shapes and quantization parameters. Ends with
 * "N passed, M failed". Optional argv[1]: the seed. */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_test.h"

int main(int argc, char **argv) {
  wq_ktest t = {0x9E3779B97F4A7C15ULL, 0, 0};
  if (argc > 1)
    t.state = strtoull(argv[1], NULL, 0) | 1;
  wq_ktest_qgemm(&t);
  wq_ktest_qconv(&t);
  wq_ktest_sgemm(&t);
  wq_ktest_quantize(&t);
  wq_ktest_nhwc(&t);
  wq_ktest_qeltwise(&t);
  printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed ? 1 : 0;
}
