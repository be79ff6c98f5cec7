#include "prepare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/op.h"

typedef enum { LIN_CONV, LIN_CONV_TRANSPOSE, LIN_GEMM, LIN_MATMUL } linear_kind;

/* A node computing y = x * W (+ b) with a float constant weight. Channel
 * axes are those of the data input x (in_*) and of the output y (out_*). */
typedef struct {
  linear_kind kind;
  int node;
  int weight;
  int bias;      /* tensor, or -1 when absent */
  int bias_slot; /* input slot a bias goes in, -1 when the op has none (MatMul) */
  bool bias_ok;  /* no bias, or a float constant an output-side fold can rewrite */
  int64_t group;
  bool trans_b;
  float beta; /* Gemm: factor of C */
  int64_t out_channels, in_channels;
  int out_rank, out_axis, in_rank, in_axis;
} linear;

static bool is_op(const wq_node *n, const char *op_type) {
  return strcmp(n->op_type, op_type) == 0 &&
         (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0);
}

static int64_t tensor_numel(const wq_tensor *t) {
  wq_value v = wq_tensor_value(t);
  return wq_value_numel(&v);
}

static bool is_float_constant(const wq_graph *g, int t) {
  if (t < 0)
    return false;
  const wq_tensor *tt = &g->tensors[t];
  int64_t n = tensor_numel(tt);
  return tt->is_constant && !tt->is_input && !tt->is_output && tt->data &&
         tt->dtype == WQ_DT_FLOAT && n >= 0 && tt->nbytes >= (size_t)n * sizeof(float);
}

/* Readers of tensor t: node input slots, plus one if it is a graph output. */
static int tensor_uses(const wq_graph *g, int t) {
  int uses = g->tensors[t].is_output ? 1 : 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      uses += g->nodes[i].inputs[k] == t;
  return uses;
}

static int producer_of(const wq_graph *g, int t) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] == t)
        return i;
  return -1;
}

/* The one node reading t (in any slot), or -1 when t has another reader. */
static int sole_reader(const wq_graph *g, int t) {
  if (t < 0 || tensor_uses(g, t) != 1)
    return -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t)
        return i;
  return -1;
}

/* True when constant c multiplies an operand of rank `rank` per channel
 * along `axis` (`channels` entries) or per tensor: c's shape, right-aligned
 * against the operand's, is 1 everywhere except possibly `channels` at
 * `axis`, and c is not of higher rank (which would widen the result). */
static bool channel_shape_ok(const wq_tensor *c, int rank, int axis, int64_t channels) {
  if (c->rank < 0 || c->rank > rank)
    return false;
  int offset = rank - c->rank;
  for (int i = 0; i < c->rank; i++)
    if (c->dims[i] != 1 && (offset + i != axis || c->dims[i] != channels))
      return false;
  return true;
}

/* The factor of each channel (f[channels]) when channel_shape_ok; false
 * otherwise or when a factor is not finite. */
static bool channel_factors(const wq_tensor *c, int rank, int axis, int64_t channels, double *f) {
  if (!channel_shape_ok(c, rank, axis, channels))
    return false;
  const float *d = c->data;
  bool per_tensor = tensor_numel(c) == 1;
  for (int64_t k = 0; k < channels; k++) {
    f[k] = per_tensor ? d[0] : d[k];
    if (!isfinite(f[k]))
      return false;
  }
  return true;
}

