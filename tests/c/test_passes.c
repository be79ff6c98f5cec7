/* The pass manager: the load pipeline's records (names in order, which ran,
 * counters), the IR check between passes on hand-broken graphs, and a pass
 * that breaks the graph failing the load naming the pass. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "api/wasmq.h"
#include "graph_build.h"
#include "passes/layout_int8.h"
#include "passes/layout_plan.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"
#include "wq_test.h"

static wq_model *load_path(const char *path, const wq_load_options *opts, wq_error *err) {
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  wq_model *m = NULL;
  if (bytes)
    wq_model_load(bytes, n, opts, &m, err);
  free(bytes);
  return m;
}

static const wq_pass_record *find_pass(const wq_model *m, const char *name) {
  for (int p = 0; p < wq_model_pass_count(m); p++)
    if (strcmp(wq_model_pass(m, p)->name, name) == 0)
      return wq_model_pass(m, p);
  return NULL;
}

static int64_t stat_of(const wq_pass_record *rec, const char *name) {
  for (int k = 0; rec && k < rec->n_stats; k++)
    if (strcmp(rec->stats[k].name, name) == 0)
      return rec->stats[k].value;
  return -1;
}

static void test_pipeline_records(void) {
  static const char *const order[] = {"resolve_ops",        "check_dtypes",   "bind_input_shapes",
                                      "capture_dequantize", "fold_constants", "rewrite",
                                      "lower_int8",         "partition",      "layout_int8",
                                      "fuse_float",         "plan_nodes"};
  wq_error err;
  wq_load_options opts = {.validate_ir = 1};
  wq_model *m = load_path("tests/models/seed003_qdq.onnx", &opts, &err);
  CHECK_MSG(m != NULL, "%s", err.message);
  if (!m)
    return;
  CHECK(wq_model_pass_count(m) == (int)(sizeof order / sizeof *order));
  for (int p = 0; p < wq_model_pass_count(m); p++)
    CHECK_MSG(strcmp(wq_model_pass(m, p)->name, order[p]) == 0, "pass %d is %s", p,
              wq_model_pass(m, p)->name);
  CHECK(wq_model_pass(m, wq_model_pass_count(m)) == NULL && wq_model_pass(m, -1) == NULL);
  CHECK(!find_pass(m, "rewrite")->ran && find_pass(m, "lower_int8")->ran);
  /* seed003: two convs and a relu (fused into the first conv's clamp) lower;
   * the graph I/O is channels-first, so the int8 region is entered and left
   * through transitions, all three fused into the Quantize/DequantizeLinear
   * next to them: no bytes moved by a separate pass. */
  CHECK(stat_of(find_pass(m, "lower_int8"), "lowered") >= 3);
  CHECK(stat_of(find_pass(m, "lower_int8"), "kept_float") == 0);
  CHECK(stat_of(find_pass(m, "layout_int8"), "transitions") >= 2);
  CHECK(stat_of(find_pass(m, "layout_int8"), "transition_bytes") == 0);
  CHECK(stat_of(find_pass(m, "plan_nodes"), "planned") > 0);
  char *text = wq_model_describe(m);
  CHECK(text && strstr(text, "load passes:\n  resolve_ops nodes=") &&
        strstr(text, "rewrite (off)"));
  free(text);
  wq_model_free(m);

  wq_load_options off = {.no_lowering = 1};
  m = load_path("tests/models/seed003_qdq.onnx", &off, &err);
  CHECK(m != NULL);
  if (m) {
    CHECK(!find_pass(m, "capture_dequantize")->ran && !find_pass(m, "lower_int8")->ran &&
          !find_pass(m, "layout_int8")->ran && find_pass(m, "fold_constants")->ran);
    CHECK(find_pass(m, "lower_int8")->n_stats == 0);
  }
  wq_model_free(m);
}

