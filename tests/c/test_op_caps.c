/* The op registry's capability records (ops/op.h): ids and the sorted
 * table behind the binary-search lookup, the references between ops
 * (int8_as, nhwc), and wq_op_int8_check's answers (reason codes, the op a
 * node runs as) on small graphs, without the graph changing. */
#include <string.h>

#include "graph_build.h"
#include "passes/lower.h"
#include "passes/partition.h"
#include "wq_test.h"

static int key_cmp(const wq_op *a, const wq_op *b) {
  int c = strcmp(a->domain, b->domain);
  return c ? c : strcmp(a->op_type, b->op_type);
}

static void test_registry_sorted(void) {
  CHECK(wq_op_count() == WQ_OPID_COUNT - 1);
  CHECK(wq_op_by_id(WQ_OPID_NONE) == NULL);
  CHECK(wq_op_by_id(WQ_OPID_COUNT) == NULL);
  CHECK(wq_op_id_of(NULL) == WQ_OPID_NONE);
  for (int i = 0; i < wq_op_count(); i++) {
    const wq_op *op = wq_op_at(i);
    CHECK(op != NULL && op == wq_op_by_id(i + 1));
    CHECK(strcmp(op->domain, "ai.onnx") != 0); /* the default domain is spelled "" */
    /* strictly increasing (domain, op_type): the binary search's order */
    CHECK_MSG(i == 0 || key_cmp(wq_op_at(i - 1), op) < 0, "ops.inc out of order at %s.%s",
              op->domain, op->op_type);
    CHECK_MSG(wq_op_find(op->domain, op->op_type) == op, "%s.%s not found", op->domain,
              op->op_type);
    CHECK(wq_op_id_of(op) == i + 1);
  }
  CHECK(wq_op_find("ai.onnx", "Conv") == wq_op_by_id(WQ_OPID(conv)));
  CHECK(wq_op_find(NULL, "Conv") == wq_op_by_id(WQ_OPID(conv)));
  CHECK(wq_op_find("", "Conv")->int8 == WQ_INT8_CONV);
  CHECK(wq_op_find("wasmq", "QConv") == wq_op_by_id(WQ_OPID(int8_conv)));
  CHECK(wq_op_find("", "QConv") == NULL);
  CHECK(wq_op_find("", "Aaa") == NULL && wq_op_find("", "Zzz") == NULL);
  CHECK(wq_op_find("zzz", "Conv") == NULL);
}

static void test_capability_records(void) {
  for (int i = 0; i < wq_op_count(); i++) {
    const wq_op *op = wq_op_at(i);
    CHECK(op->int8 < WQ_INT8_KIND_COUNT && op->layout < WQ_LCAP_COUNT);
    CHECK(op->quant_role <= WQ_QROLE_SHARED);
    if (op->int8_as != WQ_OPID_NONE) {
      const wq_op *as = wq_op_by_id(op->int8_as);
      /* a wasmq kernel, or an op that runs on codes (Softmax -> QLinearSoftmax) */
      CHECK_MSG(as && ((strcmp(as->domain, "wasmq") == 0 && as->int8 == WQ_INT8_KERNEL) ||
                       (as->flags & WQ_OP_FLAG_INT8)),
                "%s", op->op_type);
    }
    /* one op per kernel family: no op is a layout variant of another */
    size_t len = strlen(op->op_type);
    CHECK_MSG(len < 4 || strcmp(op->op_type + len - 4, "NHWC") != 0 ||
                  strcmp(op->op_type, "ToNHWC") == 0,
              "%s", op->op_type);
    /* wasmq's own ops are int8 already (kernels, transitions) */
    if (strcmp(op->domain, "wasmq") == 0)
      CHECK_MSG(op->int8 == WQ_INT8_KERNEL || op->int8 == WQ_INT8_QUANTIZE ||
                    op->int8 == WQ_INT8_DEQUANTIZE,
                "%s", op->op_type);
    /* kinds the lowering rewrites name their target op (lower_rewrite_node takes it) */
    if (op->int8 == WQ_INT8_CONV || op->int8 == WQ_INT8_GEMM || op->int8 == WQ_INT8_QLINEAR ||
        op->int8 == WQ_INT8_INTEGER || op->int8 == WQ_INT8_BINARY || op->int8 == WQ_INT8_POOL ||
        op->int8 == WQ_INT8_REDUCE || op->int8 == WQ_INT8_LOOKUP)
      CHECK_MSG(op->int8_as != WQ_OPID_NONE, "%s has no int8_as", op->op_type);
    /* a quantizer role needs an int8 form */
    if (op->quant_role != WQ_QROLE_NONE)
      CHECK_MSG(op->int8 != WQ_INT8_NONE, "%s", op->op_type);
  }
  CHECK(strcmp(wq_int8_kind_name(WQ_INT8_MOVE), "move") == 0);
  CHECK(strcmp(wq_int8_kind_name(WQ_INT8_KIND_COUNT), "none") == 0);
  CHECK(strcmp(wq_layout_cap_name(WQ_LCAP_AGNOSTIC_ALL), "agnostic-all") == 0);
  /* the kernel families that take channels-last tensors themselves */
  CHECK(wq_op_by_id(WQ_OPID(int8_conv))->layout == WQ_LCAP_NHWC_KERNEL);
  CHECK(wq_op_by_id(WQ_OPID(max_pool))->layout == WQ_LCAP_NHWC_KERNEL);
  CHECK(wq_op_by_id(WQ_OPID(resize))->layout == WQ_LCAP_FOLLOW);
  CHECK(wq_op_find("wasmq", "QConvNHWC") == NULL && wq_op_find("wasmq", "MaxPoolNHWC") == NULL);
}

