/* Graph preparation for the quantizer (quant/prepare.h): each fold on
 * hand-built graphs gives the same outputs as the graph before it (max abs
 * error <= 1e-5 of the output's max abs, seeded random inputs and
 * parameters), the cases that must not fold are left as they were, and on
 * real models (ppocr's 35 BatchNormalizations, mnist's Conv + Add biases)
 * the outputs before and after agree within 1e-4 relative. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "graph_build.h"
#include "onnx/onnx_import.h"
#include "passes/fold_constants.h"
#include "quant/prepare.h"
#include "runtime/executor.h"
#include "seeded_run.h"
#include "wq_test.h"

static uint32_t seed = 7;

/* n floats in [lo, lo + 4 * scale), seeded. */
static float *random_floats(int64_t n, float lo, float scale) {
  float *p = malloc((size_t)n * sizeof *p);
  wq_value v = {.dtype = WQ_DT_FLOAT, .data = p};
  wq_seeded_fill(&v, n, &seed); /* [-2, 2) */
  for (int64_t i = 0; i < n; i++)
    p[i] = lo + (p[i] + 2.0f) * scale;
  return p;
}

static int64_t numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  return n;
}

/* A float constant of random values in [lo, lo + 4 * scale). */
static int constant(wq_graph *g, const char *name, int rank, const int64_t *dims, float lo,
                    float scale) {
  return add_tensor(g, name, WQ_DT_FLOAT, rank, dims, random_floats(numel(rank, dims), lo, scale));
}

static int activation(wq_graph *g, const char *name, int rank, const int64_t *dims) {
  return add_tensor(g, name, WQ_DT_FLOAT, rank, dims, NULL);
}

static void set_io(wq_graph *g, int input, const int *outputs, int n_outputs) {
  g->inputs = malloc(sizeof(int));
  g->inputs[0] = input;
  g->n_inputs = 1;
  g->tensors[input].is_input = true;
  g->outputs = malloc((size_t)n_outputs * sizeof(int));
  for (int k = 0; k < n_outputs; k++) {
    g->outputs[k] = outputs[k];
    g->tensors[outputs[k]].is_output = true;
  }
  g->n_outputs = n_outputs;
}

typedef struct {
  float *data[2];
  int64_t n[2];
} run_result;

static void run_result_free(run_result *r) {
  free(r->data[0]);
  free(r->data[1]);
}

/* Runs g on input x (shape of the input tensor unless dims given) and copies
 * out up to two outputs. */
static run_result run_graph(wq_graph *g, const float *x, int rank, const int64_t *dims) {
  run_result r = {{NULL, NULL}, {0, 0}};
  wq_exec_plan plan;
  wq_error err;
  if (wq_exec_plan_init(&plan, g, &err) != WQ_OK) {
    CHECK_MSG(0, "plan: %s", err.message);
    return r;
  }
  wq_value *values = calloc((size_t)g->n_tensors, sizeof *values);
  bool *owned = calloc((size_t)g->n_tensors, sizeof *owned);
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].is_constant)
      values[t] = wq_tensor_value(&g->tensors[t]);
  wq_value in = wq_tensor_value(&g->tensors[g->inputs[0]]);
  if (dims) {
    in.rank = rank;
    memcpy(in.dims, dims, (size_t)rank * sizeof *dims);
  }
  in.data = (void *)x;
  values[g->inputs[0]] = in;
  wq_status st = wq_execute(&plan, values, owned, &err);
  CHECK_MSG(st == WQ_OK, "run: %s (%s)", err.message, err.node);
  for (int k = 0; st == WQ_OK && k < g->n_outputs && k < 2; k++) {
    const wq_value *v = &values[g->outputs[k]];
    r.n[k] = wq_value_numel(v);
    r.data[k] = malloc((size_t)r.n[k] * sizeof(float));
    memcpy(r.data[k], v->data, (size_t)r.n[k] * sizeof(float));
  }
  wq_exec_values_release(g->n_tensors, values, owned);
  free(values);
  free(owned);
  wq_exec_plan_free(&plan);
  return r;
}

/* max |a - b| / max |a| (0 when a is all zero and equal). */
static double relative_error(const float *a, const float *b, int64_t n) {
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < n; i++) {
    max_ref = fmax(max_ref, fabs((double)a[i]));
    max_err = fmax(max_err, fabs((double)a[i] - (double)b[i]));
  }
  return max_ref > 0 ? max_err / max_ref : max_err;
}

/* Runs g, prepares it, runs it again: returns the prepare stats and checks
 * every output agrees within tol (relative). */
/* prepare_and_compare lets the hard-swish fusion raise the opset (as the
 * quantizer does) while this is set. */
static bool raise_opset;

