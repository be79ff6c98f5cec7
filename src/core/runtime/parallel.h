/* A model's worker threads, created once (wq_pool_new) and shared out to
 * kernels while it runs: wq_parallel_for splits a range into chunks whose
 * bounds depend only on the range and the grain, never on the thread count,
 * and each chunk writes its own outputs, so results are bit-identical for
 * any number of threads.
 *
 * Built with WQ_THREADS (the threaded wasm variant, native builds with
 * pthreads); otherwise a pool of one thread is all there is and every loop
 * runs on the caller. Kernels find the pool of the run in progress through
 * wq_pool_current(): the executor's caller binds it to its thread for the
 * duration of a run (wq_pool_bind), so kernel signatures stay unchanged. */
#ifndef WQ_RUNTIME_PARALLEL_H
#define WQ_RUNTIME_PARALLEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/status.h"

typedef struct wq_pool wq_pool;

/* A pool running loops on `threads` threads in all (the caller plus
 * threads - 1 workers). Fewer workers than asked when the environment gives
 * fewer (a browser's pre-made pthread workers): wq_pool_threads tells. */
wq_status wq_pool_new(int threads, wq_pool **out, wq_error *err);
void wq_pool_free(wq_pool *pool);
int wq_pool_threads(const wq_pool *pool);

/* Makes `pool` (NULL: none) the one wq_parallel_for uses on this thread;
 * returns the previous one. */
wq_pool *wq_pool_bind(wq_pool *pool);
wq_pool *wq_pool_current(void);

/* fn(ctx, begin, end) over [0, n) in chunks [i * grain, min(n, (i + 1) *
 * grain)), on the bound pool's threads (on the caller alone without one,
 * or when called from inside a parallel loop). Returns when all are done. */
typedef void (*wq_range_fn)(void *ctx, int64_t begin, int64_t end);
void wq_parallel_for(int64_t n, int64_t grain, wq_range_fn fn, void *ctx);

/* A time limit bound to the running thread like the pool (wq_deadline_bind):
 * the executor's between nodes, the quantizer's around its calls. A long
 * node stops early too: wq_parallel_for runs no further chunk once it has
 * passed (on any thread), and kernels that split their work only for it
 * (wq_deadline_current() set) check between blocks. The executor then fails
 * the node with WQ_ERR_TIMEOUT; what a cut kernel wrote is never read.
 * Deadlines nest: one bound inside another's span checks both (`outer`). */
typedef struct wq_deadline {
  double (*now_ms)(void); /* the clock at_ms is on (read on the binding thread only) */
  double at_ms;
  atomic_int passed; /* seen past: set once, read by every thread */
  struct wq_deadline *outer;
} wq_deadline;

/* Makes d (NULL: none) this thread's innermost deadline, chaining the
 * current one as d->outer; returns the previous one (bind it back after). */
wq_deadline *wq_deadline_bind(wq_deadline *d);
wq_deadline *wq_deadline_current(void);
/* True once the bound deadline (or an outer one) has passed: reads the
 * clocks, so call it between blocks of work, not per element. */
bool wq_deadline_passed(void);

/* Threads of the bound pool (1 without one). Without WQ_THREADS a constant
 * 1: the compiler drops every split behind `wq_parallel_threads() > 1` from
 * the single-threaded build. */
#ifdef WQ_THREADS
int wq_parallel_threads(void);
#else
static inline int wq_parallel_threads(void) { return 1; }
#endif

/* Wakes a sleeping pool's workers ahead of a run (from the thread that
 * runs it, while it stages the inputs), so the run's first parallel loop
 * does not pay their wake-up; they spin as after a loop, then sleep again.
 * Only if some loop ran in parallel since the last wake (runs that stay on
 * one thread wake nobody). Nothing to wake without WQ_THREADS. */
/* Kernel scratch. A run's caller binds one block of equal slices, one per
 * thread of its pool (the caller's is slice 0, worker i's slice i); a
 * kernel takes what it needs from its own thread's slice, stack-wise, and
 * gives it back before it returns. The block is sized at plan time from
 * what every kernel declares (wq_op.memory), so a run allocates nothing
 * and the memory limit counts exactly what is held. */
typedef struct {
  void *block;  /* 16-byte aligned; NULL: none bound */
  size_t slice; /* bytes per thread, a multiple of 16 */
} wq_scratch;

/* What a kernel declares for `bytes` taken at once (takes are 16-byte
 * aligned, so each rounds up to 16). */
static inline int64_t wq_scratch_round(int64_t bytes) { return (bytes + 15) / 16 * 16; }

/* Binds `s` on this thread for the run it is about to make (and for the
 * loops it shares out); returns the previous binding. */
wq_scratch wq_scratch_bind(wq_scratch s);

/* `bytes` (16-byte aligned) from this thread's slice; NULL when nothing is
 * bound or the slice would overflow: a kernel that takes more than it
 * declared fails instead of allocating. */
void *wq_scratch_take(int64_t bytes);

/* Gives back `at` (a take's result on this thread) and everything taken
 * after it. NULL: nothing. */
void wq_scratch_give(void *at);

/* The failure of a take that returned NULL (WQ_ERR_OUT_OF_MEMORY naming the
 * kernel and the bytes): the plan declared too little, or the caller bound
 * no scratch. */
wq_status wq_scratch_missing(wq_error *err, const char *kernel, int64_t bytes);

#ifdef WQ_THREADS
void wq_pool_wake(wq_pool *pool);
#else
static inline void wq_pool_wake(wq_pool *pool) { (void)pool; }
#endif

#endif
