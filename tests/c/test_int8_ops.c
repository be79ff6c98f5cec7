/* wasmq's own int8 ops (domain "wasmq") against the ONNX reference ops
 * they replace, bit for bit: QConv vs QLinearConv / ConvInteger, QGemm vs
 * QLinearMatMul / MatMulInteger, and the elementwise ops vs
 * DequantizeLinear → float op → QuantizeLinear run op by op (QAdd, QMul,
 * QConcat, QAveragePool, QGlobalAveragePool). Plus QLookup, fused clamps
 * and the plan-time errors (missing or per-channel activation parameters,
 * run before plan, bad attributes). Operands are seeded random codes. */
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "ops/op.h"
#include "quant/qparams.h"
#include "runtime/executor.h"
#include "wq_test.h"

/* ---- a small graph to hold tensors with qparams -------------------------- */

static uint32_t rng_state = 1;
static uint32_t next_u32(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8;
}

static void *random_codes(wq_dtype dt, int64_t n) {
  size_t size = dt == WQ_DT_INT32 ? 4 : 1;
  uint8_t *p = malloc((size_t)n * size);
  for (int64_t i = 0; p && i < n * (int64_t)size; i++)
    p[i] = (uint8_t)next_u32();
  if (p && dt == WQ_DT_INT32)
    for (int64_t i = 0; i < n; i++)
      ((int32_t *)p)[i] %= 5000; /* a bias-like range */
  return p;
}

static void set_qparams(wq_graph *g, int t, int axis, int count, const float *scales,
                        const int32_t *zps) {
  wq_tensor *tt = &g->tensors[t];
  int64_t scale_dims[WQ_MAX_RANK];
  for (int d = 0; d < WQ_MAX_RANK; d++)
    scale_dims[d] = (d == axis) ? count : 1;
  wq_qparams *qp = calloc(1, sizeof *qp);
  wq_error err;
  CHECK(wq_qparams_init_arrays(qp, tt->dtype, tt->rank, tt->dims, scale_dims, NULL, scales, zps,
                               NULL, tt->name, &err) == WQ_OK);
  tt->qparams = qp;
}

static void per_tensor(wq_graph *g, int t, float scale, int32_t zp) {
  set_qparams(g, t, -1, 1, &scale, &zp);
}

/* Runs node on the tensors' data (inputs given by `data` for non-constants)
 * and returns the output value (data malloc'ed). */
static wq_value run(const wq_graph *g, int node, void *const *data, wq_error *err, wq_status *st) {
  const wq_node *n = &g->nodes[node];
  wq_value in[16], out[1];
  for (int k = 0; k < n->n_inputs; k++) {
    if (n->inputs[k] < 0) {
      memset(&in[k], 0, sizeof in[k]);
      in[k].dtype = WQ_DT_UNDEFINED;
      in[k].rank = -1;
      continue;
    }
    in[k] = wq_tensor_value(&g->tensors[n->inputs[k]]);
    if (!in[k].data)
      in[k].data = data[k];
  }
  *st = wq_run_node(n, in, out, err);
  if (*st != WQ_OK)
    out[0].data = NULL;
  return out[0];
}

static bool same_bytes(const wq_value *a, const wq_value *b) {
  return a->data && b->data && wq_value_nbytes(a) == wq_value_nbytes(b) &&
         memcmp(a->data, b->data, wq_value_nbytes(a)) == 0;
}

/* ---- QConv vs QLinearConv / ConvInteger ---------------------------------- */

