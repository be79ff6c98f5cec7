/* The thread pool: wq_parallel_for visits every chunk exactly once with
 * bounds fixed by the range and the grain, runs nested loops and unbound
 * callers serially, and a model run on several threads gives results equal
 * bit for bit to one thread's (float GEMM column slices, im2col conv
 * chunks; natively the int8 kernels are the scalar references). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/wasmq.h"
#include "runtime/parallel.h"
#include "wq_test.h"

enum { N_ITEMS = 1000, GRAIN = 37 };

typedef struct {
  atomic_int visits[N_ITEMS];
  atomic_int bad_bounds;
  atomic_int nested_threads; /* threads a nested loop saw, summed */
} coverage;

static void visit(void *ctx, int64_t begin, int64_t end) {
  coverage *c = ctx;
  if (begin % GRAIN != 0 || end != (begin + GRAIN < N_ITEMS ? begin + GRAIN : N_ITEMS))
    atomic_fetch_add(&c->bad_bounds, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&c->visits[i], 1);
}

static void count_chunk(void *ctx, int64_t begin, int64_t end) {
  atomic_fetch_add((atomic_int *)ctx, (int)(end - begin));
}

static void visit_with_nested_loop(void *ctx, int64_t begin, int64_t end) {
  coverage *c = ctx;
  visit(ctx, begin, end);
  atomic_int inner;
  atomic_init(&inner, 0);
  wq_parallel_for(10, 1, count_chunk, &inner); /* serial wherever it runs */
  if (atomic_load(&inner) != 10)
    atomic_fetch_add(&c->bad_bounds, 1);
  atomic_fetch_add(&c->nested_threads, wq_parallel_threads());
}

static void check_coverage(wq_range_fn fn, const char *what) {
  coverage *c = calloc(1, sizeof *c);
  CHECK(c != NULL);
  if (!c)
    return;
  wq_parallel_for(N_ITEMS, GRAIN, fn, c);
  int wrong = 0;
  for (int i = 0; i < N_ITEMS; i++)
    wrong += atomic_load(&c->visits[i]) != 1;
  CHECK_MSG(wrong == 0, "%s: %d items not visited exactly once", what, wrong);
  CHECK_MSG(atomic_load(&c->bad_bounds) == 0, "%s: %d chunks with wrong bounds", what,
            atomic_load(&c->bad_bounds));
  free(c);
}

static void test_parallel_for(void) {
  wq_error err;
  wq_pool *pool = NULL;
  CHECK(wq_pool_new(0, &pool, &err) == WQ_ERR_INVALID_ARG && pool == NULL);
  CHECK(wq_pool_new(3, &pool, &err) == WQ_OK && pool != NULL);
  if (!pool)
    return;
#ifdef WQ_THREADS
  CHECK_MSG(wq_pool_threads(pool) == 3, "pool of %d threads", wq_pool_threads(pool));
#else
  CHECK(wq_pool_threads(pool) == 1);
#endif
  check_coverage(visit, "unbound");
  CHECK(wq_parallel_threads() == 1);
  CHECK(wq_pool_bind(pool) == NULL);
  CHECK(wq_parallel_threads() == wq_pool_threads(pool));
  for (int round = 0; round < 20; round++) /* the pool is reused loop after loop */
    check_coverage(visit, "bound");
  check_coverage(visit_with_nested_loop, "nested");
  /* Back-to-back loops (workers still spinning, a late worker meeting the
   * next loop) and loops after pauses longer than the spin (workers asleep). */
  atomic_int total;
  atomic_init(&total, 0);
  int expected = 0;
  for (int round = 0; round < 3000; round++) {
    wq_parallel_for(2 + round % 7, 1, count_chunk, &total);
    expected += 2 + round % 7;
    if (round % 3 == 0) /* a wake while the workers spin: nothing to do */
      wq_pool_wake(pool);
    /* After a pause the workers sleep; an early wake (as a run's input
     * staging does) gives them a loop with nothing to claim, then the next
     * loop follows at once or after they fell asleep again. */
    for (int pause = 0; pause < (round % 500 == 499) + (round % 1000 == 999); pause++) {
      struct timespec t0, t;
      timespec_get(&t0, TIME_UTC);
      do
        timespec_get(&t, TIME_UTC);
      while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 3000000L);
      wq_pool_wake(pool);
    }
  }
  CHECK_MSG(atomic_load(&total) == expected, "back-to-back loops: %d items of %d",
            atomic_load(&total), expected);
  CHECK(wq_pool_bind(NULL) == pool);
  wq_pool_free(pool);
}

static wq_model *load_model(const char *rel, int threads) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return NULL;
  wq_model *m = NULL;
  wq_error err;
  wq_status st = wq_model_load(bytes, n, NULL, &m, &err);
  free(bytes);
  CHECK_MSG(st == WQ_OK, "%s: %s", rel, err.message);
  if (st == WQ_OK && threads > 1) {
    st = wq_model_set_threads(m, threads, &err);
    CHECK_MSG(st == WQ_OK, "%s: %d threads: %s", rel, threads, err.message);
  }
  return m;
}

