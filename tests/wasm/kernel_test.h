/* Shared helpers of the wasm kernel tests (tests/wasm, built by
 * wasm_build/build_tests.sh and run under node): a seeded generator, case
 * counting and the pass/fail summary line scripts/test.sh reads. */
#ifndef WQ_TESTS_WASM_KERNEL_TEST_H
#define WQ_TESTS_WASM_KERNEL_TEST_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
  uint64_t state;
  int passed, failed;
} wq_ktest;

/* xorshift64*: deterministic across builds. */
static inline uint32_t wq_ktest_u32(wq_ktest *t) {
  uint64_t x = t->state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t->state = x;
  return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Uniform integer in [lo, hi]. */
static inline int32_t wq_ktest_int(wq_ktest *t, int32_t lo, int32_t hi) {
  return lo + (int32_t)(wq_ktest_u32(t) % (uint32_t)(hi - lo + 1));
}

static inline float wq_ktest_float(wq_ktest *t, float lo, float hi) {
  return lo + (hi - lo) * (float)(wq_ktest_u32(t) >> 8) / 16777216.0f;
}

/* Records one case; prints a description of failures. */
static inline void wq_ktest_case(wq_ktest *t, int ok, const char *what) {
  if (ok) {
    t->passed++;
  } else {
    t->failed++;
    if (t->failed <= 20)
      printf("FAIL %s\n", what);
  }
}

/* A kernel run under watch (alloc_count.c): begin binds exactly
 * `scratch_bytes` of scratch (what the plan declared; 0: none) for one
 * thread and starts counting allocations; end unbinds it and returns the
 * allocations made since begin (0 for every kernel run). */
void *wq_ktest_run_begin(int64_t scratch_bytes);
long wq_ktest_run_end(void *block);

void wq_ktest_qgemm(wq_ktest *t);
void wq_ktest_qconv(wq_ktest *t);
void wq_ktest_sgemm(wq_ktest *t);
void wq_ktest_quantize(wq_ktest *t);
void wq_ktest_nhwc(wq_ktest *t);
void wq_ktest_qeltwise(wq_ktest *t);

#endif