/* x -> Relu -> y -> Relu -> z, built by hand. */
static wq_graph *relu_chain(int *x, int *y, int *z) {
  wq_graph *g = wq_graph_new();
  int64_t dims[1] = {4};
  wq_error err;
  *x = add_tensor(g, "x", WQ_DT_FLOAT, 1, dims, NULL);
  *y = add_tensor(g, "y", WQ_DT_FLOAT, 1, dims, NULL);
  *z = add_tensor(g, "z", WQ_DT_FLOAT, 1, dims, NULL);
  g->tensors[*x].is_input = true;
  g->tensors[*z].is_output = true;
  g->inputs = malloc(sizeof(int));
  g->inputs[0] = *x;
  g->n_inputs = 1;
  g->outputs = malloc(sizeof(int));
  g->outputs[0] = *z;
  g->n_outputs = 1;
  add_node(g, "", "Relu", x, 1, *y, NULL, 13, &err);
  add_node(g, "", "Relu", y, 1, *z, NULL, 13, &err);
  return g;
}

static void test_validate(void) {
  int x, y, z;
  wq_error err;
  wq_graph *g = relu_chain(&x, &y, &z);
  CHECK(wq_graph_validate(g, true, &err) == WQ_OK);
  /* Read before write: swap the two nodes. */
  wq_node tmp = g->nodes[0];
  g->nodes[0] = g->nodes[1];
  g->nodes[1] = tmp;
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strcmp(err.node, g->nodes[0].name) == 0 && strstr(err.message, "'y' is read before"));
  g->nodes[1] = g->nodes[0];
  g->nodes[0] = tmp;
  /* A second producer. */
  g->nodes[1].outputs[0] = y;
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strstr(err.message, "also written by"));
  /* ... which leaves the graph output unwritten once fixed that way. */
  g->nodes[1].outputs[0] = -1;
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strstr(err.message, "graph output 'z' is never written"));
  g->nodes[1].outputs[0] = z;
  /* An index past the tensor table, and a node writing a graph input. */
  g->nodes[1].inputs[0] = 99;
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strstr(err.message, "tensor 99 of 3"));
  g->nodes[1].inputs[0] = y;
  g->nodes[0].outputs[0] = x;
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strstr(err.message, "is a graph input"));
  g->nodes[0].outputs[0] = y;
  /* Unresolved ops pass until a resolving pass has run. */
  const struct wq_op *op = g->nodes[0].op;
  g->nodes[0].op = NULL;
  CHECK(wq_graph_validate(g, false, &err) == WQ_OK);
  CHECK(wq_graph_validate(g, true, &err) == WQ_ERR_INVALID_MODEL &&
        strstr(err.message, "not resolved"));
  g->nodes[0].op = op;
  CHECK(wq_graph_validate(g, true, &err) == WQ_OK);
  wq_graph_free(g);
}

typedef struct {
  int calls;
} count_ctx;

static wq_status pass_count(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)g;
  (void)err;
  count_ctx *c = ctx;
  c->calls++;
  wq_pass_stat_set(rec, "calls", c->calls);
  wq_pass_stat_set(rec, "calls", c->calls); /* overwrites */
  return WQ_OK;
}

/* Points the last node's input at its own output: a cycle. */
static wq_status pass_break(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  (void)rec;
  (void)err;
  g->nodes[g->n_nodes - 1].inputs[0] = g->nodes[g->n_nodes - 1].outputs[0];
  return WQ_OK;
}

static bool never(const void *ctx) {
  (void)ctx;
  return false;
}

static void test_run_all(void) {
  int x, y, z;
  wq_graph *g = relu_chain(&x, &y, &z);
  const wq_pass table[] = {{"first", pass_count, NULL, true},
                           {"skipped", pass_count, never, false},
                           {"second", pass_count, NULL, false},
                           {"breaks", pass_break, NULL, false},
                           {"after", pass_count, NULL, false}};
  wq_pass_record rec[5];
  count_ctx ctx = {0};
  wq_error err;
  wq_status st = wq_pass_run_all(table, 5, &ctx, g, true, rec, &err);
  CHECK(st == WQ_ERR_INVALID_MODEL && strstr(err.message, "after pass 'breaks'") &&
        strcmp(err.node, g->nodes[1].name) == 0);
  CHECK(ctx.calls == 2 && rec[0].ran && !rec[1].ran && rec[2].ran && rec[3].ran && !rec[4].ran);
  CHECK(rec[0].n_stats == 1 && rec[0].stats[0].value == 1 && rec[2].stats[0].value == 2);
  CHECK(strcmp(rec[4].name, "after") == 0 && rec[4].n_stats == 0);
  /* Without validation the broken graph goes on. */
  ctx.calls = 0;
  CHECK(wq_pass_run_all(table, 5, &ctx, g, false, rec, &err) == WQ_OK && ctx.calls == 3);
  wq_graph_free(g);
}

