/* The kernel tests' allocator: malloc and its relatives replaced by
 * counting wrappers around emscripten's own dlmalloc, so a test can prove
 * that a kernel run allocates nothing (every run takes its scratch from the
 * block the plan declared, runtime/parallel.h). */
#include <emscripten/emscripten.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "runtime/parallel.h"

extern void *emscripten_builtin_malloc(size_t size);
extern void emscripten_builtin_free(void *p);
extern void *emscripten_builtin_memalign(size_t alignment, size_t size);
size_t malloc_usable_size(const void *p);

static long allocations;

void *malloc(size_t size) {
  allocations++;
  return emscripten_builtin_malloc(size);
}

void free(void *p) { emscripten_builtin_free(p); }

void *calloc(size_t n, size_t size) {
  if (size && n > (size_t)-1 / size)
    return NULL;
  void *p = malloc(n * size);
  if (p)
    memset(p, 0, n * size);
  return p;
}

void *realloc(void *old, size_t size) {
  void *p = malloc(size);
  if (p && old) {
    size_t had = malloc_usable_size(old);
    memcpy(p, old, had < size ? had : size);
  }
  if (p || !size)
    free(old);
  return p;
}

void *memalign(size_t alignment, size_t size) {
  allocations++;
  return emscripten_builtin_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  void *p = memalign(alignment, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

void *wq_ktest_run_begin(int64_t scratch_bytes) {
  void *block = scratch_bytes > 0 ? memalign(16, (size_t)scratch_bytes) : NULL;
  wq_scratch_bind((wq_scratch){block, block ? (size_t)scratch_bytes : 0});
  allocations = 0;
  return block;
}

long wq_ktest_run_end(void *block) {
  const long during = allocations;
  wq_scratch_bind((wq_scratch){NULL, 0});
  free(block);
  return during;
}
