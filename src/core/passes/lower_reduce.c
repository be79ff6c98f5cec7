/* Lowering of ReduceMean on quantized data: DequantizeLinear -> ReduceMean
 * [-> ReduceMean ...] -> QuantizeLinear becomes one QReduceMean on the
 * codes. Exporters write a global pooling over the spatial axes either as
 * one ReduceMean(axes=[2, 3]) or as a chain reducing the last axis twice
 * (the MLPerf Tiny DS-CNN: ReduceMean(axes=[-1], keepdims=0) x 2); the mean
 * of the chain equals the mean over the union of its axes, which QReduceMean
 * takes exactly from the integer sum. The union must be one contiguous block
 * of axes (QReduceMean's [outer, reduced, inner] view). Softmax between a
 * DequantizeLinear and a QuantizeLinear becomes one QLinearSoftmax. */
#include <string.h>

#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

/* Marks in `reduced` (indexed by the current tensor's dims) the axes node n
 * reduces; *keepdims from its attribute. false with a reason. */
static bool reduce_axes(lower_ctx *c, const wq_node *n, int rank, bool *reduced, bool *keepdims) {
  const wq_graph *g = c->g;
  int64_t keep = 1, noop = 0;
  const wq_attr *a = wq_node_attr(n, "keepdims");
  if (a && a->type == WQ_ATTR_INT)
    keep = a->i;
  a = wq_node_attr(n, "noop_with_empty_axes");
  if (a && a->type == WQ_ATTR_INT && n->opset >= 18)
    noop = a->i;
  *keepdims = keep != 0;
  const int64_t *axes = NULL;
  int64_t count = 0;
  if (n->opset < 18) {
    a = wq_node_attr(n, "axes");
    if (a && a->type == WQ_ATTR_INTS) {
      axes = a->ints;
      count = (int64_t)a->count;
    }
  } else if (n->n_inputs > 1 && n->inputs[1] >= 0) {
    const wq_tensor *t = &g->tensors[n->inputs[1]];
    if (!t->is_constant || !t->data || t->dtype != WQ_DT_INT64 || t->rank != 1)
      return lower_no(c, WQ_REASON_NOT_CONSTANT,
                      "ReduceMean '%s': axes are not a constant 1-D int64 tensor", n->name);
    axes = t->data;
    count = t->dims[0];
  }
  for (int d = 0; d < rank; d++)
    reduced[d] = count == 0 && !noop;
  if (count == 0 && noop)
    return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR,
                    "ReduceMean '%s' reduces nothing (noop_with_empty_axes)", n->name);
  for (int64_t k = 0; k < count; k++) {
    int64_t d = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (d < 0 || d >= rank || reduced[d])
      return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR,
                      "ReduceMean '%s': axis %lld is out of range or repeated", n->name,
                      (long long)axes[k]);
    reduced[d] = true;
  }
  return true;
}

/* What a ReduceMean chain matched: its codes, the chain's nodes, the
 * union of the reduced axes (first..last of the input) and the sink. */
typedef struct {
  int x;
  int chain[WQ_MAX_RANK * 2], n_chain;
  int first, last;
  bool keepdims;
  lower_sink sink;
} reduce_match;

/* Matching only: false with a reason (nothing changed). */
LOWER_RULE_PART bool match_reduce_chain(lower_ctx *c, int i, reduce_match *m) {
  wq_graph *g = c->g;
  m->x = lower_activation_input(c, g->nodes[i].inputs[0], "input data");
  if (m->x < 0)
    return false;
  const int rank = g->tensors[m->x].rank;
  if (rank < 1 || rank > WQ_MAX_RANK)
    return lower_no(c, WQ_REASON_UNKNOWN_SHAPE, "input rank is not known at load");
  /* origin[d]: the input axis behind axis d of the current tensor. */
  int origin[WQ_MAX_RANK], cur_rank = rank;
  bool union_reduced[WQ_MAX_RANK] = {false};
  for (int d = 0; d < rank; d++)
    origin[d] = d;
  m->n_chain = 0;
  m->keepdims = true;
  int j = i;
  for (;;) {
    const wq_node *n = &g->nodes[j];
    bool reduced[WQ_MAX_RANK], keep;
    if (!reduce_axes(c, n, cur_rank, reduced, &keep))
      return false;
    if (m->n_chain > 0 && keep != m->keepdims)
      return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR, "ReduceMean chain mixes keepdims values");
    m->keepdims = keep;
    int kept = 0;
    for (int d = 0; d < cur_rank; d++) {
      if (reduced[d])
        union_reduced[origin[d]] = true;
      if (!reduced[d] || keep)
        origin[kept++] = origin[d];
    }
    cur_rank = kept;
    m->chain[m->n_chain++] = j;
    int t = n->outputs[0], reader = -1;
    if (g->tensors[t].is_output || lower_consumers(c, t, &reader) != 1 || reader < 0 ||
        !wq_node_is(&g->nodes[reader], WQ_OPID(reduce_mean)) || m->n_chain == WQ_MAX_RANK * 2)
      break;
    j = reader;
  }
  m->first = m->last = -1;
  for (int d = 0; d < rank; d++)
    if (union_reduced[d]) {
      if (m->first < 0)
        m->first = d;
      m->last = d;
    }
  for (int d = m->first; d <= m->last; d++)
    if (!union_reduced[d])
      return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR, "reduced axes are not one contiguous block");
  return lower_output_sink(c, g->nodes[m->chain[m->n_chain - 1]].outputs[0], LOWER_FUSE_NONE,
                           &m->sink);
}

