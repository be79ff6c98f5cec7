/* Lowering of the conv and matrix-product families onto QConv and QGemm:
 * QDQ Conv / Gemm / MatMul, and the operator-oriented QLinearConv,
 * QLinearMatMul, ConvInteger and MatMulInteger. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

static const char *const CONV_ATTRS[] = {"kernel_shape", "strides",  "pads", "dilations",
                                         "group",        "auto_pad", NULL};

static bool is_8bit(wq_dtype dt) { return dt == WQ_DT_INT8 || dt == WQ_DT_UINT8; }

/* Scale of data element `elem` (row-major) of a quantized tensor. */
static float scale_at(const wq_qparams *qp, int64_t elem) {
  return qp->scale[wq_qparams_index_of(qp, elem)];
}

/* True when qp is per tensor or varies only along `axis` with one
 * parameter per index there (per channel). */
static bool per_tensor_or_axis(const wq_qparams *qp, int axis) {
  if (wq_qparams_is_per_tensor(qp))
    return true;
  return wq_qparams_channel_axis(qp) == axis && qp->block[axis] == 1;
}

/* Output attributes shared by QConv and QGemm. */
static wq_status output_attrs(lower_attrs *a, wq_dtype y_dtype, const lower_sink *sink,
                              wq_error *err) {
  WQ_TRY(lower_attrs_int(a, "y_dtype", y_dtype, err));
  if (!sink)
    return WQ_OK;
  int32_t qmin = y_dtype == WQ_DT_INT8 ? -128 : 0, qmax = y_dtype == WQ_DT_INT8 ? 127 : 255;
  if (sink->act_min != qmin)
    WQ_TRY(lower_attrs_int(a, "act_min", sink->act_min, err));
  if (sink->act_max != qmax)
    WQ_TRY(lower_attrs_int(a, "act_max", sink->act_max, err));
  if (sink->leaky)
    WQ_TRY(lower_attrs_float(a, "act_alpha", sink->act_alpha, err));
  return WQ_OK;
}

/* ---- bias ---------------------------------------------------------------- */

/* Folds a bias into int32 accumulator units: acc_unit[n] is the real value
 * of one accumulator step of output n (s_in * s_w[n] * alpha). An int32 bias
 * dequantized with exactly that scale and zero point 0 is taken as is
 * (beta 1); anything else (float bias, other scale, beta) is requantized with
 * round half to even and said so in `note`. *out is the new [N] tensor, or
 * -1 with a reason. */
static wq_status fold_bias(lower_ctx *c, int bias_float, int64_t N, const float *acc_unit,
                           float beta, const char *base, int *out, char *note, size_t cap,
                           wq_error *err) {
  wq_graph *g = c->g;
  *out = -1;
  const wq_tensor *bf = &g->tensors[bias_float];
  wq_value shape = wq_tensor_value(bf);
  int64_t count = wq_value_numel(&shape);
  bool per_n_shape = count == N && (bf->rank == 1 || (bf->rank == 2 && bf->dims[0] == 1));
  if (count != 1 && !per_n_shape) {
    char ds[96];
    wq_dims_format(bf->dims, bf->rank, ds, sizeof ds);
    lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
              "bias '%s' has shape %s; only a scalar, [N] or [1, N] bias folds into the op",
              bf->name, ds);
    return WQ_OK;
  }
  /* A DequantizeLinear'd constant (live or folded), else a float constant:
   * a folded one holds the real values, which works too. */
  int q = lower_constant_input(c, bias_float, "bias");
  if (q < 0 && !(bf->is_constant && bf->data && bf->dtype == WQ_DT_FLOAT))
    return WQ_OK;
  int32_t *acc = malloc((size_t)(N > 0 ? N : 1) * sizeof *acc);
  if (!acc)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  bool exact = q >= 0 && g->tensors[q].dtype == WQ_DT_INT32 && beta == 1.0f;
  for (int64_t n = 0; n < N; n++) {
    int64_t e = count == 1 ? 0 : n;
    double real;
    if (q >= 0) {
      const wq_tensor *qt = &g->tensors[q];
      const wq_qparams *qp = qt->qparams;
      wq_value qv = wq_tensor_value(qt);
      int64_t code = wq_value_get_int(&qv, e);
      int32_t zp = qp->zero_point[wq_qparams_index_of(qp, e)];
      float s = scale_at(qp, e);
      if (zp != 0 || fabsf(s - acc_unit[n]) > 1e-6f * acc_unit[n])
        exact = false;
      if (exact) {
        acc[n] = (int32_t)code;
        continue;
      }
      real = (double)beta * (double)((float)(code - zp) * s);
    } else {
      real = (double)beta * (double)((const float *)bf->data)[e];
    }
    double v = nearbyint(real / (double)acc_unit[n]);
    if (isnan(v)) { /* a NaN bias (or step): no int32 holds it */
      free(acc);
      lower_why(
          c, WQ_REASON_UNSUPPORTED_ATTR,
          "bias '%s' element %lld is not a number in accumulator steps; it cannot fold to int32",
          bf->name, (long long)e);
      return WQ_OK;
    }
    acc[n] = v > 2147483647.0 ? INT32_MAX : v < -2147483648.0 ? INT32_MIN : (int32_t)v;
  }
  if (exact) {
    /* Every element took the exact path. */
    wq_format(note, cap, "; int32 bias folded as is");
  } else {
    wq_format(note, cap, "; bias '%s' requantized to int32 at s_in*s_w%s", bf->name,
              beta != 1.0f ? " (times beta)" : "");
  }
  int64_t dims[1] = {N};
  int t = lower_add_constant(c, base, "_bias_i32", WQ_DT_INT32, 1, dims, acc,
                             (size_t)(N > 0 ? N : 1) * sizeof(int32_t));
  if (t < 0)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  *out = t;
  return WQ_OK;
}