static void check_qconv(int64_t C, int64_t M, int64_t group, int64_t stride, int64_t dilation,
                        wq_dtype x_dt, bool per_channel, bool with_bias, int32_t act_lo_delta) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, C, 7, 6}, wd[4] = {M, C / group, 3, 3}, bd[1] = {M};
  const int64_t s0[1] = {1}, sm[1] = {M};
  float ws[16];
  int32_t wz[16] = {0};
  for (int m = 0; m < M; m++)
    ws[m] = 0.002f + 0.0005f * (float)m;
  int x = add_tensor(g, "x", x_dt, 4, xd, NULL);
  int w = add_tensor(g, "w", WQ_DT_INT8, 4, wd, random_codes(WQ_DT_INT8, M * (C / group) * 9));
  int b = with_bias ? add_tensor(g, "b", WQ_DT_INT32, 1, bd, random_codes(WQ_DT_INT32, M)) : -1;
  wq_dtype y_dt = x_dt;
  int y = add_tensor(g, "y", y_dt, 4, xd, NULL);
  const float sx = 0.02f, sy = 0.05f;
  const int32_t zx = x_dt == WQ_DT_INT8 ? -3 : 131, zy = x_dt == WQ_DT_INT8 ? 5 : 120;
  per_tensor(g, x, sx, zx);
  if (per_channel)
    set_qparams(g, w, 0, (int)M, ws, wz);
  else
    per_tensor(g, w, ws[0], 0);
  per_tensor(g, y, sy, zy);
  const int64_t pads[4] = {1, 0, 2, 1}, strides[2] = {stride, stride},
                dil[2] = {dilation, dilation};
  attr_spec conv_attrs[] = {AI("group", group),
                            AL("pads", pads, 4),
                            AL("strides", strides, 2),
                            AL("dilations", dil, 2),
                            AI("y_dtype", y_dt),
                            AI("act_min", (x_dt == WQ_DT_INT8 ? -128 : 0) + act_lo_delta),
                            AEND};
  int inputs[3] = {x, w, b};
  int qconv = add_node(g, "wasmq", "QConv", inputs, with_bias ? 3 : 2, y, conv_attrs, 1, &err);
  CHECK(qconv >= 0 && plan(g, qconv, &err) == WQ_OK);
  /* The reference: QLinearConv with the same parameters as inputs. */
  float sxv = sx, syv = sy;
  uint8_t zxv[1], zyv[1];
  if (x_dt == WQ_DT_INT8) {
    zxv[0] = (uint8_t)(int8_t)zx;
    zyv[0] = (uint8_t)(int8_t)zy;
  } else {
    zxv[0] = (uint8_t)zx;
    zyv[0] = (uint8_t)zy;
  }
  int t_sx = add_tensor(g, "sx", WQ_DT_FLOAT, 0, s0, malloc(4));
  memcpy(g->tensors[t_sx].data, &sxv, 4);
  int t_zx = add_tensor(g, "zx", x_dt, 0, s0, malloc(1));
  memcpy(g->tensors[t_zx].data, zxv, 1);
  int t_sw = add_tensor(g, "sw", WQ_DT_FLOAT, 1, per_channel ? sm : s0, malloc(4 * (size_t)M));
  memcpy(g->tensors[t_sw].data, ws, 4 * (size_t)(per_channel ? M : 1));
  int t_zw = add_tensor(g, "zw", WQ_DT_INT8, 1, per_channel ? sm : s0, calloc((size_t)M, 1));
  int t_sy = add_tensor(g, "sy", WQ_DT_FLOAT, 0, s0, malloc(4));
  memcpy(g->tensors[t_sy].data, &syv, 4);
  int t_zy = add_tensor(g, "zy", y_dt, 0, s0, malloc(1));
  memcpy(g->tensors[t_zy].data, zyv, 1);
  int ry = add_tensor(g, "ry", y_dt, 4, xd, NULL);
  attr_spec ref_attrs[] = {AI("group", group), AL("pads", pads, 4), AL("strides", strides, 2),
                           AL("dilations", dil, 2), AEND};
  int ref_in[9] = {x, t_sx, t_zx, w, t_sw, t_zw, t_sy, t_zy, b};
  int ref = add_node(g, "", "QLinearConv", ref_in, with_bias ? 9 : 8, ry, ref_attrs, 10, &err);
  CHECK(ref >= 0);
  void *xdata = random_codes(x_dt, C * 7 * 6);
  void *data[9] = {xdata};
  wq_status st1, st2;
  wq_value got = run(g, qconv, data, &err, &st1);
  wq_value want = run(g, ref, data, &err, &st2);
  CHECK_MSG(st1 == WQ_OK && st2 == WQ_OK, "%s", err.message);
  if (act_lo_delta == 0) {
    CHECK_MSG(same_bytes(&got, &want), "QConv != QLinearConv (C %lld M %lld group %lld)",
              (long long)C, (long long)M, (long long)group);
  } else if (got.data && want.data) {
    /* A fused clamp of the requantized codes. */
    int32_t lo = (x_dt == WQ_DT_INT8 ? -128 : 0) + act_lo_delta;
    int64_t n = wq_value_numel(&want), bad = 0;
    for (int64_t i = 0; i < n; i++) {
      int32_t a = x_dt == WQ_DT_INT8 ? ((int8_t *)got.data)[i] : ((uint8_t *)got.data)[i];
      int32_t r = x_dt == WQ_DT_INT8 ? ((int8_t *)want.data)[i] : ((uint8_t *)want.data)[i];
      bad += a != (r < lo ? lo : r);
    }
    CHECK(bad == 0);
  }
  free(got.data);
  free(want.data);
  free(xdata);
  wq_graph_free(g);
}