#define S(name, v)                                                                                 \
  { name, 0, NULL, 0, v, 0.0f, false }

static void test_checks(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  int64_t d4[4] = {1, 4, 8, 8}, d1[1] = {1}, d3[1] = {3};
  int x = add_tensor(g, "x", WQ_DT_FLOAT, 4, d4, NULL);
  int x2 = add_tensor(g, "x2", WQ_DT_FLOAT, 4, d4, NULL);
  float *half = malloc(sizeof(float));
  *half = 0.5f;
  int c1 = add_tensor(g, "half", WQ_DT_FLOAT, 1, d1, half);
  float *three = calloc(3, sizeof(float));
  int c3 = add_tensor(g, "three", WQ_DT_FLOAT, 1, d3, three);
  float *scales_data = malloc(4 * sizeof(float));
  for (int k = 0; k < 4; k++)
    scales_data[k] = k < 2 ? 1.0f : 2.0f;
  int64_t d4s[1] = {4};
  int scales = add_tensor(g, "scales", WQ_DT_FLOAT, 1, d4s, scales_data);
  int y[12];
  for (int k = 0; k < 12; k++) {
    char name[16];
    snprintf(name, sizeof name, "y%d", k);
    y[k] = add_tensor(g, name, WQ_DT_FLOAT, 4, d4, NULL);
  }
  int in_x[2] = {x, c1}, in_xx[2] = {x, x2}, in_c3[2] = {x, c3}, in_rs[3] = {x, -1, scales};
  int sig = add_node(g, "", "Sigmoid", &x, 1, y[0], NULL, 13, &err);
  int mul_c = add_node(g, "", "Mul", in_x, 2, y[1], NULL, 13, &err);
  int sub_v = add_node(g, "", "Sub", in_xx, 2, y[2], NULL, 13, &err);
  int div_c3 = add_node(g, "", "Div", in_c3, 2, y[3], NULL, 13, &err);
  int pow_n = add_node(g, "", "Pow", in_xx, 2, y[4], NULL, 13, &err);
  attr_spec cubic[] = {S("mode", "cubic"), AEND};
  int rs_lin = add_node(g, "", "Resize", in_rs, 3, y[5], cubic, 13, &err);
  attr_spec nearest[] = {S("mode", "nearest"), AEND};
  int rs_near = add_node(g, "", "Resize", in_rs, 3, y[6], nearest, 13, &err);
  attr_spec crop[] = {S("mode", "nearest"),
                      S("coordinate_transformation_mode", "tf_crop_and_resize"), AEND};
  int rs_crop = add_node(g, "", "Resize", in_rs, 3, y[7], crop, 13, &err);
  int64_t k2[2] = {2, 2};
  attr_spec pool[] = {AL("kernel_shape", k2, 2), AEND};
  int mp = add_node(g, "", "MaxPool", &x, 1, y[8], pool, 12, &err);
  int sub_c = add_node(g, "", "Sub", in_x, 2, y[9], NULL, 13, &err);
  int add_v = add_node(g, "", "Add", in_xx, 2, y[10], NULL, 13, &err);
  CHECK(sig >= 0 && mul_c >= 0 && sub_v >= 0 && div_c3 >= 0 && pow_n >= 0 && rs_lin >= 0 &&
        rs_near >= 0 && rs_crop >= 0 && mp >= 0 && sub_c >= 0 && add_v >= 0);
  if (mp < 0) {
    wq_graph_free(g);
    return;
  }
  /* MaxPool with an Indices output somebody reads. */
  wq_node *mpn = &g->nodes[mp];
  mpn->outputs = realloc(mpn->outputs, 2 * sizeof(int));
  mpn->outputs[1] = y[11];
  mpn->n_outputs = 2;
  g->tensors[y[11]].is_output = true;

  const int nodes_before = g->n_nodes, tensors_before = g->n_tensors;
  struct {
    int node, reason;
    const char *as;
  } want[] = {
      {sig, WQ_REASON_INT8, "QLookup"},
      {mul_c, WQ_REASON_INT8, "QMul"}, /* binary kind: the lowering picks QMul or a lookup */
      {sub_v, WQ_REASON_UNSUPPORTED_OP, NULL},
      {div_c3, WQ_REASON_UNSUPPORTED_ATTR, NULL},
      {pow_n, WQ_REASON_UNSUPPORTED_OP, NULL},
      {rs_lin, WQ_REASON_UNSUPPORTED_ATTR, NULL},
      {rs_near, WQ_REASON_INT8, "Resize"}, /* data movement: runs as itself on codes */
      {rs_crop, WQ_REASON_UNSUPPORTED_ATTR, NULL},
      {mp, WQ_REASON_UNSUPPORTED_ATTR, NULL},
      {sub_c, WQ_REASON_INT8, "QLookup"},
      {add_v, WQ_REASON_INT8, "QAdd"},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    wq_int8_answer a;
    int r = wq_op_int8_check(g, &g->nodes[want[k].node], &a);
    CHECK_MSG(r == want[k].reason && a.reason == r, "%s: %s, want %s (%s)",
              g->nodes[want[k].node].name, wq_reason_name(r), wq_reason_name(want[k].reason),
              a.detail);
    if (want[k].as)
      CHECK_MSG(a.as && strcmp(a.as, want[k].as) == 0, "%s as %s", g->nodes[want[k].node].name,
                a.as ? a.as : "(null)");
    else
      CHECK(a.detail[0] != '\0');
  }
  /* unread Indices: back to int8 */
  g->tensors[y[11]].is_output = false;
  wq_int8_answer a;
  CHECK(wq_op_int8_check(g, &g->nodes[mp], &a) == WQ_REASON_INT8);
  CHECK(g->n_nodes == nodes_before && g->n_tensors == tensors_before);
  wq_graph_free(g);
}

