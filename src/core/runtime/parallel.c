#include "parallel.h"

#include <stdlib.h>

#ifdef WQ_THREADS
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif
#endif

#ifdef WQ_THREADS
/* A loop's ticket: one 64-bit word holding the loop's generation (bits
 * 40-63), its chunk count (bits 20-39) and the next unclaimed chunk (bits
 * 0-19). A thread claims a chunk by a compare-exchange on the whole word, so
 * a claim can only succeed for the loop the thread read: a worker waking
 * late never runs a chunk of a loop it did not see published, and the
 * caller never waits for a worker that took no chunk (it waits for its
 * loop's chunks to be done, whoever ran them). */
#define TICKET_BITS 20
#define TICKET_MASK ((UINT64_C(1) << TICKET_BITS) - 1)
#define TICKET_GEN(t) ((uint32_t)((t) >> (2 * TICKET_BITS)))
#define TICKET_CHUNKS(t) ((int64_t)(((t) >> TICKET_BITS) & TICKET_MASK))
#define TICKET_NEXT(t) ((int64_t)((t)&TICKET_MASK))
#define GEN_MASK ((UINT32_C(1) << (64 - 2 * TICKET_BITS)) - 1)

/* How long a thread spins before it sleeps on a condition variable:
 * workers after their last chunk (consecutive convolutions follow within
 * this), the caller for the loop's last chunks. Waking a sleeping worker
 * costs 10-25 us in wasm (bench/pool_overhead.c); a spinning worker takes
 * CPU from the caller when other jobs hold the second core: at load 7 on 2
 * cores smallcnn int8 ran 0.71x (200 us spins) and 0.94x (none) as fast on
 * 2 threads as on one (medians, bench/threads_ab.mjs); 50 us keeps the
 * worker awake through a model's back-to-back convolutions only. */
#ifndef WQ_POOL_SPIN_US
#define WQ_POOL_SPIN_US 50
#endif
#ifndef WQ_POOL_CALLER_SPIN_US
#define WQ_POOL_CALLER_SPIN_US 50
#endif
#endif

struct wq_pool {
  int threads; /* caller + workers */
#ifdef WQ_THREADS
  pthread_t *workers;
  int n_workers;
  pthread_mutex_t lock;
  pthread_cond_t wake; /* a new loop or stop */
  pthread_cond_t idle; /* the loop's chunks are done */
  atomic_uint_least64_t ticket;
  atomic_llong done;         /* chunks of the current loop finished */
  atomic_int sleepers;       /* workers blocked (or blocking) on wake */
  atomic_int caller_waiting; /* the caller is blocked (or blocking) on idle */
  atomic_int stop;
  atomic_int slots;    /* scratch slices handed to workers so far */
  uint32_t generation; /* touched by the bound (calling) thread only */
  int in_loop;         /* likewise */
  unsigned loops;      /* likewise: loops run in parallel so far */
  unsigned loops_seen; /* likewise: `loops` at the last wq_pool_wake */
  /* The loop in progress: written before its ticket is published, read by
   * a thread only after it claimed one of its chunks. */
  wq_range_fn fn;
  void *ctx;
  int64_t n, grain;
  wq_scratch scratch;    /* the caller's, whose slice i worker i takes */
  wq_deadline *deadline; /* the caller's, or NULL: workers read its flag only */
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

/* This thread's scratch: the bound block and the free part of its slice. */
static _Thread_local struct {
  wq_scratch bound;
  unsigned char *top, *end;
} scratch_here;

/* Makes slice `slot` of s this thread's, all free. */
static void scratch_enter(wq_scratch s, int slot) {
  scratch_here.bound = s;
  scratch_here.top = s.block ? (unsigned char *)s.block + (size_t)slot * s.slice : NULL;
  scratch_here.end = scratch_here.top ? scratch_here.top + s.slice : NULL;
}

wq_scratch wq_scratch_bind(wq_scratch s) {
  wq_scratch previous = scratch_here.bound;
  scratch_enter(s, 0);
  return previous;
}

void *wq_scratch_take(int64_t bytes) {
  unsigned char *at = scratch_here.top;
  if (!at || bytes < 0 || wq_scratch_round(bytes) > scratch_here.end - at)
    return NULL;
  scratch_here.top = at + wq_scratch_round(bytes);
  return at;
}

void wq_scratch_give(void *at) {
  if (at)
    scratch_here.top = at;
}

wq_status wq_scratch_missing(wq_error *err, const char *kernel, int64_t bytes) {
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL,
                 "%s: %lld bytes of scratch beyond what its plan declared (%s)", kernel,
                 (long long)bytes, scratch_here.top ? "slice full" : "no scratch bound");
}

