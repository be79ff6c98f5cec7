/* Minimal assertion helpers for the native tests: each CHECK counts, a failed
 * one prints file:line and the expression, and WQ_TEST_END returns the exit
 * code ctest reads. */
#ifndef WQ_TEST_H
#define WQ_TEST_H

#include <math.h>
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

#define CHECK_NEAR(a, b, tol) CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

#define WQ_TEST_END()                                                                              \
  do {                                                                                             \
    printf("%d checks, %d failed\n", wq_test_checks, wq_test_failures);                            \
    return wq_test_failures ? 1 : 0;                                                               \
  } while (0)

#endif
