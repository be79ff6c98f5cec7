/* The float rescale of dynamically quantized models, fused into the
 * integer op: QConv / QGemm with int32 output (from ConvInteger /
 * MatMulInteger) -> Cast(to float) -> Mul(constant scale) [-> Add(constant
 * bias)] [-> Relu] becomes one QConvToFloat / QGemmToFloat whose kernel
 * output stage does the Cast, Mul, Add and Relu with the same float32
 * roundings (ops/int8_to_float.c), so no int32 tensor is written and the
 * product runs on the SIMD GEMM. Scale and bias must hold one value, or one
 * per output channel along the channel axis (axis 1 for convs, the last
 * for matrix products).
 *
 * Activations quantized at run time (onnxruntime's quantize_dynamic and
 * graph optimizer) become a QGemmToFloat with a float x, quantized by the
 * op at every run:
 *   DynamicQuantizeLinear(x) -> MatMulInteger(xq, B, x_zp, b_zp) -> Cast
 *     -> Mul(., Mul(x_scale, b_scale)) [-> Add(bias)] [-> Relu]
 *   DynamicQuantizeLinear(x) -> MatMulIntegerToFloat(xq, B, x_scale,
 *     b_scale, x_zp, b_zp?, bias?) [-> Relu]
 *   DynamicQuantizeMatMul(x, B, b_scale, b_zp?, bias?) [-> Relu]
 * B a 2-D int8/uint8 constant [K, N] with per-tensor or per-column scale
 * and zero point. The DynamicQuantizeLinear goes once nothing reads it
 * (lower_remove_dead). */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

static const char *const CONV_ATTRS[] = {"kernel_shape", "strides",  "pads", "dilations",
                                         "group",        "auto_pad", NULL};

/* k when it is a float constant broadcasting as one value or as `channels`
 * values along axis `axis` of a rank-`rank` result, without growing it.
 * -1 otherwise. */
static int channel_tensor(const lower_ctx *c, int k, int rank, int axis, int64_t channels) {
  const wq_tensor *t = k >= 0 ? &c->g->tensors[k] : NULL;
  if (!t || !t->is_constant || !t->data || t->dtype != WQ_DT_FLOAT || t->rank < 0 || t->rank > rank)
    return -1;
  int64_t numel = 1;
  for (int d = 0; d < t->rank; d++) {
    const int at = rank - t->rank + d; /* the result axis this dim broadcasts against */
    numel *= t->dims[d];
    if (t->dims[d] != 1 && !(at == axis && t->dims[d] == channels))
      return -1;
  }
  return numel == 1 || numel == channels ? k : -1;
}

/* The input of binary node b that is not `from` (which it must read once). */
static int other_input(const wq_node *b, int from) {
  if (b->n_inputs != 2 || (b->inputs[0] != from) == (b->inputs[1] != from))
    return -1;
  return b->inputs[0] == from ? b->inputs[1] : b->inputs[0];
}

/* The nodes after an integer product that its float output stage takes. */
typedef struct {
  int scale, bias, last;
  bool relu;
  int absorb[5], n_absorb;
} rescale_chain;

/* [Cast(to float) -> Mul(scale) [-> Add(bias)]] [-> Relu] reading t: with
 * `cast` the whole chain, where the scale is a channel constant or, with
 * x_scale >= 0, Mul(x_scale, channel constant) read by that Mul alone;
 * without, only the Relu. false when the Cast chain is not there. */
static bool rescale_chain_of(const lower_ctx *c, int t, bool cast, int rank, int axis,
                             int64_t channels, int x_scale, rescale_chain *m) {
  const wq_graph *g = c->g;
  *m = (rescale_chain){.scale = -1, .bias = -1, .last = t};
  if (cast) {
    const int ci = lower_sole_reader(c, t, WQ_OPID(cast));
    const wq_attr *to = ci >= 0 ? wq_node_attr(&g->nodes[ci], "to") : NULL;
    if (!to || to->i != WQ_DT_FLOAT)
      return false;
    const int cast_out = g->nodes[ci].outputs[0];
    const int mul = lower_sole_reader(c, cast_out, WQ_OPID(mul));
    int s = mul >= 0 ? other_input(&g->nodes[mul], cast_out) : -1;
    if (x_scale >= 0) { /* s = Mul(x_scale, w_scale) */
      const int sm = s >= 0 ? lower_producer(c, s) : -1;
      if (sm < 0 || !wq_node_is(&g->nodes[sm], WQ_OPID(mul)) ||
          lower_sole_reader(c, s, WQ_OPID(mul)) != mul)
        return false;
      m->absorb[m->n_absorb++] = sm;
      s = other_input(&g->nodes[sm], x_scale);
    }
    m->scale = channel_tensor(c, s, rank, axis, channels);
    if (m->scale < 0)
      return false;
    m->absorb[m->n_absorb++] = ci;
    m->absorb[m->n_absorb++] = mul;
    m->last = g->nodes[mul].outputs[0];
    const int add = lower_sole_reader(c, m->last, WQ_OPID(add));
    if (add >= 0)
      m->bias = channel_tensor(c, other_input(&g->nodes[add], m->last), rank, axis, channels);
    if (m->bias >= 0) {
      m->absorb[m->n_absorb++] = add;
      m->last = g->nodes[add].outputs[0];
    }
  }
  const int relu = lower_sole_reader(c, m->last, WQ_OPID(relu));
  if (relu >= 0) {
    m->relu = true;
    m->absorb[m->n_absorb++] = relu;
    m->last = g->nodes[relu].outputs[0];
  }
  return true;
}

/* Node i becomes op (inputs x, w, scale[, bias]) writing the chain's end,
 * absorbing the chain. */
