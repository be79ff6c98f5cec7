/* The ONNX conformance cases of the int8 ops, run node by node through the
 * registry (import -> resolve -> infer -> run) and compared exactly with the
 * expected outputs. Cases whose dtypes the runtime does not hold (float16
 * scales, float8, int4, int2, float4) must fail cleanly with
 * WQ_ERR_UNSUPPORTED and a "dtype <name> is not supported" message.
 * Also runs the operator-oriented mnist-8-dynamic-int8 model (ConvInteger,
 * MatMulInteger, QuantizeLinear) through the public API. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "onnx/onnx_import.h"
#include "ops/op.h"
#include "wq_test.h"

typedef enum { CASE_PASS, CASE_FAIL, CASE_SKIP } case_result;

/* A clean skip: unsupported, and the message names the dtype. */
static case_result classify_failure(wq_status st, const wq_error *err, char *why, size_t cap) {
  snprintf(why, cap, "%s: %s", wq_status_name(st), err->message);
  if (st == WQ_ERR_UNSUPPORTED && strstr(err->message, "dtype ") &&
      strstr(err->message, " is not supported"))
    return CASE_SKIP;
  return CASE_FAIL;
}

static bool values_equal(const wq_value *got, const wq_value *want, char *why, size_t cap) {
  if (got->dtype != want->dtype || got->rank != want->rank) {
    snprintf(why, cap, "dtype/rank %s/%d, want %s/%d", wq_dtype_name(got->dtype), got->rank,
             wq_dtype_name(want->dtype), want->rank);
    return false;
  }
  for (int i = 0; i < got->rank; i++)
    if (got->dims[i] != want->dims[i]) {
      snprintf(why, cap, "dim %d is %lld, want %lld", i, (long long)got->dims[i],
               (long long)want->dims[i]);
      return false;
    }
  int64_t n = wq_value_numel(got);
  for (int64_t i = 0; i < n; i++) {
    double g = wq_value_get_double(got, i), w = wq_value_get_double(want, i);
    bool ok = got->dtype == WQ_DT_FLOAT ? fabs(g - w) <= 1e-6 * fabs(w) : g == w;
    if (!ok) {
      snprintf(why, cap, "element %lld is %.9g, want %.9g", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

static case_result run_case(const char *dir, char *why, size_t cap) {
  char path[1024];
  size_t n;
  wq_error err;
  wq_error_clear(&err);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  uint8_t *bytes = wq_test_read_file(path, &n);
  if (!bytes) {
    snprintf(why, cap, "cannot read %.400s", path);
    return CASE_FAIL;
  }
  wq_model_ir *ir = NULL;
  wq_status st = wq_onnx_import(bytes, n, &ir, &err);
  free(bytes);
  if (st != WQ_OK)
    return classify_failure(st, &err, why, cap);
  wq_graph *g = ir->graph;
  case_result result = CASE_PASS;
  wq_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
  bool *owned = calloc((size_t)g->n_tensors, sizeof *owned);
  st = wq_graph_resolve_ops(g, &err);
  if (st != WQ_OK) {
    result = classify_failure(st, &err, why, cap);
    goto done;
  }
  for (int t = 0; t < g->n_tensors; t++)
    vals[t] = wq_tensor_value(&g->tensors[t]);
  for (int k = 0; k < g->n_inputs; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
    bytes = wq_test_read_file(path, &n);
    if (!bytes) {
      snprintf(why, cap, "cannot read %.400s", path);
      result = CASE_FAIL;
      goto done;
    }
    st = wq_tensor_decode(bytes, n, &vals[g->inputs[k]], NULL, 0, &err);
    free(bytes);
    if (st != WQ_OK) {
      result = classify_failure(st, &err, why, cap);
      goto done;
    }
    owned[g->inputs[k]] = true;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *node = &g->nodes[i];
    wq_value in[16], out[8];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int k = 0; k < node->n_inputs; k++)
      if (node->inputs[k] >= 0)
        in[k] = vals[node->inputs[k]];
    st = node->op->infer(node, in, out, &err);
    if (st != WQ_OK) {
      result = classify_failure(st, &err, why, cap);
      goto done;
    }
    for (int k = 0; k < node->n_outputs; k++) {
      if (node->outputs[k] < 0)
        continue;
      size_t nb = wq_value_nbytes(&out[k]);
      out[k].data = calloc(nb ? nb : 1, 1);
      vals[node->outputs[k]] = out[k];
      owned[node->outputs[k]] = true;
    }
    st = node->op->run(node, in, out, &err);
    if (st != WQ_OK) {
      result = classify_failure(st, &err, why, cap);
      goto done;
    }
  }
  for (int k = 0; k < g->n_outputs; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k);
    bytes = wq_test_read_file(path, &n);
    wq_value want;
    st = bytes ? wq_tensor_decode(bytes, n, &want, NULL, 0, &err) : WQ_ERR_IO;
    free(bytes);
    if (st != WQ_OK) {
      result = st == WQ_ERR_IO ? CASE_FAIL : classify_failure(st, &err, why, cap);
      goto done;
    }
    bool eq = values_equal(&vals[g->outputs[k]], &want, why, cap);
    free(want.data);
    if (!eq) {
      result = CASE_FAIL;
      goto done;
    }
  }
done:
  for (int t = 0; t < g->n_tensors; t++)
    if (owned[t])
      free(vals[t].data);
  free(vals);
  free(owned);
  wq_model_ir_free(ir);
  return result;
}

static const char *const must_pass[] = {"test_quantizelinear",
                                        "test_quantizelinear_blocked_symmetric",
                                        "test_quantizelinear_int16",
                                        "test_quantizelinear_uint16",
                                        "test_dequantizelinear_axis",
                                        "test_dequantizelinear_blocked",
                                        "test_dequantizelinear_int16",
                                        "test_dequantizelinear_uint16",
                                        "test_qlinearmatmul_2D_int8_float32",
                                        "test_qlinearmatmul_2D_uint8_float32",
                                        "test_qlinearmatmul_3D_int8_float32",
                                        "test_qlinearmatmul_3D_uint8_float32",
                                        "test_matmulinteger",
                                        "test_convinteger_without_padding",
                                        "test_dynamicquantizelinear",
                                        NULL};

static const char *const must_skip[] = {"test_dequantizelinear_e4m3fn",
                                        "test_dequantizelinear_e4m3fn_float16",
                                        "test_dequantizelinear_e5m2",
                                        "test_dequantizelinear_float4e2m1",
                                        "test_dequantizelinear_int4",
                                        "test_dequantizelinear_uint4",
                                        "test_quantizelinear_e5m2",
                                        "test_quantizelinear_float4e2m1",
                                        "test_quantizelinear_int2",
                                        "test_quantizelinear_int4",
                                        "test_quantizelinear_uint2",
                                        "test_quantizelinear_uint4",
                                        "test_qlinearmatmul_2D_int8_float16",
                                        "test_qlinearmatmul_2D_uint8_float16",
                                        "test_qlinearmatmul_3D_int8_float16",
                                        "test_qlinearmatmul_3D_uint8_float16",
                                        NULL};

/* onnxruntime-node 1.30.0 logits on the model's shipped input (recorded in
 * models/mnist-8-dynamic-int8/SOURCE.md to two decimals). */
static void test_mnist_dynamic_int8(const char *shared) {
  static const float ort_logits[10] = {-4.54f, -0.56f, 12.07f, -7.53f, 7.98f,
                                       -6.29f, -1.06f, -3.78f, -7.73f, -6.64f};
  char path[1024];
  size_t n;
  wq_error err;
  snprintf(path, sizeof path, "%s/models/mnist-8-dynamic-int8/model.onnx", shared);
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %.400s", path);
  if (!bytes)
    return;
  wq_model *m = NULL;
  wq_status st = wq_model_load(bytes, n, NULL, &m, &err);
  free(bytes);
  CHECK_MSG(st == WQ_OK, "mnist-8-dynamic-int8 load: %s", err.message);
  if (st != WQ_OK)
    return;
  snprintf(path, sizeof path,
           "%s/models/mnist-8-dynamic-int8/float_reference_data_set_0/input_0.pb", shared);
  bytes = wq_test_read_file(path, &n);
  wq_value in;
  st = bytes ? wq_tensor_decode(bytes, n, &in, NULL, 0, &err) : WQ_ERR_IO;
  free(bytes);
  CHECK(st == WQ_OK);
  if (st == WQ_OK) {
    st = wq_model_run(m, &in, 1, &err);
    CHECK_MSG(st == WQ_OK, "mnist-8-dynamic-int8 run: %s", err.message);
    const wq_value *got = st == WQ_OK ? wq_model_result(m, 0) : NULL;
    CHECK(got && got->dtype == WQ_DT_FLOAT && wq_value_numel(got) == 10);
    if (got && wq_value_numel(got) == 10) {
      const float *y = got->data;
      int argmax = 0;
      for (int i = 0; i < 10; i++) {
        CHECK_NEAR(y[i], ort_logits[i], 0.006);
        if (y[i] > y[argmax])
          argmax = i;
      }
      CHECK(argmax == 2);
    }
    free(in.data);
  }
  wq_model_free(m);
}

int main(void) {
  const char *shared = getenv("WQ_SHARED_DIR");
  if (!shared)
    shared = "../shared";
  char dir[1024], why[600];
  int passed = 0, skipped = 0;
  for (int i = 0; must_pass[i]; i++) {
    snprintf(dir, sizeof dir, "%s/onnx-node-tests/%s", shared, must_pass[i]);
    why[0] = '\0';
    case_result r = run_case(dir, why, sizeof why);
    CHECK_MSG(r == CASE_PASS, "%s: %s", must_pass[i], why);
    passed += r == CASE_PASS;
  }
  for (int i = 0; must_skip[i]; i++) {
    snprintf(dir, sizeof dir, "%s/onnx-node-tests/%s", shared, must_skip[i]);
    why[0] = '\0';
    case_result r = run_case(dir, why, sizeof why);
    CHECK_MSG(r == CASE_SKIP, "%s: not a clean skip: %s", must_skip[i], why);
    skipped += r == CASE_SKIP;
    printf("skip %-40s %s\n", must_skip[i], why);
  }
  printf("int8 conformance: %d passed, %d skipped cleanly\n", passed, skipped);
  test_mnist_dynamic_int8(shared);
  WQ_TEST_END();
}