static bool describe_linear(const wq_graph *g, int i, linear *lin) {
  const wq_node *n = &g->nodes[i];
  memset(lin, 0, sizeof *lin);
  lin->node = i;
  lin->bias = lin->bias_slot = -1;
  lin->group = 1;
  lin->beta = 1.0f;
  if (n->n_inputs < 2 || n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0 ||
      !is_float_constant(g, n->inputs[1]) || tensor_numel(&g->tensors[n->inputs[1]]) == 0)
    return false;
  const wq_tensor *x = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
  /* (dtype undefined: not inferred; the float weight makes it float) */
  if (x->dtype != WQ_DT_FLOAT && x->dtype != WQ_DT_UNDEFINED)
    return false;
  lin->weight = n->inputs[1];
  if (is_op(n, "Conv") || is_op(n, "ConvTranspose")) {
    bool transpose = is_op(n, "ConvTranspose");
    if (wq_attr_int(n, "group", 1, &lin->group, NULL) != WQ_OK || lin->group < 1 || w->rank < 3 ||
        w->dims[0] % lin->group != 0 || (x->rank >= 0 && x->rank != w->rank))
      return false;
    lin->kind = transpose ? LIN_CONV_TRANSPOSE : LIN_CONV;
    lin->out_channels = transpose ? w->dims[1] * lin->group : w->dims[0];
    lin->in_channels = transpose ? w->dims[0] : w->dims[1] * lin->group;
    lin->out_rank = lin->in_rank = w->rank;
    lin->out_axis = lin->in_axis = 1;
    lin->bias_slot = 2;
  } else if (is_op(n, "Gemm")) {
    int64_t trans_a, trans_b;
    if (wq_attr_int(n, "transA", 0, &trans_a, NULL) != WQ_OK ||
        wq_attr_int(n, "transB", 0, &trans_b, NULL) != WQ_OK ||
        wq_attr_float(n, "beta", 1.0f, &lin->beta, NULL) != WQ_OK || w->rank != 2)
      return false;
    lin->kind = LIN_GEMM;
    lin->trans_b = trans_b != 0;
    lin->out_channels = w->dims[lin->trans_b ? 0 : 1];
    lin->in_channels = w->dims[lin->trans_b ? 1 : 0];
    lin->out_rank = lin->in_rank = 2;
    lin->out_axis = 1;
    lin->in_axis = trans_a ? 0 : 1;
    lin->bias_slot = 2;
  } else if (is_op(n, "MatMul")) {
    if (w->rank != 2 || x->rank == 0)
      return false;
    lin->kind = LIN_MATMUL;
    lin->out_channels = w->dims[1];
    lin->in_channels = w->dims[0];
    /* A of unknown rank (a Reshape to a computed shape) has rank >= 1: only
     * 1-D constants then count as per channel, which fit any rank. */
    int rank = x->rank < 0 ? 1 : x->rank;
    lin->in_rank = rank;
    lin->in_axis = rank - 1;
    lin->out_rank = rank;
    lin->out_axis = lin->out_rank - 1;
  } else {
    return false;
  }
  lin->bias_ok = true;
  if (lin->bias_slot >= 0 && n->n_inputs > lin->bias_slot && n->inputs[lin->bias_slot] >= 0) {
    lin->bias = n->inputs[lin->bias_slot];
    const wq_tensor *b = &g->tensors[lin->bias];
    /* Conv: [M]. Gemm: C broadcasts to [batch, N]; only a per-tensor or
     * per-column C can be rewritten as one [N] bias. */
    lin->bias_ok = is_float_constant(g, lin->bias) &&
                   (lin->kind == LIN_GEMM ? channel_shape_ok(b, 2, 1, lin->out_channels)
                                          : b->rank == 1 && b->dims[0] == lin->out_channels);
  }
  return true;
}

/* Output and input channel of weight element [a][b][...]. */
static void weight_channels(const linear *lin, const wq_tensor *w, int64_t a, int64_t b,
                            int64_t *oc, int64_t *ic) {
  switch (lin->kind) {
  case LIN_CONV: /* [M, C/group, k...] */
    *oc = a;
    *ic = a / (w->dims[0] / lin->group) * w->dims[1] + b;
    break;
  case LIN_CONV_TRANSPOSE: /* [C, M/group, k...] */
    *oc = a / (w->dims[0] / lin->group) * w->dims[1] + b;
    *ic = a;
    break;
  case LIN_GEMM: /* [K, N], or [N, K] with transB */
    *oc = lin->trans_b ? a : b;
    *ic = lin->trans_b ? b : a;
    break;
  case LIN_MATMUL: /* [K, N] */
    *oc = b;
    *ic = a;
    break;
  }
}