static wq_quant_prepare_stats prepare_and_compare(wq_graph *g, double tol, const char *what) {
  const wq_tensor *in = &g->tensors[g->inputs[0]];
  int64_t n = numel(in->rank, in->dims);
  float *x = random_floats(n, -2.0f, 1.0f);
  run_result before = run_graph(g, x, 0, NULL);
  wq_quant_prepare_stats stats;
  wq_error err;
  wq_status st = wq_quant_prepare_ex(g, raise_opset, &stats, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s", what, err.message);
  run_result after = run_graph(g, x, 0, NULL);
  for (int k = 0; k < g->n_outputs && k < 2; k++) {
    CHECK_MSG(before.data[k] && after.data[k] && before.n[k] == after.n[k], "%s output %d", what,
              k);
    if (before.data[k] && after.data[k] && before.n[k] == after.n[k]) {
      double e = relative_error(before.data[k], after.data[k], before.n[k]);
      CHECK_MSG(e <= tol, "%s output %d: relative error %g > %g", what, k, e, tol);
    }
  }
  run_result_free(&before);
  run_result_free(&after);
  free(x);
  return stats;
}

/* BatchNormalization with random statistics (var > 0) on `channels`. */
static int add_batchnorm(wq_graph *g, int x, int y, int64_t channels, float eps) {
  int bn_in[5] = {x, constant(g, "gamma", 1, &channels, -1.0f, 0.5f),
                  constant(g, "beta", 1, &channels, -1.0f, 0.5f),
                  constant(g, "mean", 1, &channels, -0.5f, 0.25f),
                  constant(g, "var", 1, &channels, 0.05f, 0.5f)};
  attr_spec a[] = {AF("epsilon", eps), AEND};
  wq_error err;
  return add_node(g, "", "BatchNormalization", bn_in, 5, y, a, 15, &err);
}

/* ---- BatchNormalization ---------------------------------------------------- */

static void check_conv_bn(int64_t group, bool with_bias, bool transpose) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t C = 4, M = 6, xd[4] = {2, C, 6, 5};
  /* Conv W [M, C/group, 3, 3]; ConvTranspose W [C, M/group, 3, 3] */
  const int64_t wd[4] = {transpose ? C : M, transpose ? M / group : C / group, 3, 3};
  const int64_t bd[1] = {M}, yd[4] = {2, M, 6, 5}; /* pads 1 keep 6x5 both ways */
  int x = activation(g, "x", 4, xd);
  int w = constant(g, "w", 4, wd, -1.0f, 0.5f);
  int b = with_bias ? constant(g, "b", 1, bd, -1.0f, 0.5f) : -1;
  int c = activation(g, "conv_out", 4, yd), y = activation(g, "y", 4, yd);
  const int64_t pads[4] = {1, 1, 1, 1};
  attr_spec a[] = {AI("group", group), AL("pads", pads, 4), AEND};
  int in[3] = {x, w, b};
  CHECK(add_node(g, "", transpose ? "ConvTranspose" : "Conv", in, with_bias ? 3 : 2, c, a, 11,
                 &err) >= 0);
  CHECK(add_batchnorm(g, c, y, M, 1e-3f) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, transpose ? "ConvT+BN" : "Conv+BN");
  CHECK(s.batchnorm_folded == 1 && g->n_nodes == 1);
  CHECK(g->nodes[0].outputs[0] == y && strcmp(g->tensors[y].name, "y") == 0);
  CHECK(g->nodes[0].n_inputs == 3 && g->nodes[0].inputs[2] >= 0);
  /* weight and bias read by nothing else: rewritten in place, none added */
  CHECK(g->nodes[0].inputs[1] == w && (!with_bias || g->nodes[0].inputs[2] == b));
  wq_graph_free(g);
}

static void check_gemm_bn(bool trans_b, bool with_c) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t K = 5, N = 6, xd[2] = {3, K}, yd[2] = {3, N};
  const int64_t wd[2] = {trans_b ? N : K, trans_b ? K : N}, cd[2] = {1, N};
  int x = activation(g, "x", 2, xd);
  int w = constant(g, "w", 2, wd, -1.0f, 0.5f);
  int cb = with_c ? constant(g, "c", 2, cd, -1.0f, 0.5f) : -1;
  int c = activation(g, "gemm_out", 2, yd), y = activation(g, "y", 2, yd);
  attr_spec a[] = {AI("transB", trans_b), AF("alpha", 0.5f), AF("beta", 2.0f), AEND};
  int in[3] = {x, w, cb};
  CHECK(add_node(g, "", "Gemm", in, with_c ? 3 : 2, c, a, 13, &err) >= 0);
  CHECK(add_batchnorm(g, c, y, N, 1e-5f) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, "Gemm+BN");
  CHECK(s.batchnorm_folded == 1 && g->n_nodes == 1 && g->nodes[0].outputs[0] == y);
  wq_graph_free(g);
}

static void test_batchnorm_folds(void) {
  check_conv_bn(1, true, false);
  check_conv_bn(1, false, false);
  check_conv_bn(2, true, false);
  check_conv_bn(1, true, true);
  check_conv_bn(1, false, true);
  check_conv_bn(2, true, true);
  check_gemm_bn(false, true);
  check_gemm_bn(true, true);
  check_gemm_bn(true, false);
}

/* ---- Mul after / before a linear ------------------------------------------- */

/* Conv -> Mul(constant of shape cd) -> y; expect_fold says whether it folds. */
static void check_conv_mul(int crank, const int64_t *cd, bool expect_fold, const char *what) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, 3, 5, 6}, wd[4] = {6, 3, 3, 3}, bd[1] = {6}, yd[4] = {1, 6, 3, 4};
  int x = activation(g, "x", 4, xd);
  int in[3] = {x, constant(g, "w", 4, wd, -1.0f, 0.5f), constant(g, "b", 1, bd, -1.0f, 0.5f)};
  int c = activation(g, "conv_out", 4, yd), y = activation(g, "y", 4, yd);
  CHECK(add_node(g, "", "Conv", in, 3, c, NULL, 11, &err) >= 0);
  int m_in[2] = {constant(g, "scale", crank, cd, -2.0f, 1.0f), c};
  CHECK(add_node(g, "", "Mul", m_in, 2, y, NULL, 13, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, what);
  CHECK_MSG(s.mul_folded_after == (expect_fold ? 1 : 0), "%s", what);
  CHECK_MSG(g->n_nodes == (expect_fold ? 1 : 2), "%s", what);
  wq_graph_free(g);
}

static void test_mul_after_conv(void) {
  check_conv_mul(4, (const int64_t[]){1, 6, 1, 1}, true, "Mul [1,6,1,1]");
  check_conv_mul(3, (const int64_t[]){6, 1, 1}, true, "Mul [6,1,1]");
  check_conv_mul(0, (const int64_t[]){0}, true, "Mul scalar");
  check_conv_mul(1, (const int64_t[]){1}, true, "Mul [1]");
  /* [4] broadcasts along W (the last dim), not the channels */
  check_conv_mul(1, (const int64_t[]){4}, false, "Mul [4] on NCHW");
  check_conv_mul(4, (const int64_t[]){1, 6, 3, 4}, false, "Mul full spatial");
  check_conv_mul(5, (const int64_t[]){1, 1, 6, 1, 1}, false, "Mul widening the rank");
}