/* ---- weights --------------------------------------------------------------- */

/* The weight of a matrix product in the canonical [N, K] layout with
 * per-tensor or per-row (output feature) parameters, scaled by alpha. `q` is
 * the int8 constant, [K, N] when `kn`. *out is -1 with a reason when its
 * parameters vary along K. */
static wq_status canonical_weight(lower_ctx *c, int q, bool kn, float alpha, const char *base,
                                  int *out, wq_error *err) {
  wq_graph *g = c->g;
  *out = -1;
  const wq_tensor *qt = &g->tensors[q];
  if (qt->rank != 2 || !is_8bit(qt->dtype)) {
    lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
              "weight '%s' must be a 2-D int8/uint8 constant (is %s, rank %d)", qt->name,
              wq_dtype_name(qt->dtype), qt->rank);
    return WQ_OK;
  }
  const wq_qparams *qp = qt->qparams;
  int n_axis = kn ? 1 : 0;
  if (!per_tensor_or_axis(qp, n_axis)) {
    char desc[160];
    wq_qparams_describe(qp, desc, sizeof desc);
    lower_why(c, WQ_REASON_NO_QPARAMS,
              "weight '%s' has %s; QGemm needs per-tensor or per-output-feature parameters",
              qt->name, desc);
    return WQ_OK;
  }
  if (!kn && alpha == 1.0f) {
    *out = q;
    return WQ_OK;
  }
  const int64_t K = kn ? qt->dims[0] : qt->dims[1], N = kn ? qt->dims[1] : qt->dims[0];
  const bool per_row = !wq_qparams_is_per_tensor(qp);
  const int64_t n_params = per_row ? N : 1;
  /* A check (c->dry) reads the new weight's dims and parameters, never
   * its codes: they are not copied there. */
  uint8_t *data =
      c->dry ? calloc((size_t)(N * K > 0 ? N * K : 1), 1) : malloc((size_t)(N * K > 0 ? N * K : 1));
  float *scales = malloc((size_t)n_params * sizeof *scales);
  int32_t *zps = malloc((size_t)n_params * sizeof *zps);
  if (!data || !scales || !zps) {
    free(data), free(scales), free(zps);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  }
  const uint8_t *src = qt->data;
  if (!c->dry && !kn) {
    memcpy(data, src, (size_t)(N * K));
  } else if (!c->dry) {
    /* [K, N] -> [N, K] in 64 x 64 tiles, so reads and writes both stay in
     * cache (a column-by-column copy of a 1280 x 1000 weight missed on
     * every read). */
    enum { TILE = 64 };
    for (int64_t n0 = 0; n0 < N; n0 += TILE)
      for (int64_t k0 = 0; k0 < K; k0 += TILE)
        for (int64_t n = n0; n < N && n < n0 + TILE; n++)
          for (int64_t k = k0; k < K && k < k0 + TILE; k++)
            data[n * K + k] = src[k * N + n];
  }
  for (int64_t n = 0; n < n_params; n++) {
    int64_t elem = kn ? n : n * K;
    int64_t idx = wq_qparams_index_of(qp, elem);
    scales[n] = qp->scale[idx] * alpha;
    zps[n] = qp->zero_point[idx];
  }
  int64_t dims[2] = {N, K}, scale_dims[2] = {n_params, 1};
  wq_dtype dtype = qt->dtype;
  wq_qparams nq;
  wq_error local;
  wq_error_clear(&local);
  wq_status st = wq_qparams_init_arrays(&nq, dtype, 2, dims, scale_dims, NULL, scales, zps, NULL,
                                        "canonical weight", &local);
  free(scales), free(zps);
  if (st != WQ_OK) {
    free(data);
    if (st == WQ_ERR_OUT_OF_MEMORY)
      return wq_fail(err, st, NULL, "lowering: out of memory");
    lower_why(c, WQ_REASON_UNSUPPORTED_ATTR, "weight '%s' scaled by alpha %g is not usable: %s",
              qt->name, (double)alpha, local.message);
    return WQ_OK;
  }
  int t = lower_add_constant(c, base, "_w_nk", dtype, 2, dims, data, (size_t)(N * K));
  if (t < 0) {
    wq_qparams_free(&nq);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  }
  st = lower_set_qparams(c, t, &nq, err);
  wq_qparams_free(&nq);
  WQ_TRY(st);
  *out = t;
  return WQ_OK;
}

