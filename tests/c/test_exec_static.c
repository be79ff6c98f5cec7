/* The executor's static fast path: on a plan made at load, the first run
 * records every node's output shapes and later runs reuse them (no infer),
 * with graph outputs in buffers the plan keeps. Checked against the
 * reference path (no arena, infer every run) bit for bit over several runs
 * with different data, with poisoned buffers; wrong inputs after fast runs
 * still fail with clear errors; nodes with non-constant integer inputs keep
 * their inference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_internal.h"
#include "api/wasmq.h"
#include "ir/checked.h"
#include "wq_test.h"

static wq_model *load_model(const char *rel, const wq_load_options *opts) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return NULL;
  wq_model *m = NULL;
  wq_error err;
  wq_status st = wq_model_load(bytes, n, opts, &m, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s (node %s)", rel, err.message, err.node);
  free(bytes);
  return m;
}

static uint32_t next_random(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* Seeded float inputs in [-1, 1) for every (float, static) input. Returns
 * the count filled; the caller frees each data. */
static int make_inputs(const wq_model *m, uint32_t seed, wq_value *in, int max) {
  int n = wq_model_input_count(m);
  CHECK(n <= max);
  for (int i = 0; i < n && i < max; i++) {
    const wq_tensor *t = wq_model_input(m, i);
    memset(&in[i], 0, sizeof in[i]);
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    for (int d = 0; d < t->rank; d++)
      in[i].dims[d] = t->dims[d] >= 0 ? t->dims[d] : 1;
    CHECK(t->dtype == WQ_DT_FLOAT);
    int64_t count = wq_value_numel(&in[i]);
    in[i].data = malloc(wq_value_nbytes(&in[i]) + 1);
    CHECK(in[i].data != NULL);
    uint32_t state = seed + 7919u * (uint32_t)i;
    for (int64_t k = 0; in[i].data && k < count; k++)
      ((float *)in[i].data)[k] = (float)next_random(&state) / 8388608.0f - 1.0f;
  }
  return n < max ? n : max;
}

static void free_inputs(wq_value *in, int n) {
  for (int i = 0; i < n; i++)
    free(in[i].data);
}

static bool same_results(const wq_model *a, const wq_model *b) {
  for (int i = 0; i < wq_model_output_count(a); i++) {
    const wq_value *x = wq_model_result(a, i), *y = wq_model_result(b, i);
    if (!x || !y || x->dtype != y->dtype || x->rank != y->rank ||
        memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)x->rank) != 0 ||
        memcmp(x->data, y->data, wq_value_nbytes(x)) != 0)
      return false;
  }
  return true;
}

/* Several runs with fresh data: run 1 records, runs 2.. reuse the shapes;
 * every result equals the reference path's; graph outputs come from the
 * plan's buffers (the same pointer every run). */
static void check_model(const char *rel) {
  wq_model *fast = load_model(rel, NULL);
  wq_model *reference = load_model(rel, NULL);
  if (!fast || !reference) {
    wq_model_free(fast);
    wq_model_free(reference);
    return;
  }
  reference->plan.use_arena = false;
  fast->plan.poison = true; /* a kernel relying on last run's bytes would differ */
  const void *first_data = NULL;
  const int runs = 4;
  for (int run = 0; run < runs; run++) {
    wq_value in[8];
    int n_in = make_inputs(fast, 77u + 1000u * (uint32_t)run, in, 8);
    wq_error err;
    wq_status a = wq_model_run(fast, in, n_in, &err);
    CHECK_MSG(a == WQ_OK, "%s run %d: %s (node %s)", rel, run, err.message, err.node);
    wq_status b = wq_model_run(reference, in, n_in, &err);
    CHECK_MSG(b == WQ_OK, "%s reference run %d: %s", rel, run, err.message);
    if (a == WQ_OK && b == WQ_OK)
      CHECK_MSG(same_results(fast, reference), "%s run %d: results differ from the reference", rel,
                run);
    const wq_value *r = wq_model_result(fast, 0);
    CHECK(r != NULL);
    if (run == 0 && r)
      first_data = r->data;
    else if (r)
      CHECK_MSG(r->data == first_data, "%s run %d: output 0 moved (a fresh buffer per run)", rel,
                run);
    free_inputs(in, n_in);
  }
  wq_arena_stats s = wq_exec_arena_stats(&fast->plan);
  CHECK_MSG(s.planned_at_load && s.arena_runs == runs && s.shape_reuse_runs == runs - 1 &&
                s.recording_runs == 0,
            "%s: %d arena runs, %d reused shapes, %d recording runs", rel, s.arena_runs,
            s.shape_reuse_runs, s.recording_runs);
  wq_model_free(fast);
  wq_model_free(reference);
}