static void test_qconv(void) {
  check_qconv(4, 6, 2, 2, 1, WQ_DT_UINT8, true, true, 0);  /* grouped, strided */
  check_qconv(4, 4, 4, 1, 1, WQ_DT_INT8, true, true, 0);   /* depthwise */
  check_qconv(3, 5, 1, 1, 2, WQ_DT_INT8, false, false, 0); /* dilated, per-tensor w */
  check_qconv(4, 6, 1, 1, 1, WQ_DT_UINT8, true, true, 40); /* fused clamp */
  check_qconv(4, 6, 1, 1, 1, WQ_DT_INT8, true, true, 133); /* clamp at zp != qmin */
}

/* QConv with y_dtype int32 is ConvInteger. */
static void test_qconv_int32(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {2, 3, 2, 2}, s0[1] = {1}, yd[4] = {1, 2, 4, 4};
  int x = add_tensor(g, "x", WQ_DT_UINT8, 4, xd, NULL);
  int w = add_tensor(g, "w", WQ_DT_UINT8, 4, wd, random_codes(WQ_DT_UINT8, 24));
  int y = add_tensor(g, "y", WQ_DT_INT32, 4, yd, NULL);
  float one = 1.0f;
  int32_t wz[2] = {128, 100};
  per_tensor(g, x, 1.0f, 77);
  set_qparams(g, w, 0, 2, (float[]){one, one}, wz);
  attr_spec a[] = {AI("y_dtype", WQ_DT_INT32), AEND};
  int in[2] = {x, w};
  int q = add_node(g, "wasmq", "QConv", in, 2, y, a, 1, &err);
  CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
  int zx = add_tensor(g, "zx", WQ_DT_UINT8, 0, s0, malloc(1));
  *(uint8_t *)g->tensors[zx].data = 77;
  const int64_t d2[1] = {2};
  int zw = add_tensor(g, "zw", WQ_DT_UINT8, 1, d2, malloc(2));
  ((uint8_t *)g->tensors[zw].data)[0] = 128;
  ((uint8_t *)g->tensors[zw].data)[1] = 100;
  int ry = add_tensor(g, "ry", WQ_DT_INT32, 4, yd, NULL);
  int rin[4] = {x, w, zx, zw};
  int ref = add_node(g, "", "ConvInteger", rin, 4, ry, NULL, 10, &err);
  void *xdata = random_codes(WQ_DT_UINT8, 75);
  void *data[4] = {xdata};
  wq_status st1, st2;
  wq_value got = run(g, q, data, &err, &st1), want = run(g, ref, data, &err, &st2);
  CHECK(st1 == WQ_OK && st2 == WQ_OK && same_bytes(&got, &want));
  free(got.data);
  free(want.data);
  free(xdata);
  wq_graph_free(g);
}

/* ---- QGemm vs QLinearMatMul / MatMulInteger ------------------------------ */