/* This thread's CPU time: the bound below is about the planner's work, and
 * a loaded machine stretches wall time (waiting for a core) but not this. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A random DAG of int8 nodes the layout pass moves: MaxPool 1x1 (a
 * channels-last kernel), Identity and Concat on channel axis 1 (layout
 * agnostic), Relu (channels-first), each reading earlier tensors of
 * [1, 4, 8, 8] (Concat: [1, 8, 8, 8], read by the others): the planner's
 * minimum cut has real work to do. */
static wq_graph *random_dag(int n_nodes, uint32_t seed) {
  wq_graph *g = wq_graph_new();
  int64_t dims4[4] = {1, 4, 8, 8}, dims8[4] = {1, 8, 8, 8};
  int *pool4 = malloc(sizeof(int) * (size_t)(n_nodes + 1)), n4 = 0;
  int x = add_tensor(g, "x", WQ_DT_INT8, 4, dims4, NULL);
  g->tensors[x].is_input = true;
  g->inputs = malloc(sizeof(int));
  g->inputs[0] = x;
  g->n_inputs = 1;
  pool4[n4++] = x;
  static const int64_t k11[2] = {1, 1};
  const attr_spec pool_attrs[] = {AL("kernel_shape", k11, 2), AEND};
  const attr_spec cat_attrs[] = {AI("axis", 1), AEND};
  wq_error err;
  int last = x;
  for (int i = 0; i < n_nodes; i++) {
    seed = seed * 1664525u + 1013904223u;
    int kind = (int)(seed >> 28) % 4;
    int a = pool4[(seed >> 8) % (uint32_t)n4], b = pool4[(seed >> 16) % (uint32_t)n4];
    char name[32];
    snprintf(name, sizeof name, "t%d", i);
    if (kind == 2) {
      int in[2] = {a, b};
      int y = add_tensor(g, name, WQ_DT_INT8, 4, dims8, NULL);
      add_node(g, "", "Concat", in, 2, y, cat_attrs, 13, &err);
      /* [1, 8, 8, 8]: read by nothing later unless it is the last node */
      last = y;
      continue;
    }
    int y = add_tensor(g, name, WQ_DT_INT8, 4, dims4, NULL);
    add_node(g, "",
             kind == 0   ? "MaxPool"
             : kind == 1 ? "Identity"
                         : "Relu",
             &a, 1, y, kind == 0 ? pool_attrs : NULL, kind == 3 ? 14 : 13, &err);
    pool4[n4++] = y;
    last = y;
  }
  g->tensors[last].is_output = true;
  g->outputs = malloc(sizeof(int));
  g->outputs[0] = last;
  g->n_outputs = 1;
  free(pool4);
  return g;
}

static void test_random_dag_layout(void) {
  double best = 1e9;
  int transitions = -1, nhwc = -1;
  for (int rep = 0; rep < 3; rep++) {
    wq_graph *g = random_dag(500, 7);
    wq_error err;
    CHECK(wq_graph_validate(g, true, &err) == WQ_OK);
    wq_layout_stats stats;
    double t0 = cpu_ms();
    wq_status st = wq_pass_layout_int8(g, &stats, &err);
    wq_partition_report r;
    if (st == WQ_OK)
      st = wq_partition_report_build(g, &r, &err);
    double ms = cpu_ms() - t0;
    CHECK_MSG(st == WQ_OK, "%s", err.message);
    CHECK(wq_graph_validate(g, true, &err) == WQ_OK);
    if (st == WQ_OK)
      wq_partition_report_free(&r);
    /* Same graph, same plan. */
    CHECK(transitions < 0 || (stats.transitions == transitions && stats.nodes_nhwc == nhwc));
    transitions = stats.transitions;
    nhwc = stats.nodes_nhwc;
    best = ms < best ? ms : best;
    wq_graph_free(g);
  }
  printf("random 500-node DAG: layout + partition report in %.2f ms of CPU (best of 3), %d nodes "
         "channels-last, %d transitions\n",
         best, nhwc, transitions);
  CHECK(nhwc > 0);
  CHECK_MSG(best < 50.0, "%.2f ms", best);
}

