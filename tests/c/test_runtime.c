/* Load pipeline, executor and API behaviour on real models from ../shared:
 * reference outputs, constant folding of shape plumbing, symbolic dims and
 * every run-time input error. */
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "wq_test.h"

static wq_model *load_shared(const char *rel, const wq_load_options *opts, wq_error *err) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return NULL;
  wq_model *m = NULL;
  wq_status st = wq_model_load(bytes, n, opts, &m, err);
  CHECK_MSG(st == WQ_OK, "%s: %s (node %s)", rel, err->message, err->node);
  free(bytes);
  return m;
}

static int count_ops(const wq_model *m, const char *op_type) {
  const wq_graph *g = wq_model_get_ir(m)->graph;
  int c = 0;
  for (int i = 0; i < g->n_nodes; i++)
    c += strcmp(g->nodes[i].op_type, op_type) == 0;
  return c;
}

static void test_mnist_reference_outputs(void) {
  wq_error err;
  wq_model *m = load_shared("models/mnist-8/model.onnx", NULL, &err);
  if (!m)
    return;
  CHECK(wq_model_input_count(m) == 1 && wq_model_output_count(m) == 1);
  CHECK(strcmp(wq_model_input(m, 0)->name, "Input3") == 0);
  /* The two Reshape shape inputs are constants: nothing to fold but the
   * graph must keep its 12 compute nodes. */
  for (int set = 0; set < 3; set++) {
    char path[1024];
    size_t n;
    wq_value in, want;
    snprintf(path, sizeof path, "%s/models/mnist-8/test_data_set_%d/input_0.pb",
             wq_test_shared_dir(), set);
    uint8_t *bytes = wq_test_read_file(path, &n);
    CHECK(bytes && wq_tensor_decode(bytes, n, &in, NULL, 0, &err) == WQ_OK);
    free(bytes);
    snprintf(path, sizeof path, "%s/models/mnist-8/test_data_set_%d/output_0.pb",
             wq_test_shared_dir(), set);
    bytes = wq_test_read_file(path, &n);
    CHECK(bytes && wq_tensor_decode(bytes, n, &want, NULL, 0, &err) == WQ_OK);
    free(bytes);
    CHECK_MSG(wq_model_run(m, &in, 1, &err) == WQ_OK, "%s", err.message);
    const wq_value *got = wq_model_result(m, 0);
    CHECK(got && got->rank == 2 && got->dims[1] == 10);
    double worst = 0;
    for (int i = 0; got && i < 10; i++) {
      double g = ((float *)got->data)[i], w = ((float *)want.data)[i];
      double d = fabs(g - w) - 1e-3 * fabs(w);
      if (d > worst)
        worst = d;
    }
    CHECK_MSG(worst <= 1e-4, "set %d exceeds tolerance by %g", set, worst);
    free(in.data);
    free(want.data);
  }
  char *text = wq_model_describe(m);
  CHECK(text && strstr(text, "Input3") && strstr(text, "Conv") && strstr(text, "parameters:"));
  free(text);
  wq_model_free(m);
}

static void test_run_input_errors(void) {
  wq_error err;
  wq_model *m = load_shared("models/mnist-8/model.onnx", NULL, &err);
  if (!m)
    return;
  float pixels[784] = {0};
  wq_value in = {.dtype = WQ_DT_FLOAT, .rank = 4, .dims = {1, 1, 28, 28}, .data = pixels};
  CHECK(wq_model_run(m, &in, 0, &err) == WQ_ERR_INVALID_ARG);
  wq_value wrong_dtype = in;
  wrong_dtype.dtype = WQ_DT_INT32;
  CHECK(wq_model_run(m, &wrong_dtype, 1, &err) == WQ_ERR_SHAPE && strstr(err.message, "Input3"));
  wq_value wrong_shape = in;
  wrong_shape.dims[2] = 27;
  CHECK(wq_model_run(m, &wrong_shape, 1, &err) == WQ_ERR_SHAPE &&
        strstr(err.message, "[1,1,27,28]"));
  wq_value wrong_rank = in;
  wrong_rank.rank = 3;
  CHECK(wq_model_run(m, &wrong_rank, 1, &err) == WQ_ERR_SHAPE);
  wq_value negative = in;
  negative.dims[0] = -1;
  CHECK(wq_model_run(m, &negative, 1, &err) == WQ_ERR_SHAPE);
  /* A failed run leaves the model usable. */
  CHECK(wq_model_run(m, &in, 1, &err) == WQ_OK);
  CHECK(wq_model_result(m, 0) != NULL);
  wq_model_free(m);
}

