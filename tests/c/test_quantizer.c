/* The quantizer's C API (quant/quantizer.h) on mnist-8: calibration is
 * streamed and deterministic (the same samples give the same bytes, a
 * refused sample changes nothing), the result loads and runs int8, and
 * misuse fails with a clear error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "quant/quantizer.h"
#include "seeded_run.h"
#include "wq_test.h"

static uint8_t *read_mnist(size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/models/mnist-8/model.onnx", wq_test_shared_dir());
  uint8_t *bytes = wq_test_read_file(path, n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  return bytes;
}

/* A digit-like sample: seeded values in [0, 255). */
static void fill_sample(float *x, uint32_t seed) {
  wq_value v = {.dtype = WQ_DT_FLOAT, .data = x};
  wq_seeded_fill(&v, 784, &seed);
  for (int i = 0; i < 784; i++)
    x[i] = (x[i] + 2.0f) * 63.75f;
}

static uint8_t *quantize_with(const uint8_t *model, size_t n, int samples, bool with_bad,
                              size_t *out_n) {
  wq_error err;
  wq_quantizer *q = NULL;
  CHECK(wq_quantizer_new(model, n, NULL, 0, &q, &err) == WQ_OK);
  if (!q)
    return NULL;
  float x[784];
  int64_t dims[4] = {1, 1, 28, 28};
  wq_value in = {.dtype = WQ_DT_FLOAT, .rank = 4, .data = x};
  memcpy(in.dims, dims, sizeof dims);
  for (int s = 0; s < samples; s++) {
    fill_sample(x, 100u + (uint32_t)s);
    CHECK(wq_quantizer_observe(q, &in, 1, &err) == WQ_OK);
    if (with_bad && s == 1) {
      x[300] = NAN;
      CHECK(wq_quantizer_observe(q, &in, 1, &err) == WQ_ERR_INVALID_ARG);
      CHECK(strstr(err.message, "non-finite") != NULL && strstr(err.message, "Input3") != NULL);
    }
  }
  CHECK(wq_quantizer_samples(q) == samples);
  uint8_t *onnx = NULL;
  CHECK(wq_quantizer_finish(q, &onnx, out_n, &err) == WQ_OK);
  char *report = wq_quantizer_report_json(q);
  CHECK(report && strstr(report, "\"nodesFloat\": 0") != NULL);
  free(report);
  wq_quantizer_free(q);
  return onnx;
}

static void test_deterministic_and_loadable(void) {
  size_t n;
  uint8_t *model = read_mnist(&n);
  if (!model)
    return;
  size_t a_n = 0, b_n = 0;
  uint8_t *a = quantize_with(model, n, 6, false, &a_n);
  uint8_t *b = quantize_with(model, n, 6, true, &b_n);
  CHECK(a && b && a_n == b_n && memcmp(a, b, a_n) == 0);
  /* The result lowers to int8 ops and runs. */
  wq_model *m = NULL;
  wq_error err;
  CHECK(wq_model_load(a, a_n, NULL, &m, &err) == WQ_OK);
  if (m) {
    int int8_ops = 0;
    for (int i = 0; i < wq_model_node_count(m); i++)
      int8_ops += strncmp(wq_model_node_op(m, i), "Q", 1) == 0;
    CHECK_MSG(int8_ops >= 3, "%d int8 ops", int8_ops);
    int ran = 0;
    CHECK(wq_seeded_run(m, 1, 1 << 20, &ran, &err) == WQ_OK);
    wq_model_free(m);
  }
  free(a);
  free(b);
  free(model);
}

static void test_misuse(void) {
  size_t n;
  uint8_t *model = read_mnist(&n);
  if (!model)
    return;
  wq_error err;
  wq_quantizer *q = NULL;
  const char *bad = "{\"weights\": {\"qmin\": 5}}";
  CHECK(wq_quantizer_new(model, n, bad, strlen(bad), &q, &err) == WQ_ERR_INVALID_ARG && !q);
  CHECK(wq_quantizer_new(model, n / 2, NULL, 0, &q, &err) != WQ_OK && !q);
  CHECK(wq_quantizer_new(model, n, NULL, 0, &q, &err) == WQ_OK);
  uint8_t *onnx = NULL;
  size_t onnx_n = 0;
  CHECK(wq_quantizer_finish(q, &onnx, &onnx_n, &err) == WQ_ERR_INVALID_ARG && !onnx);
  CHECK(strstr(err.message, "no calibration samples") != NULL);
  float x[10] = {0};
  wq_value small = {.dtype = WQ_DT_FLOAT, .rank = 1, .dims = {10}, .data = x};
  CHECK(wq_quantizer_observe(q, &small, 1, &err) == WQ_ERR_SHAPE);
  CHECK(wq_quantizer_observe(q, &small, 2, &err) == WQ_ERR_INVALID_ARG);
  CHECK(wq_quantizer_samples(q) == 0);
  wq_quantizer_free(q);
  free(model);
}

int main(void) {
  test_deterministic_and_loadable();
  test_misuse();
  WQ_TEST_END();
}