/* A copy of the weight with output channel oc scaled by out_f[oc] and input
 * channel ic by in_f[ic] (either NULL: 1). */
static float *scaled_weight(const wq_graph *g, const linear *lin, const double *out_f,
                            const double *in_f) {
  const wq_tensor *w = &g->tensors[lin->weight];
  int64_t inner = 1;
  for (int d = 2; d < w->rank; d++)
    inner *= w->dims[d];
  float *dst = malloc((size_t)tensor_numel(w) * sizeof *dst);
  if (!dst)
    return NULL;
  const float *src = w->data;
  int64_t e = 0;
  for (int64_t a = 0; a < w->dims[0]; a++)
    for (int64_t b = 0; b < w->dims[1]; b++) {
      int64_t oc = 0, ic = 0; /* weight_channels sets both; gcc -O3 cannot tell */
      weight_channels(lin, w, a, b, &oc, &ic);
      double f = (out_f ? out_f[oc] : 1.0) * (in_f ? in_f[ic] : 1.0);
      for (int64_t k = 0; k < inner; k++, e++)
        dst[e] = (float)((double)src[e] * f);
    }
  return dst;
}

/* A new float constant named after `base` (unique in g) that takes `data`;
 * -1 on allocation failure (data then still the caller's). */
static int add_constant(wq_graph *g, const char *base, const char *suffix, int rank,
                        const int64_t *dims, float *data) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  return wq_graph_add_constant(g, base, suffix, WQ_DT_FLOAT, rank, dims, data,
                               (size_t)n * sizeof(float));
}

/* Parses the node's attributes again after its inputs or attributes changed. */
static wq_status reprepare(wq_node *n, wq_error *err) {
  if (!n->op)
    return WQ_OK;
  if (n->op->free_state && n->op_state)
    n->op->free_state(n->op_state);
  n->op_state = NULL;
  if (n->op->prepare) {
    wq_status st = n->op->prepare(n, err);
    if (st != WQ_OK) {
      wq_error_set_node(err, n->name);
      return st;
    }
  }
  return WQ_OK;
}

/* Points the linear's weight input at `data` (taken): in place when nothing
 * else reads the old weight, else as a new constant. */
static wq_status install_weight(wq_graph *g, const linear *lin, float *data, wq_error *err) {
  wq_tensor *w = &g->tensors[lin->weight];
  if (tensor_uses(g, lin->weight) == 1) {
    free(w->data);
    w->data = data;
    return WQ_OK;
  }
  int64_t dims[WQ_MAX_RANK];
  memcpy(dims, w->dims, sizeof dims);
  char base[200];
  wq_format(base, sizeof base, "%s", w->name);
  int t = add_constant(g, base, "_folded", w->rank, dims, data);
  if (t < 0) {
    free(data);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, g->nodes[lin->node].name, "out of memory");
  }
  g->nodes[lin->node].inputs[1] = t;
  return WQ_OK;
}

/* Makes the linear compute f[oc] * y + shift[oc] (shift NULL: 0) into the
 * output of node `folded` (which read y alone), then removes `folded`. */
