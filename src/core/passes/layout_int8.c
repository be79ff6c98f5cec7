#include "layout_int8.h"
#include "partition.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/checked.h"
#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "../quant/qparams.h"
#include "lower_internal.h"

typedef struct {
  wq_graph *g;
  int n_original;  /* tensors before the pass: the only ones that get twins */
  int *twin;       /* [n_original] channels-last copy, or -1 */
  bool *nchw_live; /* [n_original] the channels-first tensor is (or will be) written */
  wq_node *order;  /* the new node list */
  int n_order, cap_order;
  wq_layout_stats stats;
} layout_ctx;

wq_status wq_layout_set_note(wq_node *node, const char *note, wq_error *err) {
  return lower_set_why(node, note, err);
}

static bool is_8bit(wq_dtype dt) { return dt == WQ_DT_INT8 || dt == WQ_DT_UINT8; }

/* The op's layout capability (ops/op.h wq_layout_cap). */
static int lcap(const wq_node *n) { return n->op ? n->op->layout : WQ_LCAP_NCHW; }

/* A tensor that may move: 8-bit, rank 3 or 4, static shape (a symbolic
 * batch, dim 0, is fine: both layouts keep it first), no or per-tensor
 * quantization. */
static bool movable(const wq_graph *g, int t) {
  if (t < 0)
    return false;
  const wq_tensor *x = &g->tensors[t];
  if (!is_8bit(x->dtype) || x->rank < 3 || x->rank > 4 || x->is_constant)
    return false;
  for (int d = 1; d < x->rank; d++)
    if (x->dims[d] < 0)
      return false;
  return !x->qparams || wq_qparams_is_per_tensor(x->qparams);
}

/* Bytes of a tensor; per batch item when the batch is symbolic. Capped at
 * 2^40 (no tensor that large runs) so that the planner's sums over a graph's
 * tensors stay inside int64 whatever dims a model declares. */
#define TENSOR_BYTES_CAP ((int64_t)1 << 40)
static int64_t tensor_bytes(const wq_tensor *t) {
  int64_t n = (int64_t)wq_dtype_size(t->dtype);
  for (int d = 0; d < t->rank; d++)
    if (!wq_mul_i64(n, t->dims[d] < 0 ? 1 : t->dims[d], &n) || n > TENSOR_BYTES_CAP)
      return TENSOR_BYTES_CAP;
  return n;
}

/* A new tensor shaped like t in the other layout, with t's qparams. */
static int add_twin(layout_ctx *c, int t, bool to_nhwc, wq_error *err) {
  wq_graph *g = c->g;
  char name[256];
  wq_format(name, sizeof name, "%s%s", g->tensors[t].name, to_nhwc ? "_nhwc" : "_nchw");
  for (int k = 2; wq_graph_find_tensor(g, name) >= 0; k++)
    wq_format(name, sizeof name, "%s%s_%d", g->tensors[t].name, to_nhwc ? "_nhwc" : "_nchw", k);
  int u = wq_graph_add_tensor(g, name);
  if (u < 0) {
    wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
    return -1;
  }
  const wq_tensor *src = &g->tensors[t];
  wq_tensor *dst = &g->tensors[u];
  dst->dtype = src->dtype;
  dst->rank = src->rank;
  dst->layout = (wq_layout){.order = to_nhwc ? WQ_ORDER_CHANNELS_LAST : WQ_ORDER_DECLARED};
  memcpy(dst->dims, src->dims, sizeof dst->dims); /* logical dims: the same in every layout */
  if (src->qparams) {
    dst->qparams = calloc(1, sizeof *dst->qparams);
    if (!dst->qparams || wq_qparams_clone(dst->qparams, src->qparams, err) != WQ_OK) {
      free(dst->qparams);
      dst->qparams = NULL;
      wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
      return -1;
    }
  }
  return u;
}