static void check_qgemm(bool trans_a, bool int32_out) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t M = 3, K = 7, N = 5;
  const int64_t ad[2] = {M, K}, atd[2] = {K, M}, bd[2] = {K, N}, wd[2] = {N, K}, yd[2] = {M, N};
  const int64_t s0[1] = {1}, sn[1] = {N};
  wq_dtype b_dt = int32_out ? WQ_DT_UINT8 : WQ_DT_INT8;
  uint8_t *b = random_codes(b_dt, K * N);
  uint8_t *w = malloc((size_t)(N * K));
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      w[n * K + k] = b[k * N + n];
  float bs[5] = {0.01f, 0.02f, 0.015f, 0.03f, 0.005f}, ones[5] = {1, 1, 1, 1, 1};
  int32_t bz[5] = {0, 0, 0, 0, 0}, bz_u8[5] = {128, 3, 250, 77, 0};
  int a = add_tensor(g, "a", WQ_DT_UINT8, 2, ad, NULL);
  int at = add_tensor(g, "at", WQ_DT_UINT8, 2, atd, NULL);
  int tw = add_tensor(g, "w", b_dt, 2, wd, w);
  int tb = add_tensor(g, "b", b_dt, 2, bd, b);
  wq_dtype y_dt = int32_out ? WQ_DT_INT32 : WQ_DT_UINT8;
  int y = add_tensor(g, "y", y_dt, 2, yd, NULL);
  per_tensor(g, a, int32_out ? 1.0f : 0.03f, 9);
  per_tensor(g, at, int32_out ? 1.0f : 0.03f, 9);
  set_qparams(g, tw, 0, (int)N, int32_out ? ones : bs, int32_out ? bz_u8 : bz);
  if (!int32_out)
    per_tensor(g, y, 0.07f, 128);
  attr_spec attrs[] = {AI("y_dtype", y_dt), AI("trans_a", trans_a), AEND};
  int in[2] = {trans_a ? at : a, tw};
  int q = add_node(g, "wasmq", "QGemm", in, 2, y, attrs, 1, &err);
  CHECK_MSG(q >= 0 && plan(g, q, &err) == WQ_OK, "%s", err.message);
  int ry = add_tensor(g, "ry", y_dt, 2, yd, NULL), ref;
  if (int32_out) {
    int za = add_tensor(g, "za", WQ_DT_UINT8, 0, s0, malloc(1));
    *(uint8_t *)g->tensors[za].data = 9;
    int zb = add_tensor(g, "zb", WQ_DT_UINT8, 1, sn, malloc(5));
    for (int k = 0; k < 5; k++)
      ((uint8_t *)g->tensors[zb].data)[k] = (uint8_t)bz_u8[k];
    int rin[4] = {a, tb, za, zb};
    ref = add_node(g, "", "MatMulInteger", rin, 4, ry, NULL, 10, &err);
  } else {
    float sa = 0.03f, sy = 0.07f;
    int t_sa = add_tensor(g, "sa", WQ_DT_FLOAT, 0, s0, malloc(4));
    memcpy(g->tensors[t_sa].data, &sa, 4);
    int t_za = add_tensor(g, "za", WQ_DT_UINT8, 0, s0, malloc(1));
    *(uint8_t *)g->tensors[t_za].data = 9;
    int t_sb = add_tensor(g, "sb", WQ_DT_FLOAT, 1, sn, malloc(20));
    memcpy(g->tensors[t_sb].data, bs, 20);
    int t_zb = add_tensor(g, "zb", WQ_DT_INT8, 1, sn, calloc(5, 1));
    int t_sy = add_tensor(g, "sy", WQ_DT_FLOAT, 0, s0, malloc(4));
    memcpy(g->tensors[t_sy].data, &sy, 4);
    int t_zy = add_tensor(g, "zy", WQ_DT_UINT8, 0, s0, malloc(1));
    *(uint8_t *)g->tensors[t_zy].data = 128;
    int rin[8] = {a, t_sa, t_za, tb, t_sb, t_zb, t_sy, t_zy};
    ref = add_node(g, "", "QLinearMatMul", rin, 8, ry, NULL, 10, &err);
  }
  uint8_t *adata = random_codes(WQ_DT_UINT8, M * K);
  uint8_t *atdata = malloc((size_t)(M * K));
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++)
      atdata[k * M + m] = adata[m * K + k];
  void *qdata[2] = {trans_a ? atdata : adata}, *rdata[8] = {adata};
  wq_status st1, st2;
  wq_value got = run(g, q, qdata, &err, &st1), want = run(g, ref, rdata, &err, &st2);
  CHECK_MSG(st1 == WQ_OK && st2 == WQ_OK, "%s", err.message);
  CHECK_MSG(same_bytes(&got, &want), "QGemm trans_a %d int32 %d differs from the reference",
            trans_a, int32_out);
  free(got.data);
  free(want.data);
  free(adata);
  free(atdata);
  wq_graph_free(g);
}

static void test_qgemm(void) {
  check_qgemm(false, false);
  check_qgemm(true, false);
  check_qgemm(false, true);
}

/* ---- elementwise vs DQ -> float op -> Q ------------------------------------ */

/* Dequantizes tensor t's codes (given in data) with its per-tensor qparams. */
static float *dequant(const wq_graph *g, int t, const void *data) {
  const wq_tensor *tt = &g->tensors[t];
  wq_value v = wq_tensor_value(tt);
  int64_t n = wq_value_numel(&v);
  float *f = malloc((size_t)n * sizeof *f);
  for (int64_t i = 0; i < n; i++) {
    int32_t q = tt->dtype == WQ_DT_INT8 ? ((const int8_t *)data)[i] : ((const uint8_t *)data)[i];
    f[i] = (float)(q - tt->qparams->zero_point[0]) * tt->qparams->scale[0];
  }
  return f;
}

/* Quantizes like QuantizeLinear; returns the number of codes differing from got. */
static int64_t count_mismatch(const wq_graph *g, int y, const float *real, const void *got,
                              int32_t lo, int32_t hi) {
  const wq_tensor *tt = &g->tensors[y];
  wq_value v = wq_tensor_value(tt);
  int64_t n = wq_value_numel(&v), bad = 0;
  for (int64_t i = 0; i < n; i++) {
    float r = nearbyintf(real[i] / tt->qparams->scale[0]) + (float)tt->qparams->zero_point[0];
    int32_t want = r < (float)lo ? lo : r > (float)hi ? hi : (int32_t)r;
    int32_t have = tt->dtype == WQ_DT_INT8 ? ((const int8_t *)got)[i] : ((const uint8_t *)got)[i];
    bad += want != have;
  }
  return bad;
}