/* A [K] Mul after a Gemm / MatMul whose weight is [K, K]: the factor goes on
 * the output-channel axis of W (axis 1 of [K,N], axis 0 with transB), never
 * both, checked on the weights themselves as well as the outputs. */
static void check_square_linear_mul(const char *op, bool trans_b) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t K = 4, xd[3] = {2, 3, K}, wd[2] = {K, K}, kd[1] = {K};
  bool matmul = strcmp(op, "MatMul") == 0;
  int rank = matmul ? 3 : 2;
  const int64_t *act = matmul ? xd : xd + 1;
  int x = activation(g, "x", rank, act);
  int w = constant(g, "w", 2, wd, -1.0f, 0.5f);
  float w0[16];
  memcpy(w0, g->tensors[w].data, sizeof w0);
  int c = activation(g, "lin_out", rank, act), y = activation(g, "y", rank, act);
  attr_spec a[] = {AI("transB", trans_b), AEND};
  int in[2] = {x, w};
  CHECK(add_node(g, "", op, in, 2, c, matmul ? NULL : a, 13, &err) >= 0);
  int scale = constant(g, "scale", 1, kd, 0.5f, 0.5f);
  float s[4];
  memcpy(s, g->tensors[scale].data, sizeof s);
  int m_in[2] = {c, scale};
  CHECK(add_node(g, "", "Mul", m_in, 2, y, NULL, 13, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats st = prepare_and_compare(g, 1e-5, op);
  CHECK(st.mul_folded_after == 1 && g->n_nodes == 1 && g->nodes[0].n_inputs == 2);
  const float *w1 = g->tensors[g->nodes[0].inputs[1]].data;
  int bad = 0;
  for (int r = 0; r < K; r++)
    for (int col = 0; col < K; col++) {
      int n = trans_b ? r : col; /* output channel of W[r][col] */
      bad += w1[r * K + col] != (float)((double)w0[r * K + col] * s[n]);
    }
  CHECK_MSG(bad == 0, "%s transB=%d: %d weights scaled on the wrong axis", op, trans_b, bad);
  wq_graph_free(g);
}

static void test_mul_on_square_weights(void) {
  check_square_linear_mul("Gemm", false);
  check_square_linear_mul("Gemm", true);
  check_square_linear_mul("MatMul", false);
}

/* x -> Mul(constant) -> Conv (pads, groups): the factor moves into the
 * input channels of W. */
static void check_mul_before_conv(int64_t group, int crank, const int64_t *cd, int64_t x_channels,
                                  bool expect_fold, const char *what) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, x_channels, 5, 6}, md[4] = {1, 4, 5, 6}, wd[4] = {6, 4 / group, 3, 3};
  const int64_t yd[4] = {1, 6, 5, 6};
  int x = activation(g, "x", 4, xd), m = activation(g, "scaled", 4, md);
  int m_in[2] = {x, constant(g, "scale", crank, cd, -2.0f, 1.0f)};
  CHECK(add_node(g, "", "Mul", m_in, 2, m, NULL, 13, &err) >= 0);
  const int64_t pads[4] = {1, 1, 1, 1};
  attr_spec a[] = {AI("group", group), AL("pads", pads, 4), AEND};
  int in[2] = {m, constant(g, "w", 4, wd, -1.0f, 0.5f)};
  int y = activation(g, "y", 4, yd);
  CHECK(add_node(g, "", "Conv", in, 2, y, a, 11, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, what);
  CHECK_MSG(s.mul_folded_before == (expect_fold ? 1 : 0), "%s", what);
  CHECK_MSG(g->n_nodes == (expect_fold ? 1 : 2), "%s", what);
  if (expect_fold)
    CHECK(g->nodes[0].inputs[0] == x);
  wq_graph_free(g);
}

/* x -> Mul(constant) -> Gemm (transA) / MatMul (3-D A). */
static void check_mul_before_gemm(const char *op, bool trans_a, int crank, const int64_t *cd) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t K = 5, N = 3;
  bool matmul = strcmp(op, "MatMul") == 0;
  const int64_t xd3[3] = {2, 4, K}, xd2[2] = {trans_a ? K : 4, trans_a ? 4 : K};
  const int64_t yd3[3] = {2, 4, N}, yd2[2] = {4, N}, wd[2] = {K, N};
  int rank = matmul ? 3 : 2;
  int x = activation(g, "x", rank, matmul ? xd3 : xd2);
  int m = activation(g, "scaled", rank, matmul ? xd3 : xd2);
  int m_in[2] = {constant(g, "scale", crank, cd, -2.0f, 1.0f), x};
  CHECK(add_node(g, "", "Mul", m_in, 2, m, NULL, 13, &err) >= 0);
  attr_spec a[] = {AI("transA", trans_a), AEND};
  int in[2] = {m, constant(g, "w", 2, wd, -1.0f, 0.5f)};
  int y = activation(g, "y", rank, matmul ? yd3 : yd2);
  CHECK(add_node(g, "", op, in, 2, y, matmul ? NULL : a, 13, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, op);
  CHECK_MSG(s.mul_folded_before == 1 && g->n_nodes == 1, "%s before", op);
  wq_graph_free(g);
}