/* Rewriting: node i becomes the QReduceMean, the rest of the chain and the
 * sink are absorbed. */
LOWER_RULE_PART wq_status rewrite_reduce_chain(lower_ctx *c, int i, const reduce_match *m,
                                               bool *done, wq_error *err) {
  wq_graph *g = c->g;
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", m->sink.dtype, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "first_axis", m->first, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "n_axes", m->last - m->first + 1, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "keepdims", m->keepdims, err);
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "QReduceMean from %d ReduceMean node(s) over axes %d..%d (exact sum)",
            m->n_chain, m->first, m->last);
  for (int k = 1; k < m->n_chain && st == WQ_OK; k++) {
    char absorbed_why[WQ_LOWER_WHY_MAX];
    wq_format(absorbed_why, sizeof absorbed_why, "absorbed into QReduceMean '%s'",
              g->nodes[i].name);
    st = lower_note(c, m->chain[k], absorbed_why, err);
    c->absorbed[m->chain[k]] = true;
    c->stats.nodes_absorbed++;
  }
  lower_absorb_sink(c, &m->sink, why, sizeof why);
  return lower_commit(c, i, WQ_OPID(int8_reduce_mean), &m->x, 1, &m->sink.tensor, 1, &attrs, st,
                      why, done, err);
}

wq_status lower_reduce_mean(lower_ctx *c, int i, bool *done, wq_error *err) {
  reduce_match m;
  return match_reduce_chain(c, i, &m) ? rewrite_reduce_chain(c, i, &m, done, err) : WQ_OK;
}

/* DequantizeLinear -> Softmax -> QuantizeLinear becomes onnxruntime's
 * QLinearSoftmax (one node: the codes dequantized by table, the float
 * Softmax of each row, quantized), reading the scales and zero points the
 * DequantizeLinear and QuantizeLinear read. */
wq_status lower_softmax(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int x = lower_activation_input(c, n->inputs[0], "input");
  if (x < 0)
    return WQ_OK;
  lower_sink sink;
  if (!lower_output_sink(c, n->outputs[0], LOWER_FUSE_NONE, &sink))
    return WQ_OK;
  const wq_node *dq = &g->nodes[lower_producer(c, n->inputs[0])];
  const wq_node *q = &g->nodes[sink.quantize_node];
  int inputs[5] = {x, dq->inputs[1], dq->n_inputs > 2 ? dq->inputs[2] : -1, q->inputs[1],
                   q->n_inputs > 2 ? q->inputs[2] : -1};
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "opset", n->opset, err);
  if (st == WQ_OK)
    st = lower_attrs_copy(&attrs, n, "axis", err);
  char why[WQ_LOWER_WHY_MAX] = "QLinearSoftmax from Softmax (float rows between codes)";
  lower_absorb_sink(c, &sink, why, sizeof why);
  return lower_commit(c, i, WQ_OPID(contrib_qlinear_softmax), inputs, 5, &sink.tensor, 1, &attrs,
                      st, why, done, err);
}

/* The decomposed LayerNorm's middle (QNormalize, ops/int8_reduce.c):
 * d = Sub(DQ(x), DQ(m)) read by Pow(d, 2) (or Mul(d, d)) and Div(d, .);
 * the square -> ReduceMean over trailing axes (keepdims) -> Add(scalar
 * epsilon) -> Sqrt -> that Div -> QuantizeLinear. */
typedef struct {
  int x, m;
  int chain[5]; /* square, ReduceMean, Add, Sqrt, Div: absorbed */
  int n_axes;
  float epsilon;
  lower_sink sink;
} norm_match;

/* t is a float constant of one element; *v its value. */
static bool float_scalar(const wq_graph *g, int t, float *v) {
  if (!wq_op_is_scalar_constant(g, t) || g->tensors[t].dtype != WQ_DT_FLOAT || !g->tensors[t].data)
    return false;
  *v = *(const float *)g->tensors[t].data;
  return true;
}

