/* wq_case_check: one ONNX backend-test case, judged identically natively and
 * in wasm because both runners call this. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../onnx/onnx_import.h"
#include "../ops/op.h"
#include "wasmq.h"

/* ONNX's backend tests compare with numpy's assert_allclose defaults here. */
#define CASE_RTOL 1e-3
#define CASE_ATOL 1e-7

static int is_dtype_unsupported(const wq_error *e) {
  return e->code == WQ_ERR_UNSUPPORTED && wq_strfind(e->message, "dtype") &&
         wq_strfind(e->message, "not supported");
}

/* Copies into `name` the first int8-family op of the model that has no
 * registry entry yet; returns 0 when there is none. */
static int find_missing_int8_op(const uint8_t *model, size_t n, char *name, size_t cap) {
  wq_model_ir *ir = NULL;
  wq_error err;
  int found = 0;
  if (wq_onnx_import(model, n, &ir, &err) != WQ_OK)
    return 0;
  for (int i = 0; i < ir->graph->n_nodes && !found; i++) {
    const wq_node *node = &ir->graph->nodes[i];
    if (!wq_op_find(node->domain, node->op_type) && wq_op_is_int8_family(node->op_type)) {
      wq_format(name, cap, "%s", node->op_type);
      found = 1;
    }
  }
  wq_model_ir_free(ir);
  return found;
}

static wq_case_result compare_output(int index, const wq_value *got, const wq_value *want,
                                     char *report, size_t cap, double *worst) {
  char sg[128], sw[128];
  if (got->dtype != want->dtype) {
    wq_format(report, cap, "output %d: dtype %s, expected %s", index, wq_dtype_name(got->dtype),
              wq_dtype_name(want->dtype));
    return WQ_CASE_FAIL;
  }
  wq_dims_format(got->dims, got->rank, sg, sizeof sg);
  wq_dims_format(want->dims, want->rank, sw, sizeof sw);
  if (got->rank != want->rank ||
      memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)want->rank)) {
    wq_format(report, cap, "output %d: shape %s, expected %s", index, sg, sw);
    return WQ_CASE_FAIL;
  }
  int64_t n = wq_value_numel(want);
  int is_float = want->dtype == WQ_DT_FLOAT || want->dtype == WQ_DT_DOUBLE;
  for (int64_t i = 0; i < n; i++) {
    if (is_float) {
      double g = wq_value_get_double(got, i), w = wq_value_get_double(want, i);
      if (isnan(g) && isnan(w))
        continue;
      double diff = fabs(g - w);
      if (isinf(w) && g == w)
        diff = 0;
      if (diff > *worst)
        *worst = diff;
      if (!(diff <= CASE_ATOL + CASE_RTOL * fabs(w))) {
        wq_format(report, cap, "output %d element %lld: got %.9g, expected %.9g", index,
                  (long long)i, g, w);
        return WQ_CASE_FAIL;
      }
    } else {
      int64_t g = wq_value_get_int(got, i), w = wq_value_get_int(want, i);
      if (g != w) {
        wq_format(report, cap, "output %d element %lld: got %lld, expected %lld", index,
                  (long long)i, (long long)g, (long long)w);
        return WQ_CASE_FAIL;
      }
    }
  }
  return WQ_CASE_PASS;
}

static void free_values(wq_value *v, int n) {
  for (int i = 0; v && i < n; i++)
    free(v[i].data);
  free(v);
}

/* Decodes n tensor files; on failure writes the reason and returns the verdict. */
static wq_case_result decode_all(const char *kind, const uint8_t *const *bytes, const size_t *len,
                                 int n, wq_value **out, char *report, size_t cap) {
  *out = calloc((size_t)n + 1, sizeof **out);
  if (!*out) {
    wq_format(report, cap, "out of memory");
    return WQ_CASE_FAIL;
  }
  for (int i = 0; i < n; i++) {
    wq_error err;
    wq_error_clear(&err);
    if (wq_tensor_decode(bytes[i], len[i], &(*out)[i], NULL, 0, &err) != WQ_OK) {
      wq_format(report, cap, "%s %d: %s", kind, i, err.message);
      return is_dtype_unsupported(&err) ? WQ_CASE_SKIP : WQ_CASE_FAIL;
    }
  }
  return WQ_CASE_PASS;
}

wq_case_result wq_case_check(const uint8_t *model, size_t model_n, const uint8_t *const *inputs,
                             const size_t *input_n, int n_inputs, const uint8_t *const *outputs,
                             const size_t *output_n, int n_outputs, char *report,
                             size_t report_cap) {
  wq_value *in = NULL, *want = NULL;
  wq_model *m = NULL;
  wq_error err;
  wq_error_clear(&err);
  report[0] = '\0';
  wq_case_result verdict = decode_all("input", inputs, input_n, n_inputs, &in, report, report_cap);
  if (verdict == WQ_CASE_PASS)
    verdict = decode_all("output", outputs, output_n, n_outputs, &want, report, report_cap);
  if (verdict != WQ_CASE_PASS)
    goto done;

  if (wq_model_load(model, model_n, NULL, &m, &err) != WQ_OK) {
    char int8_op[64];
    if (find_missing_int8_op(model, model_n, int8_op, sizeof int8_op)) {
      wq_format(report, report_cap, "int8 op %s is owned by the int8-semantics stage", int8_op);
      verdict = WQ_CASE_SKIP;
    } else {
      wq_format(report, report_cap, "load failed: %s%s%s", err.message,
                err.node[0] ? " at node " : "", err.node);
      verdict = is_dtype_unsupported(&err) ? WQ_CASE_SKIP : WQ_CASE_FAIL;
    }
    goto done;
  }
  if (wq_model_input_count(m) != n_inputs || wq_model_output_count(m) != n_outputs) {
    wq_format(report, report_cap, "model has %d inputs/%d outputs, the data set %d/%d",
              wq_model_input_count(m), wq_model_output_count(m), n_inputs, n_outputs);
    verdict = WQ_CASE_FAIL;
    goto done;
  }
  if (wq_model_run(m, in, n_inputs, &err) != WQ_OK) {
    wq_format(report, report_cap, "run failed: %s%s%s", err.message, err.node[0] ? " at node " : "",
              err.node);
    verdict = is_dtype_unsupported(&err) ? WQ_CASE_SKIP : WQ_CASE_FAIL;
    goto done;
  }
  double worst = 0;
  for (int i = 0; i < n_outputs && verdict == WQ_CASE_PASS; i++)
    verdict = compare_output(i, wq_model_result(m, i), &want[i], report, report_cap, &worst);
  if (verdict == WQ_CASE_PASS)
    wq_format(report, report_cap, "max abs error %.3g", worst);
done:
  wq_model_free(m);
  free_values(in, n_inputs);
  free_values(want, n_outputs);
  return verdict;
}
