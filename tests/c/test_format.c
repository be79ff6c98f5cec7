/* wq_format against the C library's snprintf, the reference: every
 * conversion of the supported subset, float rounding edges (ties, carries
 * into a new digit, subnormals, the largest doubles) and 60,000 random
 * doubles through each float conversion the core uses. */
#include "ir/format.h"
#include "wq_test.h"

#include <float.h>
#include <string.h>

static int failures_shown = 0;

/* Formats the same arguments with both; compares text and return value. */
#define SAME(fmt, ...)                                                                             \
  do {                                                                                             \
    char want[1200], got[1200];                                                                    \
    int wn = snprintf(want, sizeof want, fmt, __VA_ARGS__);                                        \
    int gn = wq_format(got, sizeof got, fmt, __VA_ARGS__);                                         \
    int same = wn == gn && strcmp(want, got) == 0;                                                 \
    wq_test_checks++;                                                                              \
    if (!same) {                                                                                   \
      wq_test_failures++;                                                                          \
      if (failures_shown++ < 20)                                                                   \
        fprintf(stderr, "%s:%d: '%s': libc '%s' (%d), ours '%s' (%d)\n", __FILE__, __LINE__, fmt,  \
                want, wn, got, gn);                                                                \
    }                                                                                              \
  } while (0)

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void float_all(double x) {
  SAME("%g", x);
  SAME("%.9g", x);
  SAME("%.6g", x);
  SAME("%.3g", x);
  SAME("%.1f", x);
  SAME("%.2f", x);
  SAME("%.3f", x);
  SAME("%e", x);
  SAME("%.0e", x);
  SAME("%.0f", x);
  SAME("%.17g", x);
  SAME("%.0g", x);
  SAME("%12.4f|%-12.3e|%012g", x, x, x);
}

static void test_floats(void) {
  const double edges[] = {0.0,
                          -0.0,
                          1.0,
                          -1.0,
                          0.5,
                          1.5,
                          2.5,
                          0.125,
                          0.375,
                          9.5,
                          99.5,
                          999999.5,
                          9.9999995,
                          0.00001,
                          0.0001,
                          0.000099999,
                          123456.0,
                          1234567.0,
                          999999.0,
                          9999995.0,
                          1e15,
                          1e16,
                          1e21,
                          1e22,
                          1e100,
                          1e-100,
                          1234567885.0,
                          0.1,
                          0.2,
                          0.3,
                          1.0 / 3,
                          2.0 / 3,
                          3.14159265358979,
                          DBL_MAX,
                          -DBL_MAX,
                          DBL_MIN,
                          DBL_TRUE_MIN,
                          FLT_MAX,
                          FLT_MIN,
                          (double)1.17549435e-38f,
                          (double)0.0078125f,
                          (double)0.0235294122f,
                          HUGE_VAL,
                          -HUGE_VAL,
                          NAN,
                          -NAN};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
    float_all(edges[i]);
  for (int e = -330; e <= 310; e++) {
    float_all(pow(10.0, e));
    float_all(5 * pow(10.0, e));
    float_all(pow(2.0, e));
  }
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 20000; i++) {
    uint64_t bits = next(&s);
    double x;
    memcpy(&x, &bits, sizeof x);
    float_all(x);
    float f;
    uint32_t fb = (uint32_t)(next(&s) >> 32);
    memcpy(&f, &fb, sizeof f);
    float_all((double)f);
    /* Scales and errors of a model: mantissa noise over a few decades. */
    float_all((double)(next(&s) % 100000000) / 1e6 * pow(10.0, (double)(next(&s) % 9) - 6));
  }
  /* Ties at each kept position: k + 0.5 units of the last digit. */
  for (int k = 0; k < 2000; k++) {
    SAME("%.0f|%.1f|%.2f|%.3f", k + 0.5, k / 10.0 + 0.05, k / 100.0 + 0.005, k / 1000.0 + 0.0005);
    SAME("%.3g|%.1g", k + 0.5, k + 0.5);
  }
}

static void test_integers_and_strings(void) {
  const long long ll[] = {0,
                          1,
                          -1,
                          9,
                          10,
                          255,
                          4096,
                          -99999,
                          2147483647,
                          -2147483647 - 1,
                          9223372036854775807LL,
                          -9223372036854775807LL - 1};
  for (size_t i = 0; i < sizeof ll / sizeof *ll; i++) {
    long long v = ll[i];
    SAME("%lld|%5lld|%-5lld|%05lld|%llu", v, v, v, v, (unsigned long long)v);
    SAME("%d|%i|%u|%x|%04x|%8d|%-8d|%08d", (int)v, (int)v, (unsigned)v, (unsigned)v,
         (unsigned)v & 0xff, (int)v, (int)v, (int)v);
    SAME("%ld|%lu|%zu|%*d|%-*d", (long)v, (unsigned long)v, (size_t)v, 6, (int)v, -6, (int)v);
  }
  SAME("%s|%-24s|%8s|%.3s|%.*s|%c%c|%%|%s", "abc", "name", "x", "abcdef", 2, "xyz", 'q', '\\', "");
  SAME("plain text, no conversions%s", "");
  SAME("%-26s %s\n", "QConv", "node_7");
}

/* Truncation: at most cap bytes with the NUL, the full length returned. */
static void test_truncation(void) {
  for (size_t c = 0; c < 16; c++) {
    volatile size_t cap = c; /* unknown to the compiler: no truncation warning */
    char want[16], got[16];
    memset(want, 'z', sizeof want);
    memset(got, 'z', sizeof got);
    int wn = snprintf(cap ? want : NULL, cap, "%s=%.3f;%d", "scale", 0.0123456, -42);
    int gn = wq_format(cap ? got : NULL, cap, "%s=%.3f;%d", "scale", 0.0123456, -42);
    CHECK(wn == gn);
    CHECK(memcmp(want, got, sizeof want) == 0);
  }
}

int main(void) {
  test_integers_and_strings();
  test_truncation();
  test_floats();
  WQ_TEST_END();
}
