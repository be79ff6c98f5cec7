/* Calibration observers against ranges worked out by hand in the comments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/observer.h"
#include "wq_test.h"

static void test_minmax_over_batches(void) {
  wq_observer obs;
  wq_error err;
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, -1, 1, &err) == WQ_OK);
  int64_t d[2] = {2, 2};
  float b1[4] = {-1.0f, 0.5f, 2.0f, 0.0f}, b2[4] = {-3.0f, 1.0f, 1.5f, 0.25f};
  CHECK(wq_observer_update(&obs, b1, 2, d, "x", &err) == WQ_OK);
  CHECK(obs.lo[0] == -1.0f && obs.hi[0] == 2.0f);
  CHECK(wq_observer_update(&obs, b2, 2, d, "x", &err) == WQ_OK);
  /* min(-1,-3) = -3, max(2,1.5) = 2 */
  CHECK(obs.lo[0] == -3.0f && obs.hi[0] == 2.0f && obs.batches == 2);
  wq_observer_free(&obs);
}

static void test_moving_average(void) {
  wq_observer obs;
  wq_error err;
  CHECK(wq_observer_init(&obs, WQ_OBS_MOVING_AVERAGE, 0.25f, -1, 1, &err) == WQ_OK);
  int64_t d[1] = {2};
  float b1[2] = {-4.0f, 8.0f}, b2[2] = {0.0f, 4.0f};
  CHECK(wq_observer_update(&obs, b1, 1, d, "x", &err) == WQ_OK);
  CHECK(wq_observer_update(&obs, b2, 1, d, "x", &err) == WQ_OK);
  /* first batch taken as is; then lo = -4 + 0.25*(0 - -4) = -3, hi = 8 + 0.25*(4-8) = 7 */
  CHECK(obs.lo[0] == -3.0f && obs.hi[0] == 7.0f);
  wq_observer_free(&obs);
}

static void test_per_channel(void) {
  wq_observer obs;
  wq_error err;
  /* weight [2 out][3 in] observed along axis 0 */
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, 0, 2, &err) == WQ_OK);
  int64_t d[2] = {2, 3};
  float w[6] = {1.0f, -2.0f, 0.5f, 4.0f, 3.0f, -0.25f};
  CHECK(wq_observer_update(&obs, w, 2, d, "w", &err) == WQ_OK);
  CHECK(obs.lo[0] == -2.0f && obs.hi[0] == 1.0f);
  CHECK(obs.lo[1] == -0.25f && obs.hi[1] == 4.0f);
  wq_observer_free(&obs);
  /* along axis 1 of [2][3]: channel c sees w[0][c], w[1][c] */
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, 1, 3, &err) == WQ_OK);
  CHECK(wq_observer_update(&obs, w, 2, d, "w", &err) == WQ_OK);
  CHECK(obs.lo[0] == 1.0f && obs.hi[0] == 4.0f);
  CHECK(obs.lo[1] == -2.0f && obs.hi[1] == 3.0f);
  CHECK(obs.lo[2] == -0.25f && obs.hi[2] == 0.5f);
  /* a tensor with the wrong channel count is refused by name */
  int64_t bad[2] = {3, 2};
  CHECK(wq_observer_update(&obs, w, 2, bad, "w", &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "w: expected 3 channels") != NULL, "%s", err.message);
  wq_observer_free(&obs);
}

static void test_non_finite_rejected(void) {
  wq_observer obs;
  wq_error err;
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, -1, 1, &err) == WQ_OK);
  int64_t d[1] = {3};
  float ok[3] = {1, 2, 3}, nan_batch[3] = {0.0f, NAN, 9.0f};
  CHECK(wq_observer_update(&obs, ok, 1, d, "in", &err) == WQ_OK);
  CHECK(wq_observer_update(&obs, nan_batch, 1, d, "in", &err) == WQ_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err.message, "in: non-finite value") != NULL, "%s", err.message);
  /* the failed batch left the range as it was (0 folded in nowhere) */
  CHECK(obs.lo[0] == 1.0f && obs.hi[0] == 3.0f && obs.batches == 1);
  wq_observer_free(&obs);
  CHECK(wq_observer_init(&obs, WQ_OBS_MOVING_AVERAGE, 1.5f, -1, 1, &err) == WQ_ERR_INVALID_ARG);
}