static uint32_t lcg(uint32_t *seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return *seed >> 8;
}

/* The planner alone on random groups (up to 14 variables, fixed labels
 * among the members, weights 0..99): its cost is the minimum over all 2^n
 * labelings, its labeling costs what it says, and its channels-last set is
 * the smallest: contained in that of every minimum labeling. */
static void test_lplan_exhaustive(void) {
  uint32_t seed = 11;
  int checked = 0;
  for (int rep = 0; rep < 400; rep++) {
    const int n_vars = 1 + (int)(lcg(&seed) % 14);
    wq_lplan p;
    wq_error err;
    const int n_groups = 1 + (int)(lcg(&seed) % 24);
    CHECK(wq_lplan_init(&p, n_vars, n_groups, &err) == WQ_OK);
    for (int gi = 0; gi < n_groups; gi++) {
      p.weight[gi] = (int64_t)(lcg(&seed) % 100);
      const int n = 1 + (int)(lcg(&seed) % 6);
      for (int k = 0; k < n; k++) {
        const uint32_t r = lcg(&seed) % (uint32_t)(n_vars + 3);
        const int member = r < (uint32_t)n_vars    ? (int)r
                           : r == (uint32_t)n_vars ? WQ_LPLAN_CHANNELS_LAST
                                                   : WQ_LPLAN_DECLARED;
        CHECK(wq_lplan_add(&p, gi, member, &err) == WQ_OK);
      }
    }
    unsigned char labels[14], all[14];
    int64_t cost = -1;
    CHECK(wq_lplan_solve(&p, labels, &cost, &err) == WQ_OK);
    CHECK(wq_lplan_cost(&p, labels) == cost);
    /* Flip costs: each variable alone in the other label, evaluated whole.
     * At the minimum none is negative; a channels-last one is never 0 (the
     * tie rule would have made it declared). */
    int64_t delta[14];
    CHECK(wq_lplan_flip_costs(&p, labels, delta, &err) == WQ_OK);
    for (int v = 0; v < n_vars; v++) {
      memcpy(all, labels, sizeof all);
      all[v] ^= 1;
      CHECK_MSG(delta[v] == wq_lplan_cost(&p, all) - cost && delta[v] >= 0 &&
                    (!labels[v] || delta[v] > 0),
                "rep %d: variable %d flip %lld, evaluated %lld", rep, v, (long long)delta[v],
                (long long)(wq_lplan_cost(&p, all) - cost));
    }
    int64_t best = INT64_MAX;
    for (uint32_t mask = 0; mask < (1u << n_vars); mask++) {
      for (int v = 0; v < n_vars; v++)
        all[v] = (mask >> v) & 1;
      best = wq_lplan_cost(&p, all) < best ? wq_lplan_cost(&p, all) : best;
    }
    for (uint32_t mask = 0; mask < (1u << n_vars); mask++) {
      for (int v = 0; v < n_vars; v++)
        all[v] = (mask >> v) & 1;
      if (wq_lplan_cost(&p, all) != best)
        continue;
      for (int v = 0; v < n_vars; v++)
        CHECK_MSG(!labels[v] || all[v], "rep %d: variable %d channels-last, not in every optimum",
                  rep, v);
    }
    CHECK_MSG(cost == best, "rep %d: planner %lld, exhaustive minimum %lld", rep, (long long)cost,
              (long long)best);
    checked += cost == best;
    wq_lplan_free(&p);
  }
  CHECK(checked == 400);
}

static int scalar_const(wq_graph *g, const char *name, wq_dtype dt, double value) {
  void *data = calloc(1, 4);
  if (dt == WQ_DT_FLOAT)
    *(float *)data = (float)value;
  else
    *(int8_t *)data = (int8_t)value;
  static const int64_t none[1] = {1};
  return add_tensor(g, name, dt, 0, none, data);
}

/* A small random int8 graph for the exhaustive check: int8 graph inputs and
 * QuantizeLinears of float inputs, then MaxPool 1x1 (fixed channels-last),
 * Identity, Concat on axis 1 and Resize nearest (free), Relu and Transpose
 * (channels-first),
 * Flatten and Shape readers (as is when the bytes agree), DequantizeLinear
 * (free up to 64 channels), some tensors graph outputs. Spatial size 1 or
 * 3, channels 1 to 7: compatible and incompatible tensors of several sizes. */
