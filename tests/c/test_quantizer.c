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

/* The report of quantizing mnist-8 on 12 seeded samples with `config`. */
static char *report_with(const uint8_t *model, size_t n, const char *config) {
  wq_error err;
  wq_quantizer *q = NULL;
  CHECK(wq_quantizer_new(model, n, config, strlen(config), &q, &err) == WQ_OK);
  if (!q)
    return NULL;
  float x[784];
  wq_value in = {.dtype = WQ_DT_FLOAT, .rank = 4, .dims = {1, 1, 28, 28}, .data = x};
  for (int s = 0; s < 12; s++) {
    fill_sample(x, 100u + (uint32_t)s);
    CHECK(wq_quantizer_observe(q, &in, 1, &err) == WQ_OK);
  }
  uint8_t *onnx = NULL;
  size_t onnx_n = 0;
  CHECK(wq_quantizer_finish(q, &onnx, &onnx_n, &err) == WQ_OK);
  char *report = wq_quantizer_report_json(q);
  free(onnx);
  wq_quantizer_free(q);
  return report;
}

static double report_number(const char *report, const char *key) {
  const char *at = report ? strstr(report, key) : NULL;
  return at ? strtod(at + strlen(key), NULL) : NAN;
}

/* "auto" picks one method for all tensors, then each tensor may take
 * another: the outputs on the kept samples are never further from float
 * than with that one method everywhere, and here one tensor does change. */
static void test_range_method_per_tensor(void) {
  size_t n;
  uint8_t *model = read_mnist(&n);
  if (!model)
    return;
  char *a = report_with(model, n, "{\"calibration\": {\"method\": \"tensor\"}}");
  const char *global = a ? strstr(a, "\"rangeMethod\": \"") : NULL;
  CHECK(global != NULL);
  if (global) {
    char method[16] = "", config[128];
    sscanf(global + strlen("\"rangeMethod\": \""), "%15[a-z]", method);
    snprintf(config, sizeof config,
             "{\"calibration\": {\"method\": \"%s\", \"percentile\": 99.999}}", method);
    char *b = report_with(model, n, config);
    double snr_a = report_number(a, "\"outputSnrDb\": ");
    double snr_b = report_number(b, "\"outputSnrDb\": ");
    CHECK_MSG(snr_a >= snr_b, "auto %.3f dB, %s everywhere %.3f dB", snr_a, method, snr_b);
    char own[40];
    snprintf(own, sizeof own, "\"method\": \"%s\"", method);
    int tensors = 0, others = 0;
    for (const char *t = strstr(a, "\"method\": \""); t; t = strstr(t + 1, "\"method\": \""))
      tensors++, others += strncmp(t, own, strlen(own)) != 0;
    CHECK_MSG(tensors == 7 && others >= 1, "%d tensors, %d by another method than %s", tensors,
              others, method);
    free(b);
  }
  free(a);
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
  test_range_method_per_tensor();
  test_misuse();
  WQ_TEST_END();
}