static wq_status push_node(layout_ctx *c, wq_node *n, wq_error *err) {
  if (c->n_order == c->cap_order) {
    int cap = c->cap_order ? 2 * c->cap_order : 16;
    wq_node *grown = realloc(c->order, (size_t)cap * sizeof *grown);
    if (!grown)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
    c->order = grown;
    c->cap_order = cap;
  }
  c->order[c->n_order++] = *n;
  return WQ_OK;
}

/* Appends a wasmq.ToNHWC / ToNCHW node from tensor `from` to `to`. */
static wq_status push_transition(layout_ctx *c, int from, int to, bool to_nhwc, wq_error *err) {
  const wq_op *op = wq_op_by_id(to_nhwc ? WQ_OPID(to_nhwc) : WQ_OPID(to_nchw));
  wq_node n;
  memset(&n, 0, sizeof n);
  char name[300], note[400];
  wq_format(name, sizeof name, "%s_%s", c->g->tensors[from].name, to_nhwc ? "to_nhwc" : "to_nchw");
  int64_t bytes = tensor_bytes(&c->g->tensors[from]);
  wq_format(note, sizeof note, "layout transition %s -> %s of '%s' (%lld bytes%s)",
            to_nhwc ? "NCHW" : "NHWC", to_nhwc ? "NHWC" : "NCHW", c->g->tensors[from].name,
            (long long)bytes, c->g->tensors[from].dims[0] < 0 ? " per batch item" : "");
  n.name = wq_strdup(name);
  n.op_type = wq_strdup(op->op_type);
  n.domain = wq_strdup(op->domain);
  n.opset = 1;
  n.inputs = malloc(sizeof(int));
  n.outputs = malloc(sizeof(int));
  n.op = op;
  wq_status st = WQ_OK;
  if (!n.name || !n.op_type || !n.domain || !n.inputs || !n.outputs)
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  if (st == WQ_OK) {
    n.inputs[0] = from;
    n.n_inputs = 1;
    n.reason = WQ_REASON_TRANSITION;
    n.outputs[0] = to;
    n.n_outputs = 1;
    st = wq_layout_set_note(&n, note, err);
  }
  if (st == WQ_OK)
    st = push_node(c, &n, err);
  if (st != WQ_OK) {
    wq_node_clear(&n);
    return st;
  }
  c->stats.transitions++;
  c->stats.transition_bytes += bytes;
  return WQ_OK;
}

/* The channels-last version of original tensor t, converting it first when
 * needed. */
static wq_status nhwc_of(layout_ctx *c, int t, int *out, wq_error *err) {
  if (c->twin[t] < 0) {
    int u = add_twin(c, t, true, err);
    if (u < 0)
      return WQ_ERR_OUT_OF_MEMORY;
    WQ_TRY(push_transition(c, t, u, true, err));
    c->twin[t] = u;
  }
  *out = c->twin[t];
  return WQ_OK;
}

/* Makes sure original tensor t exists channels-first before its reader. */
static wq_status ensure_nchw(layout_ctx *c, int t, wq_error *err) {
  if (t < 0 || t >= c->n_original || c->nchw_live[t])
    return WQ_OK;
  WQ_TRY(push_transition(c, c->twin[t], t, false, err));
  c->nchw_live[t] = true;
  return WQ_OK;
}

static wq_status add_note(wq_node *n, const char *extra, wq_error *err) {
  const char *why = wq_lower_why(n);
  char text[WQ_LOWER_WHY_MAX + 64];
  wq_format(text, sizeof text, "%s%s%s", why ? why : "", why ? "; " : "", extra);
  return wq_layout_set_note(n, text, err);
}

/* A node whose op runs channels-last whenever it can (WQ_LCAP_NHWC_KERNEL:
 * QConv, QAveragePool, QGlobalAveragePool, MaxPool on codes): its kernel
 * follows its input's layout, so the pass only stores input and output
 * channels-last. Outputs besides the first must be omitted (MaxPool's
 * Indices has no channels-last kernel). */
static bool nhwc_kernel_op(const wq_graph *g, const wq_node *n) {
  if (lcap(n) != WQ_LCAP_NHWC_KERNEL || n->n_inputs < 1 || !movable(g, n->inputs[0]) ||
      n->n_outputs < 1 || n->outputs[0] < 0 || !movable(g, n->outputs[0]))
    return false;
  for (int k = 1; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0)
      return false;
  return true;
}