/* Per output channel scale of a weight whose channel axis is 0 (conv, and
 * canonical [N, K]): acc_unit[m] = s_in * s_w[m]. */
static float *acc_units(const wq_qparams *w_qp, int64_t M, int64_t per_m, float s_in) {
  float *u = malloc((size_t)(M > 0 ? M : 1) * sizeof *u);
  if (u)
    for (int64_t m = 0; m < M; m++)
      u[m] = s_in * scale_at(w_qp, m * per_m);
  return u;
}

/* ---- Conv ------------------------------------------------------------------ */

wq_status lower_conv(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int x = lower_activation_input(c, n->inputs[0], "input X");
  if (x < 0)
    return WQ_OK;
  int w = lower_constant_input(c, n->inputs[1], "weight W");
  if (w < 0)
    return WQ_OK;
  const wq_tensor *wt = &g->tensors[w];
  if (!is_8bit(wt->dtype) || wt->rank < 3)
    return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                     "weight '%s' must be an int8/uint8 [M, C/group, k...] constant", wt->name);
  if (!per_tensor_or_axis(wt->qparams, 0)) {
    char desc[160];
    wq_qparams_describe(wt->qparams, desc, sizeof desc);
    return lower_why(c, WQ_REASON_NO_QPARAMS,
                     "weight '%s' has %s; QConv needs per-tensor or per-output-channel", wt->name,
                     desc);
  }
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_LEAKY, &sink))
    return WQ_OK;
  const int64_t M = wt->dims[0];
  wq_value wv = wq_tensor_value(wt);
  const int64_t per_m = M > 0 ? wq_value_numel(&wv) / M : 0;
  char note[200] = "";
  int bias = -1;
  if (n->n_inputs > 2 && n->inputs[2] >= 0) {
    float *units = acc_units(wt->qparams, M, per_m, g->tensors[x].qparams->scale[0]);
    if (!units)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
    wq_status st =
        fold_bias(c, n->inputs[2], M, units, 1.0f, n->name, &bias, note, sizeof note, err);
    free(units);
    WQ_TRY(st);
    if (bias < 0)
      return WQ_OK;
  }
  lower_attrs attrs = {0};
  wq_status st = WQ_OK;
  for (int k = 0; CONV_ATTRS[k] && st == WQ_OK; k++)
    st = lower_attrs_copy(&attrs, n, CONV_ATTRS[k], err);
  if (st == WQ_OK)
    st = output_attrs(&attrs, sink.dtype, &sink, err);
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QConv from Conv");
  lower_absorb_sink(c, &sink, why, sizeof why);
  size_t len = strlen(why);
  wq_format(why + len, sizeof why - len, "%s", note);
  int inputs[3] = {x, w, bias};
  return lower_commit(c, i, WQ_OPID(int8_conv), inputs, bias >= 0 ? 3 : 2, &sink.tensor, 1, &attrs,
                      st, why, done, err);
}