static void test_binary(void) {
  for (int mul = 0; mul < 2; mul++) {
    wq_graph *g = wq_graph_new();
    wq_error err;
    const int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 1};
    int a = add_tensor(g, "a", WQ_DT_INT8, 3, ad, NULL);
    int b = add_tensor(g, "b", WQ_DT_UINT8, 2, bd, random_codes(WQ_DT_UINT8, 3)); /* constant */
    int y = add_tensor(g, "y", WQ_DT_INT8, 3, ad, NULL);
    per_tensor(g, a, 0.03f, -7);
    per_tensor(g, b, 0.011f, 140);
    per_tensor(g, y, mul ? 0.004f : 0.035f, 3);
    attr_spec attrs[] = {AI("y_dtype", WQ_DT_INT8), AI("act_min", mul ? -128 : 3), AEND};
    int in[2] = {a, b};
    int q = add_node(g, "wasmq", mul ? "QMul" : "QAdd", in, 2, y, attrs, 1, &err);
    CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
    void *adata = random_codes(WQ_DT_INT8, 24);
    void *data[2] = {adata};
    wq_status st;
    wq_value got = run(g, q, data, &err, &st);
    CHECK(st == WQ_OK);
    float *fa = dequant(g, a, adata), *fb = dequant(g, b, g->tensors[b].data);
    float real[24];
    for (int i = 0; i < 24; i++) {
      float vb = fb[(i / 4) % 3];
      real[i] = mul ? fa[i] * vb : fa[i] + vb;
    }
    /* QAdd's act_min 3 is the fused relu (zero point 3). */
    CHECK(got.data && count_mismatch(g, y, real, got.data, mul ? -128 : 3, 127) == 0);
    free(fa), free(fb), free(got.data), free(adata);
    wq_graph_free(g);
  }
}

static void test_concat_lookup(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t d1[2] = {2, 3}, d2[2] = {2, 2}, dy[2] = {2, 5};
  int x1 = add_tensor(g, "x1", WQ_DT_UINT8, 2, d1, NULL);
  int x2 = add_tensor(g, "x2", WQ_DT_UINT8, 2, d2, NULL);
  int y = add_tensor(g, "y", WQ_DT_UINT8, 2, dy, NULL);
  per_tensor(g, x1, 0.05f, 128); /* same as y: copied */
  per_tensor(g, x2, 0.2f, 10);   /* requantized */
  per_tensor(g, y, 0.05f, 128);
  attr_spec attrs[] = {AI("y_dtype", WQ_DT_UINT8), AI("axis", -1), AEND};
  int in[2] = {x1, x2};
  int q = add_node(g, "wasmq", "QConcat", in, 2, y, attrs, 1, &err);
  CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
  void *a = random_codes(WQ_DT_UINT8, 6), *b = random_codes(WQ_DT_UINT8, 4);
  void *data[2] = {a, b};
  wq_status st;
  wq_value got = run(g, q, data, &err, &st);
  float *fa = dequant(g, x1, a), *fb = dequant(g, x2, b), real[10];
  for (int r = 0; r < 2; r++) {
    for (int c = 0; c < 3; c++)
      real[r * 5 + c] = fa[r * 3 + c];
    for (int c = 0; c < 2; c++)
      real[r * 5 + 3 + c] = fb[r * 2 + c];
  }
  CHECK(st == WQ_OK && count_mismatch(g, y, real, got.data, 0, 255) == 0);
  free(fa), free(fb), free(got.data), free(a), free(b);

  /* QLookup: int8 codes index table[q + 128]. */
  const int64_t d4[1] = {4}, d256[1] = {256};
  int lx = add_tensor(g, "lx", WQ_DT_INT8, 1, d4, NULL);
  uint8_t *table = malloc(256);
  for (int i = 0; i < 256; i++)
    table[i] = (uint8_t)(255 - i);
  int lt = add_tensor(g, "table", WQ_DT_UINT8, 1, d256, table);
  int ly = add_tensor(g, "ly", WQ_DT_UINT8, 1, d4, NULL);
  int lin[2] = {lx, lt};
  int l = add_node(g, "wasmq", "QLookup", lin, 2, ly, NULL, 1, &err);
  int8_t codes[4] = {-128, -1, 0, 127};
  void *ldata[2] = {codes};
  wq_value lout = run(g, l, ldata, &err, &st);
  const uint8_t want[4] = {255, 128, 127, 0};
  CHECK(st == WQ_OK && lout.data && memcmp(lout.data, want, 4) == 0);
  free(lout.data);
  wq_graph_free(g);
}