/* Seeded inputs in [-1, 1) for a model with one static float input. */
static bool run_seeded(wq_model *m, uint32_t seed) {
  const wq_tensor *t = wq_model_input(m, 0);
  wq_value in;
  memset(&in, 0, sizeof in);
  in.dtype = t->dtype;
  in.rank = t->rank;
  memcpy(in.dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  int64_t count = wq_value_numel(&in);
  in.data = malloc(wq_value_nbytes(&in));
  if (!in.data)
    return false;
  uint32_t state = seed;
  for (int64_t k = 0; k < count; k++) {
    state = state * 1664525u + 1013904223u;
    ((float *)in.data)[k] = (float)(state >> 8) / 8388608.0f - 1.0f;
  }
  wq_error err;
  wq_status st = wq_model_run(m, &in, 1, &err);
  CHECK_MSG(st == WQ_OK, "run: %s (node %s)", err.message, err.node);
  free(in.data);
  return st == WQ_OK;
}

static void check_threads_match(const char *rel) {
  wq_model *one = load_model(rel, 1), *three = load_model(rel, 3);
  if (one && three) {
#ifdef WQ_THREADS
    CHECK_MSG(wq_model_threads(three) == 3, "%s: %d threads", rel, wq_model_threads(three));
#endif
    CHECK(wq_model_threads(one) == 1);
    for (uint32_t run = 0; run < 2; run++) {
      if (!run_seeded(one, 11u + run) || !run_seeded(three, 11u + run))
        break;
      for (int i = 0; i < wq_model_output_count(one); i++) {
        const wq_value *a = wq_model_result(one, i), *b = wq_model_result(three, i);
        CHECK_MSG(a && b && wq_value_nbytes(a) == wq_value_nbytes(b) &&
                      memcmp(a->data, b->data, wq_value_nbytes(a)) == 0,
                  "%s output %d: 3 threads differ from 1", rel, i);
      }
    }
  }
  wq_model_free(one);
  wq_model_free(three);
}

/* Kernel scratch: a chunk's takes come from its own thread's slice of the
 * bound block, so chunks running at the same time never share bytes. */
enum { SLICE = 256, TAKE = 40 };

typedef struct {
  const unsigned char *block;
  size_t bytes;
  atomic_int bad;
} scratch_check;

static void take_and_hold(void *ctx, int64_t begin, int64_t end) {
  scratch_check *c = ctx;
  unsigned char *a = wq_scratch_take(TAKE), *b = wq_scratch_take(TAKE);
  /* Inside the block, 16-byte aligned, stacked, and the slice has an end. */
  if (!a || !b || b != a + wq_scratch_round(TAKE) || ((uintptr_t)a & 15) || a < c->block ||
      b + TAKE > c->block + c->bytes || wq_scratch_take(SLICE) != NULL)
    atomic_fetch_add(&c->bad, 1);
  if (a && b) {
    memset(a, (int)(begin & 0xFF), TAKE);
    memset(b, (int)(end & 0xFF), TAKE);
    for (volatile int spin = 0; spin < 20000; spin = spin + 1)
      ;
    for (int i = 0; i < TAKE; i++)
      if (a[i] != (unsigned char)(begin & 0xFF) || b[i] != (unsigned char)(end & 0xFF))
        atomic_fetch_add(&c->bad, 1);
  }
  wq_scratch_give(a);
  if (wq_scratch_take(0) != a) /* given back: the next chunk starts where this one did */
    atomic_fetch_add(&c->bad, 1);
}

static void test_scratch_slices(void) {
  wq_error err;
  wq_pool *pool = NULL;
  CHECK(wq_scratch_take(1) == NULL); /* nothing bound */
  CHECK(wq_pool_new(3, &pool, &err) == WQ_OK && pool != NULL);
  if (!pool)
    return;
  const int threads = wq_pool_threads(pool);
  scratch_check c = {aligned_alloc(16, (size_t)threads * SLICE), (size_t)threads * SLICE, 0};
  wq_pool_bind(pool);
  wq_scratch_bind((wq_scratch){(void *)c.block, SLICE});
  for (int round = 0; round < 10; round++)
    wq_parallel_for(64, 1, take_and_hold, &c);
  CHECK_MSG(atomic_load(&c.bad) == 0, "%d scratch takes overlapped, misplaced or unbounded",
            atomic_load(&c.bad));
  wq_error e;
  CHECK(wq_scratch_missing(&e, "k", 9) == WQ_ERR_OUT_OF_MEMORY && strstr(e.message, "k: 9 bytes"));
  wq_scratch_bind((wq_scratch){NULL, 0});
  wq_pool_bind(NULL);
  CHECK(wq_scratch_take(1) == NULL);
  wq_pool_free(pool);
  free((void *)c.block);
}

int main(void) {
  test_parallel_for();
  test_scratch_slices();
  check_threads_match("models/mnist-8/model.onnx");
  check_threads_match("models/synthetic/smallcnn_f32.onnx");
  check_threads_match("models/synthetic/smallcnn_qdq.onnx");
  check_threads_match("models/synthetic/matmul_256x256x256_f32.onnx");
  WQ_TEST_END();
}
