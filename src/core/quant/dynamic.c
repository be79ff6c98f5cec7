#include "dynamic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../api/wasmq.h"
#include "../ir/format.h"
#include "../ir/graph.h"
#include "../onnx/onnx_export.h"
#include "annotate.h"

typedef struct {
  wq_graph *g;
  const wq_dynamic_options *o;
  int64_t opset;
  int *dql; /* [n_tensors at load] output 0 of the DynamicQuantizeLinear made for it, or -1 */
} dyn_ctx;

/* Appends a node of one or three outputs; `to` > 0 adds Cast's attribute. */
static bool add_node(dyn_ctx *c, const char *name, const char *op, const int *in, int n_in,
                     const int *out, int n_out, int64_t to) {
  wq_node *n = wq_graph_add_node(c->g);
  if (!n)
    return false;
  n->name = wq_strdup(name);
  n->op_type = wq_strdup(op);
  n->domain = wq_strdup("");
  n->opset = (int)c->opset;
  n->inputs = malloc(sizeof(int) * (size_t)n_in);
  n->outputs = malloc(sizeof(int) * (size_t)n_out);
  n->attrs = calloc(1, sizeof(wq_attr));
  if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs)
    return false;
  memcpy(n->inputs, in, sizeof(int) * (size_t)n_in);
  memcpy(n->outputs, out, sizeof(int) * (size_t)n_out);
  n->n_inputs = n_in;
  n->n_outputs = n_out;
  if (to > 0) {
    n->attrs[0] = (wq_attr){.name = wq_strdup("to"), .type = WQ_ATTR_INT, .i = to};
    n->n_attrs = 1;
    return n->attrs[0].name != NULL;
  }
  return true;
}

static int add_tensor(dyn_ctx *c, const char *base, const char *suffix, wq_dtype dt) {
  int t = wq_graph_add_unique_tensor(c->g, base, suffix);
  if (t >= 0) {
    c->g->tensors[t].dtype = dt;
    c->g->tensors[t].rank = -1;
  }
  return t;
}

/* Quantizes w [K, N] (w(k, n) = src[k * ks + n * ns] * alpha) per column or
 * per tensor into q, scale and zp (N or 1 entries). */
static void quantize_weight(const dyn_ctx *c, const float *src, int64_t K, int64_t N, int64_t ks,
                            int64_t ns, float alpha, uint8_t *q, float *scale, uint8_t *zp) {
  const bool per_col = !c->o->per_tensor, u8 = c->o->uint8_weights;
  const int64_t groups = per_col ? N : 1, cols = per_col ? 1 : N;
  for (int64_t gi = 0; gi < groups; gi++) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t n = gi; n < gi + cols; n++)
      for (int64_t k = 0; k < K; k++) {
        float v = src[k * ks + n * ns] * alpha;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
    float s;
    int32_t z = 0;
    if (u8) {
      s = (hi - lo) / 255.0f;
      if (!(s > 0.0f))
        s = 1.0f;
      z = (int32_t)nearbyintf(fminf(255.0f, fmaxf(0.0f, 0.0f - lo / s)));
    } else {
      float m = fmaxf(-lo, hi);
      s = m > 0.0f ? m / 127.0f : 1.0f;
    }
    scale[gi] = s;
    zp[gi] = (uint8_t)(int8_t)z;
    for (int64_t n = gi; n < gi + cols; n++)
      for (int64_t k = 0; k < K; k++) {
        float r = nearbyintf(src[k * ks + n * ns] * alpha / s) + (float)z;
        float lim_lo = u8 ? 0.0f : -127.0f, lim_hi = u8 ? 255.0f : 127.0f;
        r = r < lim_lo ? lim_lo : r > lim_hi ? lim_hi : r;
        q[k * N + n] = (uint8_t)(int8_t)(int32_t)r;
      }
  }
}

/* Node i as the dynamic form; *done false (and nothing changed) when its
 * shape does not allow it. */
