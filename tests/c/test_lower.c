/* The int8 lowering pass on whole models: the seed-003 repro (conv -> relu
 * -> concat with zp != qmin -> conv), a graph with every lowered op, the
 * edge cases that must stay float with a reason (seed 004's chained
 * linears among them), strict mode, the --lowered description, the shared
 * quantized models, and byte-flipped models that must never crash. Lowered
 * results are compared with the same model loaded with no_lowering (float
 * Q/DQ op by op): within one quantization step of the output. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "passes/lower.h"
#include "passes/partition.h"
#include "quant/qparams.h"
#include "quant/quantizer.h"
#include "wq_test.h"

#include "dir_list.h"
#include "seeded_run.h"

/* mulberry32, as src/js/random.mjs and the CLI's random:SEED. */
static float *seeded_floats(int64_t n, uint32_t seed) {
  float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
  uint32_t state = seed;
  for (int64_t i = 0; x && i < n; i++) {
    uint32_t z = (state += 0x6D2B79F5u);
    z = (z ^ (z >> 15)) * (z | 1u);
    z ^= z + (z ^ (z >> 7)) * (z | 61u);
    z ^= z >> 14;
    x[i] = (float)(z >> 8) / 16777216.0f;
  }
  return x;
}

static wq_model *load_file(const char *path, int no_lowering, int strict, wq_error *err) {
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return NULL;
  wq_load_options opts = {.no_lowering = no_lowering, .lower_strict = strict};
  wq_model *m = NULL;
  wq_model_load(bytes, n, &opts, &m, err);
  free(bytes);
  return m;
}

static const wq_node *find_node(const wq_model *m, const char *name) {
  const wq_graph *g = wq_model_get_ir(m)->graph;
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].name, name) == 0)
      return &g->nodes[i];
  return NULL;
}

static const wq_tensor *find_tensor(const wq_model *m, const char *name) {
  const wq_graph *g = wq_model_get_ir(m)->graph;
  int t = wq_graph_find_tensor(g, name);
  return t >= 0 ? &g->tensors[t] : NULL;
}

/* The op, in whichever layout the layout pass left its tensors (the kernel
 * follows them; there are no per-layout variants). */
static bool op_is(const char *op_type, const char *want) { return strcmp(op_type, want) == 0; }

static int count_ops(const wq_model *m, const char *domain, const char *op_type) {
  const wq_graph *g = wq_model_get_ir(m)->graph;
  int c = 0;
  for (int i = 0; i < g->n_nodes; i++)
    c += op_is(g->nodes[i].op_type, op_type) && strcmp(g->nodes[i].domain, domain) == 0;
  return c;
}

static bool why_has(const wq_node *n, const char *text) {
  const char *why = n ? wq_lower_why(n) : NULL;
  return why && strstr(why, text);
}

/* Runs m on seeded inputs (input k: seed k) and returns copies of the
 * results (caller frees each and the array), or NULL when the run fails
 * (a failed check unless `may_fail`). */
static float **run_seeded_checked(wq_model *m, bool may_fail) {
  int n_in = wq_model_input_count(m), n_out = wq_model_output_count(m);
  wq_value *in = calloc((size_t)n_in + 1, sizeof *in);
  float **out = calloc((size_t)n_out + 1, sizeof *out);
  bool ok = in && out;
  for (int k = 0; ok && k < n_in; k++) {
    const wq_tensor *t = wq_model_input(m, k);
    in[k].dtype = WQ_DT_FLOAT;
    in[k].rank = t->rank;
    memcpy(in[k].dims, t->dims, sizeof in[k].dims);
    in[k].data = seeded_floats(wq_value_numel(&in[k]), (uint32_t)k);
    ok = in[k].data != NULL;
  }
  wq_error err;
  if (ok) {
    wq_status st = wq_model_run(m, in, n_in, &err);
    if (!may_fail)
      CHECK_MSG(st == WQ_OK, "run: %s (node %s)", err.message, err.node);
    ok = st == WQ_OK;
  }
  for (int o = 0; ok && o < n_out; o++) {
    const wq_value *r = wq_model_result(m, o);
    if (!r || r->dtype != WQ_DT_FLOAT)
      continue;
    size_t nbytes = wq_value_nbytes(r);
    out[o] = malloc(nbytes ? nbytes : 1);
    if (out[o])
      memcpy(out[o], r->data, nbytes);
  }
  for (int k = 0; in && k < n_in; k++)
    free(in[k].data);
  free(in);
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}