static wq_status fold_after(wq_graph *g, const linear *lin, const double *f, const double *shift,
                            int folded, wq_error *err) {
  wq_node *n = &g->nodes[lin->node];
  const char *name = n->name;
  bool with_bias = lin->bias >= 0 || shift;
  float *w = scaled_weight(g, lin, f, NULL);
  float *b = with_bias ? malloc((size_t)lin->out_channels * sizeof *b) : NULL;
  if (!w || (with_bias && !b)) {
    free(w);
    free(b);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, name, "out of memory");
  }
  if (with_bias) {
    const wq_tensor *old = lin->bias >= 0 ? &g->tensors[lin->bias] : NULL;
    bool per_tensor = old && tensor_numel(old) == 1;
    for (int64_t c = 0; c < lin->out_channels; c++) {
      double bc = old ? (double)lin->beta * ((const float *)old->data)[per_tensor ? 0 : c] : 0.0;
      b[c] = (float)(bc * f[c] + (shift ? shift[c] : 0.0));
    }
  }
  /* Every allocation before the first change, so a failure changes nothing
   * that matters (an unread constant at most). The old bias is rewritten in
   * place when only this node reads it and it already has the [N] shape;
   * else a new constant takes the values. */
  const wq_tensor *old_b = lin->bias >= 0 ? &g->tensors[lin->bias] : NULL;
  bool bias_in_place = old_b && tensor_uses(g, lin->bias) == 1 && old_b->rank == 1 &&
                       old_b->dims[0] == lin->out_channels;
  int bias_t = bias_in_place ? lin->bias : -1;
  if (with_bias && !bias_in_place) {
    bias_t = add_constant(g, name, "_bias", 1, &lin->out_channels, b);
    if (bias_t < 0) {
      free(w);
      free(b);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, name, "out of memory");
    }
    n = &g->nodes[lin->node];
    if (n->n_inputs <= lin->bias_slot) {
      int *inputs = realloc(n->inputs, (size_t)(lin->bias_slot + 1) * sizeof *inputs);
      if (!inputs) {
        free(w);
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, name, "out of memory");
      }
      for (int k = n->n_inputs; k <= lin->bias_slot; k++)
        inputs[k] = -1;
      n->inputs = inputs;
      n->n_inputs = lin->bias_slot + 1;
    }
  }
  wq_status st = install_weight(g, lin, w, err);
  if (st != WQ_OK) {
    if (bias_in_place)
      free(b);
    return st;
  }
  n = &g->nodes[lin->node];
  if (bias_in_place) {
    free(g->tensors[bias_t].data);
    g->tensors[bias_t].data = b;
  }
  if (with_bias) {
    n->inputs[lin->bias_slot] = bias_t;
    if (lin->kind == LIN_GEMM)
      for (int k = 0; k < n->n_attrs; k++)
        if (strcmp(n->attrs[k].name, "beta") == 0)
          n->attrs[k].f = 1.0f; /* beta is in the new C */
  }
  n->outputs[0] = g->nodes[folded].outputs[0];
  wq_graph_remove_node(g, folded);
  return reprepare(&g->nodes[lin->node < folded ? lin->node : lin->node - 1], err);
}

/* Makes the linear read x and scale its input channel ic by f[ic], then
 * removes the Mul `folded` (x * f) it read before. */
static wq_status fold_before(wq_graph *g, const linear *lin, const double *f, int x, int folded,
                             wq_error *err) {
  float *w = scaled_weight(g, lin, NULL, f);
  if (!w)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, g->nodes[lin->node].name, "out of memory");
  WQ_TRY(install_weight(g, lin, w, err));
  g->nodes[lin->node].inputs[0] = x;
  wq_graph_remove_node(g, folded);
  return reprepare(&g->nodes[lin->node < folded ? lin->node : lin->node - 1], err);
}

/* BatchNormalization (inference, per channel, constant statistics) after a
 * linear that has (or can take) a bias. */