/* ---- inputs in other layouts than the output's -------------------------- */

/* v's codes, row-major over its logical dims in `from`, placed in its
 * layout (forward) or taken back out of it. */
static void *relayout(const wq_value *v, const void *from, bool forward) {
  int64_t strides[WQ_MAX_RANK], at[WQ_MAX_RANK] = {0}, placed = 0;
  wq_value_strides(v, strides);
  const int64_t n = wq_value_numel(v);
  const uint8_t *src = from;
  uint8_t *dst = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++) {
    if (forward)
      dst[placed] = src[i];
    else
      dst[i] = src[placed];
    for (int d = v->rank - 1; d >= 0; d--) {
      placed += strides[d];
      if (++at[d] < v->dims[d])
        break;
      placed -= strides[d] * v->dims[d];
      at[d] = 0;
    }
  }
  return dst;
}

/* Runs node with each input tensor in layouts[k] (its codes, given
 * row-major in data[k] or the tensor, moved into that layout) and the
 * output in layouts[n_inputs]; returns the output codes row-major again. */
static void *run_in_layouts(wq_graph *g, int node, void *const *data, const unsigned char *orders,
                            wq_status *st, wq_error *err) {
  const wq_node *n = &g->nodes[node];
  wq_value in[8], out = {0};
  void *moved[8];
  for (int k = 0; k < n->n_inputs; k++) {
    in[k] = wq_tensor_value(&g->tensors[n->inputs[k]]);
    in[k].layout.order = orders[k];
    moved[k] = relayout(&in[k], in[k].data ? in[k].data : data[k], true);
    in[k].data = moved[k];
  }
  out.layout.order = orders[n->n_inputs];
  *st = n->op->infer(n, in, &out, err);
  void *y = NULL;
  if (*st == WQ_OK) {
    out.data = malloc(wq_value_nbytes(&out));
    *st = n->op->run(n, in, &out, err);
    y = relayout(&out, out.data, false);
    free(out.data);
  }
  for (int k = 0; k < n->n_inputs; k++)
    free(moved[k]);
  return y;
}

/* Runs the two-input node q with every mix of channels-first/-last inputs
 * and output; each must give the n bytes of the all-channels-first run. */
static void check_layout_mixes(wq_graph *g, int q, void *const *data, int64_t n, const char *what) {
  const unsigned char declared[3] = {0, 0, 0};
  wq_status st;
  wq_error err;
  void *want = run_in_layouts(g, q, data, declared, &st, &err);
  CHECK(st == WQ_OK && want);
  for (int mix = 1; mix < 8; mix++) {
    const unsigned char orders[3] = {mix & 1, (mix >> 1) & 1, (mix >> 2) & 1};
    void *got = run_in_layouts(g, q, data, orders, &st, &err);
    CHECK_MSG(st == WQ_OK && want && got && memcmp(got, want, (size_t)n) == 0,
              "%s: channels-last input 0 %d, input 1 %d, output %d", what, orders[0], orders[1],
              orders[2]);
    free(got);
  }
  free(want);
}

/* QAdd, QMul and QConcat read each input through its own layout record:
 * every mix of channels-first and channels-last inputs and output gives
 * the bytes of the all-channels-first run (same shapes, broadcasts, a
 * [1, C, 1, 1] operand whose bytes agree in both layouts, concat on the
 * channel and on a spatial axis). */