int wq_pool_threads(const wq_pool *pool) { return pool ? pool->threads : 1; }

/* The innermost deadline of the run in progress on this thread. */
static _Thread_local wq_deadline *bound_deadline;

wq_deadline *wq_deadline_bind(wq_deadline *d) {
  wq_deadline *previous = bound_deadline;
  if (d) {
    d->outer = previous;
    atomic_init(&d->passed, 0);
  }
  bound_deadline = d;
  return previous;
}

wq_deadline *wq_deadline_current(void) { return bound_deadline; }

static bool deadline_check(wq_deadline *d) {
  for (wq_deadline *at = d; at; at = at->outer)
    if (atomic_load_explicit(&at->passed, memory_order_relaxed) || at->now_ms() >= at->at_ms) {
      /* Seen by this deadline and the ones it nests in (what a worker reads). */
      for (; d != at->outer; d = d->outer)
        atomic_store_explicit(&d->passed, 1, memory_order_relaxed);
      return true;
    }
  return false;
}

bool wq_deadline_passed(void) { return bound_deadline && deadline_check(bound_deadline); }

#ifdef WQ_THREADS
int wq_parallel_threads(void) { return wq_pool_threads(bound_pool); }
#endif

/* Chunk by chunk; none after the bound deadline has passed. */
static void run_serial(int64_t n, int64_t grain, wq_range_fn fn, void *ctx) {
  wq_deadline *d = bound_deadline;
  for (int64_t b = 0; b < n; b += grain) {
    if (d && b > 0 && deadline_check(d))
      return;
    fn(ctx, b, n - b < grain ? n : b + grain);
  }
}

#ifdef WQ_THREADS
static double now_us(void) {
#ifdef __EMSCRIPTEN__
  return emscripten_get_now() * 1e3; /* timespec_get has ms steps there */
#else
  struct timespec t;
  timespec_get(&t, TIME_UTC); /* C11; a clock jump only cuts one spin short */
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
#endif
}

/* Runs chunks of loop `gen` until none is left unclaimed (or another loop
 * was published); a worker (slot >= 1) on its own slice of the caller's
 * scratch, the caller (slot 0) on what is left of its own. Past the
 * deadline, chunks are claimed and counted but not run: the caller reads
 * the clock, workers the flag it sets. */
static void run_chunks(wq_pool *p, uint32_t gen, int slot) {
  for (;;) {
    uint64_t t = atomic_load(&p->ticket);
    if (TICKET_GEN(t) != gen || TICKET_NEXT(t) >= TICKET_CHUNKS(t))
      return;
    if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1))
      continue;
    /* Chunk TICKET_NEXT(t) is ours: the loop cannot end (nor its fields
     * change) before it is done. */
    const int64_t chunks = TICKET_CHUNKS(t), b = TICKET_NEXT(t) * p->grain;
    wq_deadline *d = p->deadline;
    const bool late = d && (slot == 0 ? deadline_check(d)
                                      : atomic_load_explicit(&d->passed, memory_order_relaxed));
    if (!late) {
      if (slot > 0)
        scratch_enter(p->scratch, slot);
      p->fn(p->ctx, b, p->n - b < p->grain ? p->n : b + p->grain);
    }
    if (atomic_fetch_add(&p->done, 1) + 1 == chunks && atomic_load(&p->caller_waiting)) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_signal(&p->idle);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