static void test_mul_before_linear(void) {
  check_mul_before_conv(1, 4, (const int64_t[]){1, 4, 1, 1}, 4, true, "Mul [1,4,1,1] -> Conv");
  check_mul_before_conv(2, 3, (const int64_t[]){4, 1, 1}, 4, true, "Mul [4,1,1] -> group Conv");
  check_mul_before_conv(1, 0, (const int64_t[]){0}, 4, true, "scalar Mul -> Conv");
  /* x has 1 channel, the Mul broadcasts it to 4: folding would feed the conv 1 */
  check_mul_before_conv(1, 4, (const int64_t[]){1, 4, 1, 1}, 1, false, "widening Mul -> Conv");
  check_mul_before_conv(1, 4, (const int64_t[]){1, 4, 5, 6}, 4, false, "full Mul -> Conv");
  check_mul_before_gemm("Gemm", false, 1, (const int64_t[]){5});
  check_mul_before_gemm("Gemm", true, 2, (const int64_t[]){5, 1});
  check_mul_before_gemm("MatMul", false, 2, (const int64_t[]){1, 5});
}

/* ---- chains, shared weights, Add --------------------------------------------- */

/* Conv (no bias) -> BN -> Mul -> Add(per-channel) -> y: three folds, one Conv. */
static void test_chain(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, 3, 4, 4}, wd[4] = {5, 3, 1, 1}, yd[4] = {1, 5, 4, 4};
  const int64_t cd[3] = {5, 1, 1};
  int x = activation(g, "x", 4, xd);
  int t1 = activation(g, "t1", 4, yd), t2 = activation(g, "t2", 4, yd);
  int t3 = activation(g, "t3", 4, yd), y = activation(g, "y", 4, yd);
  int in[2] = {x, constant(g, "w", 4, wd, -1.0f, 0.5f)};
  CHECK(add_node(g, "", "Conv", in, 2, t1, NULL, 11, &err) >= 0);
  CHECK(add_batchnorm(g, t1, t2, 5, 1e-5f) >= 0);
  int m_in[2] = {t2, constant(g, "s", 3, cd, 0.5f, 0.25f)};
  CHECK(add_node(g, "", "Mul", m_in, 2, t3, NULL, 13, &err) >= 0);
  int a_in[2] = {constant(g, "shift", 3, cd, -1.0f, 0.5f), t3};
  CHECK(add_node(g, "", "Add", a_in, 2, y, NULL, 13, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, "Conv->BN->Mul->Add");
  CHECK(s.batchnorm_folded == 1 && s.mul_folded_after == 1 && s.add_folded_after == 1);
  CHECK(g->n_nodes == 1 && g->nodes[0].outputs[0] == y);
  wq_graph_free(g);
  /* x -> Mul -> Mul -> Conv: the second Mul folds first, which leaves the
   * first one right before the Conv, folded too */
  g = wq_graph_new();
  const int64_t sd[4] = {1, 3, 1, 1};
  x = activation(g, "x", 4, xd);
  t1 = activation(g, "t1", 4, xd);
  t2 = activation(g, "t2", 4, xd);
  y = activation(g, "y", 4, yd);
  int m1[2] = {x, constant(g, "s1", 4, sd, 0.5f, 0.25f)},
      m2[2] = {t1, constant(g, "s2", 0, sd, 1, 1)};
  CHECK(add_node(g, "", "Mul", m1, 2, t1, NULL, 13, &err) >= 0);
  CHECK(add_node(g, "", "Mul", m2, 2, t2, NULL, 13, &err) >= 0);
  int in2[2] = {t2, constant(g, "w", 4, wd, -1.0f, 0.5f)};
  CHECK(add_node(g, "", "Conv", in2, 2, y, NULL, 11, &err) >= 0);
  set_io(g, x, &y, 1);
  s = prepare_and_compare(g, 1e-5, "Mul->Mul->Conv");
  CHECK(s.mul_folded_before == 2 && g->n_nodes == 1 && g->nodes[0].inputs[0] == x);
  wq_graph_free(g);
}

/* Two Convs read one weight; a Mul after one of them must not change the
 * other: the folded weight is a new constant. */
static void test_shared_weight(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, 2, 3, 3}, wd[4] = {4, 2, 1, 1}, yd[4] = {1, 4, 3, 3};
  const int64_t cd[4] = {1, 4, 1, 1};
  int x = activation(g, "x", 4, xd), w = constant(g, "w", 4, wd, -1.0f, 0.5f);
  int c1 = activation(g, "c1", 4, yd), y1 = activation(g, "y1", 4, yd);
  int y2 = activation(g, "y2", 4, yd);
  int in[2] = {x, w};
  CHECK(add_node(g, "", "Conv", in, 2, c1, NULL, 11, &err) >= 0);
  CHECK(add_node(g, "", "Conv", in, 2, y2, NULL, 11, &err) >= 0);
  int m_in[2] = {c1, constant(g, "s", 4, cd, -2.0f, 1.0f)};
  CHECK(add_node(g, "", "Mul", m_in, 2, y1, NULL, 13, &err) >= 0);
  int outs[2] = {y1, y2};
  set_io(g, x, outs, 2);
  wq_quant_prepare_stats s = prepare_and_compare(g, 1e-5, "shared weight");
  CHECK(s.mul_folded_after == 1 && g->n_nodes == 2);
  CHECK(g->nodes[0].inputs[1] != w && g->nodes[1].inputs[1] == w);
  wq_graph_free(g);
}

/* ---- left alone ---------------------------------------------------------------- */