static void test_mixed_layouts(void) {
  const int64_t ad[4] = {2, 3, 4, 5}, bd_full[4] = {2, 3, 4, 5}, bd_chan[4] = {1, 3, 1, 1},
                bd_mixed[4] = {2, 3, 1, 5};
  const int64_t *bds[3] = {bd_full, bd_chan, bd_mixed};
  for (int op = 0; op < 2; op++)
    for (int shape = 0; shape < 3; shape++) {
      wq_graph *g = wq_graph_new();
      wq_error err;
      int a = add_tensor(g, "a", WQ_DT_INT8, 4, ad, NULL);
      int b = add_tensor(g, "b", WQ_DT_UINT8, 4, bds[shape], NULL);
      int y = add_tensor(g, "y", WQ_DT_INT8, 4, ad, NULL);
      per_tensor(g, a, 0.03f, -7);
      per_tensor(g, b, 0.011f, 140);
      per_tensor(g, y, op ? 0.004f : 0.035f, 3);
      attr_spec attrs[] = {AI("y_dtype", WQ_DT_INT8), AEND};
      int in[2] = {a, b};
      int q = add_node(g, "wasmq", op ? "QMul" : "QAdd", in, 2, y, attrs, 1, &err);
      CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
      wq_value bv = wq_tensor_value(&g->tensors[b]);
      void *data[2] = {random_codes(WQ_DT_INT8, 120),
                       random_codes(WQ_DT_UINT8, wq_value_numel(&bv))};
      char what[40];
      snprintf(what, sizeof what, "%s b shape %d", op ? "QMul" : "QAdd", shape);
      check_layout_mixes(g, q, data, 120, what);
      free(data[0]), free(data[1]);
      wq_graph_free(g);
    }
  for (int axis = 1; axis < 4; axis += 2) {
    wq_graph *g = wq_graph_new();
    wq_error err;
    int64_t d1[4] = {2, 3, 4, 5}, d2[4] = {2, 3, 4, 5}, dy[4] = {2, 3, 4, 5};
    d2[axis] = 2;
    dy[axis] += 2;
    int x1 = add_tensor(g, "x1", WQ_DT_UINT8, 4, d1, NULL);
    int x2 = add_tensor(g, "x2", WQ_DT_UINT8, 4, d2, NULL);
    int y = add_tensor(g, "y", WQ_DT_UINT8, 4, dy, NULL);
    per_tensor(g, x1, 0.05f, 128); /* same as y: copied */
    per_tensor(g, x2, 0.2f, 10);   /* requantized */
    per_tensor(g, y, 0.05f, 128);
    attr_spec attrs[] = {AI("y_dtype", WQ_DT_UINT8), AI("axis", axis), AEND};
    int in[2] = {x1, x2};
    int q = add_node(g, "wasmq", "QConcat", in, 2, y, attrs, 1, &err);
    CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
    const int64_t n2 = 2 * 3 * 4 * 5 / d1[axis] * 2, ny = 120 + n2;
    void *data[2] = {random_codes(WQ_DT_UINT8, 120), random_codes(WQ_DT_UINT8, n2)};
    char what[40];
    snprintf(what, sizeof what, "QConcat axis %d", axis);
    check_layout_mixes(g, q, data, ny, what);
    free(data[0]), free(data[1]);
    wq_graph_free(g);
  }
}

/* Which layouts give a shape the same bytes. */
static void test_layouts_alias(void) {
  const wq_layout first = {0}, last = {.order = WQ_ORDER_CHANNELS_LAST};
  const int64_t chan[4] = {1, 1280, 1, 1}, full[4] = {1, 8, 7, 7}, one_c[4] = {2, 1, 7, 7},
                row[4] = {1, 8, 1, 7}, col[3] = {1, 8, 1};
  CHECK(wq_layout_same_bytes(first, last, 4, chan));
  CHECK(!wq_layout_same_bytes(first, last, 4, full));
  CHECK(wq_layout_same_bytes(last, last, 4, full));
  CHECK(wq_layout_same_bytes(first, last, 4, one_c));
  CHECK(!wq_layout_same_bytes(first, last, 4, row));
  CHECK(wq_layout_same_bytes(first, last, 3, col));
  const wq_layout packed = {.order = WQ_ORDER_CHANNELS_LAST, .block = 16, .packed_dim = 1};
  CHECK(!wq_layout_same_bytes(packed, last, 4, chan));
  CHECK(wq_layout_same_bytes(packed, packed, 4, full));
}