static float **run_seeded(wq_model *m) { return run_seeded_checked(m, false); }
static float **run_seeded_quiet(wq_model *m) { return run_seeded_checked(m, true); }

static void free_results(float **r, int n) {
  for (int i = 0; r && i < n; i++)
    free(r[i]);
  free(r);
}

/* The quantization step of output o of the unlowered model: the scale of
 * the DequantizeLinear producing it. */
static float output_step(const wq_model *reference, int o) {
  const wq_graph *g = wq_model_get_ir(reference)->graph;
  int t = g->outputs[o];
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].outputs[0] == t && strcmp(g->nodes[i].op_type, "DequantizeLinear") == 0)
      return *(const float *)g->tensors[g->nodes[i].inputs[1]].data;
  return 0.0f;
}

/* Lowered vs op-by-op: every output within `steps` quantization steps
 * (step 0: a float output compared exactly). Returns the largest
 * difference in steps (or absolute for float outputs). */
static double compare_lowered(const char *path, double steps) {
  wq_error err;
  wq_model *lowered = load_file(path, 0, 0, &err);
  CHECK_MSG(lowered != NULL, "%s: %s (node %s)", path, err.message, err.node);
  wq_model *reference = load_file(path, 1, 0, &err);
  CHECK_MSG(reference != NULL, "%s: %s (node %s)", path, err.message, err.node);
  double worst = 0;
  if (lowered && reference) {
    int n_out = wq_model_output_count(lowered);
    float **a = run_seeded(lowered), **b = run_seeded(reference);
    for (int o = 0; a && b && o < n_out; o++) {
      const wq_tensor *t = wq_model_output(lowered, o);
      wq_value shape = wq_tensor_value(t);
      int64_t n = wq_value_numel(&shape);
      float step = output_step(reference, o);
      double max = 0;
      for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[o][i] - (double)b[o][i]) / (step > 0 ? step : 1.0);
        max = d > max ? d : max;
      }
      CHECK_MSG(max <= steps + 1e-4, "%s output %s: %.3f steps from op-by-op QDQ", path, t->name,
                max);
      worst = max > worst ? max : worst;
    }
    CHECK(a && b);
    free_results(a, n_out);
    free_results(b, n_out);
  }
  wq_model_free(lowered);
  wq_model_free(reference);
  return worst;
}

static void test_seed003(void) {
  const char *path = "tests/models/seed003_qdq.onnx";
  wq_error err;
  wq_model *m = load_file(path, 0, 1, &err); /* strict: everything must lower */
  CHECK_MSG(m != NULL, "%s: %s (node %s)", path, err.message, err.node);
  if (!m)
    return;
  CHECK(count_ops(m, "wasmq", "QConv") == 2);
  CHECK(count_ops(m, "", "Relu") == 0 && count_ops(m, "", "Conv") == 0);
  /* The relu's output parameters are the concat's: zero point -1, not
   * qmin -128; the clamp is computed from them (seed 003). */
  const wq_node *c1 = find_node(m, "Conv_c1");
  CHECK(c1 && op_is(c1->op_type, "QConv"));
  const wq_tensor *y = c1 ? &wq_model_get_ir(m)->graph->tensors[c1->outputs[0]] : NULL;
  CHECK(y && y->qparams && y->qparams->zero_point[0] != y->qparams->qmin);
  const wq_attr *act_min = c1 ? wq_node_attr(c1, "act_min") : NULL;
  CHECK(act_min && y && y->qparams && act_min->i == y->qparams->zero_point[0]);
  CHECK(why_has(c1, "Relu 'Relu_r1' (fused"));
  /* The concat moves codes: inputs and output share parameters. */
  const wq_node *cat = find_node(m, "Concat_cat");
  CHECK(cat && strcmp(cat->op_type, "Concat") == 0 && why_has(cat, "int8 data"));
  CHECK(c1 && c1->rec.reason == WQ_REASON_INT8 && cat && cat->rec.reason == WQ_REASON_INT8);
  wq_model_free(m);
  double worst = compare_lowered(path, 1.0);
  printf("seed003: lowered vs op-by-op QDQ: %.3f steps\n", worst);
}