/* True when tensor t holds a single element: it broadcasts the same way in
 * either layout. */
static bool single_element(const wq_graph *g, int t) {
  if (t < 0 || g->tensors[t].rank < 0)
    return false;
  for (int d = 0; d < g->tensors[t].rank; d++)
    if (g->tensors[t].dims[d] != 1)
      return false;
  return true;
}

static bool has_twin(const layout_ctx *c, int t) {
  return t >= 0 && t < c->n_original && c->twin[t] >= 0 && movable(c->g, t);
}

/* QConcat, and Concat on int8 codes: every input agrees, the axis follows. */
static bool is_concat(const wq_node *n) { return lcap(n) == WQ_LCAP_AGNOSTIC_ALL; }

static bool is_binary(const wq_node *n) { return lcap(n) == WQ_LCAP_AGNOSTIC_BIN; }

/* Input t of agnostic node n has a channels-last twin of the output's rank. */
static bool follows_as_twin(const layout_ctx *c, const wq_node *n, int t) {
  return has_twin(c, t) && c->g->tensors[t].rank == c->g->tensors[n->outputs[0]].rank;
}

/* True when a node still to be placed reads t through a channels-last
 * kernel (so a channels-first t would be converted there). */
static bool read_by_nhwc_kernel(const layout_ctx *c, int t) {
  const wq_graph *g = c->g;
  for (int i = 0; i < g->n_nodes; i++) /* placed nodes are emptied */
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t && nhwc_kernel_op(g, &g->nodes[i]))
        return true;
  return false;
}

/* Activation inputs of a layout-agnostic op when it runs channels-last
 * (QAdd/QMul: single elements stay as they are); 0 when the op is not
 * agnostic or stays channels-first. It follows when every input is already
 * channels-last, or when converting the others moves fewer bytes than
 * converting the channels-last ones back (plus its result, when a
 * channels-last kernel reads it next); ties stay channels-first. */
static int agnostic_inputs(const layout_ctx *c, const wq_node *n) {
  const wq_graph *g = c->g;
  if (n->n_outputs < 1 || n->outputs[0] < 0 || !movable(g, n->outputs[0]))
    return 0;
  int count = 0;
  const bool binary = is_binary(n);
  if (lcap(n) == WQ_LCAP_AGNOSTIC) /* QLookup, Identity */
    count = 1;
  else if (binary)
    count = 2;
  else if (is_concat(n))
    count = n->n_inputs;
  else
    return 0;
  const wq_tensor *out = &g->tensors[n->outputs[0]];
  int twins = 0, others = 0;
  int64_t to_nhwc = 0, to_nchw = 0; /* bytes each choice converts */
  for (int k = 0; k < count; k++) {
    int t = n->inputs[k];
    /* Binary ops broadcast: equal ranks keep numpy's rules valid after
     * both shapes are permuted alike. */
    if (follows_as_twin(c, n, t)) {
      twins++;
      to_nchw += c->nchw_live[t] ? 0 : tensor_bytes(&g->tensors[t]);
    } else if (binary && single_element(g, t)) {
      continue; /* broadcasts the same way in either layout */
    } else if (t >= 0 && t < c->n_original && movable(g, t) && g->tensors[t].rank == out->rank) {
      others++;
      to_nhwc += tensor_bytes(&g->tensors[t]);
    } else {
      return 0;
    }
  }
  if (twins == 0)
    return 0;
  if (others > 0) {
    if (read_by_nhwc_kernel(c, n->outputs[0]))
      to_nchw += tensor_bytes(out);
    if (to_nhwc >= to_nchw)
      return 0;
  }
  if (is_concat(n)) {
    int64_t axis = 0;
    if (wq_attr_int(n, "axis", 0, &axis, NULL) != WQ_OK)
      return 0;
    if (axis < 0)
      axis += out->rank;
    if (axis != 1)
      return 0;
  }
  return count;
}

