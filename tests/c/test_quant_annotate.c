/* Annotation (quant/annotate.h) on hand-built float graphs: decisions,
 * absorbed clamps and bias Adds, shared-spec clusters, weight axes, and the
 * reasons nodes stay float. */
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "quant/annotate.h"
#include "quant/quant_config.h"
#include "wq_test.h"

static float *zeros(int64_t n) { return calloc((size_t)n, sizeof(float)); }

static int act(wq_graph *g, const char *name, int rank, const int64_t *dims) {
  return add_tensor(g, name, WQ_DT_FLOAT, rank, dims, NULL);
}

/* x -> conv1 -> relu -> maxpool -> reshape -> concat(second input) -> conv2 -> y */
static void test_conv_chain_with_shared_cluster(void) {
  wq_error err;
  wq_graph *g = wq_graph_new();
  int64_t d8[4] = {1, 4, 8, 8}, d4[4] = {1, 4, 4, 4}, dw[4] = {4, 4, 3, 3}, db[1] = {4};
  int64_t dshape[1] = {4}, dcat[4] = {1, 8, 4, 4}, dw2[4] = {2, 8, 1, 1}, dy[4] = {1, 2, 4, 4};
  int x = act(g, "x", 4, d8);
  int w1 = add_tensor(g, "w1", WQ_DT_FLOAT, 4, dw, zeros(144));
  int b1 = add_tensor(g, "b1", WQ_DT_FLOAT, 1, db, zeros(4));
  int c1 = act(g, "c1", 4, d8), r1 = act(g, "r1", 4, d8), p1 = act(g, "p1", 4, d4);
  int64_t *shape = malloc(4 * sizeof *shape);
  memcpy(shape, d4, sizeof d4);
  int sh = add_tensor(g, "shape", WQ_DT_INT64, 1, dshape, shape);
  int rs = act(g, "rs", 4, d4), x2 = act(g, "x2", 4, d4), cat = act(g, "cat", 4, dcat);
  int w2 = add_tensor(g, "w2", WQ_DT_FLOAT, 4, dw2, zeros(16));
  int y = act(g, "y", 4, dy);
  g->tensors[x].is_input = g->tensors[x2].is_input = true;
  g->tensors[y].is_output = true;
  static const int64_t pads[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
  const attr_spec conv_attrs[] = {AL("pads", pads, 4), AEND};
  const attr_spec pool_attrs[] = {AL("kernel_shape", k2, 2), AL("strides", k2, 2), AEND};
  const attr_spec cat_attrs[] = {AI("axis", 1), AEND};
  int n_conv1 = add_node(g, "", "Conv", (int[]){x, w1, b1}, 3, c1, conv_attrs, 13, &err);
  int n_relu = add_node(g, "", "Relu", (int[]){c1}, 1, r1, NULL, 13, &err);
  int n_pool = add_node(g, "", "MaxPool", (int[]){r1}, 1, p1, pool_attrs, 13, &err);
  int n_reshape = add_node(g, "", "Reshape", (int[]){p1, sh}, 2, rs, NULL, 13, &err);
  int n_cat = add_node(g, "", "Concat", (int[]){rs, x2}, 2, cat, cat_attrs, 13, &err);
  int n_conv2 = add_node(g, "", "Conv", (int[]){cat, w2}, 2, y, NULL, 13, &err);

  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_annotation a;
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_conv1].decision == WQ_ANN_QUANTIZED && a.nodes[n_conv1].role == WQ_QROLE_LINEAR);
  CHECK(a.nodes[n_conv1].bias == b1);
  CHECK(a.nodes[n_relu].decision == WQ_ANN_ABSORBED && a.nodes[n_relu].linear == n_conv1);
  CHECK(a.nodes[n_pool].decision == WQ_ANN_QUANTIZED && a.nodes[n_pool].role == WQ_QROLE_SHARED);
  CHECK(a.nodes[n_reshape].decision == WQ_ANN_QUANTIZED);
  CHECK(a.nodes[n_cat].decision == WQ_ANN_QUANTIZED);
  CHECK(a.nodes[n_conv2].decision == WQ_ANN_QUANTIZED);
  /* No Q/DQ between the conv and its fused Relu. */
  CHECK(a.tensors[c1].kind == WQ_ANN_T_NONE);
  CHECK(a.tensors[r1].kind == WQ_ANN_T_ACTIVATION);
  /* One cluster from the Relu's output through MaxPool, Reshape and Concat,
   * including the second graph input; the conv output after it has its own. */
  int root = a.tensors[r1].cluster;
  CHECK(a.tensors[p1].cluster == root && a.tensors[rs].cluster == root);
  CHECK(a.tensors[x2].cluster == root && a.tensors[cat].cluster == root);
  CHECK(a.tensors[x2].kind == WQ_ANN_T_ACTIVATION);
  CHECK(a.tensors[y].kind == WQ_ANN_T_ACTIVATION && a.tensors[y].cluster == y);
  CHECK(a.tensors[x].kind == WQ_ANN_T_ACTIVATION && a.tensors[x].cluster == x);
  CHECK(a.tensors[w1].kind == WQ_ANN_T_WEIGHT && a.tensors[w1].weight_axis == 0);
  CHECK(a.tensors[w1].spec->symmetric && a.tensors[w1].spec->qmin == -127);
  CHECK(a.tensors[b1].kind == WQ_ANN_T_NONE); /* the bias is written per linear */
  CHECK(a.tensors[sh].kind == WQ_ANN_T_NONE); /* integer shape stays as it is */
  wq_annotation_free(&a);

  /* Excluding the Concat by name: it stays float, the rest stays int8. */
  const char *exclude = "{\"exclude\": [\"Concat_5\"]}";
  CHECK(wq_quant_config_parse_json(&cfg, exclude, strlen(exclude), &err) == WQ_OK);
  CHECK_MSG(strcmp(g->nodes[n_cat].name, "Concat_5") == 0, "%s", g->nodes[n_cat].name);
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_cat].decision == WQ_ANN_FLOAT);
  CHECK(strstr(a.nodes[n_cat].reason, "config") != NULL);
  CHECK(a.nodes[n_conv2].decision == WQ_ANN_QUANTIZED);
  CHECK(a.tensors[cat].kind ==
        WQ_ANN_T_ACTIVATION); /* the conv's input: Q/DQ after the float Concat */
  CHECK(a.tensors[cat].cluster != a.tensors[rs].cluster);
  wq_annotation_free(&a);

  /* keep_float (sensitivity) forces the first conv float: its Relu then
   * runs as its own int8 lookup, reading a quantized conv output. */
  bool keep[8] = {false};
  keep[n_conv1] = true;
  wq_quant_config_free(&cfg);
  wq_quant_config_default(&cfg);
  CHECK(wq_annotate(g, &cfg, NULL, keep, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_conv1].decision == WQ_ANN_FLOAT);
  CHECK(a.nodes[n_relu].decision == WQ_ANN_QUANTIZED && a.nodes[n_relu].role == WQ_QROLE_CLAMP);
  CHECK(a.tensors[c1].kind == WQ_ANN_T_ACTIVATION);
  CHECK(a.tensors[w1].kind == WQ_ANN_T_NONE);
  wq_annotation_free(&a);
  wq_quant_config_free(&cfg);
  wq_graph_free(g);
}