/* DequantizeLinear -> Relu [-> Pow(relu, x)] -> QuantizeLinear; *p gets the
 * Pow (or -1). */
static wq_graph *relu_graph(bool with_pow, int *p) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  int64_t d4[4] = {1, 4, 8, 8}, d0[1] = {1};
  float *scale = malloc(sizeof(float));
  *scale = 0.1f;
  int8_t *zp = calloc(1, 1);
  int xq = add_tensor(g, "xq", WQ_DT_INT8, 4, d4, NULL);
  g->tensors[xq].is_input = true;
  int s = add_tensor(g, "s", WQ_DT_FLOAT, 0, d0, scale);
  int z = add_tensor(g, "z", WQ_DT_INT8, 0, d0, zp);
  int x = add_tensor(g, "x", WQ_DT_FLOAT, 4, d4, NULL);
  int r = add_tensor(g, "r", WQ_DT_FLOAT, 4, d4, NULL);
  int y = add_tensor(g, "y", WQ_DT_FLOAT, 4, d4, NULL);
  int yq = add_tensor(g, "yq", WQ_DT_INT8, 4, d4, NULL);
  g->tensors[yq].is_output = true;
  int dq_in[3] = {xq, s, z}, q_in[3] = {with_pow ? y : r, s, z}, pow_in[2] = {r, x};
  add_node(g, "", "DequantizeLinear", dq_in, 3, x, NULL, 13, &err);
  add_node(g, "", "Relu", &x, 1, r, NULL, 13, &err);
  *p = with_pow ? add_node(g, "", "Pow", pow_in, 2, y, NULL, 13, &err) : -1;
  add_node(g, "", "QuantizeLinear", q_in, 3, yq, NULL, 13, &err);
  return g;
}

/* int mode asks the lowering's check (the lowering's own matching, on a
 * shadow) before anything is rewritten: it fails on the first node on the
 * quantized path that would stay float, neighbour conditions included, and
 * the graph is the same after the check. */