static void test_pools(void) {
  for (int variant = 0; variant < 3; variant++) {
    wq_graph *g = wq_graph_new();
    wq_error err;
    const int64_t xd[4] = {1, 2, 5, 6};
    int64_t yd[4] = {1, 2, 3, 3};
    if (variant == 2)
      yd[2] = yd[3] = 1;
    int x = add_tensor(g, "x", WQ_DT_INT8, 4, xd, NULL);
    int y = add_tensor(g, "y", WQ_DT_INT8, 4, yd, NULL);
    per_tensor(g, x, 0.04f, -20);
    per_tensor(g, y, 0.03f, 4);
    const int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 0};
    attr_spec attrs[] = {
        AI("y_dtype", WQ_DT_INT8), AL("kernel_shape", k, 2),         AL("strides", s, 2),
        AL("pads", p, 4),          AI("count_include_pad", variant), AEND};
    attr_spec gattrs[] = {AI("y_dtype", WQ_DT_INT8), AEND};
    int q = add_node(g, "wasmq", variant == 2 ? "QGlobalAveragePool" : "QAveragePool", &x, 1, y,
                     variant == 2 ? gattrs : attrs, 1, &err);
    CHECK(q >= 0 && plan(g, q, &err) == WQ_OK);
    /* The float op on the dequantized codes. */
    int xf = add_tensor(g, "xf", WQ_DT_FLOAT, 4, xd, NULL);
    int yf = add_tensor(g, "yf", WQ_DT_FLOAT, 4, yd, NULL);
    attr_spec fattrs[] = {AL("kernel_shape", k, 2), AL("strides", s, 2), AL("pads", p, 4),
                          AI("count_include_pad", variant), AEND};
    int f = add_node(g, "", variant == 2 ? "GlobalAveragePool" : "AveragePool", &xf, 1, yf,
                     variant == 2 ? NULL : fattrs, 13, &err);
    void *codes = random_codes(WQ_DT_INT8, 60);
    float *real_in = dequant(g, x, codes);
    void *qd[1] = {codes}, *fd[1] = {real_in};
    wq_status st1, st2;
    wq_value got = run(g, q, qd, &err, &st1), want = run(g, f, fd, &err, &st2);
    CHECK(st1 == WQ_OK && st2 == WQ_OK);
    CHECK_MSG(got.data && want.data && count_mismatch(g, y, want.data, got.data, -128, 127) == 0,
              "pool variant %d", variant);
    free(got.data), free(want.data), free(codes), free(real_in);
    wq_graph_free(g);
  }
}

/* ---- errors ---------------------------------------------------------------- */

static void test_errors(void) {
  wq_graph *g = wq_graph_new();
  wq_error err;
  const int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 1, 1};
  int x = add_tensor(g, "x_no_qparams", WQ_DT_UINT8, 4, xd, NULL);
  int w = add_tensor(g, "w", WQ_DT_INT8, 4, wd, random_codes(WQ_DT_INT8, 6));
  int y = add_tensor(g, "y", WQ_DT_UINT8, 4, xd, NULL);
  per_tensor(g, w, 0.1f, 0);
  per_tensor(g, y, 0.1f, 0);
  attr_spec attrs[] = {AI("y_dtype", WQ_DT_UINT8), AEND};
  int in[2] = {x, w};
  int q = add_node(g, "wasmq", "QConv", in, 2, y, attrs, 1, &err);
  CHECK(q >= 0);
  /* Run before plan: an error, not a crash. */
  void *codes = random_codes(WQ_DT_UINT8, 32);
  void *data[2] = {codes};
  wq_status st;
  wq_value out = run(g, q, data, &err, &st);
  CHECK(st == WQ_ERR_INVALID_MODEL && strstr(err.message, "plan"));
  free(out.data);
  /* Missing activation parameters name the tensor. */
  CHECK(plan(g, q, &err) == WQ_ERR_INVALID_MODEL && strstr(err.message, "x_no_qparams"));
  /* Per-channel activation parameters are refused. */
  float sc[2] = {0.1f, 0.2f};
  int32_t zp[2] = {0, 0};
  set_qparams(g, x, 1, 2, sc, zp);
  CHECK(plan(g, q, &err) == WQ_ERR_UNSUPPORTED && strstr(err.message, "per tensor"));
  free(codes);
  /* Bad attributes fail at prepare. */
  attr_spec no_dtype[] = {AI("group", 1), AEND};
  CHECK(add_node(g, "wasmq", "QConv", in, 2, y, no_dtype, 1, &err) < 0 &&
        strstr(err.message, "y_dtype"));
  attr_spec bad_clamp[] = {AI("y_dtype", WQ_DT_INT8), AI("act_min", 100), AI("act_max", 50), AEND};
  CHECK(add_node(g, "wasmq", "QGemm", in, 2, y, bad_clamp, 1, &err) < 0 &&
        strstr(err.message, "clamp"));
  /* A lookup table must have 256 entries. */
  const int64_t d3[1] = {3};
  int t = add_tensor(g, "short_table", WQ_DT_UINT8, 1, d3, calloc(3, 1));
  int lin[2] = {y, t};
  int l = add_node(g, "wasmq", "QLookup", lin, 2, x, NULL, 1, &err);
  void *ldata[2] = {calloc(32, 1)};
  out = run(g, l, ldata, &err, &st);
  CHECK(st == WQ_ERR_SHAPE && strstr(err.message, "256"));
  free(out.data);
  free(ldata[0]);
  wq_graph_free(g);
}

int main(void) {
  test_qconv();
  test_qconv_int32();
  test_qgemm();
  test_binary();
  test_concat_lookup();
  test_mixed_layouts();
  test_layouts_alias();
  test_pools();
  test_errors();
  WQ_TEST_END();
}