static void test_every_op(void) {
  const char *path = "tests/models/ops_qdq.onnx";
  wq_error err;
  wq_model *m = load_file(path, 0, 1, &err);
  CHECK_MSG(m != NULL, "%s: %s (node %s)", path, err.message, err.node);
  if (!m)
    return;
  static const char *const ops[] = {"QConv",   "QGemm",        "QAdd",    "QMul",
                                    "QLookup", "QAveragePool", "QConcat", "QGlobalAveragePool",
                                    NULL};
  for (int k = 0; ops[k]; k++)
    CHECK_MSG(count_ops(m, "wasmq", ops[k]) > 0, "%s missing", ops[k]);
  const wq_graph *g = wq_model_get_ir(m)->graph;
  for (int i = 0; i < g->n_nodes; i++)
    CHECK_MSG(g->nodes[i].rec.reason == WQ_REASON_INT8 ||
                  g->nodes[i].rec.reason == WQ_REASON_BOUNDARY ||
                  g->nodes[i].rec.reason == WQ_REASON_TRANSITION,
              "%s: %s", g->nodes[i].name, wq_reason_name(g->nodes[i].rec.reason));
  for (int i = 0; i < g->n_nodes; i++)
    CHECK_MSG(!why_has(&g->nodes[i], "stays float"), "%s: %s", g->nodes[i].name,
              wq_lower_why(&g->nodes[i]));
  /* Depthwise conv + Clip(-1, 1) fused for a zero point mid-range. */
  const wq_node *dw = find_node(m, "Conv_dw");
  const wq_attr *lo = dw ? wq_node_attr(dw, "act_min") : NULL;
  const wq_attr *hi = dw ? wq_node_attr(dw, "act_max") : NULL;
  CHECK(dw && lo && hi && lo->i > -128 && hi->i < 127 && why_has(dw, "Clip"));
  /* Gemm with transA, alpha 0.5 and beta 2: matched by meaning, the bias
   * requantized (beta), the weight transposed to [N, K]. */
  const wq_node *gy = find_node(m, "Gemm_y");
  CHECK(gy && strcmp(gy->op_type, "QGemm") == 0 && why_has(gy, "transA") && why_has(gy, "alpha") &&
        why_has(gy, "times beta"));
  const wq_tensor *w = gy ? &g->tensors[gy->inputs[1]] : NULL;
  CHECK(w && w->rank == 2 && w->dims[0] == 3 && w->dims[1] == 5);
  /* A float (unquantized) conv bias is requantized to int32. */
  CHECK(why_has(find_node(m, "Conv_gc"), "requantized to int32"));
  wq_model_free(m);
  double worst = compare_lowered(path, 1.0);
  printf("ops graph: lowered vs op-by-op QDQ: %.3f steps\n", worst);
}

