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
#ifdef WQ_THREADS
void wq_pool_wake(wq_pool *pool);
#else
static inline void wq_pool_wake(wq_pool *pool) { (void)pool; }
#endif

#endif
