/* The float rescale of dynamically quantized models, fused into the
 * integer op: QConv / QGemm with int32 output (from ConvInteger /
 * MatMulInteger) -> Cast(to float) -> Mul(constant scale) [-> Add(constant
 * bias)] [-> Relu] becomes one QConvToFloat / QGemmToFloat whose kernel
 * output stage does the Cast, Mul, Add and Relu with the same float32
 * roundings (ops/int8_to_float.c), so no int32 tensor is written and the
 * product runs on the SIMD GEMM. Scale and bias must hold one value, or one
 * per output channel along the channel axis (axis 1 for convs, the last
 * for matrix products). */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

static const char *const CONV_ATTRS[] = {"kernel_shape", "strides",  "pads", "dilations",
                                         "group",        "auto_pad", NULL};

/* The only live reader of t when it is not a graph output and is op_type,
 * else -1. */
static int sole_reader(const lower_ctx *c, int t, int op_id) {
  int first;
  if (t < 0 || c->g->tensors[t].is_output || lower_consumers(c, t, &first) != 1)
    return -1;
  return wq_node_is(&c->g->nodes[first], op_id) ? first : -1;
}

/* The input of binary node b that is not `from`, when it is a float
 * constant broadcasting as one value or as `channels` values along axis
 * `axis` of a rank-`rank` result, without growing it. -1 otherwise. */
static int channel_constant(const lower_ctx *c, const wq_node *b, int from, int rank, int axis,
                            int64_t channels) {
  if (b->n_inputs != 2 || (b->inputs[0] != from) == (b->inputs[1] != from))
    return -1;
  const int k = b->inputs[0] == from ? b->inputs[1] : b->inputs[0];
  const wq_tensor *t = &c->g->tensors[k];
  if (!t->is_constant || !t->data || t->dtype != WQ_DT_FLOAT || t->rank < 0 || t->rank > rank)
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
  const int rank = out->rank, axis = conv ? 1 : rank - 1;
  const int64_t channels = w->dims[0];
  const int cast = sole_reader(c, n->outputs[0], WQ_OPID(cast));
  const wq_attr *to = cast >= 0 ? wq_node_attr(&g->nodes[cast], "to") : NULL;
  if (!to || to->i != WQ_DT_FLOAT)
    return WQ_OK;
  const int cast_out = g->nodes[cast].outputs[0];
  const int mul = sole_reader(c, cast_out, WQ_OPID(mul));
  const int scale =
      mul >= 0 ? channel_constant(c, &g->nodes[mul], cast_out, rank, axis, channels) : -1;
  if (scale < 0)
    return WQ_OK;
  int last = g->nodes[mul].outputs[0], bias = -1;
  const int add = sole_reader(c, last, WQ_OPID(add));
  if (add >= 0)
    bias = channel_constant(c, &g->nodes[add], last, rank, axis, channels);
  if (bias >= 0)
    last = g->nodes[add].outputs[0];
  const int relu = sole_reader(c, last, WQ_OPID(relu));
  if (relu >= 0)
    last = g->nodes[relu].outputs[0];

  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "relu", relu >= 0, err);
  for (int k = 0; conv && CONV_ATTRS[k] && st == WQ_OK; k++)
    st = lower_attrs_copy(&attrs, n, CONV_ATTRS[k], err);
  int inputs[4] = {n->inputs[0], n->inputs[1], scale, bias};
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why,
            "%s (int32 products) from %s; Cast, Mul '%s'%s%s%s%s fused into its float output stage",
            conv ? "QConvToFloat" : "QGemmToFloat", conv ? "ConvInteger" : "MatMulInteger",
            g->nodes[mul].name, bias >= 0 ? ", Add '" : "", bias >= 0 ? g->nodes[add].name : "",
            bias >= 0 ? "'" : "", relu >= 0 ? ", Relu" : "");
  if (st == WQ_OK)
    st = lower_rewrite_node(c, i, conv ? WQ_OPID(int8_conv_to_float) : WQ_OPID(int8_gemm_to_float),
                            inputs, bias >= 0 ? 4 : 3, &last, 1, &attrs, err);
  lower_attrs_free(&attrs);
  WQ_TRY(st);
  c->absorbed[cast] = c->absorbed[mul] = true;
  if (bias >= 0)
    c->absorbed[add] = true;
  if (relu >= 0)
    c->absorbed[relu] = true;
  wq_format(c->why, sizeof c->why, "%s", why);
  return WQ_OK;
}