static void test_range_to_qparams(void) {
  float s;
  int32_t z;
  /* uint8 affine [-1, 3]: s = 4/255, z = round(0 - (-1)/s) = round(63.75) = 64 */
  wq_range_to_qparams(-1.0f, 3.0f, 0, 255, false, 0.0f, &s, &z);
  CHECK_NEAR(s, 4.0 / 255.0, 1e-9);
  CHECK(z == 64);
  /* range [2, 6] widened to [0, 6] so zero is exact: int8 s = 6/255, z = -128 */
  wq_range_to_qparams(2.0f, 6.0f, -128, 127, false, 0.0f, &s, &z);
  CHECK_NEAR(s, 6.0 / 255.0, 1e-9);
  CHECK(z == -128);
  /* symmetric int8 narrow [-127,127]: max |x| = 2.54 -> s = 0.02, z = 0 */
  wq_range_to_qparams(-2.54f, 1.0f, -127, 127, true, 0.0f, &s, &z);
  CHECK_NEAR(s, 0.02, 1e-8);
  CHECK(z == 0);
  /* symmetric uint8: z = 128, 127 codes on the short side */
  wq_range_to_qparams(-1.27f, 0.5f, 0, 255, true, 0.0f, &s, &z);
  CHECK_NEAR(s, 0.01, 1e-8);
  CHECK(z == 128);
  /* all-zero tensor with a floor of 2.55e-3: s = 1e-5, z = -128 */
  wq_range_to_qparams(0.0f, 0.0f, -128, 127, false, 2.55e-3f, &s, &z);
  CHECK_NEAR(s, 1e-5, 1e-10);
  CHECK(z == -128);
}

/* ---- histogram ----------------------------------------------------------- */

static void test_histogram_grid(void) {
  wq_observer obs;
  wq_error err;
  CHECK(wq_observer_init_histogram(&obs, 16, &err) == WQ_OK);
  int64_t d[1] = {4};
  float b1[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  CHECK(wq_observer_update(&obs, b1, 1, d, "x", &err) == WQ_OK);
  /* [0, 3] in 16 bins: w = 0.25 (3/0.125 = 24 bins would not fit), origin 0 */
  CHECK(obs.width_exp == -2 && obs.origin == 0);
  int64_t want1[16] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  CHECK(memcmp(obs.counts, want1, sizeof want1) == 0);
  /* -1 widens to [-1, 3]: w = 0.25 needs 12 - (-4) = 16 + 1 bins, so w = 0.5,
   * origin floor(-1 / 0.5) = -2; 0 -> bin 2, 1 -> 4, 2 -> 6, 3 -> 8, -1 -> 0 */
  int64_t d1[1] = {1};
  float b2[1] = {-1.0f};
  CHECK(wq_observer_update(&obs, b2, 1, d1, "x", &err) == WQ_OK);
  CHECK(obs.width_exp == -1 && obs.origin == -2);
  int64_t want2[16] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  CHECK(memcmp(obs.counts, want2, sizeof want2) == 0);
  CHECK(obs.lo[0] == -1.0f && obs.hi[0] == 3.0f && obs.batches == 2);
  wq_observer_free(&obs);
  CHECK(wq_observer_init_histogram(&obs, 8, &err) == WQ_ERR_INVALID_ARG);
  CHECK(wq_observer_init(&obs, WQ_OBS_HISTOGRAM, 0, -1, 1, &err) == WQ_ERR_INVALID_ARG);
}

/* n values evenly spread over (-1, 1): -1 + (i + 0.5) * 2/n */
static float *uniform(int n) {
  float *v = malloc((size_t)n * sizeof *v);
  for (int i = 0; i < n; i++)
    v[i] = (float)(-1.0 + (i + 0.5) * 2.0 / n);
  return v;
}

static wq_observer histogram_of(const float *v, int64_t n, int batches) {
  wq_observer obs;
  wq_error err;
  CHECK(wq_observer_init_histogram(&obs, 2048, &err) == WQ_OK);
  for (int b = 0; b < batches; b++) {
    int64_t from = n * b / batches, to = n * (b + 1) / batches, d[1] = {to - from};
    CHECK_MSG(wq_observer_update(&obs, v + from, 1, d, "act", &err) == WQ_OK, "%s", err.message);
  }
  return obs;
}

static void test_histogram_uniform(void) {
  const int n = 20000;
  float *v = uniform(n);
  wq_observer obs = histogram_of(v, n, 1);
  wq_error err;
  float lo, hi;
  /* 2048 bins over (-1, 1): w = 2^-10. Percentile 99.9 clips 20 values per
   * tail: lo = -1 + 20 * 2/20000 = -0.998, hi = 0.998 (within a bin) */
  CHECK(obs.width_exp == -10);
  CHECK(wq_observer_range(&obs, WQ_CALIB_PERCENTILE, 99.9f, -128, 127, false, &lo, &hi, &err) ==
        WQ_OK);
  CHECK_NEAR(lo, -0.998, 1.0 / 1024);
  CHECK_NEAR(hi, 0.998, 1.0 / 1024);
  /* MSE for 256 codes on uniform (-1, 1): clipping at c costs (1 - c)^3 / 3
   * per side, rounding c^3 (2/255)^2 / 12: the optimum is 1 - c ~ 0.004 */
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -128, 127, false, &lo, &hi, &err) == WQ_OK);
  CHECK_MSG(lo <= -0.99f && lo >= -1.0f && hi >= 0.99f && hi <= 1.0f, "MSE [%g, %g]", lo, hi);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -127, 127, true, &lo, &hi, &err) == WQ_OK);
  CHECK_MSG(lo == -hi && hi >= 0.99f && hi <= 1.0f, "symmetric MSE [%g, %g]", lo, hi);
  /* min/max methods give the observed range */
  CHECK(wq_observer_range(&obs, WQ_CALIB_MINMAX, 0, -128, 127, false, &lo, &hi, &err) == WQ_OK);
  CHECK(lo == v[0] && hi == v[n - 1]);
  wq_observer_free(&obs);
  free(v);
}