static wq_status rewrite(dyn_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool gemm = strcmp(n->op_type, "Gemm") == 0;
  *done = false;
  if ((!gemm && strcmp(n->op_type, "MatMul")) || (n->domain && n->domain[0]) || n->n_inputs < 2 ||
      n->n_outputs != 1)
    return WQ_OK;
  const int a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
  const int bias_in = gemm && n->n_inputs > 2 ? n->inputs[2] : -1;
  const wq_tensor *bt = &g->tensors[b], *ct = bias_in >= 0 ? &g->tensors[bias_in] : NULL;
  int64_t trans_a = 0, trans_b = 0, c_numel = 1;
  float alpha = 1.0f, beta = 1.0f;
  if (gemm &&
      (wq_attr_int(n, "transA", 0, &trans_a, err) || wq_attr_int(n, "transB", 0, &trans_b, err) ||
       wq_attr_float(n, "alpha", 1.0f, &alpha, err) || wq_attr_float(n, "beta", 1.0f, &beta, err)))
    return err->code;
  const int64_t K = bt->dims[trans_b ? 1 : 0], N = bt->dims[trans_b ? 0 : 1];
  for (int d = 0; ct && d < ct->rank; d++)
    c_numel *= ct->dims[d];
  /* Gemm's C: constant, 1 or N values along the last axis */
  if (g->tensors[a].dtype != WQ_DT_FLOAT || !bt->data || bt->dtype != WQ_DT_FLOAT ||
      bt->rank != 2 || trans_a || K < 1 || N < 1 ||
      (ct && (!ct->data || ct->dtype != WQ_DT_FLOAT || ct->rank < 0 ||
              (c_numel != 1 && (c_numel != N || ct->dims[ct->rank - 1] != N)))))
    return WQ_OK;
  const int64_t groups = c->o->per_tensor ? 1 : N;
  uint8_t *q = malloc((size_t)(K * N)), *zp = malloc((size_t)groups);
  float *scale = malloc(sizeof(float) * (size_t)groups);
  float *bias = malloc(sizeof(float) * (size_t)N);
  if (!q || !zp || !scale || !bias) {
    free(q), free(zp), free(scale), free(bias);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "dynamic quantization: out of memory");
  }
  quantize_weight(c, bt->data, K, N, trans_b ? 1 : N, trans_b ? K : 1, alpha, q, scale, zp);
  for (int64_t j = 0; ct && j < N; j++)
    bias[j] = beta * ((const float *)ct->data)[c_numel == 1 ? 0 : j];
  char base[256];
  wq_format(base, sizeof base, "%s", n->name);
  const wq_dtype wdt = c->o->uint8_weights ? WQ_DT_UINT8 : WQ_DT_INT8;
  const int64_t dims[2] = {K, N}, gdims[1] = {groups};
  const int r = c->o->per_tensor ? 0 : 1;
  /* v: the values the new nodes read and write (STEPS below) */
  int v[12];
  if (c->dql[a] < 0) {
    char an[256];
    wq_format(an, sizeof an, "%s", g->tensors[a].name);
    int outs[3] = {add_tensor(c, an, "_quantized", WQ_DT_UINT8),
                   add_tensor(c, an, "_scale", WQ_DT_FLOAT),
                   add_tensor(c, an, "_zero_point", WQ_DT_UINT8)};
    if (outs[2] < 0 || !add_node(c, an, "DynamicQuantizeLinear", &a, 1, outs, 3, 0))
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "dynamic quantization: out of memory");
    c->dql[a] = outs[0]; /* added one after the other */
  }
  v[0] = c->dql[a];
  v[1] = wq_graph_add_constant(g, base, "_w_quantized", wdt, 2, dims, q, (size_t)(K * N));
  v[2] = c->dql[a] + 2;
  v[3] = wq_graph_add_constant(g, base, "_w_zero_point", wdt, r, gdims, zp, (size_t)groups);
  v[4] = add_tensor(c, base, "_int32", WQ_DT_INT32);
  v[5] = add_tensor(c, base, "_cast", WQ_DT_FLOAT);
  v[6] = c->dql[a] + 1;
  v[7] = wq_graph_add_constant(g, base, "_w_scale", WQ_DT_FLOAT, r, gdims, scale,
                               sizeof(float) * (size_t)groups);
  v[8] = add_tensor(c, base, "_scales", WQ_DT_FLOAT);
  v[9] = ct ? add_tensor(c, base, "_unbiased", WQ_DT_FLOAT) : y;
  v[10] = ct ? wq_graph_add_constant(g, base, "_bias", WQ_DT_FLOAT, 1, dims + 1, bias,
                                     sizeof(float) * (size_t)N)
             : 0;
  v[11] = y;
  if (!ct)
    free(bias);
  /* onnxruntime's order: the integer product, Cast, the scales' product,
   * the rescale, then the original bias */
  static const struct {
    const char *op;
    signed char in[4], n_in, out;
  } STEPS[] = {{"MatMulInteger", {0, 1, 2, 3}, 4, 4},
               {"Cast", {4}, 1, 5},
               {"Mul", {6, 7}, 2, 8},
               {"Mul", {5, 8}, 2, 9},
               {"Add", {9, 10}, 2, 11}};
  bool ok = true;
  for (int k = 0; k < 12; k++)
    ok = ok && v[k] >= 0;
  for (int k = 0; ok && k < (ct ? 5 : 4); k++) {
    int in[4];
    char name[300];
    for (int m = 0; m < STEPS[k].n_in; m++)
      in[m] = v[(int)STEPS[k].in[m]];
    wq_format(name, sizeof name, "%s_quant_%d", base, k);
    ok = add_node(c, name, STEPS[k].op, in, STEPS[k].n_in, &v[(int)STEPS[k].out], 1,
                  k == 1 ? WQ_DT_FLOAT : 0);
  }
  if (!ok)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "dynamic quantization: out of memory");
  wq_graph_remove_node(g, i);
  *done = true;
  return WQ_OK;
}