static wq_status try_fold_batchnorm(wq_graph *g, int i, bool *folded, wq_error *err) {
  const wq_node *n = &g->nodes[i];
  int64_t training = 0, spatial = 1;
  float eps;
  if (n->n_inputs != 5 || n->inputs[0] < 0 || n->outputs[0] < 0 ||
      wq_attr_float(n, "epsilon", 1e-5f, &eps, NULL) != WQ_OK ||
      (n->opset >= 14 && wq_attr_int(n, "training_mode", 0, &training, NULL) != WQ_OK) ||
      (n->opset < 9 && wq_attr_int(n, "spatial", 1, &spatial, NULL) != WQ_OK) || training != 0 ||
      spatial != 1)
    return WQ_OK;
  for (int k = 1; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0)
      return WQ_OK;
  int y = n->inputs[0], p = producer_of(g, y);
  linear lin;
  if (p < 0 || sole_reader(g, y) != i || !describe_linear(g, p, &lin) || lin.bias_slot < 0 ||
      !lin.bias_ok || lin.out_axis != 1)
    return WQ_OK;
  const float *param[4];
  for (int k = 0; k < 4; k++) {
    int t = n->inputs[1 + k];
    if (!is_float_constant(g, t) || tensor_numel(&g->tensors[t]) != lin.out_channels)
      return WQ_OK;
    param[k] = g->tensors[t].data;
  }
  double *f = malloc(2 * (size_t)lin.out_channels * sizeof *f);
  if (!f)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "out of memory");
  double *shift = f + lin.out_channels;
  bool finite = true;
  for (int64_t c = 0; c < lin.out_channels; c++) {
    /* y = gamma * (x - mean) / sqrt(var + eps) + beta = f * x + shift */
    f[c] = (double)param[0][c] / sqrt((double)param[3][c] + (double)eps);
    shift[c] = (double)param[1][c] - (double)param[2][c] * f[c];
    finite = finite && isfinite(f[c]) && isfinite(shift[c]);
  }
  wq_status st = WQ_OK;
  if (finite) {
    st = fold_after(g, &lin, f, shift, i, err);
    *folded = st == WQ_OK;
  }
  free(f);
  return st;
}

/* Folds the Mul `mul` (x * c) into the linear: per output channel after it
 * (x is its output) or per input channel before it. *folded stays false
 * when c's shape is not per channel on that side. */
static wq_status fold_mul_into(wq_graph *g, const linear *lin, int mul, int x, int c, bool after,
                               bool *folded, wq_error *err) {
  int64_t channels = after ? lin->out_channels : lin->in_channels;
  double *f = malloc((size_t)channels * sizeof *f);
  if (!f)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, g->nodes[mul].name, "out of memory");
  wq_status st = WQ_OK;
  if (channel_factors(&g->tensors[c], after ? lin->out_rank : lin->in_rank,
                      after ? lin->out_axis : lin->in_axis, channels, f)) {
    st = after ? fold_after(g, lin, f, NULL, mul, err) : fold_before(g, lin, f, x, mul, err);
    *folded = st == WQ_OK;
  }
  free(f);
  return st;
}

/* Mul by a per-channel or scalar constant after a linear (preferred) or
 * before one. */
static wq_status try_fold_mul(wq_graph *g, int i, wq_quant_prepare_stats *s, bool *folded,
                              wq_error *err) {
  const wq_node *n = &g->nodes[i];
  if (n->n_inputs != 2 || n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0 ||
      n->inputs[1] < 0)
    return WQ_OK;
  int y = n->outputs[0];
  for (int d = 0; d < 2; d++) {
    int x = n->inputs[d], c = n->inputs[1 - d];
    /* x's dtype may not be inferred; Mul's operands share one type */
    if (!is_float_constant(g, c) || g->tensors[x].is_constant)
      continue;
    linear lin;
    int p = producer_of(g, x);
    if (p >= 0 && sole_reader(g, x) == i && describe_linear(g, p, &lin) && lin.bias_ok) {
      WQ_TRY(fold_mul_into(g, &lin, i, x, c, true, folded, err));
      if (*folded) {
        s->mul_folded_after++;
        return WQ_OK;
      }
    }
    int r = sole_reader(g, y);
    if (r >= 0 && g->nodes[r].inputs[0] == y && describe_linear(g, r, &lin) &&
        g->tensors[x].rank == lin.in_rank &&
        g->tensors[x].dims[lin.in_axis] == lin.in_channels /* not widened by c */) {
      WQ_TRY(fold_mul_into(g, &lin, i, x, c, false, folded, err));
      if (*folded) {
        s->mul_folded_before++;
        return WQ_OK;
      }
    }
  }
  return WQ_OK;
}

