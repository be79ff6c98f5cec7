#include "parallel.h"

#include <stdlib.h>

#ifdef WQ_THREADS
#include <pthread.h>
#include <stdatomic.h>
#endif

struct wq_pool {
  int threads; /* caller + workers */
#ifdef WQ_THREADS
  pthread_t *workers;
  int n_workers;
  pthread_mutex_t lock;
  pthread_cond_t wake; /* a new loop (generation) or stop */
  pthread_cond_t idle; /* busy_workers reached 0 */
  unsigned long generation;
  int stop;
  int busy_workers;
  int in_loop; /* touched by the bound (calling) thread only */
  /* The loop in progress. */
  wq_range_fn fn;
  void *ctx;
  int64_t n, grain, chunks;
  atomic_llong next_chunk;
#endif
};

/* The pool of the run in progress on this thread (see wq_pool_bind). */
static _Thread_local wq_pool *bound_pool;

wq_pool *wq_pool_bind(wq_pool *pool) {
  wq_pool *previous = bound_pool;
  bound_pool = pool;
  return previous;
}

wq_pool *wq_pool_current(void) { return bound_pool; }

int wq_pool_threads(const wq_pool *pool) { return pool ? pool->threads : 1; }

int wq_parallel_threads(void) { return wq_pool_threads(bound_pool); }

static void run_serial(int64_t n, int64_t grain, wq_range_fn fn, void *ctx) {
  for (int64_t b = 0; b < n; b += grain)
    fn(ctx, b, n - b < grain ? n : b + grain);
}

#ifdef WQ_THREADS
static void run_chunks(wq_pool *p) {
  for (;;) {
    long long i = atomic_fetch_add(&p->next_chunk, 1);
    if (i >= p->chunks)
      return;
    int64_t b = (int64_t)i * p->grain;
    p->fn(p->ctx, b, p->n - b < p->grain ? p->n : b + p->grain);
  }
}

static void *worker_main(void *arg) {
  wq_pool *p = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->stop && p->generation == seen)
      pthread_cond_wait(&p->wake, &p->lock);
    if (p->stop)
      break;
    seen = p->generation;
    pthread_mutex_unlock(&p->lock);
    run_chunks(p);
    pthread_mutex_lock(&p->lock);
    if (--p->busy_workers == 0)
      pthread_cond_signal(&p->idle);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

void wq_parallel_for(int64_t n, int64_t grain, wq_range_fn fn, void *ctx) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  wq_pool *p = bound_pool;
  if (!p || p->n_workers == 0 || p->in_loop || n <= grain) {
    run_serial(n, grain, fn, ctx);
    return;
  }
  p->in_loop = 1;
  pthread_mutex_lock(&p->lock);
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->grain = grain;
  p->chunks = (n + grain - 1) / grain;
  atomic_store(&p->next_chunk, 0);
  p->busy_workers = p->n_workers;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  run_chunks(p);
  pthread_mutex_lock(&p->lock);
  while (p->busy_workers > 0)
    pthread_cond_wait(&p->idle, &p->lock);
  pthread_mutex_unlock(&p->lock);
  p->in_loop = 0;
}

wq_status wq_pool_new(int threads, wq_pool **out, wq_error *err) {
  *out = NULL;
  if (threads < 1)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "threads must be >= 1 (got %d)", threads);
  wq_pool *p = calloc(1, sizeof *p);
  if (!p)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for a thread pool");
  p->threads = 1;
  if (threads > 1) {
    p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
    if (!p->workers) {
      free(p);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for a thread pool");
    }
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->idle, NULL);
  atomic_init(&p->next_chunk, 0);
  /* As many workers as the environment gives (a browser has a fixed set). */
  while (p->n_workers < threads - 1 &&
         pthread_create(&p->workers[p->n_workers], NULL, worker_main, p) == 0)
    p->n_workers++;
  p->threads = 1 + p->n_workers;
  *out = p;
  return WQ_OK;
}

void wq_pool_free(wq_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->n_workers; i++)
    pthread_join(p->workers[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->idle);
  pthread_mutex_destroy(&p->lock);
  if (bound_pool == p)
    bound_pool = NULL;
  free(p->workers);
  free(p);
}

#else /* one thread: every loop runs on the caller */

void wq_parallel_for(int64_t n, int64_t grain, wq_range_fn fn, void *ctx) {
  if (n > 0)
    run_serial(n, grain < 1 ? 1 : grain, fn, ctx);
}

wq_status wq_pool_new(int threads, wq_pool **out, wq_error *err) {
  *out = NULL;
  if (threads < 1)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "threads must be >= 1 (got %d)", threads);
  wq_pool *p = calloc(1, sizeof *p);
  if (!p)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for a thread pool");
  p->threads = 1;
  *out = p;
  return WQ_OK;
}

void wq_pool_free(wq_pool *p) {
  if (p && bound_pool == p)
    bound_pool = NULL;
  free(p);
}

#endif
