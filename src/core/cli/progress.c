#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#define FIRST_LINE_S 2.0
#define EVERY_S 2.0

/* The one step of this process, shared with the watcher thread (the CLI's
 * only process-wide state; the core has none). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t started = PTHREAD_ONCE_INIT;
static char step[512];
static int active;
static double step_start, next_line;

double wq_cli_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double now_s(void) { return wq_cli_now_ms() / 1e3; }

static void *watch(void *arg) {
  (void)arg;
  const struct timespec tick = {0, 200 * 1000 * 1000};
  for (;;) {
    nanosleep(&tick, NULL);
    pthread_mutex_lock(&lock);
    double t = now_s();
    if (active && t >= next_line) {
      fprintf(stderr, "wasmq: %s (%.0f s)\n", step, t - step_start);
      fflush(stderr);
      next_line += EVERY_S;
    }
    pthread_mutex_unlock(&lock);
  }
  return NULL;
}

static void start_watcher(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, watch, NULL) == 0)
    pthread_detach(thread);
}

void wq_cli_step(const char *fmt, ...) {
  pthread_once(&started, start_watcher);
  pthread_mutex_lock(&lock);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(step, sizeof step, fmt, ap);
  va_end(ap);
  step_start = now_s();
  next_line = step_start + FIRST_LINE_S;
  active = 1;
  pthread_mutex_unlock(&lock);
}

void wq_cli_step_update(const char *fmt, ...) {
  pthread_mutex_lock(&lock);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(step, sizeof step, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&lock);
}

void wq_cli_step_end(void) {
  pthread_mutex_lock(&lock);
  active = 0;
  pthread_mutex_unlock(&lock);
}