/* A data-movement node whose input is already channels-last and whose
 * kernel can follow it (WQ_LCAP_FOLLOW: Resize nearest, DepthToSpace on
 * int8 codes). */
static bool follower_op(const layout_ctx *c, const wq_node *n) {
  const wq_graph *g = c->g;
  if (lcap(n) != WQ_LCAP_FOLLOW || n->n_inputs < 1 || !has_twin(c, n->inputs[0]) ||
      n->n_outputs != 1 || n->outputs[0] < 0 || !movable(g, n->outputs[0]))
    return 0;
  const wq_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
  if (x->rank != y->rank)
    return 0;
  if (wq_node_is(n, WQ_OPID(depth_to_space)))
    return x->rank == 4;
  wq_int8_answer a; /* Resize: nearest, not tf_crop_and_resize */
  if (wq_op_int8_check(g, n, &a) != WQ_REASON_INT8)
    return 0;
  if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) /* N and C stay */
    return 0;
  for (int k = 1; k < n->n_inputs; k++) /* roi, scales, sizes: known when planned */
    if (n->inputs[k] >= 0 && !g->tensors[n->inputs[k]].is_constant)
      return false;
  return true;
}

/* Gives node n a channels-last output twin for its output 0. */
static wq_status twin_output(layout_ctx *c, wq_node *n, wq_error *err) {
  int t = n->outputs[0];
  int u = add_twin(c, t, true, err);
  if (u < 0)
    return WQ_ERR_OUT_OF_MEMORY;
  n->outputs[0] = u;
  c->twin[t] = u;
  c->nchw_live[t] = false;
  c->stats.nodes_nhwc++;
  return WQ_OK;
}

/* Node n (staying channels-first) may read the channels-last twin of its
 * input 0 as it is: the twin holds the same bytes in the same order (every
 * spatial dim is 1, or there is one channel) and n only reshapes them to a
 * shape that does not depend on the input's dims (Flatten with axis <= 1,
 * Reshape to a constant shape without 0 entries). */
static bool reads_twin_as_is(const layout_ctx *c, const wq_node *n) {
  const wq_graph *g = c->g;
  int t = n->n_inputs > 0 ? n->inputs[0] : -1;
  if (!has_twin(c, t) || c->nchw_live[t])
    return false;
  const wq_tensor *x = &g->tensors[t];
  bool spatial_ones = true;
  for (int d = 2; d < x->rank; d++)
    spatial_ones = spatial_ones && x->dims[d] == 1;
  if (!spatial_ones && x->dims[1] != 1)
    return false;
  if (wq_node_is(n, WQ_OPID(flatten))) {
    int64_t axis = 1;
    return wq_attr_int(n, "axis", 1, &axis, NULL) == WQ_OK &&
           (axis == 0 || axis == 1 || axis == -x->rank);
  }
  if (!wq_node_is(n, WQ_OPID(reshape)) || n->n_inputs < 2 || n->inputs[1] < 0)
    return false;
  const wq_tensor *shape = &g->tensors[n->inputs[1]];
  if (!shape->is_constant || !shape->data || shape->dtype != WQ_DT_INT64)
    return false;
  const int64_t *v = shape->data;
  for (size_t k = 0; k < shape->nbytes / sizeof *v; k++)
    if (v[k] == 0)
      return false;
  return true;
}

/* n is op id with a constant per-tensor scale and zero point: it maps each
 * element alone, in any layout. */
static bool plain_qdq(const wq_graph *g, const wq_node *n, int id) {
  return wq_node_is(n, id) && n->n_inputs == 3 && n->inputs[2] >= 0 &&
         g->tensors[n->inputs[1]].is_constant && g->tensors[n->inputs[2]].is_constant &&
         single_element(g, n->inputs[1]);
}

/* A node whose int8 codes in and float result out may both be channels-last
 * (WQ_LCAP_NHWC_FLOAT: QConvToFloat) when every reader of the result is a
 * QuantizeLinear with plain parameters whose codes may move: those then
 * quantize the channels-last floats into channels-last codes, so the int8
 * path stays channels-last without a float transition (there is none). */