/* MatMul -> Add(constant bias) is one linear; Resize linear, Sub of two
 * activations and a MatMul of two activations stay float with reasons. */
static void test_linear_bias_and_float_reasons(void) {
  wq_error err;
  wq_graph *g = wq_graph_new();
  int64_t dx[2] = {2, 8}, dw[2] = {8, 3}, db[1] = {3}, dy[2] = {2, 3};
  int x = act(g, "x", 2, dx);
  int w = add_tensor(g, "w", WQ_DT_FLOAT, 2, dw, zeros(24));
  int b = add_tensor(g, "b", WQ_DT_FLOAT, 1, db, zeros(3));
  int m = act(g, "m", 2, dy), y = act(g, "y", 2, dy), z = act(g, "z", 2, dy);
  int mm = act(g, "mm", 2, (int64_t[]){2, 2});
  g->tensors[x].is_input = true;
  g->tensors[z].is_output = g->tensors[mm].is_output = true;
  int n_mm = add_node(g, "", "MatMul", (int[]){x, w}, 2, m, NULL, 13, &err);
  int n_add = add_node(g, "", "Add", (int[]){m, b}, 2, y, NULL, 13, &err);
  int n_sub = add_node(g, "", "Sub", (int[]){y, y}, 2, z, NULL, 13, &err);
  int n_mm2 = add_node(g, "", "MatMul", (int[]){y, y}, 2, mm, NULL, 13, &err);
  g->tensors[mm].dims[1] = 2;
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_annotation a;
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_mm].decision == WQ_ANN_QUANTIZED);
  CHECK(a.nodes[n_add].decision == WQ_ANN_ABSORBED && a.nodes[n_add].linear == n_mm);
  CHECK(a.nodes[n_mm].bias == b && a.nodes[n_mm].bias_node == n_add);
  CHECK(a.tensors[w].kind == WQ_ANN_T_WEIGHT && a.tensors[w].weight_axis == 1);
  CHECK(a.tensors[m].kind == WQ_ANN_T_NONE);
  CHECK(a.tensors[y].kind == WQ_ANN_T_ACTIVATION);
  CHECK(a.nodes[n_sub].decision == WQ_ANN_FLOAT);
  /* the registry's capability check: a lookup needs one varying operand */
  CHECK_MSG(a.nodes[n_sub].code == WQ_REASON_UNSUPPORTED_OP, "%s", a.nodes[n_sub].reason);
  CHECK(a.nodes[n_mm2].decision == WQ_ANN_FLOAT);
  CHECK_MSG(strstr(a.nodes[n_mm2].reason, "not a float constant") != NULL, "%s",
            a.nodes[n_mm2].reason);
  CHECK(a.tensors[z].kind == WQ_ANN_T_NONE);
  wq_annotation_free(&a);
  wq_quant_config_free(&cfg);
  wq_graph_free(g);
}