static wq_graph *small_dag(uint32_t *seed, int n_nodes) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t s = lcg(seed) % 2 ? 3 : 1;
  int pool[64], n_pool = 0, outs[64], n_outs = 0;
  char name[32];
  const int n_in = 1 + (int)(lcg(seed) % 3);
  g->inputs = malloc(sizeof(int) * 3);
  int scale = scalar_const(g, "scale", WQ_DT_FLOAT, 0.05);
  int zero = scalar_const(g, "zero", WQ_DT_INT8, 0);
  for (int k = 0; k < n_in; k++) {
    int64_t dims[4] = {1, 1 + (int64_t)(lcg(seed) % 7), s, s};
    snprintf(name, sizeof name, "in%d", k);
    const bool quantize = lcg(seed) % 2;
    int x = add_tensor(g, name, quantize ? WQ_DT_FLOAT : WQ_DT_INT8, 4, dims, NULL);
    g->tensors[x].is_input = true;
    g->inputs[g->n_inputs++] = x;
    if (quantize) {
      snprintf(name, sizeof name, "in%d_q", k);
      int in[3] = {x, scale, zero};
      x = add_tensor(g, name, WQ_DT_INT8, 4, dims, NULL);
      add_node(g, "", "QuantizeLinear", in, 3, x, NULL, 13, &err);
    }
    pool[n_pool++] = x;
  }
  static const int64_t k11[2] = {1, 1}, perm[4] = {0, 1, 2, 3};
  const attr_spec pool_attrs[] = {AL("kernel_shape", k11, 2), AEND};
  const attr_spec cat_attrs[] = {AI("axis", 1), AEND};
  const attr_spec perm_attrs[] = {AL("perm", perm, 4), AEND};
  const attr_spec nearest[] = {{"mode", 0, NULL, 0, "nearest", 0.0f, false}, AEND};
  float *one4 = malloc(4 * sizeof *one4);
  for (int k = 0; k < 4; k++)
    one4[k] = 1.0f;
  const int ones = add_tensor(g, "ones", WQ_DT_FLOAT, 1, (const int64_t[]){4}, one4);
  for (int i = 0; i < n_nodes; i++) {
    const int kind = (int)(lcg(seed) % 9);
    int a = pool[lcg(seed) % (uint32_t)n_pool], b = pool[lcg(seed) % (uint32_t)n_pool];
    int64_t dims[4];
    memcpy(dims, g->tensors[a].dims, sizeof dims);
    snprintf(name, sizeof name, "t%d", i);
    int y;
    if (kind == 5) { /* Flatten: rank 2 */
      int64_t d2[2] = {1, dims[1] * s * s};
      y = add_tensor(g, name, WQ_DT_INT8, 2, d2, NULL);
      add_node(g, "", "Flatten", &a, 1, y, NULL, 13, &err);
      outs[n_outs++] = y;
      continue;
    }
    if (kind == 6) {
      int64_t d1[1] = {4};
      y = add_tensor(g, name, WQ_DT_INT64, 1, d1, NULL);
      add_node(g, "", "Shape", &a, 1, y, NULL, 13, &err);
      outs[n_outs++] = y;
      continue;
    }
    if (kind == 7) {
      int in[3] = {a, scale, zero};
      y = add_tensor(g, name, WQ_DT_FLOAT, 4, dims, NULL);
      add_node(g, "", "DequantizeLinear", in, 3, y, NULL, 13, &err);
      outs[n_outs++] = y;
      continue;
    }
    if (kind == 2)
      dims[1] += g->tensors[b].dims[1];
    y = add_tensor(g, name, WQ_DT_INT8, 4, dims, NULL);
    if (kind == 0)
      add_node(g, "", "MaxPool", &a, 1, y, pool_attrs, 13, &err);
    else if (kind == 1)
      add_node(g, "", "Identity", &a, 1, y, NULL, 13, &err);
    else if (kind == 2)
      add_node(g, "", "Concat", (int[]){a, b}, 2, y, cat_attrs, 13, &err);
    else if (kind == 3)
      add_node(g, "", "Relu", &a, 1, y, NULL, 14, &err);
    else if (kind == 8)
      add_node(g, "", "Resize", (int[]){a, -1, ones}, 3, y, nearest, 13, &err);
    else
      add_node(g, "", "Transpose", &a, 1, y, perm_attrs, 13, &err);
    pool[n_pool++] = y;
    if (lcg(seed) % 4 == 0 || i == n_nodes - 1)
      outs[n_outs++] = y;
  }
  g->outputs = malloc(sizeof(int) * (size_t)(n_outs + 1));
  for (int k = 0; k < n_outs; k++) {
    g->tensors[outs[k]].is_output = true;
    g->outputs[g->n_outputs++] = outs[k];
  }
  return g;
}