/* Add of a per-channel or scalar constant after a linear that has (or can
 * take) a bias: CNTK and some converters write the conv bias this way. */
static wq_status try_fold_add(wq_graph *g, int i, bool *folded, wq_error *err) {
  const wq_node *n = &g->nodes[i];
  if (n->n_inputs != 2 || n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0 ||
      n->inputs[1] < 0)
    return WQ_OK;
  for (int d = 0; d < 2; d++) {
    int y = n->inputs[d], c = n->inputs[1 - d], p = producer_of(g, y);
    linear lin;
    if (!is_float_constant(g, c) || p < 0 || sole_reader(g, y) != i ||
        !describe_linear(g, p, &lin) || lin.bias_slot < 0 || !lin.bias_ok)
      continue;
    double *f = malloc(2 * (size_t)lin.out_channels * sizeof *f);
    if (!f)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "out of memory");
    double *shift = f + lin.out_channels;
    wq_status st = WQ_OK;
    if (channel_factors(&g->tensors[c], lin.out_rank, lin.out_axis, lin.out_channels, shift)) {
      for (int64_t k = 0; k < lin.out_channels; k++)
        f[k] = 1.0;
      st = fold_after(g, &lin, f, shift, i, err);
      *folded = st == WQ_OK;
    }
    free(f);
    if (st != WQ_OK || *folded)
      return st;
  }
  return WQ_OK;
}

/* The value of a one-element float constant, or NAN. */
static double scalar_constant(const wq_graph *g, int t) {
  if (!is_float_constant(g, t) || tensor_numel(&g->tensors[t]) != 1)
    return NAN;
  return ((const float *)g->tensors[t].data)[0];
}

static bool near(double v, double want) { return fabs(v - want) <= 1e-6 * fabs(want); }

/* Clip's bounds: inputs 1 and 2 (constants) or, before opset 11, attributes. */
static bool clip_bounds(const wq_graph *g, const wq_node *n, double *lo, double *hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (n->opset < 11) {
    const wq_attr *a = wq_node_attr(n, "min"), *b = wq_node_attr(n, "max");
    *lo = a ? a->f : *lo;
    *hi = b ? b->f : *hi;
    return true;
  }
  if (n->n_inputs > 1 && n->inputs[1] >= 0 && isnan(*lo = scalar_constant(g, n->inputs[1])))
    return false;
  if (n->n_inputs > 2 && n->inputs[2] >= 0 && isnan(*hi = scalar_constant(g, n->inputs[2])))
    return false;
  return true;
}

/* Node i is Add(x, 3); x * Clip(x + 3, 0, 6) / 6 after it becomes
 * HardSwish(x), written by the last node of the chain. */
