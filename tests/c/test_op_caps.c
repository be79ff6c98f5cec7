/* The op registry's capability records (ops/op.h): ids and the sorted
 * table behind the binary-search lookup, the references between ops
 * (int8_as, nhwc), and wq_op_int8_check's answers (reason codes, the op a
 * node runs as) on small graphs, without the graph changing. */
#include <string.h>

#include "graph_build.h"
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
      CHECK_MSG(as && strcmp(as->domain, "wasmq") == 0 && as->int8 == WQ_INT8_KERNEL, "%s",
                op->op_type);
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
  attr_spec linear[] = {S("mode", "linear"), AEND};
  int rs_lin = add_node(g, "", "Resize", in_rs, 3, y[5], linear, 13, &err);
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

/* int mode decides from the capability records before the lowering rewrites
 * anything: the graph is the same after the check. */
static void test_int_mode_check(void) {
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
  int dq_in[3] = {xq, s, z}, q_in[3] = {y, s, z}, pow_in[2] = {r, x};
  add_node(g, "", "DequantizeLinear", dq_in, 3, x, NULL, 13, &err);
  add_node(g, "", "Relu", &x, 1, r, NULL, 13, &err);
  int p = add_node(g, "", "Pow", pow_in, 2, y, NULL, 13, &err);
  add_node(g, "", "QuantizeLinear", q_in, 3, yq, NULL, 13, &err);
  CHECK(p == 2 && g->n_nodes == 4);
  wq_error_clear(&err);
  CHECK(wq_partition_check_int(g, &err) == WQ_ERR_UNSUPPORTED);
  CHECK(strcmp(err.node, g->nodes[p].name) == 0);
  CHECK_MSG(strstr(err.message, "[UNSUPPORTED_OP]") != NULL, "%s", err.message);
  CHECK(g->n_nodes == 4 && strcmp(g->nodes[p].op_type, "Pow") == 0 && g->nodes[p].inputs[0] == r);
  CHECK(g->nodes[0].reason == WQ_REASON_NONE && g->nodes[p].reason == WQ_REASON_NONE);
  /* Relu alone on the path: int8 as a lookup, the check passes */
  g->nodes[p].op = wq_op_find("", "Add");
  CHECK(wq_partition_check_int(g, &err) == WQ_OK);
  g->nodes[p].op = wq_op_find("", "Pow");
  wq_graph_free(g);
}

int main(void) {
  test_registry_sorted();
  test_capability_records();
  test_checks();
  test_int_mode_check();
  WQ_TEST_END();
}