static void test_int_mode_check(void) {
  wq_error err;
  int p;
  wq_graph *g = relu_graph(true, &p);
  CHECK(p == 2 && g->n_nodes == 4);
  wq_error_clear(&err);
  /* Relu's own check says yes (a lookup); its result feeds Pow, not a
   * QuantizeLinear: OUTPUT_NOT_QUANTIZED, found before any rewrite. */
  CHECK(wq_lower_check(g, NULL, true, NULL, &err) == WQ_ERR_UNSUPPORTED);
  CHECK(strcmp(err.node, g->nodes[1].name) == 0);
  CHECK_MSG(strstr(err.message, "[OUTPUT_NOT_QUANTIZED]") != NULL, "%s", err.message);
  CHECK_MSG(strstr(err.message, "feeds Pow") != NULL, "%s", err.message);
  CHECK(g->n_nodes == 4 && strcmp(g->nodes[p].op_type, "Pow") == 0 && g->nodes[p].inputs[0] == 4);
  CHECK(strcmp(g->nodes[1].op_type, "Relu") == 0 && g->nodes[1].outputs[0] == 4);
  for (int i = 0; i < g->n_nodes; i++)
    CHECK(g->nodes[i].rec.reason == WQ_REASON_NONE && wq_lower_why(&g->nodes[i]) == NULL);
  for (int t = 0; t < g->n_tensors; t++)
    CHECK(g->tensors[t].qparams == NULL);
  wq_graph_free(g);
  /* Relu alone on the path: int8 as a lookup that absorbs the Q */
  g = relu_graph(false, &p);
  wq_lower_answer *ans = NULL;
  CHECK(wq_lower_check(g, NULL, true, &ans, &err) == WQ_OK);
  CHECK(ans && ans[1].reason == WQ_REASON_INT8 && ans[1].as == WQ_OPID(int8_lookup));
  /* the Q is absorbed; the DQ nobody reads any more goes too */
  CHECK(ans && ans[2].absorbed && ans[0].absorbed && ans[0].reason == WQ_REASON_NONE);
  CHECK(g->n_nodes == 3 && strcmp(g->nodes[1].op_type, "Relu") == 0);
  wq_lower_answers_free(ans, g->n_nodes);
  wq_graph_free(g);
}

/* A QDQ conv whose lowering fails on one neighbour condition:
 * [xf -> QuantizeLinear ->] xq -> DequantizeLinear -> Conv(W = DQ(wq)[, b])
 * -> c [-> QuantizeLinear -> yq]. */
typedef enum {
  CASE_OUTPUT_FLOAT,  /* c is a graph output: OUTPUT_NOT_QUANTIZED */
  CASE_TWO_READERS,   /* c feeds the Q and a Relu: OUTPUT_NOT_QUANTIZED */
  CASE_READ_MISMATCH, /* xq written with scale 0.1, read with 0.2: QPARAMS_MISMATCH */
  CASE_PER_CHANNEL_X, /* x dequantized per channel: PER_CHANNEL_ACTIVATION */
  CASE_WEIGHT_AXIS1,  /* W per channel along its input axis: NO_QPARAMS */
  CASE_WEIGHT_INPUT,  /* W dequantizes a graph input: NOT_CONSTANT */
  CASE_FLOAT_INPUT,   /* the conv reads a float graph input: INPUT_NOT_QUANTIZED */
  CASE_BIAS_SHAPE,    /* bias [2, 2]: UNSUPPORTED_ATTR */
  CASE_COUNT
} conv_case;

static const char *const CASE_CODE[CASE_COUNT] = {
    "[OUTPUT_NOT_QUANTIZED]",   "[OUTPUT_NOT_QUANTIZED]", "[QPARAMS_MISMATCH]",
    "[PER_CHANNEL_ACTIVATION]", "[NO_QPARAMS]",           "[NOT_CONSTANT]",
    "[INPUT_NOT_QUANTIZED]",    "[UNSUPPORTED_ATTR]"};

static float *floats(int n, float v) {
  float *f = malloc((size_t)n * sizeof *f);
  for (int i = 0; i < n; i++)
    f[i] = v + 0.01f * (float)i;
  return f;
}