/* The layout pass on small random graphs: the bytes its transitions move
 * equal the minimum over every labeling of the graph's free nodes (up to
 * 14, enumerated), and the same graph gets the same plan. */
static void test_layout_exhaustive(void) {
  uint32_t seed = 5;
  int graphs = 0, free_max = 0, with_bytes = 0, resized_last = 0;
  for (int rep = 0; rep < 300; rep++) {
    const int n_nodes = 4 + (int)(lcg(&seed) % 14);
    uint32_t s0 = seed;
    wq_graph *g = small_dag(&seed, n_nodes);
    wq_error err;
    CHECK_MSG(wq_graph_validate(g, true, &err) == WQ_OK, "rep %d: %s", rep, err.message);
    wq_lplan p;
    int var[64];
    CHECK(wq_layout_problem(g, &p, var, &err) == WQ_OK);
    if (p.n_vars > 14) {
      wq_lplan_free(&p);
      wq_graph_free(g);
      continue;
    }
    unsigned char labels[14];
    int64_t best = INT64_MAX;
    for (uint32_t mask = 0; mask < (1u << p.n_vars); mask++) {
      for (int v = 0; v < p.n_vars; v++)
        labels[v] = (mask >> v) & 1;
      const int64_t c = wq_lplan_cost(&p, labels);
      best = c < best ? c : best;
    }
    free_max = p.n_vars > free_max ? p.n_vars : free_max;
    wq_lplan_free(&p);
    wq_layout_stats stats, again;
    CHECK_MSG(wq_pass_layout_int8(g, &stats, &err) == WQ_OK, "%s", err.message);
    CHECK_MSG(wq_graph_validate(g, true, &err) == WQ_OK, "rep %d: %s", rep, err.message);
    /* The plan's cost: the bytes its transitions move plus those a
     * channels-first Resize writes. */
    int64_t cost = stats.transition_bytes;
    for (int i = 0; i < g->n_nodes; i++) {
      const wq_tensor *y = &g->tensors[g->nodes[i].outputs[0]];
      if (wq_node_is(&g->nodes[i], WQ_OPID(resize)) && !wq_layout_channels_last(y->layout, 4))
        cost += y->dims[1] * y->dims[2] * y->dims[3];
      resized_last +=
          wq_node_is(&g->nodes[i], WQ_OPID(resize)) && wq_layout_channels_last(y->layout, 4);
    }
    CHECK_MSG(cost == best, "rep %d: plan costs %lld bytes, minimum %lld", rep, (long long)cost,
              (long long)best);
    wq_graph_free(g);
    g = small_dag(&s0, n_nodes);
    CHECK(wq_pass_layout_int8(g, &again, &err) == WQ_OK);
    CHECK(again.transitions == stats.transitions && again.nodes_nhwc == stats.nodes_nhwc &&
          again.transition_bytes == stats.transition_bytes);
    wq_graph_free(g);
    graphs++;
    with_bytes += best > 0;
  }
  printf("layout planner vs exhaustive search: %d graphs (%d moving bytes), up to %d free "
         "labels, %d Resize nodes channels-last\n",
         graphs, with_bytes, free_max, resized_last);
  CHECK(graphs >= 200 && with_bytes >= 50 && free_max >= 10 && resized_last > 0);
}

int main(void) {
  test_pipeline_records();
  test_validate();
  test_run_all();
  test_random_dag_layout();
  test_lplan_exhaustive();
  test_layout_exhaustive();
  WQ_TEST_END();
}