static void test_resize_modes_and_quantized_models(void) {
  wq_error err;
  wq_graph *g = wq_graph_new();
  int64_t dx[4] = {1, 2, 4, 4}, dy[4] = {1, 2, 8, 8}, ds[1] = {4}, dw[4] = {2, 2, 1, 1};
  int x = act(g, "x", 4, dx), y = act(g, "y", 4, dy), y2 = act(g, "y2", 4, dy);
  int w = add_tensor(g, "w", WQ_DT_FLOAT, 4, dw, zeros(4));
  int z = act(g, "z", 4, dy);
  float *scales = malloc(4 * sizeof *scales);
  scales[0] = scales[1] = 1.0f;
  scales[2] = scales[3] = 2.0f;
  int s = add_tensor(g, "scales", WQ_DT_FLOAT, 1, ds, scales);
  g->tensors[x].is_input = true;
  g->tensors[z].is_output = g->tensors[y2].is_output = true;
  /* cubic stays float (linear runs on codes like nearest) */
  const attr_spec linear_mode[] = {{"mode", 0, NULL, 0, "cubic", 0.0f, false}, AEND};
  int n_near = add_node(g, "", "Resize", (int[]){x, -1, s}, 3, y, NULL, 13, &err);
  int n_lin = add_node(g, "", "Resize", (int[]){x, -1, s}, 3, y2, linear_mode, 13, &err);
  int n_conv = add_node(g, "", "Conv", (int[]){y, w}, 2, z, NULL, 13, &err);
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_annotation a;
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_near].decision == WQ_ANN_QUANTIZED && a.nodes[n_near].role == WQ_QROLE_SHARED);
  CHECK(a.nodes[n_lin].decision == WQ_ANN_FLOAT);
  CHECK(a.nodes[n_lin].code == WQ_REASON_UNSUPPORTED_ATTR);
  CHECK(a.nodes[n_near].code == WQ_REASON_NONE);
  CHECK(a.tensors[s].kind == WQ_ANN_T_NONE); /* scales are not data */
  CHECK(a.tensors[y].cluster == a.tensors[x].cluster);
  CHECK(a.nodes[n_conv].decision == WQ_ANN_QUANTIZED);
  wq_annotation_free(&a);

  /* Without the conv, the nearest Resize is an int8 island with no linear
   * op: it stays float (Q/DQ around it would only add work and error). */
  g->tensors[y].is_output = true;
  wq_node_clear(&g->nodes[n_conv]);
  g->n_nodes--;
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK(a.nodes[n_near].decision == WQ_ANN_FLOAT);
  CHECK(strstr(a.nodes[n_near].reason, "island") != NULL);
  CHECK(a.tensors[y].kind == WQ_ANN_T_NONE && a.tensors[x].kind == WQ_ANN_T_NONE);
  wq_annotation_free(&a);

  /* A QuantizeLinear anywhere: the model is quantized already. */
  int64_t d0[1] = {0};
  float *sc = malloc(sizeof *sc);
  *sc = 0.1f;
  int qs = add_tensor(g, "qs", WQ_DT_FLOAT, 0, d0, sc);
  int q = add_tensor(g, "q", WQ_DT_UINT8, 4, dx, NULL);
  add_node(g, "", "QuantizeLinear", (int[]){x, qs}, 2, q, NULL, 13, &err);
  wq_error_clear(&err);
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_ERR_INVALID_ARG);
  CHECK(strstr(err.message, "already quantized") != NULL);
  CHECK(a.nodes == NULL);
  wq_quant_config_free(&cfg);
  wq_graph_free(g);
}