static void test_edge_cases(void) {
  const char *path = "tests/models/edge_qdq.onnx";
  wq_error err;
  wq_model *m = load_file(path, 0, 0, &err);
  wq_model *ref = load_file(path, 1, 0, &err);
  CHECK(m && ref);
  if (m && ref) {
    /* A conv whose result is not quantized stays float, saying why. */
    const wq_node *c1 = find_node(m, "Conv_c1");
    CHECK(c1 && strcmp(c1->op_type, "Conv") == 0 && why_has(c1, "Softmax"));
    CHECK(c1 && c1->rec.reason == WQ_REASON_OUTPUT_NOT_QUANTIZED);
    /* A relu after a conv that has its own QuantizeLinear: its own QLookup. */
    const wq_node *c2 = find_node(m, "Conv_c2"), *r2 = find_node(m, "Relu_r2");
    CHECK(c2 && op_is(c2->op_type, "QConv") && !wq_node_attr(c2, "act_min"));
    CHECK(r2 && strcmp(r2->op_type, "QLookup") == 0);
    /* Codes read back with another scale: the reader stays float. */
    CHECK(why_has(find_node(m, "Conv_c3"), "differ"));
    CHECK(find_node(m, "Conv_c3") &&
          find_node(m, "Conv_c3")->rec.reason == WQ_REASON_QPARAMS_MISMATCH);
    /* Seed 004: each chained linear's input parameters are its own
     * DequantizeLinear's — mm2 reads mm1's output scale, not fl's. */
    CHECK(count_ops(m, "wasmq", "QGemm") == 3);
    const wq_node *mm2 = find_node(m, "MatMul_mm2"), *mm1 = find_node(m, "MatMul_mm1");
    const wq_tensor *mm1_scale = find_tensor(ref, "mm1_scale");
    const wq_graph *g = wq_model_get_ir(m)->graph;
    if (mm2 && mm1 && mm1_scale && mm1_scale->data) {
      const wq_qparams *in2 = g->tensors[mm2->inputs[0]].qparams;
      const wq_qparams *in1 = g->tensors[mm1->inputs[0]].qparams;
      CHECK(in2 && in2->scale[0] == *(const float *)mm1_scale->data);
      CHECK(in1 && in2 && in1->scale[0] != in2->scale[0]);
    } else {
      CHECK(!"seed-004 nodes missing");
    }
  }
  wq_model_free(m);
  wq_model_free(ref);
  /* Strict mode rejects, before the lowering rewrites anything, the first
   * node on the quantized path the lowering would leave float (its check,
   * neighbours included), by name and code: Conv_c1, whose result feeds the
   * Softmax instead of a QuantizeLinear. */
  m = load_file(path, 0, 1, &err);
  CHECK_MSG(m == NULL && err.code == WQ_ERR_UNSUPPORTED && strcmp(err.node, "Conv_c1") == 0 &&
                strstr(err.message, "[OUTPUT_NOT_QUANTIZED]") &&
                strstr(err.message, "feeds Softmax 'Softmax_sm', not a QuantizeLinear"),
            "%s", err.message);
  wq_model_free(m);
  double worst = compare_lowered(path, 1.0);
  printf("edge graph: lowered vs op-by-op QDQ: %.3f steps\n", worst);
}

static void test_describe(void) {
  wq_error err;
  wq_model *m = load_file("tests/models/seed003_qdq.onnx", 0, 0, &err);
  wq_model *off = load_file("tests/models/seed003_qdq.onnx", 1, 0, &err);
  CHECK(m && off);
  char *a = m ? wq_model_describe_lowered(m) : NULL;
  char *b = off ? wq_model_describe_lowered(off) : NULL;
  CHECK(a && strstr(a, "[int8 ] wasmq.QConv") && strstr(a, "int8 per-channel axis 0 [8]") &&
        strstr(a, "out0 'r1_q_nhwc': int8 per-tensor scale=") && strstr(a, "why: QConv from Conv"));
  CHECK(a && strstr(a, "[q/dq ] QuantizeLinear") && strstr(a, "graph input"));
  /* each quantized tensor's layout: the conv's codes channels-last, its weights as declared */
  CHECK(a &&
        strstr(a, "in0 'x_q_nhwc': int8 per-tensor scale=0.00392093509 zp=-128; layout NHWC") &&
        strstr(a, "in1 'w1_Conv_c1_q': int8 per-channel axis 0 [8]; layout NCHW"));
  CHECK(b && strstr(b, "lowering did not run") && strstr(b, "[float] Conv"));
  free(a);
  free(b);
  wq_model_free(m);
  wq_model_free(off);
}