static void test_static_models(void) {
  check_model("models/mnist-8/model.onnx");
  check_model("models/synthetic/smallcnn_qdq.onnx");
  check_model("models/synthetic/smallcnn_f32.onnx");
  check_model("models/synthetic/matmul_1x1024x1024_qlinear.onnx");
  check_model("models/synthetic/matmul_1x1024x1024_qdq.onnx");
  check_model("models/synthetic/matmul_256x256x256_qdq_pertensor.onnx");
  check_model("models/mnist-8-dynamic-int8/model.onnx");
  check_model("models/openwakeword-hello-deepa-mlp/model.onnx");
}

/* After fast runs, bad inputs still fail with the declared-shape message,
 * and the model keeps working afterwards. */
static void test_errors_after_fast_runs(void) {
  wq_model *m = load_model("models/mnist-8/model.onnx", NULL);
  if (!m)
    return;
  wq_value in[1];
  int n_in = make_inputs(m, 5u, in, 1);
  wq_error err;
  for (int run = 0; run < 3; run++)
    CHECK(wq_model_run(m, in, n_in, &err) == WQ_OK);
  wq_value wrong = in[0];
  wrong.dims[2] = 27;
  CHECK(wq_model_run(m, &wrong, 1, &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "must have shape [1,1,28,28], got [1,1,27,28] (dim 2)") != NULL,
            "message: %s", err.message);
  CHECK(wq_model_result(m, 0) == NULL);
  wq_value wrong_rank = in[0];
  wrong_rank.rank = 3;
  CHECK(wq_model_run(m, &wrong_rank, 1, &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "must have shape [1,1,28,28], got [1,1,28]") != NULL, "message: %s",
            err.message);
  wq_value wrong_dtype = in[0];
  wrong_dtype.dtype = WQ_DT_INT32;
  CHECK(wq_model_run(m, &wrong_dtype, 1, &err) == WQ_ERR_SHAPE);
  CHECK(wq_model_run(m, in, n_in, &err) == WQ_OK);
  CHECK(wq_model_result(m, 0) != NULL && wq_model_result(m, 0)->dims[1] == 10);
  wq_arena_stats s = wq_exec_arena_stats(&m->plan);
  CHECK(s.shape_reuse_runs == 3);
  free_inputs(in, n_in);
  wq_model_free(m);
}

/* Integer inputs (indices, sizes: data an op may validate in infer) keep
 * their node's inference on every run; 8-bit and float ones skip it. */