static wq_graph *conv_case_graph(conv_case k, int *conv) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  int64_t d4[4] = {1, 4, 8, 8}, dw[4] = {4, 4, 1, 1}, d0[1] = {1}, d1[1] = {4}, d22[2] = {2, 2};
  int8_t *wdata = malloc(16);
  for (int i = 0; i < 16; i++)
    wdata[i] = (int8_t)(i - 8);
  int xq = add_tensor(g, "xq", WQ_DT_INT8, 4, d4, NULL);
  int sx = add_tensor(g, "sx", WQ_DT_FLOAT, 0, d0, floats(1, 0.2f));
  int sx_c = add_tensor(g, "sx_c", WQ_DT_FLOAT, 1, d1, floats(4, 0.2f));
  int z = add_tensor(g, "z", WQ_DT_INT8, 0, d0, calloc(1, 1));
  int z_c = add_tensor(g, "z_c", WQ_DT_INT8, 1, d1, calloc(4, 1));
  int wq = add_tensor(g, "wq", WQ_DT_INT8, 4, dw, k == CASE_WEIGHT_INPUT ? NULL : wdata);
  if (k == CASE_WEIGHT_INPUT) {
    free(wdata);
    g->tensors[wq].is_input = true;
  }
  int sw = add_tensor(g, "sw", WQ_DT_FLOAT, 1, d1, floats(4, 0.05f));
  int x = add_tensor(g, "x", WQ_DT_FLOAT, 4, d4, NULL);
  int w = add_tensor(g, "w", WQ_DT_FLOAT, 4, dw, NULL);
  int c = add_tensor(g, "c", WQ_DT_FLOAT, 4, d4, NULL);
  int yq = add_tensor(g, "yq", WQ_DT_INT8, 4, d4, NULL);
  int sy = add_tensor(g, "sy", WQ_DT_FLOAT, 0, d0, floats(1, 0.3f));
  g->tensors[yq].is_output = true;
  if (k == CASE_READ_MISMATCH) {
    int xf = add_tensor(g, "xf", WQ_DT_FLOAT, 4, d4, NULL);
    int s_written = add_tensor(g, "s_written", WQ_DT_FLOAT, 0, d0, floats(1, 0.1f));
    g->tensors[xf].is_input = true;
    int q_in[3] = {xf, s_written, z};
    add_node(g, "", "QuantizeLinear", q_in, 3, xq, NULL, 13, &err);
  } else {
    g->tensors[xq].is_input = true;
  }
  int dq_x[3] = {xq, k == CASE_PER_CHANNEL_X ? sx_c : sx, k == CASE_PER_CHANNEL_X ? z_c : z};
  attr_spec axis1[] = {AI("axis", 1), AEND}, axis0[] = {AI("axis", 0), AEND};
  if (k == CASE_FLOAT_INPUT) {
    g->tensors[x].is_input = true;
    g->tensors[xq].is_input = false;
  } else {
    add_node(g, "", "DequantizeLinear", dq_x, 3, x, axis1, 13, &err);
  }
  int dq_w[3] = {wq, sw, z_c};
  add_node(g, "", "DequantizeLinear", dq_w, 3, w, k == CASE_WEIGHT_AXIS1 ? axis1 : axis0, 13, &err);
  int conv_in[3] = {x, w, -1};
  if (k == CASE_BIAS_SHAPE)
    conv_in[2] = add_tensor(g, "b", WQ_DT_FLOAT, 2, d22, floats(4, 0.5f));
  *conv = add_node(g, "", "Conv", conv_in, k == CASE_BIAS_SHAPE ? 3 : 2, c, NULL, 13, &err);
  if (k == CASE_OUTPUT_FLOAT) {
    g->tensors[c].is_output = true;
    g->tensors[yq].is_output = false;
    return g;
  }
  int q_out[3] = {c, sy, z};
  add_node(g, "", "QuantizeLinear", q_out, 3, yq, NULL, 13, &err);
  if (k == CASE_TWO_READERS) {
    int r = add_tensor(g, "r", WQ_DT_FLOAT, 4, d4, NULL);
    g->tensors[r].is_output = true;
    add_node(g, "", "Relu", &c, 1, r, NULL, 13, &err);
  }
  return g;
}

/* Everything the lowering could change: nodes (op, inputs, outputs,
 * attributes, code) and tensors (count, qparams). */