static void test_shared_models(void) {
  static const char *const qdq[] = {"models/synthetic/smallcnn_qdq.onnx",
                                    "models/synthetic/matmul_256x256x256_qdq.onnx",
                                    "models/synthetic/matmul_256x256x256_qdq_pertensor.onnx",
                                    "models/synthetic/matmul_256x256x256_qlinear.onnx",
                                    "models/synthetic/matmul_1x1024x1024_qdq.onnx",
                                    "models/synthetic/matmul_1x1024x1024_qdq_pertensor.onnx",
                                    "models/synthetic/matmul_1x1024x1024_qlinear.onnx",
                                    NULL};
  char path[1024];
  for (int k = 0; qdq[k]; k++) {
    snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), qdq[k]);
    wq_error err;
    wq_model *m = load_file(path, 0, 1, &err); /* all of it lowers */
    CHECK_MSG(m != NULL, "%s strict: %s (node %s)", qdq[k], err.message, err.node);
    CHECK(m && (count_ops(m, "wasmq", "QGemm") + count_ops(m, "wasmq", "QConv")) > 0);
    wq_model_free(m);
    double worst = compare_lowered(path, 1.0);
    printf("%s: lowered vs op-by-op QDQ: %.3f steps\n", qdq[k], worst);
  }
  /* Dynamic quantization: ConvInteger/MatMulInteger -> Cast -> Mul -> Add
   * (-> Relu) become QConvToFloat/QGemmToFloat, the rescale fused into the
   * kernel's output stage with the chain's own float32 roundings: the
   * tolerance is 0 (the same floats as op by op). */
  snprintf(path, sizeof path, "%s/models/mnist-8-dynamic-int8/model.onnx", wq_test_shared_dir());
  wq_error err;
  wq_model *m = load_file(path, 0, 0, &err);
  CHECK(m && count_ops(m, "wasmq", "QConvToFloat") == 2 &&
        count_ops(m, "wasmq", "QGemmToFloat") == 1);
  CHECK(m && count_ops(m, "", "ConvInteger") == 0 && count_ops(m, "", "MatMulInteger") == 0);
  CHECK(m && count_ops(m, "", "Cast") == 0 && count_ops(m, "", "Mul") == 0 &&
        count_ops(m, "", "Add") == 0 && count_ops(m, "", "Relu") == 0);
  wq_model_free(m);
  double worst = compare_lowered(path, 0.0);
  CHECK_MSG(worst == 0.0, "mnist-8-dynamic-int8: fused rescale differs by %.3g", worst);
  printf("mnist-8-dynamic-int8: lowered vs unlowered max abs diff %.3g\n", worst);
}

/* Loads `bytes` in int+fp mode with the IR checks on: the lowering pass
 * then verifies that it did to every node what its check (the same matching
 * on a shadow, before any rewrite) answered, and fails the load naming the
 * node where they differ. */
static bool check_agrees(const char *what, const uint8_t *bytes, size_t n,
                         const wq_input_shape *shapes, int n_shapes) {
  wq_load_options opts = {.validate_ir = 1, .input_shapes = shapes, .n_input_shapes = n_shapes};
  wq_model *m = NULL;
  wq_error err;
  wq_error_clear(&err);
  wq_status st = wq_model_load(bytes, n, &opts, &m, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s (node %s)", what, err.message, err.node);
  wq_model_free(m);
  return st == WQ_OK;
}

/* A QDQ model quantized from a float one by the quantizer (random
 * calibration, one sample), or NULL when the model is not float or its
 * inputs are not all fixed after `shapes`. */
static uint8_t *quantized_from(const uint8_t *model, size_t n, const wq_input_shape *shapes,
                               int n_shapes, size_t *out_n) {
  wq_error err;
  wq_quantizer *q = NULL;
  if (wq_quantizer_new_shaped(model, n, NULL, 0, shapes, n_shapes, &q, &err) != WQ_OK)
    return NULL; /* already quantized */
  const wq_model *fm = wq_quantizer_float_model(q);
  int n_in = wq_model_input_count(fm);
  wq_value in[WQ_SEEDED_MAX_INPUTS];
  memset(in, 0, sizeof in);
  bool ok = n_in <= WQ_SEEDED_MAX_INPUTS;
  uint32_t seed = 11;
  for (int i = 0; ok && i < n_in; i++) {
    const wq_tensor *t = wq_model_input(fm, i);
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++) {
      in[i].dims[d] = t->dims[d];
      numel *= t->dims[d];
      ok = ok && t->dims[d] > 0;
    }
    ok = ok && t->rank >= 0 && (in[i].data = calloc((size_t)numel, wq_dtype_size(t->dtype)));
    if (ok)
      wq_seeded_fill(&in[i], numel, &seed);
  }
  uint8_t *onnx = NULL;
  ok = ok && wq_quantizer_observe(q, in, n_in, &err) == WQ_OK;
  if (ok && wq_quantizer_finish(q, &onnx, out_n, &err) != WQ_OK)
    onnx = NULL;
  for (int i = 0; i < n_in; i++)
    free(in[i].data);
  wq_quantizer_free(q);
  return onnx;
}