LOWER_RULE_PART bool match_normalize(lower_ctx *c, int i, norm_match *m) {
  wq_graph *g = c->g;
  const int d = g->nodes[i].outputs[0];
  int *k = m->chain;
  k[0] = k[4] = -1;
  for (int j = i + 1; j < g->n_nodes; j++) {
    const wq_node *n = &g->nodes[j];
    float two;
    if (c->absorbed[j] || n->n_inputs < 2 || n->inputs[0] != d)
      continue;
    if (wq_node_is(n, WQ_OPID(pow)) ? float_scalar(g, n->inputs[1], &two) && two == 2.0f
                                    : wq_node_is(n, WQ_OPID(mul)) && n->inputs[1] == d)
      k[0] = j;
    else if (wq_node_is(n, WQ_OPID(div)))
      k[4] = j;
  }
  static const int chain_ops[] = {WQ_OPID(reduce_mean), WQ_OPID(add), WQ_OPID(sqrt)};
  for (int s = 1; s < 4; s++)
    k[s] =
        k[s - 1] < 0 ? -1 : lower_sole_reader(c, g->nodes[k[s - 1]].outputs[0], chain_ops[s - 1]);
  const int var = k[1] < 0 ? -1 : g->nodes[k[1]].outputs[0];
  const wq_node *add = k[2] < 0 ? NULL : &g->nodes[k[2]];
  if (k[3] < 0 || k[4] < 0 || lower_consumers(c, d, NULL) != 2 || g->tensors[d].is_output ||
      lower_sole_reader(c, g->nodes[k[3]].outputs[0], WQ_OPID(div)) != k[4] ||
      g->nodes[k[4]].inputs[1] != g->nodes[k[3]].outputs[0] ||
      !float_scalar(g, add->inputs[add->inputs[0] == var], &m->epsilon))
    return lower_no(c, WQ_REASON_UNSUPPORTED_OP, "no LayerNorm Sub-Pow-ReduceMean-Add-Sqrt-Div");
  m->x = lower_activation_input(c, g->nodes[i].inputs[0], "input A");
  m->m = m->x < 0 ? -1 : lower_activation_input(c, g->nodes[i].inputs[1], "input B");
  if (m->m < 0)
    return false;
  const wq_tensor *x = &g->tensors[m->x], *mt = &g->tensors[m->m];
  bool reduced[WQ_MAX_RANK], keep;
  const int r = x->rank;
  if (r < 1 || r > WQ_MAX_RANK)
    return lower_no(c, WQ_REASON_UNKNOWN_SHAPE, "LayerNorm rank unknown");
  if (!reduce_axes(c, &g->nodes[k[1]], r, reduced, &keep))
    return false;
  m->n_axes = 0;
  while (m->n_axes < r && reduced[r - 1 - m->n_axes])
    m->n_axes++;
  bool ok = keep && m->n_axes > 0 && mt->rank == r;
  for (int a = 0; ok && a < r; a++)
    ok = (a >= r - m->n_axes || !reduced[a]) && x->dims[a] >= 0 &&
         mt->dims[a] == (a >= r - m->n_axes ? 1 : x->dims[a]);
  if (!ok)
    return lower_no(c, WQ_REASON_UNSUPPORTED_ATTR, "LayerNorm not over trailing axes");
  return lower_output_sink(c, g->nodes[k[4]].outputs[0], LOWER_FUSE_NONE, &m->sink);
}

LOWER_RULE_PART wq_status rewrite_normalize(lower_ctx *c, int i, const norm_match *m, bool *done,
                                            wq_error *err) {
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", m->sink.dtype, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "first_axis", c->g->tensors[m->x].rank - m->n_axes, err);
  if (st == WQ_OK)
    st = lower_attrs_int(&attrs, "n_axes", m->n_axes, err);
  if (st == WQ_OK)
    st = lower_attrs_float(&attrs, "epsilon", m->epsilon, err);
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "absorbed into QNormalize '%s'", c->g->nodes[i].name);
  for (int k = 0; k < 5 && st == WQ_OK; k++) {
    st = lower_note(c, m->chain[k], why, err);
    c->absorbed[m->chain[k]] = true;
    c->stats.nodes_absorbed++;
  }
  wq_format(why, sizeof why, "QNormalize from a LayerNorm's Sub, Pow, ReduceMean, Add, Sqrt, Div");
  lower_absorb_sink(c, &m->sink, why, sizeof why);
  const int inputs[2] = {m->x, m->m};
  return lower_commit(c, i, WQ_OPID(int8_normalize), inputs, 2, &m->sink.tensor, 1, &attrs, st, why,
                      done, err);
}

wq_status lower_normalize(lower_ctx *c, int i, bool *done, wq_error *err) {
  norm_match m;
  return match_normalize(c, i, &m) ? rewrite_normalize(c, i, &m, done, err) : WQ_OK;
}