static bool nhwc_float_op(const layout_ctx *c, const wq_node *n) {
  const wq_graph *g = c->g;
  if (lcap(n) != WQ_LCAP_NHWC_FLOAT || n->n_inputs < 1 || !movable(g, n->inputs[0]) ||
      n->n_outputs != 1 || n->outputs[0] < 0)
    return false;
  const int t = n->outputs[0];
  const wq_tensor *y = &g->tensors[t], *x = &g->tensors[n->inputs[0]];
  if (y->is_output || y->dtype != WQ_DT_FLOAT || y->rank != x->rank)
    return false;
  int readers = 0;
  for (int i = 0; i < g->n_nodes; i++) { /* placed nodes are emptied */
    const wq_node *o = &g->nodes[i];
    for (int k = 0; k < o->n_inputs; k++) {
      if (o->inputs[k] != t)
        continue;
      if (k != 0 || !plain_qdq(g, o, WQ_OPID(quantize_linear)) || o->n_outputs != 1 ||
          !movable(g, o->outputs[0]))
        return false;
      readers++;
    }
  }
  return readers > 0;
}

/* A QuantizeLinear reading a channels-last float result (nhwc_float_op
 * checked it) writes channels-last codes. */
static bool quantizes_nhwc_floats(const layout_ctx *c, const wq_node *n) {
  const int t = n->n_inputs > 0 ? n->inputs[0] : -1;
  return wq_node_is(n, WQ_OPID(quantize_linear)) && t >= 0 && t < c->n_original &&
         c->twin[t] >= 0 && c->g->tensors[t].dtype == WQ_DT_FLOAT;
}

/* Places node n: chooses the layout of its activations (the node keeps its
 * op; its kernel follows its tensors' layouts) and inserts the transitions
 * its inputs need. */
static wq_status place_node(layout_ctx *c, wq_node *n, wq_error *err) {
  bool kernel_op = nhwc_kernel_op(c->g, n) || nhwc_float_op(c, n);
  bool follow_op = !kernel_op && (follower_op(c, n) || quantizes_nhwc_floats(c, n));
  int agnostic = kernel_op || follow_op ? 0 : agnostic_inputs(c, n);
  if (follow_op) {
    n->inputs[0] = c->twin[n->inputs[0]];
    for (int k = 1; k < n->n_inputs; k++) /* roi, scales, sizes: constants */
      WQ_TRY(ensure_nchw(c, n->inputs[k], err));
    WQ_TRY(twin_output(c, n, err));
    WQ_TRY(add_note(n, "channels-last (NHWC)", err));
  } else if (kernel_op) {
    int x;
    WQ_TRY(nhwc_of(c, n->inputs[0], &x, err));
    for (int k = 1; k < n->n_inputs; k++) /* weights, bias: layout-free constants */
      WQ_TRY(ensure_nchw(c, n->inputs[k], err));
    n->inputs[0] = x;
    WQ_TRY(twin_output(c, n, err));
    WQ_TRY(add_note(n, "channels-last (NHWC)", err));
  } else if (agnostic) {
    const bool binary = is_binary(n);
    for (int k = 0; k < n->n_inputs; k++) {
      int t = n->inputs[k];
      if (k < agnostic && (follows_as_twin(c, n, t) || !(binary && single_element(c->g, t))))
        WQ_TRY(nhwc_of(c, t, &n->inputs[k], err)); /* converts it when not yet channels-last */
      else
        WQ_TRY(ensure_nchw(c, t, err));
    }
    WQ_TRY(twin_output(c, n, err)); /* a concat's axis stays: it joins channels either way */
    WQ_TRY(add_note(n, "channels-last (NHWC), layout-agnostic", err));
  } else {
    int k = 0;
    if (reads_twin_as_is(c, n)) {
      n->inputs[0] = c->twin[n->inputs[0]];
      WQ_TRY(add_note(n, "reads the channels-last tensor as is (same bytes)", err));
      k = 1;
    }
    for (; k < n->n_inputs; k++)
      WQ_TRY(ensure_nchw(c, n->inputs[k], err));
  }
  return push_node(c, n, err);
}