static void test_not_folded(void) {
  wq_error err;
  const int64_t xd[4] = {1, 3, 4, 4}, wd[4] = {5, 3, 1, 1}, yd[4] = {1, 5, 4, 4}, cd[1] = {5};
  /* the conv output is also a graph output */
  {
    wq_graph *g = wq_graph_new();
    int x = activation(g, "x", 4, xd), c = activation(g, "c", 4, yd), y = activation(g, "y", 4, yd);
    int in[2] = {x, constant(g, "w", 4, wd, -1.0f, 0.5f)};
    CHECK(add_node(g, "", "Conv", in, 2, c, NULL, 11, &err) >= 0);
    CHECK(add_batchnorm(g, c, y, 5, 1e-5f) >= 0);
    int outs[2] = {y, c};
    set_io(g, x, outs, 2);
    wq_quant_prepare_stats s = prepare_and_compare(g, 0.0, "conv output used twice");
    CHECK(s.batchnorm_folded == 0 && g->n_nodes == 2);
    wq_graph_free(g);
  }
  /* the conv output read by the BN and by a Relu */
  {
    wq_graph *g = wq_graph_new();
    int x = activation(g, "x", 4, xd), c = activation(g, "c", 4, yd), y = activation(g, "y", 4, yd);
    int r = activation(g, "r", 4, yd);
    int in[2] = {x, constant(g, "w", 4, wd, -1.0f, 0.5f)};
    CHECK(add_node(g, "", "Conv", in, 2, c, NULL, 11, &err) >= 0);
    CHECK(add_batchnorm(g, c, y, 5, 1e-5f) >= 0);
    CHECK(add_node(g, "", "Relu", &c, 1, r, NULL, 13, &err) >= 0);
    int outs[2] = {y, r};
    set_io(g, x, outs, 2);
    wq_quant_prepare_stats s = prepare_and_compare(g, 0.0, "conv output read twice");
    CHECK(s.batchnorm_folded == 0 && g->n_nodes == 3);
    wq_graph_free(g);
  }
  /* BN statistics that are not constants (a Relu of a constant stays a node
   * here since nothing folds constants in this test) */
  {
    wq_graph *g = wq_graph_new();
    int x = activation(g, "x", 4, xd), c = activation(g, "c", 4, yd), y = activation(g, "y", 4, yd);
    int in[2] = {x, constant(g, "w", 4, wd, -1.0f, 0.5f)};
    CHECK(add_node(g, "", "Conv", in, 2, c, NULL, 11, &err) >= 0);
    int gamma0 = constant(g, "gamma0", 1, cd, 0.5f, 0.25f), gamma = activation(g, "gamma", 1, cd);
    CHECK(add_node(g, "", "Relu", &gamma0, 1, gamma, NULL, 13, &err) >= 0);
    int bn_in[5] = {c, gamma, constant(g, "beta", 1, cd, -1.0f, 0.5f),
                    constant(g, "mean", 1, cd, -1.0f, 0.5f), constant(g, "var", 1, cd, 0.1f, 0.5f)};
    CHECK(add_node(g, "", "BatchNormalization", bn_in, 5, y, NULL, 15, &err) >= 0);
    set_io(g, x, &y, 1);
    wq_quant_prepare_stats s = prepare_and_compare(g, 0.0, "non-constant BN scale");
    CHECK(s.batchnorm_folded == 0 && g->n_nodes == 3);
    wq_graph_free(g);
  }
  /* Add before a conv: a shift of the input is not a weight change */
  {
    wq_graph *g = wq_graph_new();
    const int64_t ad[4] = {1, 3, 1, 1};
    int x = activation(g, "x", 4, xd), a = activation(g, "a", 4, xd), y = activation(g, "y", 4, yd);
    int a_in[2] = {x, constant(g, "shift", 4, ad, -1.0f, 0.5f)};
    CHECK(add_node(g, "", "Add", a_in, 2, a, NULL, 13, &err) >= 0);
    int in[2] = {a, constant(g, "w", 4, wd, -1.0f, 0.5f)};
    CHECK(add_node(g, "", "Conv", in, 2, y, NULL, 11, &err) >= 0);
    set_io(g, x, &y, 1);
    wq_quant_prepare_stats s = prepare_and_compare(g, 0.0, "Add before conv");
    CHECK(s.add_folded_after == 0 && s.mul_folded_before == 0 && g->n_nodes == 2);
    wq_graph_free(g);
  }
}

/* ---- MatMul + Add(bias) ------------------------------------------------------- */

static void check_linear_bias_add(int brank, const int64_t *bd, bool matmul_read_twice,
                                  bool expect) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[3] = {2, 3, 4}, wd[2] = {4, 5}, yd[3] = {2, 3, 5};
  int x = activation(g, "x", 3, xd), m = activation(g, "m", 3, yd), y = activation(g, "y", 3, yd);
  int in[2] = {x, constant(g, "w", 2, wd, -1.0f, 0.5f)};
  CHECK(add_node(g, "", "MatMul", in, 2, m, NULL, 13, &err) >= 0);
  int a_in[2] = {m, constant(g, "b", brank, bd, -1.0f, 0.5f)};
  int add = add_node(g, "", "Add", a_in, 2, y, NULL, 13, &err);
  int outs[2] = {y, m};
  set_io(g, x, outs, matmul_read_twice ? 2 : 1);
  CHECK(wq_quant_is_linear_bias_add(g, add) == expect);
  CHECK(!wq_quant_is_linear_bias_add(g, 0) && !wq_quant_is_linear_bias_add(g, 7));
  wq_quant_prepare_stats s = prepare_and_compare(g, 0.0, "MatMul+Add");
  CHECK(s.linear_bias_adds == (expect ? 1 : 0) && g->n_nodes == 2);
  wq_graph_free(g);
}

static void test_linear_bias_add(void) {
  check_linear_bias_add(1, (const int64_t[]){5}, false, true);
  check_linear_bias_add(3, (const int64_t[]){1, 1, 5}, false, true);
  check_linear_bias_add(3, (const int64_t[]){2, 1, 5}, false, false);    /* per batch */
  check_linear_bias_add(4, (const int64_t[]){1, 1, 1, 5}, false, false); /* widens */
  check_linear_bias_add(1, (const int64_t[]){5}, true, false);
}

/* ---- real models -------------------------------------------------------------- */

/* Loads a model as the quantizer does (import, resolve ops, fold constants,
 * no lowering), runs it on seeded input, prepares, runs again. */