/* ---- Gemm / MatMul --------------------------------------------------------- */

/* The Add that alone reads MatMul output t and adds a constant (a float
 * constant or a dequantized one; its shape is checked when folded), or -1. */
static int bias_add_after(lower_ctx *c, int t) {
  const wq_graph *g = c->g;
  int reader = -1;
  if (g->tensors[t].is_output || lower_consumers(c, t, &reader) != 1 || reader < 0)
    return -1;
  const wq_node *add = &g->nodes[reader];
  if (!wq_node_is(add, WQ_OPID(add)) || add->n_inputs != 2 || add->inputs[0] == add->inputs[1])
    return -1;
  int other = add->inputs[add->inputs[0] == t ? 1 : 0];
  const wq_tensor *ot = &g->tensors[other];
  int p = lower_producer(c, other);
  bool constant = (ot->is_constant && ot->data && ot->dtype == WQ_DT_FLOAT && p < 0) ||
                  (p >= 0 && wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear)) &&
                   g->tensors[g->nodes[p].inputs[0]].is_constant);
  return constant ? reader : -1;
}

/* What a Gemm/MatMul matched: activation A, constant B, the attributes,
 * the Add whose constant becomes its bias (MatMul; -1 none) and the sink. */
typedef struct {
  int a, b, bias_add;
  int64_t trans_a, trans_b;
  float alpha, beta;
  lower_sink sink;
} gemm_match;

/* Matching only: *ok false with a reason (nothing changed); an error only
 * for an attribute of the wrong type. */
LOWER_RULE_PART wq_status match_gemm(lower_ctx *c, int i, gemm_match *m, bool *ok, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool is_gemm = wq_node_is(n, WQ_OPID(gemm));
  *ok = false;
  m->trans_a = m->trans_b = 0;
  m->alpha = m->beta = 1.0f;
  if (is_gemm) {
    WQ_TRY(wq_attr_int(n, "transA", 0, &m->trans_a, err));
    WQ_TRY(wq_attr_int(n, "transB", 0, &m->trans_b, err));
    WQ_TRY(wq_attr_float(n, "alpha", 1.0f, &m->alpha, err));
    WQ_TRY(wq_attr_float(n, "beta", 1.0f, &m->beta, err));
  }
  if ((m->a = lower_activation_input(c, n->inputs[0], "input A")) < 0)
    return WQ_OK;
  if (!is_gemm && g->tensors[n->inputs[1]].rank != 2)
    return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                     "MatMul's B must be a 2-D constant (has rank %d)",
                     g->tensors[n->inputs[1]].rank);
  if ((m->b = lower_constant_input(c, n->inputs[1], "input B")) < 0)
    return WQ_OK;
  if (!(m->alpha > 0.0f) || !isfinite(m->alpha))
    return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                     "alpha %g cannot be folded into positive weight scales", (double)m->alpha);
  if (g->tensors[m->b].rank != 2)
    return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR, "B '%s' must be 2-D", g->tensors[m->b].name);
  /* MatMul -> Add(constant bias) -> [Relu/Clip] -> Q, as PyTorch exports a
   * Linear: the Add becomes the op's bias. */
  m->bias_add = is_gemm ? -1 : bias_add_after(c, n->outputs[0]);
  *ok = lower_output_sink(c, m->bias_add >= 0 ? g->nodes[m->bias_add].outputs[0] : n->outputs[0],
                          LOWER_FUSE_LEAKY, &m->sink);
  return WQ_OK;
}

/* Rewriting: the weight as [N, K] and the bias in accumulator units (either
 * may still refuse: parameters they cannot take, *done stays false), then
 * node i becomes the QGemm absorbing the bias Add and the sink. */