static wq_status try_fuse_hardswish(wq_graph *g, int i, bool raise_opset, bool *fused,
                                    wq_error *err) {
  const wq_node *add = &g->nodes[i];
  if (add->opset < 14 && !raise_opset)
    return WQ_OK; /* HardSwish would be newer than the model's opset */
  if (add->n_inputs != 2 || add->n_outputs != 1 || add->outputs[0] < 0)
    return WQ_OK;
  int x = near(scalar_constant(g, add->inputs[1]), 3.0)   ? add->inputs[0]
          : near(scalar_constant(g, add->inputs[0]), 3.0) ? add->inputs[1]
                                                          : -1;
  if (x < 0 || g->tensors[x].dtype != WQ_DT_FLOAT)
    return WQ_OK;
  int clip = sole_reader(g, add->outputs[0]);
  double lo, hi;
  if (clip < 0 || !is_op(&g->nodes[clip], "Clip") || g->nodes[clip].inputs[0] != add->outputs[0] ||
      !clip_bounds(g, &g->nodes[clip], &lo, &hi) || lo != 0.0 || !near(hi, 6.0))
    return WQ_OK;
  int mul = sole_reader(g, g->nodes[clip].outputs[0]);
  if (mul < 0 || !is_op(&g->nodes[mul], "Mul") || g->nodes[mul].n_inputs != 2)
    return WQ_OK;
  const wq_node *m = &g->nodes[mul];
  if (!(m->inputs[0] == x && m->inputs[1] == g->nodes[clip].outputs[0]) &&
      !(m->inputs[1] == x && m->inputs[0] == g->nodes[clip].outputs[0]))
    return WQ_OK;
  int last = sole_reader(g, m->outputs[0]);
  if (last < 0 || g->nodes[last].n_inputs != 2 || g->nodes[last].inputs[0] != m->outputs[0])
    return WQ_OK;
  double k = scalar_constant(g, g->nodes[last].inputs[1]);
  if (!((is_op(&g->nodes[last], "Div") && near(k, 6.0)) ||
        (is_op(&g->nodes[last], "Mul") && near(k, 1.0 / 6.0))))
    return WQ_OK;
  /* The last node becomes HardSwish(x); the three before it go. */
  wq_node *h = &g->nodes[last];
  const wq_op *op = wq_op_by_id(WQ_OPID(hard_swish));
  char *type = wq_strdup("HardSwish");
  if (!op || !type) {
    free(type);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, h->name, "out of memory");
  }
  if (h->op && h->op->free_state && h->op_state)
    h->op->free_state(h->op_state);
  h->op_state = NULL;
  free(h->op_type);
  h->op_type = type;
  h->inputs[0] = x;
  h->n_inputs = 1;
  for (int a = 0; a < h->n_attrs; a++)
    wq_attr_clear(&h->attrs[a]);
  h->n_attrs = 0;
  h->opset = h->opset < op->min_opset ? op->min_opset : h->opset;
  h->op = op;
  int gone[3] = {mul, clip, i};
  /* Remove from the highest index down so the others stay valid. */
  for (int a = 0; a < 3; a++)
    for (int b = a + 1; b < 3; b++)
      if (gone[b] > gone[a]) {
        int t = gone[a];
        gone[a] = gone[b];
        gone[b] = t;
      }
  for (int a = 0; a < 3; a++)
    wq_graph_remove_node(g, gone[a]);
  *fused = true;
  int at = last;
  for (int a = 0; a < 3; a++)
    at -= gone[a] < last;
  return reprepare(&g->nodes[at], err);
}

wq_status wq_quant_prepare(wq_graph *g, wq_quant_prepare_stats *stats, wq_error *err) {
  return wq_quant_prepare_ex(g, false, stats, err);
}

wq_status wq_quant_prepare_ex(wq_graph *g, bool raise_opset, wq_quant_prepare_stats *stats,
                              wq_error *err) {
  wq_quant_prepare_stats s = {0};
  wq_status st = WQ_OK;
  /* Passes in node order until one folds nothing. Within a pass the scan
   * resumes at node i after folding it away (Conv -> BN -> Mul folds the
   * Mul next); a fold can also enable an earlier node (x -> Mul -> Mul ->
   * Conv), which the next pass takes. */
  for (bool again = true; again && st == WQ_OK;) {
    again = false;
    for (int i = 0; i < g->n_nodes && st == WQ_OK;) {
      bool folded = false;
      if (is_op(&g->nodes[i], "BatchNormalization")) {
        st = try_fold_batchnorm(g, i, &folded, err);
        s.batchnorm_folded += folded;
      } else if (is_op(&g->nodes[i], "Mul")) {
        st = try_fold_mul(g, i, &s, &folded, err);
      } else if (is_op(&g->nodes[i], "Add")) {
        st = try_fold_add(g, i, &folded, err);
        s.add_folded_after += folded;
        if (st == WQ_OK && !folded) {
          st = try_fuse_hardswish(g, i, raise_opset, &folded, err);
          s.hardswish_fused += folded;
        }
      }
      again = again || folded;
      i += !folded;
    }
  }
  for (int i = 0; i < g->n_nodes; i++)
    s.linear_bias_adds += wq_quant_is_linear_bias_add(g, i);
  if (stats)
    *stats = s;
  return st;
}