static wq_quant_prepare_stats check_model(const char *rel, int rank, const int64_t *dims,
                                          double tol) {
  wq_quant_prepare_stats stats = {0};
  char path[512];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return stats;
  wq_model_ir *ir = NULL;
  wq_error err;
  wq_status st = wq_onnx_import(bytes, n, &ir, &err);
  free(bytes);
  if (st == WQ_OK)
    st = wq_graph_resolve_ops(ir->graph, &err);
  if (st == WQ_OK)
    st = wq_pass_fold_constants(ir->graph, 1, NULL, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s", rel, err.message);
  if (st == WQ_OK) {
    wq_graph *g = ir->graph;
    /* A softmax output hides errors in its logits: compare those too. */
    for (int i = 0; i < g->n_nodes; i++)
      if (strcmp(g->nodes[i].op_type, "Softmax") == 0 && g->nodes[i].outputs[0] == g->outputs[0]) {
        int *outs = realloc(g->outputs, 2 * sizeof *outs);
        outs[1] = g->nodes[i].inputs[0];
        g->tensors[outs[1]].is_output = true;
        g->outputs = outs;
        g->n_outputs = 2;
      }
    float *x = random_floats(numel(rank, dims), -2.0f, 1.0f);
    run_result before = run_graph(g, x, rank, dims);
    st = wq_quant_prepare(g, &stats, &err);
    CHECK_MSG(st == WQ_OK, "%s: %s", rel, err.message);
    run_result after = run_graph(g, x, rank, dims);
    for (int k = 0; k < g->n_outputs; k++) {
      CHECK(before.data[k] && after.data[k] && before.n[k] == after.n[k]);
      if (!before.data[k] || !after.data[k] || before.n[k] != after.n[k])
        continue;
      double e = relative_error(before.data[k], after.data[k], before.n[k]);
      CHECK_MSG(e <= tol, "%s: relative error %g", rel, e);
      printf("%s: %d BN, %d Mul after, %d Mul before, %d Add folded, %d MatMul+Add; "
             "output '%s' relative error %.3g\n",
             rel, stats.batchnorm_folded, stats.mul_folded_after, stats.mul_folded_before,
             stats.add_folded_after, stats.linear_bias_adds, g->tensors[g->outputs[k]].name, e);
    }
    run_result_free(&before);
    run_result_free(&after);
    free(x);
  }
  wq_model_ir_free(ir);
  return stats;
}

/* A scalar float constant. */
static int scalar(wq_graph *g, const char *name, float v) {
  float *d = malloc(sizeof *d);
  *d = v;
  static const int64_t no_dims[1] = {1};
  return add_tensor(g, name, WQ_DT_FLOAT, 0, no_dims, d);
}

/* x * Clip(x + 3, 0, 6) / 6 (Clip bounds as inputs, and as opset-6
 * attributes; / 6 and * (1/6)) becomes one HardSwish with the same values;
 * a chain whose Clip stops at 5 is left alone. */
static void test_hardswish(void) {
  for (int variant = 0; variant < 3; variant++) {
    wq_graph *g = wq_graph_new();
    wq_error err;
    const int64_t d[4] = {1, 3, 4, 4};
    int x = activation(g, "x", 4, d), a = activation(g, "a", 4, d), c = activation(g, "c", 4, d);
    int m = activation(g, "m", 4, d), y = activation(g, "y", 4, d);
    CHECK(add_node(g, "", "Add", (int[]){x, scalar(g, "three", 3.0f)}, 2, a, NULL, 13, &err) >= 0);
    float hi = variant == 2 ? 5.0f : 6.0f;
    if (variant == 1) {
      const attr_spec bounds[] = {AF("min", 0.0f), AF("max", 6.0f), AEND};
      CHECK(add_node(g, "", "Clip", (int[]){a}, 1, c, bounds, 6, &err) >= 0);
    } else {
      int clip_in[3] = {a, scalar(g, "lo", 0.0f), scalar(g, "hi", hi)};
      CHECK(add_node(g, "", "Clip", clip_in, 3, c, NULL, 13, &err) >= 0);
    }
    CHECK(add_node(g, "", "Mul", (int[]){c, x}, 2, m, NULL, 13, &err) >= 0);
    if (variant == 1)
      CHECK(add_node(g, "", "Mul", (int[]){m, scalar(g, "sixth", 1.0f / 6.0f)}, 2, y, NULL, 13,
                     &err) >= 0);
    else
      CHECK(add_node(g, "", "Div", (int[]){m, scalar(g, "six", 6.0f)}, 2, y, NULL, 13, &err) >= 0);
    set_io(g, x, &y, 1);
    /* Below opset 14 plain preparation leaves the chain alone. */
    if (variant == 1) {
      wq_quant_prepare_stats plain;
      CHECK(wq_quant_prepare(g, &plain, &err) == WQ_OK && plain.hardswish_fused == 0);
      CHECK(g->n_nodes == 4);
    }
    raise_opset = true;
    wq_quant_prepare_stats s = prepare_and_compare(g, 1e-6, "hardswish");
    raise_opset = false;
    if (variant == 2) {
      CHECK(s.hardswish_fused == 0 && g->n_nodes == 4);
    } else {
      CHECK(s.hardswish_fused == 1 && g->n_nodes == 1);
      CHECK(strcmp(g->nodes[0].op_type, "HardSwish") == 0 && g->nodes[0].opset == 14);
      CHECK(g->nodes[0].inputs[0] == x && g->nodes[0].outputs[0] == y);
    }
    wq_graph_free(g);
  }
}

static void test_real_models(void) {
  /* ppocr: every BatchNormalization follows a Conv read by it alone */
  wq_quant_prepare_stats s = check_model("models/ppocr-mobile-v2-cls/model.onnx", 4,
                                         (const int64_t[]){1, 3, 48, 192}, 1e-4);
  CHECK_MSG(s.batchnorm_folded == 35 && s.linear_bias_adds == 1, "ppocr: %d BN folded, %d bias",
            s.batchnorm_folded, s.linear_bias_adds);
  /* mnist-8 (CNTK): Conv -> Add(bias [8,1,1]) twice, then MatMul -> Add */
  s = check_model("models/mnist-8/model.onnx", 4, (const int64_t[]){1, 1, 28, 28}, 1e-4);
  CHECK_MSG(s.add_folded_after == 2 && s.linear_bias_adds == 1, "mnist: %d Add folded, %d bias",
            s.add_folded_after, s.linear_bias_adds);
}

/* The quantizer's own load path: prepare as the load option's rewrite. */
static wq_status prepare_hook(void *ctx, wq_graph *g, wq_error *err) {
  return wq_quant_prepare(g, ctx, err);
}

/* Loads `path` as the quantizer does (no lowering, no float fusion) with
 * and without preparation, runs both on the same seeded inputs and compares
 * every output: floats within tol of the output's max abs, others equal.
 * Returns 0 when the model does not load or run without preparation (an
 * unsupported op: not this test's business), else 1. */
static int sweep_one(const char *path, const wq_input_shape *shape, double tol,
                     wq_quant_prepare_stats *total) {
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  if (!bytes)
    return 0;
  wq_quant_prepare_stats stats = {0};
  wq_load_options plain = {.input_shapes = shape,
                           .n_input_shapes = shape ? 1 : 0,
                           .no_lowering = 1,
                           .no_float_fusion = 1};
  wq_load_options prep = plain;
  prep.rewrite = prepare_hook;
  prep.rewrite_ctx = &stats;
  wq_model *a = NULL, *b = NULL;
  wq_error err;
  int ran_a = 0, ran_b = 0, used = 0;
  if (wq_model_load(bytes, n, &plain, &a, &err) == WQ_OK &&
      wq_seeded_run(a, 11, 1 << 22, &ran_a, &err) == WQ_OK && ran_a) {
    used = 1;
    wq_status st = wq_model_load(bytes, n, &prep, &b, &err);
    CHECK_MSG(st == WQ_OK, "%s: load with prepare: %s (%s)", path, err.message, err.node);
    if (st == WQ_OK)
      st = wq_seeded_run(b, 11, 1 << 22, &ran_b, &err);
    CHECK_MSG(st == WQ_OK && ran_b, "%s: run after prepare: %s (%s)", path, err.message, err.node);
    for (int o = 0; st == WQ_OK && ran_b && o < wq_model_output_count(a); o++) {
      const wq_value *x = wq_model_result(a, o), *y = wq_model_result(b, o);
      size_t nb = wq_value_nbytes(x);
      CHECK_MSG(nb == wq_value_nbytes(y) && x->dtype == y->dtype, "%s output %d", path, o);
      if (nb != wq_value_nbytes(y) || x->dtype != y->dtype)
        continue;
      if (x->dtype == WQ_DT_FLOAT) {
        double e = relative_error(x->data, y->data, wq_value_numel(x));
        CHECK_MSG(e <= tol, "%s output %d: relative error %g", path, o, e);
      } else {
        CHECK_MSG(memcmp(x->data, y->data, nb) == 0, "%s output %d differs", path, o);
      }
    }
    total->batchnorm_folded += stats.batchnorm_folded;
    total->mul_folded_after += stats.mul_folded_after;
    total->mul_folded_before += stats.mul_folded_before;
    total->add_folded_after += stats.add_folded_after;
    total->linear_bias_adds += stats.linear_bias_adds;
  }
  wq_model_free(a);
  wq_model_free(b);
  free(bytes);
  return used;
}

/* Every float model in shared/models and every ONNX node-test model: the
 * prepared graph loads, runs and gives the same outputs. */
static void test_model_sweep(void) {
  static const char *const models[] = {"mnist-8/model.onnx",
                                       "super-resolution-10/model.onnx",
                                       "pytorch-super-resolution-depthtospace/model.onnx",
                                       "teams-segmentation-msra190729/model.onnx",
                                       "ppocr-mobile-v2-cls/model.onnx",
                                       "openwakeword-hello-deepa-mlp/model.onnx",
                                       "synthetic/smallcnn_f32.onnx",
                                       "synthetic/matmul_256x256x256_f32.onnx",
                                       NULL};
  const int64_t ppocr_dims[4] = {1, 3, 48, 192}, teams_dims[4] = {1, 4, 96, 160};
  const wq_input_shape ppocr = {"x", 4, ppocr_dims}, teams = {"bgrm", 4, teams_dims};
  char path[1024];
  wq_quant_prepare_stats total = {0};
  int used = 0;
  for (int k = 0; models[k]; k++) {
    snprintf(path, sizeof path, "%s/models/%s", wq_test_shared_dir(), models[k]);
    const wq_input_shape *shape = strstr(models[k], "ppocr")   ? &ppocr
                                  : strstr(models[k], "teams") ? &teams
                                                               : NULL;
    int ok = sweep_one(path, shape, 1e-4, &total);
    CHECK_MSG(ok, "%s did not load or run", models[k]);
    used += ok;
  }
  printf("shared models: %d prepared; %d BN, %d Mul after, %d Mul before, %d Add folded, "
         "%d MatMul+Add\n",
         used, total.batchnorm_folded, total.mul_folded_after, total.mul_folded_before,
         total.add_folded_after, total.linear_bias_adds);
  snprintf(path, sizeof path, "%s/onnx-node-tests", wq_test_shared_dir());
  DIR *dir = opendir(path);
  CHECK_MSG(dir != NULL, "cannot open %s", path);
  int cases = 0;
  wq_quant_prepare_stats node_total = {0};
  for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
    if (strncmp(e->d_name, "test_", 5) != 0)
      continue;
    snprintf(path, sizeof path, "%s/onnx-node-tests/%s/model.onnx", wq_test_shared_dir(),
             e->d_name);
    cases += sweep_one(path, NULL, 1e-5, &node_total);
  }
  if (dir)
    closedir(dir);
  CHECK_MSG(cases > 100, "only %d node tests ran", cases);
  printf("onnx node tests: %d prepared and equal\n", cases);
}