LOWER_RULE_PART wq_status rewrite_gemm(lower_ctx *c, int i, gemm_match *m, bool *done,
                                       wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int w;
  WQ_TRY(canonical_weight(c, m->b, m->trans_b == 0, m->alpha, n->name, &w, err));
  if (w < 0)
    return WQ_OK;
  const int64_t N = g->tensors[w].dims[0], K = g->tensors[w].dims[1];
  char note[200] = "";
  int bias = -1;
  int c_input = wq_node_is(n, WQ_OPID(gemm)) && n->n_inputs > 2 ? n->inputs[2] : -1;
  if (m->bias_add >= 0) {
    const wq_node *add = &g->nodes[m->bias_add];
    c_input = add->inputs[add->inputs[0] == n->outputs[0] ? 1 : 0];
    m->beta = 1.0f;
  }
  if (c_input >= 0 && m->beta != 0.0f) {
    float *units = acc_units(g->tensors[w].qparams, N, K, g->tensors[m->a].qparams->scale[0]);
    if (!units)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
    wq_status st = fold_bias(c, c_input, N, units, m->beta, n->name, &bias, note, sizeof note, err);
    free(units);
    WQ_TRY(st);
    if (bias < 0)
      return WQ_OK;
  }
  lower_attrs attrs = {0};
  wq_status st = output_attrs(&attrs, m->sink.dtype, &m->sink, err);
  if (st == WQ_OK && m->trans_a)
    st = lower_attrs_int(&attrs, "trans_a", 1, err);
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QGemm from %s (weight as [N, K] = [%lld, %lld]%s%s%s)", n->op_type,
            (long long)N, (long long)K, m->trans_b ? "" : ", transposed",
            m->alpha != 1.0f ? ", alpha" : "", m->trans_a ? ", transA" : "");
  if (m->bias_add >= 0) {
    c->absorbed[m->bias_add] = true;
    size_t at = strlen(why);
    wq_format(why + at, sizeof why - at, " + Add '%s' as its bias", g->nodes[m->bias_add].name);
  }
  lower_absorb_sink(c, &m->sink, why, sizeof why);
  size_t len = strlen(why);
  wq_format(why + len, sizeof why - len, "%s", note);
  int inputs[3] = {m->a, w, bias};
  return lower_commit(c, i, WQ_OPID(int8_gemm), inputs, bias >= 0 ? 3 : 2, &m->sink.tensor, 1,
                      &attrs, st, why, done, err);
}

wq_status lower_gemm(lower_ctx *c, int i, bool *done, wq_error *err) {
  gemm_match m;
  bool ok;
  WQ_TRY(match_gemm(c, i, &m, &ok, err));
  return ok ? rewrite_gemm(c, i, &m, done, err) : WQ_OK;
}

/* ---- QLinearConv / QLinearMatMul ------------------------------------------- */

/* Tensor t (an operand or the output of a QLinear op) must carry exactly
 * the parameters the op's own scale/zero-point inputs give it. */
static bool operand_matches(lower_ctx *c, const wq_node *n, int t, int scale_k, int zp_k,
                            int64_t axis) {
  const wq_graph *g = c->g;
  const wq_tensor *tt = &g->tensors[t];
  if (!tt->qparams) {
    lower_why(c, WQ_REASON_NO_QPARAMS, "'%s' has no usable quantization parameters", tt->name);
    return false;
  }
  /* Rebuild the op's own view and compare. */
  wq_node view = *n;
  wq_attr axis_attr = {.name = (char *)"axis", .type = WQ_ATTR_INT, .i = axis};
  int in3[3] = {t, n->inputs[scale_k], n->inputs[zp_k]};
  view.inputs = in3;
  view.n_inputs = 3;
  view.attrs = &axis_attr;
  view.n_attrs = 1;
  view.opset = 13;
  wq_qparams qp;
  if (!lower_node_qparams(c, &view, t, &qp))
    return false;
  bool same = lower_qparams_equal(&qp, tt->qparams);
  wq_qparams_free(&qp);
  if (!same)
    lower_why(c, WQ_REASON_QPARAMS_MISMATCH,
              "'%s' carries other quantization parameters than %s '%s' reads it with", tt->name,
              n->op_type, n->name);
  return same;
}