static wq_status rewrite(lower_ctx *c, int i, bool conv, int x, int w, const rescale_chain *m,
                         const char *why, wq_error *err) {
  const wq_node *n = &c->g->nodes[i];
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "relu", m->relu, err);
  for (int k = 0; conv && CONV_ATTRS[k] && st == WQ_OK; k++)
    st = lower_attrs_copy(&attrs, n, CONV_ATTRS[k], err);
  const int inputs[4] = {x, w, m->scale, m->bias};
  if (st == WQ_OK)
    st = lower_rewrite_node(c, i, conv ? WQ_OPID(int8_conv_to_float) : WQ_OPID(int8_gemm_to_float),
                            inputs, m->bias >= 0 ? 4 : 3, &m->last, 1, &attrs, err);
  lower_attrs_free(&attrs);
  WQ_TRY(st);
  for (int k = 0; k < m->n_absorb; k++)
    c->absorbed[m->absorb[k]] = true;
  wq_format(c->why, sizeof c->why, "%s", why);
  return WQ_OK;
}

wq_status lower_float_rescale(lower_ctx *c, int i, bool conv, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  /* Node i has just become a QConv/QGemm with int32 output (its inputs and
   * output are the new op's; in a check, its op and attributes are not). */
  if (n->n_inputs != 2 || n->n_outputs != 1)
    return WQ_OK;
  const wq_tensor *out = &g->tensors[n->outputs[0]], *w = &g->tensors[n->inputs[1]];
  if (out->rank < 1 || w->rank < 1)
    return WQ_OK;
  rescale_chain m;
  if (!rescale_chain_of(c, n->outputs[0], true, out->rank, conv ? 1 : out->rank - 1, w->dims[0], -1,
                        &m))
    return WQ_OK;
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s from %s, rescale fused", conv ? "QConvToFloat" : "QGemmToFloat",
            conv ? "ConvInteger" : "MatMulInteger");
  return rewrite(c, i, conv, n->inputs[0], n->inputs[1], &m, why, err);
}

/* The DynamicQuantizeLinear (of three outputs) writing t, or NULL. */
static const wq_node *dql_of(const lower_ctx *c, int t) {
  const int p = lower_producer(c, t);
  const wq_node *d = p >= 0 ? &c->g->nodes[p] : NULL;
  return d && wq_node_is(d, WQ_OPID(dynamic_quantize_linear)) && d->n_outputs == 3 ? d : NULL;
}

static int input_at(const wq_node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

wq_status lower_dynamic(lower_ctx *c, int i, bool *done, wq_error *err) {
  const wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  const bool fused = wq_node_is(n, WQ_OPID(contrib_dynamic_quantize_matmul));
  const bool to_float = wq_node_is(n, WQ_OPID(contrib_matmul_integer_to_float));
  const bool integer = wq_node_is(n, WQ_OPID(matmul_integer));
  if (!fused && !to_float && !integer)
    return WQ_OK;
  const wq_node *d = fused ? NULL : dql_of(c, n->inputs[0]);
  const int wt = n->inputs[1], y = n->outputs[0];
  const wq_tensor *w = &g->tensors[wt], *yt = &g->tensors[y];
  const int64_t N = w->rank == 2 ? w->dims[1] : 0;
  const int rank = yt->rank > 0 ? yt->rank : 1;
  /* x's scale and zero point must be that DynamicQuantizeLinear's. */
  bool ok = fused || (d && input_at(n, to_float ? 4 : 2) == d->outputs[2] &&
                      (!to_float || n->inputs[2] == d->outputs[1]));
  ok = ok && w->is_constant && w->data && N > 0 &&
       (w->dtype == WQ_DT_INT8 || w->dtype == WQ_DT_UINT8);
  rescale_chain m;
  ok = ok && rescale_chain_of(c, y, integer, rank, rank - 1, N, d ? d->outputs[1] : -1, &m);
  if (ok && !integer) {
    m.scale = channel_tensor(c, n->inputs[fused ? 2 : 3], rank, rank - 1, N);
    const int b = input_at(n, fused ? 4 : 6);
    m.bias = b >= 0 ? channel_tensor(c, b, rank, rank - 1, N) : -1;
    ok = m.scale >= 0 && (b < 0 || m.bias >= 0);
  }
  if (!ok) {
    if (!integer) /* MatMulInteger is tried next as a plain integer product */
      lower_why(c, WQ_REASON_UNSUPPORTED_ATTR, "%s: B, scale, bias not constant%s", n->op_type,
                fused ? "" : " or A not from DQL");
    return WQ_OK;
  }
  const int x = fused ? n->inputs[0] : d->inputs[0];
  wq_value xv = wq_tensor_value(&g->tensors[x]);
  if (!wq_value_shape_known(&xv))
    return lower_why(c, WQ_REASON_UNKNOWN_SHAPE, "'%s' has symbolic dims", g->tensors[x].name);
  wq_qparams wq;
  if (!lower_zero_point_qparams(c, wt, input_at(n, fused ? 3 : to_float ? 5 : 3), 1, &wq))
    return WQ_OK;
  wq_status st = lower_adopt_zero_point(c, wt, &wq, &ok, err);
  wq_qparams_free(&wq);
  WQ_TRY(st);
  int wc = -1;
  if (ok)
    WQ_TRY(lower_weight_nk(c, wt, true, 1.0f, n->name, &wc, err));
  if (wc < 0)
    return WQ_OK;
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QGemmToFloat from %s, x quantized per run", n->op_type);
  WQ_TRY(rewrite(c, i, false, x, wc, &m, why, err));
  *done = true;
  return WQ_OK;
}
