/* Calibration observers against ranges worked out by hand in the comments. */
#include <math.h>
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

int main(void) {
  test_minmax_over_batches();
  test_moving_average();
  test_per_channel();
  test_non_finite_rejected();
  test_range_to_qparams();
  WQ_TEST_END();
}