static void check_skip_flags(const char *rel, const char *op_type, bool may_skip) {
  wq_model *m = load_model(rel, NULL);
  if (!m)
    return;
  const wq_graph *g = m->ir->graph;
  int found = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].op_type, op_type) == 0) {
      CHECK_MSG(m->plan.may_skip_infer[i] == may_skip, "%s: %s may skip infer: %d", rel, op_type,
                m->plan.may_skip_infer[i]);
      found++;
    }
  CHECK_MSG(found == 1, "%s: %d %s nodes", rel, found, op_type);
  /* Exact results on every run, whichever path the node takes. */
  wq_value in[2];
  memset(in, 0, sizeof in);
  int n_in = wq_model_input_count(m);
  CHECK(n_in == 2);
  for (int i = 0; i < 2 && i < n_in; i++) {
    const wq_tensor *t = wq_model_input(m, i);
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    memcpy(in[i].dims, t->dims, sizeof in[i].dims);
    in[i].data = calloc(wq_value_nbytes(&in[i]) + 1, 1);
    for (size_t b = 0; in[i].data && b < wq_value_nbytes(&in[i]); b++)
      ((uint8_t *)in[i].data)[b] = (uint8_t)(b % 2 == 0 ? 3 * b + (size_t)i : 0);
  }
  wq_error err;
  for (int run = 0; run < 3; run++) {
    CHECK_MSG(wq_model_run(m, in, 2, &err) == WQ_OK, "%s: %s", rel, err.message);
    const wq_value *r = wq_model_result(m, 0);
    CHECK(r != NULL && r->dtype == in[0].dtype);
    for (int64_t k = 0; r && k < wq_value_numel(r); k++) {
      int64_t want = wq_value_get_int(&in[0], k) + wq_value_get_int(&in[1], k);
      int64_t got = wq_value_get_int(r, k);
      if (r->dtype == WQ_DT_INT8)
        want = (int8_t)want; /* wraps like the kernel */
      else if (r->dtype == WQ_DT_INT16)
        want = (int16_t)want;
      CHECK_MSG(got == want, "%s run %d element %lld: %lld, expected %lld", rel, run, (long long)k,
                (long long)got, (long long)want);
      if (got != want)
        break;
    }
    /* Change the data: run 2 must see it. */
    for (size_t b = 0; in[0].data && b < wq_value_nbytes(&in[0]); b += 2)
      ((uint8_t *)in[0].data)[b] ^= 1;
  }
  wq_arena_stats s = wq_exec_arena_stats(&m->plan);
  CHECK(s.shape_reuse_runs == 2);
  free_inputs(in, 2);
  wq_model_free(m);
}

static void test_integer_inputs_keep_infer(void) {
  check_skip_flags("onnx-node-tests/test_add_int16/model.onnx", "Add", false);
  check_skip_flags("onnx-node-tests/test_add_int8/model.onnx", "Add", true);
}

/* wq_product_within: the plain-multiply path (limits up to 2^31) and the
 * checked one answer alike at the edges, zeros included. */
static void test_product_within(void) {
  const int64_t big = (int64_t)1 << 40, lim = WQ_MAX_ELEMENTS;
  struct {
    int64_t v[3];
    int n;
    int64_t limit;
    bool ok;
    int64_t want;
  } cases[] = {
      {{3, 4, 5}, 3, lim, true, 60},
      {{lim, 1, 1}, 3, lim, true, lim},
      {{lim, 2, 1}, 3, lim, false, 0},
      {{0, big, 7}, 3, lim, true, 0},
      {{big, 0, 1}, 3, lim, false, 0},
      {{2, -1, 0}, 3, lim, false, 0},
      {{(int64_t)1 << 31, 1, 1}, 3, (int64_t)1 << 31, true, (int64_t)1 << 31},
      {{(int64_t)1 << 16, (int64_t)1 << 16, 2}, 3, (int64_t)1 << 31, false, 0},
      {{big, big, 1}, 3, INT64_MAX, false, 0},
      {{big, 4, 1}, 3, INT64_MAX, true, big * 4},
      {{5, 5, 5}, 0, lim, true, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t got = -7;
    bool ok = wq_product_within(cases[k].v, cases[k].n, cases[k].limit, &got);
    CHECK_MSG(ok == cases[k].ok && (!ok || got == cases[k].want), "case %zu: %d %lld", k, ok,
              (long long)got);
  }
}

int main(void) {
  test_product_within();
  test_static_models();
  test_errors_after_fast_runs();
  test_integer_inputs_keep_infer();
  WQ_TEST_END();
}