static void test_histogram_outlier(void) {
  const int n = 20000;
  float *v = uniform(n + 1);
  for (int i = 0; i < n; i++)
    v[i] = (float)(-1.0 + (i + 0.5) * 2.0 / n);
  v[n] = 1000.0f;
  wq_observer obs = histogram_of(v, n + 1, 1);
  wq_error err;
  float lo, hi;
  /* [-1, 1000] in 2048 bins: w = 0.5 (2000 - (-2) bins fit); each of the
   * 4 bins of (-1, 1) holds 5000 values. Percentile 99.99: tails of
   * 20001 * 1e-4 = 2.0001 values; the top one skips the outlier's bin and
   * takes 1.0001 of 5000 in [0.5, 1): hi = 1 - 1.0001/5000 * 0.5 */
  CHECK(obs.width_exp == -1);
  CHECK(wq_observer_range(&obs, WQ_CALIB_PERCENTILE, 99.99f, -128, 127, false, &lo, &hi, &err) ==
        WQ_OK);
  CHECK_NEAR(hi, 1.0 - 1.0001 / 5000 * 0.5, 1e-6);
  CHECK_NEAR(lo, -1.0 + 2.0001 / 5000 * 0.5, 1e-6);
  /* MSE trades the outlier's clipping error (1000.25 - h)^2 (bin centre)
   * against the rounding error of the N others, N (h - lo)^2 / (255^2 * 12)
   * for an affine int8 grid: the optimum is h = (1000.25 - k lo)/(1 + k),
   * k = N / 780300. With N = 20000 (k = 0.026) it barely clips: the zero
   * point then rounds lo up to 0 and h ~ 981-990 on the 0.5 grid. */
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -128, 127, false, &lo, &hi, &err) == WQ_OK);
  CHECK_MSG(hi > 970.0f && hi < 1000.0f, "MSE [%g, %g]", lo, hi);
  wq_observer_free(&obs);
  free(v);
  /* N = 2M (k = 2.563, lo = -1): h = (1000.25 + 2.563) / 3.563 = 281.4.
   * Symmetric [-127, 127]: the step is 2t/254, k = 4N / (254^2 * 12) =
   * 10.33, t = 1000.25 / 11.33 = 88.3. */
  const int big = 2000000;
  v = malloc((size_t)(big + 1) * sizeof *v);
  for (int i = 0; i < big; i++)
    v[i] = (float)(-1.0 + (i + 0.5) * 2.0 / big);
  v[big] = 1000.0f;
  obs = histogram_of(v, big + 1, 1);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -128, 127, false, &lo, &hi, &err) == WQ_OK);
  CHECK_MSG(hi >= 277.0f && hi <= 286.0f && lo <= -0.99f, "MSE [%g, %g]", lo, hi);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -127, 127, true, &lo, &hi, &err) == WQ_OK);
  CHECK_MSG(hi >= 86.0f && hi <= 91.0f && lo == -hi, "symmetric MSE [%g, %g]", lo, hi);
  wq_observer_free(&obs);
  free(v);
}

/* Batches that widen the range step by step (rebinning several times) end
 * with the same histogram and ranges, byte for byte, as one batch. */