static void *worker_main(void *arg) {
  wq_pool *p = arg;
  const int slot = atomic_fetch_add(&p->slots, 1) + 1;
  uint32_t seen = 0;
  for (;;) {
    /* Spin for a while, then sleep until a new loop (or stop). */
    uint32_t gen = TICKET_GEN(atomic_load(&p->ticket));
    double deadline = 0;
    for (unsigned spins = 1; gen == seen && !atomic_load(&p->stop); spins++) {
      if ((spins & 255) == 0) {
        double t = now_us();
        if (deadline == 0)
          deadline = t + WQ_POOL_SPIN_US;
        else if (t > deadline)
          break;
      }
      gen = TICKET_GEN(atomic_load(&p->ticket));
    }
    if (gen == seen && !atomic_load(&p->stop)) {
      pthread_mutex_lock(&p->lock);
      atomic_fetch_add(&p->sleepers, 1);
      while (!atomic_load(&p->stop) && (gen = TICKET_GEN(atomic_load(&p->ticket))) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->lock);
    }
    if (atomic_load(&p->stop))
      return NULL;
    seen = gen;
    run_chunks(p, gen, slot);
  }
}

/* Publishes the next loop's ticket (generation, chunks) and wakes the
 * sleeping workers. With no chunks (wq_pool_wake) they find nothing to
 * claim and spin for the next loop. */
static void publish(wq_pool *p, int64_t chunks) {
  p->generation = (p->generation + 1) & GEN_MASK;
  if (p->generation == 0) /* workers start having seen generation 0 */
    p->generation = 1;
  atomic_store(&p->ticket,
               (uint64_t)p->generation << (2 * TICKET_BITS) | (uint64_t)chunks << TICKET_BITS);
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
}

void wq_pool_wake(wq_pool *p) {
  /* Only when the runs go parallel at all (some loop since the last wake):
   * a model whose kernels all stay on one thread (a float GEMV, mnist-8)
   * would pay the wake and a worker spinning beside it for nothing. */
  if (!p || p->n_workers == 0 || p->in_loop || p->loops == p->loops_seen)
    return;
  p->loops_seen = p->loops;
  if (atomic_load(&p->sleepers) > 0)
    publish(p, 0);
}

void wq_parallel_for(int64_t n, int64_t grain, wq_range_fn fn, void *ctx) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  wq_pool *p = bound_pool;
  const int64_t chunks = (n + grain - 1) / grain;
  if (!p || p->n_workers == 0 || p->in_loop || chunks < 2 || chunks > (int64_t)TICKET_MASK) {
    run_serial(n, grain, fn, ctx);
    return;
  }
  p->in_loop = 1;
  p->loops++;
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->grain = grain;
  p->scratch = scratch_here.bound;
  p->deadline = bound_deadline;
  atomic_store(&p->done, 0);
  publish(p, chunks);
  run_chunks(p, p->generation, 0);
  /* Chunks the workers claimed may still run: spin, then sleep. */
  double deadline = 0;
  for (unsigned spins = 1; atomic_load(&p->done) < chunks; spins++) {
    if ((spins & 255) == 0) {
      double t = now_us();
      if (deadline == 0) {
        deadline = t + WQ_POOL_CALLER_SPIN_US;
      } else if (t > deadline) {
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->caller_waiting, 1);
        while (atomic_load(&p->done) < chunks)
          pthread_cond_wait(&p->idle, &p->lock);
        atomic_store(&p->caller_waiting, 0);
        pthread_mutex_unlock(&p->lock);
        break;
      }
    }
  }
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
  atomic_init(&p->ticket, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->caller_waiting, 0);
  atomic_init(&p->stop, 0);
  atomic_init(&p->slots, 0);
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
  atomic_store(&p->stop, 1);
  pthread_mutex_lock(&p->lock);
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
