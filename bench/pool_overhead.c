/* What a parallel region costs on the threaded build: wq_parallel_for over
 * two chunks of `work` units each, on a pool of 2 threads, against the same
 * chunks run one after the other on the caller; many rounds interleaved,
 * medians and minima printed per work size. The work size where two threads
 * start to win is the threshold below which kernels stay on one thread.
 *
 *   emcc -O3 -msimd128 -pthread -sPTHREAD_POOL_SIZE=2 -sENVIRONMENT=node -Isrc/core \
 *     bench/pool_overhead.c src/core/runtime/parallel.c src/core/ir/status.c -o /tmp/po.mjs
 *   node /tmp/po.mjs
 *
 * Native (gcc -O2 -pthread -DWQ_THREADS) works the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/parallel.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

typedef struct {
  int64_t units;
  volatile float sink[64];
} job;

/* About one nanosecond per unit: a dependent float chain. */
static void spin_work(void *ctx, int64_t b, int64_t e) {
  job *j = ctx;
  for (int64_t c = b; c < e; c++) {
    float x = (float)c;
    for (int64_t i = 0; i < j->units; i++)
      x = x * 0.999f + 1.0f;
    j->sink[c & 63] = x;
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  wq_error err;
  wq_pool *pool;
  if (wq_pool_new(2, &pool, &err) != WQ_OK) {
    fprintf(stderr, "pool: %s\n", err.message);
    return 1;
  }
  printf("pool of %d threads\n", wq_pool_threads(pool));
  enum { ROUNDS = 400 };
  static double one[ROUNDS], two[ROUNDS];
  const int64_t sizes[] = {0, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
  printf("%10s %12s %12s %12s %12s %8s\n", "units/chunk", "1t med us", "2t med us", "1t min us",
         "2t min us", "med 1t/2t");
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    job j = {.units = sizes[s]};
    for (int r = 0; r < ROUNDS; r++) {
      double t0 = now_us();
      wq_pool_bind(NULL);
      wq_parallel_for(2, 1, spin_work, &j);
      double t1 = now_us();
      wq_pool_bind(pool);
      wq_parallel_for(2, 1, spin_work, &j);
      double t2 = now_us();
      one[r] = t1 - t0;
      two[r] = t2 - t1;
    }
    qsort(one, ROUNDS, sizeof *one, cmp);
    qsort(two, ROUNDS, sizeof *two, cmp);
    printf("%10lld %12.1f %12.1f %12.1f %12.1f %8.2f\n", (long long)sizes[s], one[ROUNDS / 2],
           two[ROUNDS / 2], one[0], two[0], one[ROUNDS / 2] / two[ROUNDS / 2]);
  }
  wq_pool_bind(NULL);
  wq_pool_free(pool);
  return 0;
}