/* ppocr is a Paddle export whose Reshape takes its shape from
 * Shape→Slice→Concat: binding the input shape at load folds that chain. */
static void test_folding_shape_plumbing(void) {
  wq_error err;
  int64_t dims[4] = {1, 3, 48, 192};
  wq_input_shape shape = {"x", 4, dims};
  wq_load_options opts = {.input_shapes = &shape, .n_input_shapes = 1};
  wq_model *m = load_shared("models/ppocr-mobile-v2-cls/model.onnx", &opts, &err);
  if (!m)
    return;
  CHECK_MSG(count_ops(m, "Shape") == 0, "%d Shape nodes left", count_ops(m, "Shape"));
  CHECK(count_ops(m, "Slice") == 0);
  const wq_tensor *out = wq_model_output(m, 0);
  CHECK(out->rank == 2 && out->dims[0] == 1 && out->dims[1] == 2);
  /* Its weights are Constant nodes, not initializers: they still count
   * (the 565 KB file is almost all weights). */
  char *text = wq_model_describe(m);
  CHECK_MSG(text && strstr(text, "parameters: 133665 in 250 tensors"), "%s", text ? text : "");
  free(text);
  wq_model_free(m);

  /* Without folding the same model still runs (shapes found at run time). */
  wq_load_options keep = {.input_shapes = &shape, .n_input_shapes = 1, .no_constant_folding = 1};
  m = load_shared("models/ppocr-mobile-v2-cls/model.onnx", &keep, &err);
  if (!m)
    return;
  CHECK(count_ops(m, "Shape") > 0);
  float *x = calloc(3 * 48 * 192, sizeof *x);
  for (int i = 0; i < 3 * 48 * 192; i++)
    x[i] = (float)((i * 7919) % 255) / 255.0f;
  wq_value in = {.dtype = WQ_DT_FLOAT, .rank = 4, .dims = {1, 3, 48, 192}, .data = x};
  CHECK_MSG(wq_model_run(m, &in, 1, &err) == WQ_OK, "%s (%s)", err.message, err.node);
  const wq_value *probs = wq_model_result(m, 0);
  CHECK(probs && fabs(((float *)probs->data)[0] + ((float *)probs->data)[1] - 1.0) < 1e-5);
  free(x);
  wq_model_free(m);
}

static void test_symbolic_dims(void) {
  wq_error err;
  wq_model *m = load_shared("models/super-resolution-10/model.onnx", NULL, &err);
  if (!m)
    return;
  const wq_tensor *in = wq_model_input(m, 0);
  CHECK(in->dims[0] == -1 && in->dim_params[0] && strcmp(in->dim_params[0], "batch_size") == 0);
  wq_model_free(m);

  int64_t bad_dims[4] = {1, 2, 224, 224};
  wq_input_shape bad = {"input", 4, bad_dims};
  wq_load_options opts = {.input_shapes = &bad, .n_input_shapes = 1};
  size_t n;
  char path[1024];
  snprintf(path, sizeof path, "%s/models/super-resolution-10/model.onnx", wq_test_shared_dir());
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK(wq_model_load(bytes, n, &opts, &m, &err) == WQ_ERR_SHAPE && m == NULL);
  CHECK(strstr(err.message, "input") != NULL);
  wq_input_shape unknown = {"nope", 4, bad_dims};
  opts.input_shapes = &unknown;
  CHECK(wq_model_load(bytes, n, &opts, &m, &err) == WQ_ERR_INVALID_ARG &&
        strstr(err.message, "nope"));
  free(bytes);
}

int main(void) {
  test_mnist_reference_outputs();
  test_run_input_errors();
  test_folding_shape_plumbing();
  test_symbolic_dims();
  WQ_TEST_END();
}