/* Every node of every shared model (models, models-int8, tests/models) and
 * of the QDQ models the quantizer makes of the float ones: the check's
 * answer (int8 as X, absorbed, or the code and note that keep it) is what
 * the lowering then did. */
static void test_check_matches_lowering(void) {
  static const char *const shared[] = {"models", "models/synthetic", "models-int8"};
  /* Symbolic batch and image sizes bound for calibration, by model. */
  static const int64_t ppocr[4] = {1, 3, 48, 192}, teams[4] = {1, 4, 160, 256},
                       sr[4] = {1, 1, 224, 224};
  static const struct {
    const char *model;
    wq_input_shape shape;
  } bind[] = {{"ppocr", {"x", 4, ppocr}},
              {"teams", {"bgrm", 4, teams}},
              {"super-resolution", {"input", 4, sr}}};
  char dir[1024], path[1200];
  int models = 0, quantized = 0;
  for (int k = 0; k < 4; k++) {
    if (k < 3)
      snprintf(dir, sizeof dir, "%s/%s", wq_test_shared_dir(), shared[k]);
    else
      snprintf(dir, sizeof dir, "tests/models");
    int count = 0;
    char **names = list_dir(dir, "", &count);
    for (int e = 0; e < count; e++) {
      snprintf(path, sizeof path, "%s/%s", dir, names[e]);
      if (is_dir(path))
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[e]);
      size_t len = strlen(path);
      if (len < 5 || strcmp(path + len - 5, ".onnx") != 0 || !is_file(path))
        continue;
      size_t n = 0;
      uint8_t *bytes = wq_test_read_file(path, &n);
      if (!bytes)
        continue;
      models += check_agrees(path, bytes, n, NULL, 0);
      size_t qn = 0;
      const wq_input_shape *sh = NULL;
      for (int b = 0; b < 3; b++)
        if (strstr(path, bind[b].model))
          sh = &bind[b].shape;
      const int n_shapes = sh ? 1 : 0;
      uint8_t *q = quantized_from(bytes, n, sh, n_shapes, &qn);
      if (q)
        quantized += check_agrees(path, q, qn, sh, n_shapes);
      free(q);
      free(bytes);
    }
    free_list(names, count);
  }
  printf("lowering check == lowering on every node: %d models, %d quantized from float ones\n",
         models, quantized);
  CHECK(models >= 25 && quantized >= 12);
}

/* Byte flips in the quantized test models: loading (lowering, strict or
 * not) and running must return a status, never crash or leak (ASan). */
static void test_corrupted_models(void) {
  static const char *const files[] = {"tests/models/seed003_qdq.onnx", "tests/models/ops_qdq.onnx",
                                      NULL};
  int loaded = 0, rejected = 0;
  for (int f = 0; files[f]; f++) {
    size_t n;
    uint8_t *bytes = wq_test_read_file(files[f], &n);
    CHECK(bytes != NULL);
    if (!bytes)
      continue;
    uint32_t state = 99;
    for (int trial = 0; trial < 150; trial++) {
      uint8_t *copy = malloc(n);
      if (!copy)
        break;
      memcpy(copy, bytes, n);
      for (int flips = 0; flips < 1 + trial % 3; flips++) {
        state = state * 1664525u + 1013904223u;
        copy[(state >> 8) % n] ^= (uint8_t)(1u << (state % 8));
      }
      wq_load_options opts = {.lower_strict = trial % 2};
      wq_model *m = NULL;
      wq_error err;
      if (wq_model_load(copy, n, &opts, &m, &err) == WQ_OK) {
        loaded++;
        float **r = run_seeded_quiet(m);
        free_results(r, wq_model_output_count(m));
        wq_model_free(m);
      } else {
        rejected++;
        CHECK(err.code != WQ_OK && err.message[0] != '\0');
      }
      free(copy);
    }
    free(bytes);
  }
  printf("corrupted models: %d loaded, %d rejected with a status\n", loaded, rejected);
}

int main(void) {
  test_seed003();
  test_every_op();
  test_edge_cases();
  test_describe();
  test_shared_models();
  test_check_matches_lowering();
  test_corrupted_models();
  WQ_TEST_END();
}