static void test_histogram_batches(void) {
  const int n = 5000;
  float *v = malloc((n + 1) * sizeof *v);
  for (int i = 0; i < n; i++) /* growing spread: batch k lies within +-(k+1)/10ish */
    v[i] = (float)((i % 2 ? 1 : -0.3) * (0.001 + (double)i / n) * sin((double)i));
  v[n] = 250.0f;
  wq_observer one = histogram_of(v, n + 1, 1), ten = histogram_of(v, n + 1, 10);
  CHECK(ten.batches == 10);
  CHECK(one.width_exp == ten.width_exp && one.origin == ten.origin);
  CHECK(memcmp(one.counts, ten.counts, (size_t)one.bins * sizeof *one.counts) == 0);
  wq_calib_method methods[2] = {WQ_CALIB_PERCENTILE, WQ_CALIB_MSE};
  for (int m = 0; m < 2; m++)
    for (int sym = 0; sym < 2; sym++) {
      float r1[2], r10[2];
      wq_error err;
      CHECK(wq_observer_range(&one, methods[m], 99.9f, -128, 127, sym, &r1[0], &r1[1], &err) ==
            WQ_OK);
      CHECK(wq_observer_range(&ten, methods[m], 99.9f, -128, 127, sym, &r10[0], &r10[1], &err) ==
            WQ_OK);
      CHECK_MSG(memcmp(r1, r10, sizeof r1) == 0, "method %d sym %d: [%g,%g] vs [%g,%g]", m, sym,
                r1[0], r1[1], r10[0], r10[1]);
    }
  wq_observer_free(&one);
  wq_observer_free(&ten);
  free(v);
}

static void test_histogram_errors(void) {
  wq_observer obs;
  wq_error err;
  float lo, hi;
  CHECK(wq_observer_init_histogram(&obs, 64, &err) == WQ_OK);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -128, 127, false, &lo, &hi, &err) ==
        WQ_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err.message, "no data") != NULL, "%s", err.message);
  int64_t d[1] = {3};
  float ok[3] = {-1, 0.5f, 2}, inf_batch[3] = {0.0f, INFINITY, 1.0f};
  CHECK(wq_observer_update(&obs, ok, 1, d, "conv1_out", &err) == WQ_OK);
  int64_t before[64];
  memcpy(before, obs.counts, sizeof before);
  int we = obs.width_exp;
  CHECK(wq_observer_update(&obs, inf_batch, 1, d, "conv1_out", &err) == WQ_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err.message, "conv1_out: non-finite value inf") != NULL, "%s", err.message);
  CHECK(memcmp(before, obs.counts, sizeof before) == 0 && obs.width_exp == we && obs.batches == 1);
  CHECK(wq_observer_range(&obs, WQ_CALIB_PERCENTILE, 0.0f, -128, 127, false, &lo, &hi, &err) ==
        WQ_ERR_INVALID_ARG);
  CHECK(wq_observer_range(&obs, WQ_CALIB_PERCENTILE, 100.5f, -128, 127, false, &lo, &hi, &err) ==
        WQ_ERR_INVALID_ARG);
  /* percentile 100 clips nothing */
  CHECK(wq_observer_range(&obs, WQ_CALIB_PERCENTILE, 100.0f, -128, 127, false, &lo, &hi, &err) ==
        WQ_OK);
  CHECK(lo == -1.0f && hi == 2.0f);
  wq_observer_free(&obs);
  /* a min/max observer has no histogram to clip with */
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, -1, 1, &err) == WQ_OK);
  CHECK(wq_observer_update(&obs, ok, 1, d, "x", &err) == WQ_OK);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MSE, 0, -128, 127, false, &lo, &hi, &err) ==
        WQ_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err.message, "histogram") != NULL, "%s", err.message);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MINMAX, 0, -128, 127, false, &lo, &hi, &err) == WQ_OK);
  CHECK(lo == -1.0f && hi == 2.0f);
  wq_observer_free(&obs);
  CHECK(wq_observer_init(&obs, WQ_OBS_MINMAX, 0, 0, 3, &err) == WQ_OK);
  CHECK(wq_observer_update(&obs, ok, 1, d, "w", &err) == WQ_OK);
  CHECK(wq_observer_range(&obs, WQ_CALIB_MINMAX, 0, -128, 127, false, &lo, &hi, &err) ==
        WQ_ERR_INVALID_ARG);
  wq_observer_free(&obs);
}

int main(void) {
  test_minmax_over_batches();
  test_moving_average();
  test_per_channel();
  test_non_finite_rejected();
  test_range_to_qparams();
  test_histogram_grid();
  test_histogram_uniform();
  test_histogram_outlier();
  test_histogram_batches();
  test_histogram_errors();
  WQ_TEST_END();
}