/* 1-D Convs: the one reading the model input through a Reshape (a raw
 * signal) stays float, the next one is quantized; Log stays float. */
static void test_conv1d_raw_signal_and_log(void) {
  wq_error err;
  wq_graph *g = wq_graph_new();
  int64_t dx[2] = {1, 16}, dr[3] = {1, 1, 16}, dw1[3] = {2, 1, 1}, dw2[3] = {2, 2, 1},
          dy[3] = {1, 2, 16}, ds[1] = {3};
  int64_t *shape = malloc(3 * sizeof *shape);
  shape[0] = shape[1] = 1;
  shape[2] = 16;
  int x = act(g, "x", 2, dx), r = act(g, "r", 3, dr), y1 = act(g, "y1", 3, dy);
  int s = add_tensor(g, "shape", WQ_DT_INT64, 1, ds, shape);
  int y2 = act(g, "y2", 3, dy), z = act(g, "z", 3, dy);
  int w1 = add_tensor(g, "w1", WQ_DT_FLOAT, 3, dw1, zeros(2));
  int w2 = add_tensor(g, "w2", WQ_DT_FLOAT, 3, dw2, zeros(4));
  g->tensors[x].is_input = true;
  g->tensors[z].is_output = true;
  add_node(g, "", "Reshape", (int[]){x, s}, 2, r, NULL, 13, &err);
  int n_c1 = add_node(g, "", "Conv", (int[]){r, w1}, 2, y1, NULL, 13, &err);
  int n_c2 = add_node(g, "", "Conv", (int[]){y1, w2}, 2, y2, NULL, 13, &err);
  int n_log = add_node(g, "", "Log", (int[]){y2}, 1, z, NULL, 13, &err);
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_annotation a;
  CHECK(wq_annotate(g, &cfg, NULL, NULL, &a, &err) == WQ_OK);
  CHECK_MSG(a.nodes[n_c1].decision == WQ_ANN_FLOAT && strstr(a.nodes[n_c1].reason, "raw") != NULL,
            "%s", a.nodes[n_c1].reason);
  CHECK_MSG(a.nodes[n_c2].decision == WQ_ANN_QUANTIZED, "%s", a.nodes[n_c2].reason);
  CHECK(a.tensors[w2].kind == WQ_ANN_T_WEIGHT && a.tensors[w1].kind == WQ_ANN_T_NONE);
  CHECK(a.nodes[n_log].decision == WQ_ANN_FLOAT);
  wq_annotation_free(&a);
  wq_quant_config_free(&cfg);
  wq_graph_free(g);
}

int main(void) {
  test_conv_chain_with_shared_cluster();
  test_linear_bias_and_float_reasons();
  test_resize_modes_and_quantized_models();
  test_conv1d_raw_signal_and_log();
  WQ_TEST_END();
}