static char *graph_snapshot(const wq_graph *g) {
  size_t cap = 16384, len = 0;
  char *s = malloc(cap);
  len += (size_t)snprintf(s + len, cap - len, "%d nodes %d tensors;", g->n_nodes, g->n_tensors);
  for (int i = 0; i < g->n_nodes && len < cap - 256; i++) {
    const wq_node *n = &g->nodes[i];
    len += (size_t)snprintf(s + len, cap - len, "%s %s %p %d attrs r%d:", n->name, n->op_type,
                            (const void *)n->op, n->n_attrs, n->rec.reason);
    for (int k = 0; k < n->n_inputs; k++)
      len += (size_t)snprintf(s + len, cap - len, " %d", n->inputs[k]);
    len += (size_t)snprintf(s + len, cap - len, " ->");
    for (int k = 0; k < n->n_outputs; k++)
      len += (size_t)snprintf(s + len, cap - len, " %d", n->outputs[k]);
    len += (size_t)snprintf(s + len, cap - len, ";");
  }
  for (int t = 0; t < g->n_tensors && len < cap - 64; t++)
    len += (size_t)snprintf(s + len, cap - len, "%s%s;", g->tensors[t].name,
                            g->tensors[t].qparams ? " qp" : "");
  return s;
}

/* int mode fails before any rewrite for each neighbour-dependent reason:
 * the check names the conv and the code, the graph is byte for byte what it
 * was, and the lowering then leaves the conv float with the same code and
 * note (the partition pass's int-mode error after it is the same text). */
static void test_int_mode_neighbour_reasons(void) {
  for (int k = 0; k < CASE_COUNT; k++) {
    int conv = -1;
    wq_graph *g = conv_case_graph((conv_case)k, &conv);
    CHECK_MSG(conv >= 0, "case %d: the conv did not prepare", k);
    if (conv < 0) {
      wq_graph_free(g);
      continue;
    }
    char *conv_name = wq_strdup(g->nodes[conv].name);
    char *before = graph_snapshot(g);
    wq_error err, after_err;
    wq_error_clear(&err);
    wq_error_clear(&after_err);
    wq_lower_answer *ans = NULL;
    CHECK_MSG(wq_lower_check(g, NULL, true, &ans, &err) == WQ_ERR_UNSUPPORTED, "case %d", k);
    char *after = graph_snapshot(g);
    CHECK_MSG(strcmp(before, after) == 0, "case %d: the check changed the graph", k);
    CHECK_MSG(strcmp(err.node, conv_name) == 0, "case %d: %s", k, err.message);
    CHECK_MSG(strstr(err.message, CASE_CODE[k]) != NULL, "case %d: %s", k, err.message);
    CHECK(ans && ans[conv].reason != WQ_REASON_INT8 && !ans[conv].absorbed && ans[conv].as == -1);
    printf("int mode, before any rewrite: %s\n", err.message);
    /* The lowering itself: the conv stays float with the answered code and
     * note; strict partitioning after it says the same. */
    const int n_nodes = g->n_nodes;
    CHECK(wq_pass_lower(g, NULL, NULL, &after_err) == WQ_OK);
    CHECK(ans && wq_lower_answers_verify(g, ans, n_nodes, &after_err) == WQ_OK);
    CHECK(wq_pass_partition(g, WQ_PARTITION_INT, NULL, &after_err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strcmp(after_err.message, err.message) == 0, "case %d: %s vs %s", k,
              after_err.message, err.message);
    wq_lower_answers_free(ans, n_nodes);
    free(before), free(after), free(conv_name);
    wq_graph_free(g);
  }
}

/* A tampered answer is caught by the verification, naming the node. */
static void test_verify_catches_divergence(void) {
  int conv;
  wq_graph *g = conv_case_graph(CASE_OUTPUT_FLOAT, &conv);
  wq_error err;
  wq_lower_answer *ans = NULL;
  CHECK(wq_lower_check(g, NULL, false, &ans, &err) == WQ_OK);
  const int n_nodes = g->n_nodes;
  CHECK(wq_pass_lower(g, NULL, NULL, &err) == WQ_OK);
  CHECK(ans && wq_lower_answers_verify(g, ans, n_nodes, &err) == WQ_OK);
  if (ans) {
    ans[conv].reason = WQ_REASON_QPARAMS_MISMATCH;
    CHECK(wq_lower_answers_verify(g, ans, n_nodes, &err) == WQ_ERR_INVALID_MODEL);
    CHECK(strcmp(err.node, ans[conv].name) == 0 && strstr(err.message, "different reason code"));
  }
  wq_lower_answers_free(ans, n_nodes);
  wq_graph_free(g);
}

int main(void) {
  test_registry_sorted();
  test_capability_records();
  test_checks();
  test_int_mode_check();
  test_int_mode_neighbour_reasons();
  test_verify_catches_divergence();
  WQ_TEST_END();
}