/* n is op_type with a constant per-tensor scale and zero point (infer
 * checked their values at load), on codes of at most 64 channels: the fused
 * kernel's 4 KB tile then holds >= 64 pixels (with more channels its short
 * quantize/transpose calls cost more than the separate passes: mobilenetv2's
 * 1280-channel DequantizeLinear ran 0.3 ms slower fused). */
static bool plain_boundary(const wq_graph *g, const wq_node *n, int id, int t) {
  return n && plain_qdq(g, n, id) && g->tensors[t].dims[1] <= 64;
}

/* A ToNHWC of a QuantizeLinear's result that nothing else reads, or a ToNCHW
 * read only by a DequantizeLinear, folds into it: the QuantizeLinear then
 * writes a channels-last tensor (its kernel sees the layouts differ and
 * quantizes and transposes in one pass, ops/int8_nhwc.c), the
 * DequantizeLinear reads one. */
static void fold_boundaries(wq_graph *g, wq_layout_stats *stats) {
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *tr = &g->nodes[i], *b = NULL;
    if (tr->reason != WQ_REASON_TRANSITION)
      continue;
    const bool in = tr->op->flags & WQ_OP_FLAG_TO_NHWC;
    const int t = in ? tr->inputs[0] : tr->outputs[0]; /* the channels-first codes */
    int readers = g->tensors[t].is_output;
    for (int j = 0; j < g->n_nodes; j++) {
      wq_node *o = &g->nodes[j];
      for (int k = 0; k < o->n_inputs; k++)
        if (o->inputs[k] == t) {
          readers++;
          b = in ? b : o;
        }
      if (in && o->n_outputs == 1 && o->outputs[0] == t)
        b = o;
    }
    if (readers != 1 ||
        !plain_boundary(g, b, in ? WQ_OPID(quantize_linear) : WQ_OPID(dequantize_linear), t))
      continue;
    if (in)
      b->outputs[0] = tr->outputs[0];
    else
      b->inputs[0] = tr->inputs[0];
    stats->transition_bytes -= tensor_bytes(&g->tensors[t]);
    wq_graph_remove_node(g, i--);
  }
}

wq_status wq_pass_layout_int8(wq_graph *g, wq_layout_stats *stats, wq_error *err) {
  layout_ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.n_original = g->n_tensors;
  c.twin = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
  c.nchw_live = malloc(sizeof(bool) * (size_t)(g->n_tensors + 1));
  if (!c.twin || !c.nchw_live) {
    free(c.twin);
    free(c.nchw_live);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  for (int t = 0; t < g->n_tensors; t++) {
    c.twin[t] = -1;
    c.nchw_live[t] = true;
  }
  /* Nodes move into c.order one by one (transitions interleaved); on
   * failure the rest are moved unchanged so the graph stays whole. */
  wq_status st = WQ_OK;
  int i = 0;
  for (; i < g->n_nodes && st == WQ_OK; i++) {
    wq_node n = g->nodes[i];
    memset(&g->nodes[i], 0, sizeof g->nodes[i]);
    st = place_node(&c, &n, err);
    if (st != WQ_OK && push_node(&c, &n, NULL) != WQ_OK)
      wq_node_clear(&n);
  }
  for (; i < g->n_nodes; i++)
    if (push_node(&c, &g->nodes[i], NULL) != WQ_OK)
      wq_node_clear(&g->nodes[i]);
  for (int k = 0; k < g->n_outputs && st == WQ_OK; k++)
    st = ensure_nchw(&c, g->outputs[k], err);
  free(g->nodes);
  g->nodes = c.order;
  g->n_nodes = c.n_order;
  g->cap_nodes = c.cap_order;
  if (st == WQ_OK)
    fold_boundaries(g, &c.stats);
  free(c.twin);
  free(c.nchw_live);
  if (stats)
    *stats = c.stats;
  return st;
}