static int64_t *onnx_opset(wq_model_ir *ir) {
  for (int k = 0; k < ir->n_opsets; k++)
    if (!ir->opsets[k].domain || !ir->opsets[k].domain[0] ||
        strcmp(ir->opsets[k].domain, "ai.onnx") == 0)
      return &ir->opsets[k].version;
  return NULL;
}

wq_status wq_quantize_dynamic(const uint8_t *model, size_t n, const wq_dynamic_options *opts,
                              uint8_t **onnx, size_t *onnx_len, wq_dynamic_stats *stats,
                              wq_error *err) {
  static const wq_dynamic_options defaults = {0};
  wq_dynamic_stats local = {0};
  *onnx = NULL;
  *onnx_len = 0;
  if (!stats)
    stats = &local;
  *stats = local;
  wq_load_options lo = {.no_lowering = 1, .no_float_fusion = 1};
  wq_model *m = NULL;
  WQ_TRY(wq_model_load(model, n, &lo, &m, err));
  wq_status st = wq_annotate_check_float(wq_model_get_ir(m)->graph, err);
  wq_model_ir *ir = st == WQ_OK ? wq_model_release_ir(m) : NULL;
  if (!ir) {
    wq_model_free(m);
    return st;
  }
  int64_t *opset = onnx_opset(ir);
  dyn_ctx c = {.g = ir->graph, .o = opts ? opts : &defaults, .opset = opset ? *opset : 0};
  if (c.opset < 11)
    st = wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                 "dynamic quantization needs ai.onnx opset 11 or newer (DynamicQuantizeLinear); "
                 "the model has %lld",
                 (long long)c.opset);
  c.dql = st == WQ_OK ? malloc(sizeof(int) * ((size_t)ir->graph->n_tensors + 1)) : NULL;
  if (st == WQ_OK && !c.dql)
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "dynamic quantization: out of memory");
  for (int t = 0; c.dql && t < ir->graph->n_tensors; t++)
    c.dql[t] = -1;
  /* From the back: a rewrite removes its node and appends the new ones. */
  for (int i = ir->graph->n_nodes - 1; st == WQ_OK && i >= 0; i--) {
    const wq_node *node = &ir->graph->nodes[i];
    const bool target = strcmp(node->op_type, "MatMul") == 0 || strcmp(node->op_type, "Gemm") == 0;
    bool done = false;
    st = rewrite(&c, i, &done, err);
    stats->quantized += done;
    stats->kept += target && !done;
  }
  free(c.dql);
  if (st == WQ_OK && stats->quantized == 0)
    st = wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                 "dynamic quantization: no MatMul or Gemm with a constant 2-D float weight (%d "
                 "kept float)",
                 stats->kept);
  if (st == WQ_OK)
    st = wq_onnx_export(ir, onnx, onnx_len, err);
  wq_format(stats->summary, sizeof stats->summary,
            "dynamic int8, %d of %d MatMul/Gemm quantized (weights %s %s, activations uint8 per "
            "run)",
            stats->quantized, stats->quantized + stats->kept, c.o->uint8_weights ? "uint8" : "int8",
            c.o->per_tensor ? "per tensor" : "per column");
  wq_model_ir_free(ir);
  return st;
}