wq_status lower_qlinear(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool conv = wq_node_is(n, WQ_OPID(qlinear_conv));
  const int y = n->outputs[0];
  if (!operand_matches(c, n, n->inputs[0], 1, 2, 1) ||
      !operand_matches(c, n, n->inputs[3], 4, 5, conv ? 0 : -1) ||
      !operand_matches(c, n, y, 6, 7, 1))
    return WQ_OK;
  const wq_tensor *xt = &g->tensors[n->inputs[0]], *wt = &g->tensors[n->inputs[3]];
  if (!wq_qparams_is_per_tensor(xt->qparams))
    return lower_why(c, WQ_REASON_PER_CHANNEL_ACTIVATION,
                     "input '%s' is quantized per row; int8 activations are per tensor", xt->name);
  if (!wt->is_constant || !wt->data)
    return lower_why(c, WQ_REASON_NOT_CONSTANT, "weight '%s' is not a constant", wt->name);
  const wq_tensor *yt = &g->tensors[y];
  if (!yt->qparams || !wq_qparams_is_per_tensor(yt->qparams))
    return lower_why(c, WQ_REASON_NO_QPARAMS,
                     "output '%s' has no per-tensor quantization parameters", yt->name);
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", yt->dtype, err);
  int inputs[3] = {n->inputs[0], n->inputs[3], -1};
  int n_inputs = 2;
  char why[WQ_LOWER_WHY_MAX];
  if (conv) {
    if (!per_tensor_or_axis(wt->qparams, 0)) {
      lower_attrs_free(&attrs);
      return lower_why(c, WQ_REASON_NO_QPARAMS,
                       "weight '%s' must be per tensor or per output channel", wt->name);
    }
    if (n->n_inputs > 8 && n->inputs[8] >= 0) {
      const wq_tensor *bt = &g->tensors[n->inputs[8]];
      if (!bt->is_constant || !bt->data) {
        lower_attrs_free(&attrs);
        return lower_why(c, WQ_REASON_NOT_CONSTANT, "bias '%s' is not a constant", bt->name);
      }
      inputs[n_inputs++] = n->inputs[8];
    }
    for (int k = 0; CONV_ATTRS[k] && st == WQ_OK; k++)
      st = lower_attrs_copy(&attrs, n, CONV_ATTRS[k], err);
    wq_format(why, sizeof why, "QConv from QLinearConv (same arithmetic)");
  } else {
    int w = -1;
    if (st == WQ_OK)
      st = canonical_weight(c, n->inputs[3], true, 1.0f, n->name, &w, err);
    if (st != WQ_OK || w < 0) {
      lower_attrs_free(&attrs);
      return st;
    }
    inputs[1] = w;
    wq_format(why, sizeof why, "QGemm from QLinearMatMul (weight as [N, K], same arithmetic)");
  }
  return lower_commit(c, i, conv ? WQ_OPID(int8_conv) : WQ_OPID(int8_gemm), inputs, n_inputs, &y, 1,
                      &attrs, st, why, done, err);
}

/* ---- ConvInteger / MatMulInteger ------------------------------------------- */

/* Zero-point-only parameters (unit scales) of an integer operand from the
 * optional zero point input zp_t: per tensor, or per index along `axis`. */
bool lower_zero_point_qparams(lower_ctx *c, int data_t, int zp_t, int axis, wq_qparams *out) {
  const wq_tensor *dt = &c->g->tensors[data_t];
  int64_t scale_dims[WQ_MAX_RANK];
  for (int d = 0; d < WQ_MAX_RANK; d++)
    scale_dims[d] = 1;
  wq_value zp = {.dtype = WQ_DT_UNDEFINED, .rank = -1};
  if (zp_t >= 0) {
    const wq_tensor *zt = &c->g->tensors[zp_t];
    if (!zt->is_constant || !zt->data) {
      lower_why(c, WQ_REASON_NOT_CONSTANT,
                "zero point '%s' is computed at run time (dynamic quantization)", zt->name);
      return false;
    }
    zp = wq_tensor_value(zt);
    int64_t count = wq_value_numel(&zp);
    if (count > 1) {
      if (zt->rank != 1 || axis < 0 || axis >= dt->rank || dt->dims[axis] != count) {
        lower_why(c, WQ_REASON_NO_QPARAMS,
                  "zero point '%s' is neither per tensor nor per output channel", zt->name);
        return false;
      }
      scale_dims[axis] = count;
    }
  }
  if (dt->rank < 0) {
    lower_why(c, WQ_REASON_UNKNOWN_SHAPE, "the shape of '%s' is unknown", dt->name);
    return false;
  }
  wq_error local;
  wq_error_clear(&local);
  if (wq_qparams_init(out, dt->dtype, dt->rank, dt->dims, scale_dims, NULL, NULL,
                      zp_t >= 0 ? &zp : NULL, NULL, dt->name, &local) != WQ_OK) {
    lower_why(c, WQ_REASON_NO_QPARAMS, "zero point of '%s' is not usable: %s", dt->name,
              local.message);
    return false;
  }
  return true;
}