bool wq_quant_is_linear_bias_add(const wq_graph *g, int add_node) {
  if (add_node < 0 || add_node >= g->n_nodes)
    return false;
  const wq_node *n = &g->nodes[add_node];
  if (!is_op(n, "Add") || n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
    return false;
  for (int d = 0; d < 2; d++) {
    int y = n->inputs[d], b = n->inputs[1 - d];
    int p = producer_of(g, y);
    linear lin;
    if (p >= 0 && is_op(&g->nodes[p], "MatMul") && sole_reader(g, y) == add_node &&
        describe_linear(g, p, &lin) && is_float_constant(g, b) &&
        channel_shape_ok(&g->tensors[b], lin.out_rank, lin.out_axis, lin.out_channels) &&
        tensor_numel(&g->tensors[b]) == lin.out_channels)
      return true;
  }
  return false;
}

/* ---- cross-layer equalization -------------------------------------------- */

/* A linear whose weight (and bias, when it has one) only it reads, so both
 * can be rescaled in place; Conv (not transposed) or Gemm reading x on its
 * channel axis 1. */
static bool equalizable(const wq_graph *g, int i, linear *lin) {
  if (!describe_linear(g, i, lin) || !lin->bias_ok || tensor_uses(g, lin->weight) != 1 ||
      (lin->kind != LIN_CONV && lin->kind != LIN_GEMM) || lin->in_axis != 1)
    return false;
  const wq_tensor *b = lin->bias >= 0 ? &g->tensors[lin->bias] : NULL;
  return !b || (tensor_uses(g, lin->bias) == 1 && b->rank == 1);
}

int wq_quant_eq_pairs(const wq_graph *g, wq_quant_eq_pair *out, int max) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    linear a, b;
    if (!equalizable(g, i, &a))
      continue;
    int y = g->nodes[i].outputs[0], r = sole_reader(g, y);
    if (r >= 0 && is_op(&g->nodes[r], "Relu") && g->nodes[r].n_outputs == 1) {
      y = g->nodes[r].outputs[0];
      r = sole_reader(g, y);
    }
    if (r < 0 || !equalizable(g, r, &b) || b.kind != a.kind || g->nodes[r].inputs[0] != y ||
        b.in_channels != a.out_channels)
      continue;
    if (out && n < max) {
      const wq_tensor *w = &g->tensors[b.weight];
      out[n] = (wq_quant_eq_pair){.a = i,
                                  .b = r,
                                  .tensor = y,
                                  .channels = a.out_channels,
                                  .channelwise = b.kind == LIN_CONV && w->dims[1] == 1};
    }
    n++;
  }
  return n;
}

wq_status wq_quant_eq_apply(wq_graph *g, const wq_quant_eq_pair *p, const double *t,
                            wq_error *err) {
  linear a, b;
  describe_linear(g, p->a, &a);
  describe_linear(g, p->b, &b);
  double *inv = malloc((size_t)p->channels * sizeof *inv);
  for (int64_t c = 0; inv && c < p->channels; c++)
    inv[c] = 1.0 / t[c];
  float *wa = scaled_weight(g, &a, t, NULL), *wb = inv ? scaled_weight(g, &b, NULL, inv) : NULL;
  free(inv);
  if (!wa || !wb) {
    free(wa);
    free(wb);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, g->nodes[p->a].name, "out of memory");
  }
  /* Sole readers: the weights and the bias change in place. */
  float *bias = a.bias >= 0 ? g->tensors[a.bias].data : NULL;
  for (int64_t c = 0; bias && c < p->channels; c++)
    bias[c] = (float)((double)bias[c] * t[c]);
  install_weight(g, &a, wa, err);
  install_weight(g, &b, wb, err);
  WQ_TRY(reprepare(&g->nodes[p->a], err));
  return reprepare(&g->nodes[p->b], err);
}