/* ---- cross-layer equalization ------------------------------------------------ */

/* Conv -> Relu -> depthwise Conv -> Relu -> 1x1 Conv -> y, then a Conv
 * read twice and a Conv -> Sigmoid -> Conv (neither is a pair): two pairs,
 * the first channelwise; positive factors on both leave y as it was. */
static void test_equalization(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t C = 6, xd[4] = {1, 3, 5, 5}, yd[4] = {1, C, 5, 5}, od[4] = {1, 4, 5, 5};
  const int64_t w1d[4] = {C, 3, 3, 3}, w2d[4] = {C, 1, 3, 3}, w3d[4] = {4, C, 1, 1}, bd[1] = {C};
  const int64_t pads[4] = {1, 1, 1, 1};
  int x = activation(g, "x", 4, xd), t[4], y = activation(g, "y", 4, od);
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "t%d", k);
    t[k] = activation(g, name, 4, yd);
  }
  attr_spec pad[] = {AL("pads", pads, 4), AEND};
  attr_spec dw[] = {AL("pads", pads, 4), AI("group", C), AEND};
  int c1[3] = {x, constant(g, "w1", 4, w1d, -1.0f, 0.5f), constant(g, "b1", 1, bd, -1.0f, 0.5f)};
  int c2[3] = {t[1], constant(g, "w2", 4, w2d, -1.0f, 0.5f), constant(g, "b2", 1, bd, -1.0f, 0.5f)};
  int c3[2] = {t[3], constant(g, "w3", 4, w3d, -1.0f, 0.5f)};
  CHECK(add_node(g, "", "Conv", c1, 3, t[0], pad, 11, &err) >= 0);
  CHECK(add_node(g, "", "Relu", &t[0], 1, t[1], NULL, 13, &err) >= 0);
  CHECK(add_node(g, "", "Conv", c2, 3, t[2], dw, 11, &err) >= 0);
  CHECK(add_node(g, "", "Relu", &t[2], 1, t[3], NULL, 13, &err) >= 0);
  CHECK(add_node(g, "", "Conv", c3, 2, y, NULL, 11, &err) >= 0);
  set_io(g, x, &y, 1);
  wq_quant_eq_pair p[4];
  CHECK(wq_quant_eq_pairs(g, p, 4) == 2);
  CHECK(p[0].a == 0 && p[0].b == 2 && p[0].tensor == t[1] && p[0].channels == C &&
        p[0].channelwise);
  CHECK(p[1].a == 2 && p[1].b == 4 && p[1].tensor == t[3] && !p[1].channelwise);
  float *xv = random_floats(75, -2.0f, 1.0f);
  run_result before = run_graph(g, xv, 0, NULL);
  const double f[6] = {0.25, 4.0, 1.0, 16.0, 0.5, 2.0};
  CHECK(wq_quant_eq_apply(g, &p[0], f, &err) == WQ_OK);
  CHECK(wq_quant_eq_apply(g, &p[1], f, &err) == WQ_OK);
  /* rewritten in place: the same tensors */
  CHECK(g->nodes[0].inputs[1] == c1[1] && g->nodes[2].inputs[1] == c2[1]);
  run_result after = run_graph(g, xv, 0, NULL);
  CHECK(before.data[0] && after.data[0] &&
        relative_error(before.data[0], after.data[0], before.n[0]) <= 1e-5);
  run_result_free(&before);
  run_result_free(&after);
  free(xv);
  wq_graph_free(g);

  /* not pairs: two readers; a Sigmoid between; a Conv into a Gemm */
  g = wq_graph_new();
  x = activation(g, "x", 4, xd);
  int u = activation(g, "u", 4, yd), v = activation(g, "v", 4, yd), s = activation(g, "s", 4, yd);
  int y1 = activation(g, "y1", 4, od), y2 = activation(g, "y2", 4, od);
  int a1[2] = {x, constant(g, "w1", 4, w1d, -1.0f, 0.5f)};
  int a2[2] = {u, constant(g, "w2", 4, w3d, -1.0f, 0.5f)};
  int a3[2] = {u, constant(g, "w3", 4, w1d, -1.0f, 0.5f)};
  int a4[2] = {s, constant(g, "w4", 4, w3d, -1.0f, 0.5f)};
  CHECK(add_node(g, "", "Conv", a1, 2, u, pad, 11, &err) >= 0);
  CHECK(add_node(g, "", "Conv", a2, 2, y1, NULL, 11, &err) >= 0);
  a3[0] = x;
  CHECK(add_node(g, "", "Conv", a3, 2, v, pad, 11, &err) >= 0);
  CHECK(add_node(g, "", "Sigmoid", &v, 1, s, NULL, 13, &err) >= 0);
  CHECK(add_node(g, "", "Conv", a4, 2, y2, NULL, 11, &err) >= 0);
  int outs[3] = {y1, y2, u};
  set_io(g, x, outs, 3); /* u is also a graph output: a second reader */
  CHECK(wq_quant_eq_pairs(g, NULL, 0) == 0);
  wq_graph_free(g);
}

int main(void) {
  test_hardswish();
  test_batchnorm_folds();
  test_mul_after_conv();
  test_mul_on_square_weights();
  test_mul_before_linear();
  test_chain();
  test_shared_weight();
  test_not_folded();
  test_linear_bias_add();
  test_equalization();
  test_real_models();
  test_model_sweep();
  WQ_TEST_END();
}