/* Gives tensor t the zero-point-only parameters qp unless it has parameters
 * already, which must then have the same zero points. */
wq_status lower_adopt_zero_point(lower_ctx *c, int t, const wq_qparams *qp, bool *ok,
                                 wq_error *err) {
  const wq_tensor *tt = &c->g->tensors[t];
  *ok = true;
  if (!tt->qparams)
    return lower_set_qparams(c, t, qp, err);
  const wq_qparams *have = tt->qparams;
  bool same = have->dtype == qp->dtype && have->count == qp->count;
  for (int64_t k = 0; same && k < qp->count; k++)
    same = have->zero_point[k] == qp->zero_point[k];
  for (int d = 0; same && d < qp->rank; d++)
    same = have->scale_dims[d] == qp->scale_dims[d];
  if (!same) {
    *ok = false;
    lower_why(c, WQ_REASON_QPARAMS_MISMATCH,
              "'%s' is read with a zero point other than the one it was written with", tt->name);
  }
  return WQ_OK;
}

wq_status lower_integer(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool conv = wq_node_is(n, WQ_OPID(conv_integer));
  int x = n->inputs[0], w = n->inputs[1];
  int x_zp = n->n_inputs > 2 ? n->inputs[2] : -1, w_zp = n->n_inputs > 3 ? n->inputs[3] : -1;
  const wq_tensor *wt = &g->tensors[w];
  if (!wt->is_constant || !wt->data)
    return lower_why(c, WQ_REASON_NOT_CONSTANT, "weight '%s' is not a constant", wt->name);
  if (!conv && wt->rank != 2)
    return lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                     "MatMulInteger's B must be a 2-D constant (has rank %d)", wt->rank);
  if (!is_8bit(g->tensors[x].dtype) || !is_8bit(wt->dtype))
    return lower_why(c, WQ_REASON_UNSUPPORTED_DTYPE, "operands must be int8 or uint8");
  wq_qparams xq, wq;
  if (!lower_zero_point_qparams(c, x, x_zp, -2, &xq))
    return WQ_OK;
  if (!lower_zero_point_qparams(c, w, w_zp, conv ? 0 : 1, &wq)) {
    wq_qparams_free(&xq);
    return WQ_OK;
  }
  bool x_ok = false, w_ok = false;
  wq_status st = lower_adopt_zero_point(c, x, &xq, &x_ok, err);
  if (st == WQ_OK && x_ok)
    st = lower_adopt_zero_point(c, w, &wq, &w_ok, err);
  wq_qparams_free(&xq);
  wq_qparams_free(&wq);
  WQ_TRY(st);
  if (!x_ok || !w_ok)
    return WQ_OK;
  if (!wq_qparams_is_per_tensor(g->tensors[x].qparams))
    return lower_why(c, WQ_REASON_PER_CHANNEL_ACTIVATION, "input '%s' has per-channel zero points",
                     g->tensors[x].name);
  lower_attrs attrs = {0};
  st = lower_attrs_int(&attrs, "y_dtype", WQ_DT_INT32, err);
  int inputs[2] = {x, w};
  const int y = n->outputs[0];
  char why[WQ_LOWER_WHY_MAX];
  if (conv) {
    for (int k = 0; CONV_ATTRS[k] && st == WQ_OK; k++)
      st = lower_attrs_copy(&attrs, n, CONV_ATTRS[k], err);
    wq_format(why, sizeof why,
              "QConv (int32 output) from ConvInteger; the float rescale after it stays float");
  } else {
    int wc = -1;
    if (st == WQ_OK)
      st = canonical_weight(c, w, true, 1.0f, n->name, &wc, err);
    if (st != WQ_OK || wc < 0) {
      lower_attrs_free(&attrs);
      return st;
    }
    inputs[1] = wc;
    wq_format(why, sizeof why,
              "QGemm (int32 output) from MatMulInteger (weight as [N, K]); the float rescale "
              "after it stays float");
  }
  return lower_commit(c, i, conv ? WQ_OPID(int8_conv) : WQ_OPID(int8_gemm), inputs, 2, &y, 1,
                      &attrs, st, why, done, err);
}

wq_status lower_weight_nk(lower_ctx *c, int q, bool kn, float alpha, const char *base, int *out,
                          wq_error *err) {
  return canonical_weight(c, q, kn, alpha, base, out, err);
}
