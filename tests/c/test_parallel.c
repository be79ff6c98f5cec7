/* The thread pool: wq_parallel_for visits every chunk exactly once with
 * bounds fixed by the range and the grain, runs nested loops and unbound
 * callers serially, and a model run on several threads gives results equal
 * bit for bit to one thread's (float GEMM column slices, im2col conv
 * chunks; natively the int8 kernels are the scalar references). Under a
 * time limit (wq_deadline) no chunk starts once it has passed, on one thread
 * or several, a run stops inside a long node with WQ_ERR_TIMEOUT and the
 * model stays usable, and a limit never reached changes no bit. */
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

/* A clock that advances 1 ms per reading: deadlines pass at a known check. */
static atomic_int clock_reads;
static double counting_ms(void) { return (double)atomic_fetch_add(&clock_reads, 1) + 1; }

static void test_deadline_chunks(int threads) {
  wq_error err;
  wq_pool *pool = NULL;
  CHECK(wq_pool_new(threads, &pool, &err) == WQ_OK);
  wq_pool *previous = wq_pool_bind(pool);
  CHECK(!wq_deadline_passed()); /* none bound */
  /* On one thread the clock is read before every chunk but the first: it
   * passes at the 4th reading, so chunks 0..3 run, no later one, and the
   * loop still ends. */
  wq_deadline d = {.now_ms = counting_ms, .at_ms = 4};
  atomic_int items;
  atomic_init(&items, 0);
  if (threads == 1) {
    atomic_store(&clock_reads, 0);
    CHECK(wq_deadline_bind(&d) == NULL && wq_deadline_current() == &d);
    wq_parallel_for(100, 1, count_chunk, &items);
    CHECK_MSG(atomic_load(&items) == 4, "%d chunks ran, want 4", atomic_load(&items));
    CHECK(atomic_load(&d.passed) == 1 && wq_deadline_passed());
  } else {
    /* Workers never read the clock, only the flag the caller sets: once
     * it is set no thread starts a chunk. */
    CHECK(wq_deadline_bind(&d) == NULL);
    atomic_store(&d.passed, 1);
    wq_parallel_for(100, 1, count_chunk, &items);
    CHECK_MSG(atomic_load(&items) == 0, "%d chunks ran after the deadline", atomic_load(&items));
    CHECK(wq_deadline_passed());
  }
  /* Nested: an inner deadline far away still stops for the outer one. */
  wq_deadline inner = {.now_ms = counting_ms, .at_ms = 1e12};
  CHECK(wq_deadline_bind(&inner) == &d && inner.outer == &d);
  CHECK(wq_deadline_passed() && atomic_load(&inner.passed) == 1);
  CHECK(wq_deadline_bind(inner.outer) == &inner);
  CHECK(wq_deadline_bind(NULL) == &d && !wq_deadline_passed());
  wq_pool_bind(previous);
  wq_pool_free(pool);
}

/* A time limit never reached: the same bits as no limit (the timed kernels
 * split their work into blocks as threads would). One reached inside the
 * single MatMul of a 256^3 product: WQ_ERR_TIMEOUT naming it, then the
 * model runs again, exactly as before. */
static void check_time_limits(const char *rel, int threads) {
  wq_model *free_run = load_model(rel, threads), *limited = load_model(rel, threads);
  if (free_run && limited) {
    wq_model_time_limit(limited, counting_ms, 1e12);
    for (uint32_t run = 0; run < 2; run++) {
      if (!run_seeded(free_run, 21u + run) || !run_seeded(limited, 21u + run))
        break;
      for (int i = 0; i < wq_model_output_count(free_run); i++) {
        const wq_value *a = wq_model_result(free_run, i), *b = wq_model_result(limited, i);
        CHECK_MSG(a && b && wq_value_nbytes(a) == wq_value_nbytes(b) &&
                      memcmp(a->data, b->data, wq_value_nbytes(a)) == 0,
                  "%s output %d (%d threads): a time limit changed the result", rel, i, threads);
      }
    }
  }
  wq_model_free(free_run);
  wq_model_free(limited);
}

static void test_timeout_inside_node(void) {
  wq_model *m = load_model("models/synthetic/matmul_256x256x256_f32.onnx", 1);
  if (!m)
    return;
  CHECK(wq_model_node_count(m) == 1);
  CHECK(run_seeded(m, 5));
  const wq_value *r = wq_model_result(m, 0);
  size_t bytes = r ? wq_value_nbytes(r) : 0;
  float *want = malloc(bytes ? bytes : 1);
  if (r && want)
    memcpy(want, r->data, bytes);
  /* Bound at reading 1 (limit 0.5 ms: due at 1.5); the GEMM runs as two
   * column slices and reads the clock before the second: past it. */
  atomic_store(&clock_reads, 0);
  wq_model_time_limit(m, counting_ms, 0.5);
  const wq_tensor *t = wq_model_input(m, 0);
  wq_value in = {.dtype = t->dtype, .rank = t->rank};
  memcpy(in.dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  in.data = calloc((size_t)wq_value_numel(&in), sizeof(float));
  wq_error err;
  wq_status st = in.data ? wq_model_run(m, &in, 1, &err) : WQ_ERR_OUT_OF_MEMORY;
  CHECK_MSG(st == WQ_ERR_TIMEOUT, "status %d: %s", st, err.message);
  CHECK_MSG(strstr(err.message, "run stopped in node 1 of 1: the time limit of 0.5 ms") != NULL,
            "%s", err.message);
  CHECK_MSG(atomic_load(&clock_reads) >= 2, "%d clock readings", atomic_load(&clock_reads));
  free(in.data);
  wq_model_time_limit(m, NULL, 0);
  CHECK(run_seeded(m, 5));
  r = wq_model_result(m, 0);
  CHECK_MSG(r && want && memcmp(r->data, want, bytes) == 0, "after a timeout: different result");
  free(want);
  wq_model_free(m);
}

int main(void) {
  test_parallel_for();
  test_scratch_slices();
  check_threads_match("models/mnist-8/model.onnx");
  check_threads_match("models/synthetic/smallcnn_f32.onnx");
  check_threads_match("models/synthetic/smallcnn_qdq.onnx");
  check_threads_match("models/synthetic/matmul_256x256x256_f32.onnx");
  /* On one thread: with more, workers may take every slice before the
   * caller (who reads the clock) checks. */
  test_timeout_inside_node();
  for (int threads = 1; threads <= 3; threads += 2) {
    test_deadline_chunks(threads);
    check_time_limits("models/mnist-8/model.onnx", threads);
    check_time_limits("models/synthetic/smallcnn_f32.onnx", threads);
    check_time_limits("models/synthetic/smallcnn_qdq.onnx", threads);
    check_time_limits("models/synthetic/matmul_256x256x256_f32.onnx", threads);
  }
  WQ_TEST_END();
}
