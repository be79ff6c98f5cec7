/* Minimal assertion helpers for the native tests: each CHECK counts, a failed
 * one prints file:line and the expression, and WQ_TEST_END returns the exit
 * code ctest reads. */
#ifndef WQ_TEST_H
#define WQ_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int wq_test_failures = 0;
static int wq_test_checks = 0;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    wq_test_checks++;                                                                              \
    if (!(cond)) {                                                                                 \
      wq_test_failures++;                                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
  do {                                                                                             \
    wq_test_checks++;                                                                              \
    if (!(cond)) {                                                                                 \
      wq_test_failures++;                                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
  CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

/* Folder holding ../shared (models, ONNX cases): ctest sets WQ_SHARED_DIR. */
static inline const char *wq_test_shared_dir(void) {
  const char *d = getenv("WQ_SHARED_DIR");
  return d ? d : "../shared";
}

/* Whole file into a malloc'ed buffer (caller frees), or NULL. */
static inline uint8_t *wq_test_read_file(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = (uint8_t *)malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap)
      break;
    uint8_t *grown = (uint8_t *)realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
    }
    buf = grown;
    cap *= 2;
  }
  fclose(f);
  *n = len;
  return buf;
}

#define WQ_TEST_END()                                                                              \
  do {                                                                                             \
    printf("%d checks, %d failed\n", wq_test_checks, wq_test_failures);                            \
    return wq_test_failures ? 1 : 0;                                                               \
  } while (0)

#endif
