#include "layout_int8.h"
#include "partition.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/checked.h"
#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "../quant/qparams.h"
#include "layout_plan.h"
#include "lower_internal.h"

typedef struct {
  wq_graph *g;
  int n_original;  /* tensors before the pass: the only ones that get twins */
  int *twin;       /* [n_original] channels-last copy, or -1 */
  bool *nchw_live; /* [n_original] the channels-first tensor is (or will be) written */
  wq_node *order;  /* the new node list */
  int64_t *charge; /* [n_original + nodes] what the planner charged each group (0: uncut) */
  int n_order, cap_order;
  wq_layout_stats stats;
} layout_ctx;

const char *wq_layout_why_name(int why) {
  static const char *const names[] = {"NOT_PLANNED", "DECLARED",       "KERNEL_CHANNELS_LAST",
                                      "PLANNED",     "FUSED_BOUNDARY", "AS_WRITTEN",
                                      "TRANSITION"};
  return why > 0 && why < (int)(sizeof names / sizeof *names) ? names[why] : names[0];
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

/* Appends a wasmq.ToNHWC / ToNCHW node from tensor `from` to `to`, a
 * version of original tensor `orig`. */
static wq_status push_transition(layout_ctx *c, int orig, int from, int to, bool to_nhwc,
                                 wq_error *err) {
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
    n.rec.reason = WQ_REASON_TRANSITION;
    n.outputs[0] = to;
    n.n_outputs = 1;
    n.rec.layout_why = WQ_LWHY_TRANSITION;
    n.rec.layout_last = to_nhwc;
    n.rec.planned_bytes = c->charge[orig];
    n.rec.moved_bytes = bytes;
    st = wq_node_set_detail(&n, note, err);
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
    WQ_TRY(push_transition(c, t, t, u, true, err));
    c->twin[t] = u;
  }
  *out = c->twin[t];
  return WQ_OK;
}

/* Makes sure original tensor t exists channels-first before its reader. */
static wq_status ensure_nchw(layout_ctx *c, int t, wq_error *err) {
  if (t < 0 || t >= c->n_original || c->nchw_live[t])
    return WQ_OK;
  WQ_TRY(push_transition(c, t, c->twin[t], t, false, err));
  c->nchw_live[t] = true;
  return WQ_OK;
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

/* QConcat, and Concat on int8 codes: every input agrees, the axis follows. */
static bool is_concat(const wq_node *n) { return lcap(n) == WQ_LCAP_AGNOSTIC_ALL; }

static bool is_binary(const wq_node *n) { return lcap(n) == WQ_LCAP_AGNOSTIC_BIN; }

/* The activation inputs of a layout-agnostic op that may run channels-last
 * (QLookup, Identity: 1; QAdd/QMul: 2, of the output's rank or a single
 * element; a concat on channel axis 1: all), 0 when it must stay
 * channels-first. */
static int agnostic_count(const wq_graph *g, const wq_node *n) {
  if (n->n_outputs < 1 || n->outputs[0] < 0 || !movable(g, n->outputs[0]))
    return 0;
  int count = 0;
  const bool binary = is_binary(n);
  if (lcap(n) == WQ_LCAP_AGNOSTIC)
    count = 1;
  else if (binary)
    count = 2;
  else if (is_concat(n))
    count = n->n_inputs;
  if (count == 0 || n->n_inputs < count)
    return 0;
  const wq_tensor *out = &g->tensors[n->outputs[0]];
  for (int k = 0; k < count; k++) {
    int t = n->inputs[k];
    /* Binary ops broadcast: equal ranks keep numpy's rules valid after
     * both shapes are permuted alike. */
    if (!(binary && single_element(g, t)) && !(movable(g, t) && g->tensors[t].rank == out->rank))
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

/* A data-movement node whose kernel can run channels-last (WQ_LCAP_FOLLOW:
 * Resize nearest, DepthToSpace on int8 codes). */
static bool follower_op(const wq_graph *g, const wq_node *n) {
  if (lcap(n) != WQ_LCAP_FOLLOW || n->n_inputs < 1 || !movable(g, n->inputs[0]) ||
      n->n_outputs != 1 || n->outputs[0] < 0 || !movable(g, n->outputs[0]))
    return false;
  const wq_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
  if (x->rank != y->rank)
    return false;
  if (wq_node_is(n, WQ_OPID(depth_to_space)))
    return x->rank == 4;
  wq_int8_answer a; /* Resize: nearest, not tf_crop_and_resize */
  if (wq_op_int8_check(g, n, &a) != WQ_REASON_INT8)
    return false;
  if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) /* N and C stay */
    return false;
  for (int k = 1; k < n->n_inputs; k++) /* roi, scales, sizes: known when planned */
    if (n->inputs[k] >= 0 && !g->tensors[n->inputs[k]].is_constant)
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

/* A QuantizeLinear (DequantizeLinear) that may write (read) its codes t
 * channels-last, converting the layout in the same pass: plain parameters,
 * codes that may move, at most 64 channels (the fused kernel's 4 KB tile
 * then holds >= 64 pixels; with more channels its short quantize/transpose
 * calls cost more than the separate passes: mobilenetv2's 1280-channel
 * DequantizeLinear ran 0.3 ms slower fused). */
static bool plain_boundary(const wq_graph *g, const wq_node *n, int id, int t) {
  return plain_qdq(g, n, id) && t >= 0 && movable(g, t) && g->tensors[t].dims[1] <= 64;
}

/* A node whose int8 codes in and float result out may both be channels-last
 * (WQ_LCAP_NHWC_FLOAT: QConvToFloat) when every reader of the result is a
 * QuantizeLinear with plain parameters whose codes may move: those then
 * quantize the channels-last floats into channels-last codes, so the int8
 * path stays channels-last without a float transition (there is none). Its
 * kernel computes channels-last: like the conv kernels it is always given
 * that layout. */
static bool nhwc_float_op(const wq_graph *g, const wq_node *n) {
  if (lcap(n) != WQ_LCAP_NHWC_FLOAT || n->n_inputs < 1 || !movable(g, n->inputs[0]) ||
      n->n_outputs != 1 || n->outputs[0] < 0)
    return false;
  const int t = n->outputs[0];
  const wq_tensor *y = &g->tensors[t], *x = &g->tensors[n->inputs[0]];
  if (y->is_output || y->dtype != WQ_DT_FLOAT || y->rank != x->rank)
    return false;
  int readers = 0;
  for (int i = 0; i < g->n_nodes; i++) {
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

/* What a node's layout label decides. Fixed channels-last: the channels-last
 * kernel ops (their SIMD kernels run only channels-last, so they always
 * get it), QConvToFloat with its QuantizeLinears. Free: the layout-agnostic
 * ops, the followers and the boundary Quantize/DequantizeLinear (channels-
 * last there means the layout change is fused into them). Everything else
 * is fixed channels-first. */
enum {
  ROLE_PLAIN,        /* channels-first */
  ROLE_KERNEL,       /* input 0 and output: channels-last */
  ROLE_FLOAT_KERNEL, /* input 0 and float output: channels-last */
  ROLE_QFLOAT,       /* QuantizeLinear of channels-last floats: input 0 and output */
  ROLE_FOLLOW,       /* free: input 0 and output */
  ROLE_AGNOSTIC,     /* free: the agnostic_count inputs (single elements aside) and output */
  ROLE_QUANTIZE,     /* free: output (floats in stay channels-first) */
  ROLE_DEQUANTIZE    /* free: input 0 (floats out stay channels-first) */
};

typedef struct {
  unsigned char *role;   /* [n_nodes] */
  int *count;            /* [n_nodes] ROLE_AGNOSTIC: agnostic_count */
  int *var;              /* [n_nodes] planner variable of a free node, else -1 */
  unsigned char *labels; /* [n_vars] the planner's answer */
  int n_vars;
} layout_roles;

static void roles_free(layout_roles *r) {
  free(r->role);
  free(r->count);
  free(r->var);
  free(r->labels);
}

static bool role_free(int role) { return role >= ROLE_FOLLOW; }

/* Input k of node i takes the node's label. */
static bool arg_follows(const wq_graph *g, const layout_roles *r, int i, const wq_node *n, int k) {
  switch (r->role[i]) {
  case ROLE_KERNEL:
  case ROLE_FLOAT_KERNEL:
  case ROLE_QFLOAT:
  case ROLE_FOLLOW:
  case ROLE_DEQUANTIZE: return k == 0;
  case ROLE_AGNOSTIC: return k < r->count[i] && !(is_binary(n) && single_element(g, n->inputs[k]));
  default: return false;
  }
}

/* Output 0 of node i takes the node's label. */
static bool out_follows(const layout_roles *r, int i) {
  return r->role[i] != ROLE_PLAIN && r->role[i] != ROLE_DEQUANTIZE;
}

/* Input k of node i reads the tensor in whichever layout its producer
 * wrote: Shape and other readers of dims only (WQ_OP_FLAG_SHAPE_ONLY:
 * logical dims are the same in every layout), a single
 * element broadcast by QAdd/QMul, and a tensor whose bytes are the same in
 * both layouts (wq_layout_same_bytes: every spatial dim 1, or one channel)
 * read by QAdd/QMul/QConcat (they read each input through its own layout
 * record, at full speed when its bytes are those of the output's layout) or
 * by Flatten/Reshape/Squeeze/Unsqueeze (they only reinterpret the bytes),
 * and any tensor read by Transpose (it gathers through X's layout record:
 * NCHW -> NHWC of channels-last codes is a copy). Such reads never force a
 * transition. */
static bool reads_as_is(const wq_graph *g, const layout_roles *r, int i, const wq_node *n, int k) {
  const int t = n->inputs[k];
  if (t < 0)
    return false;
  const wq_tensor *x = &g->tensors[t];
  const wq_layout declared = {.order = WQ_ORDER_DECLARED}, last = {.order = WQ_ORDER_CHANNELS_LAST};
  const bool same_bytes = movable(g, t) && wq_layout_same_bytes(declared, last, x->rank, x->dims);
  if (r->role[i] == ROLE_AGNOSTIC)
    return k < r->count[i] && ((is_binary(n) && (single_element(g, t) || same_bytes)) ||
                               (wq_node_is(n, WQ_OPID(int8_concat)) && same_bytes));
  if (r->role[i] != ROLE_PLAIN || k != 0)
    return false;
  return (n->op && (n->op->flags & WQ_OP_FLAG_SHAPE_ONLY)) ||
         (movable(g, t) && wq_node_is(n, WQ_OPID(transpose))) ||
         (same_bytes && (wq_node_is(n, WQ_OPID(flatten)) || wq_node_is(n, WQ_OPID(reshape)) ||
                         wq_node_is(n, WQ_OPID(squeeze)) || wq_node_is(n, WQ_OPID(unsqueeze))));
}

static wq_status roles_classify(const wq_graph *g, layout_roles *r, wq_error *err) {
  const size_t n = (size_t)g->n_nodes + 1;
  r->role = calloc(n, sizeof *r->role);
  r->count = calloc(n, sizeof *r->count);
  r->var = malloc(n * sizeof *r->var);
  bool *float_last = calloc((size_t)g->n_tensors + 1, sizeof *float_last);
  if (!r->role || !r->count || !r->var || !float_last) {
    free(float_last);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  r->n_vars = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *nd = &g->nodes[i];
    int role = ROLE_PLAIN;
    if (nhwc_kernel_op(g, nd)) {
      role = ROLE_KERNEL;
    } else if (nhwc_float_op(g, nd)) {
      role = ROLE_FLOAT_KERNEL;
      float_last[nd->outputs[0]] = true;
    } else if (wq_node_is(nd, WQ_OPID(quantize_linear)) && nd->n_inputs > 0 && nd->inputs[0] >= 0 &&
               float_last[nd->inputs[0]]) {
      role = ROLE_QFLOAT; /* nhwc_float_op checked it */
    } else if (follower_op(g, nd)) {
      role = ROLE_FOLLOW;
    } else if ((r->count[i] = agnostic_count(g, nd)) > 0) {
      role = ROLE_AGNOSTIC;
    } else if (nd->n_outputs == 1 &&
               plain_boundary(g, nd, WQ_OPID(quantize_linear), nd->outputs[0])) {
      role = ROLE_QUANTIZE;
    } else if (nd->n_inputs > 0 &&
               plain_boundary(g, nd, WQ_OPID(dequantize_linear), nd->inputs[0])) {
      role = ROLE_DEQUANTIZE;
    }
    r->role[i] = (unsigned char)role;
    r->var[i] = role_free(role) ? r->n_vars++ : -1;
  }
  free(float_last);
  return WQ_OK;
}

/* The planner member standing for node i's use of a tensor. */
static int member_of(const layout_roles *r, int i, bool follows) {
  if (!follows || r->role[i] == ROLE_PLAIN)
    return WQ_LPLAN_DECLARED;
  return r->var[i] >= 0 ? r->var[i] : WQ_LPLAN_CHANNELS_LAST;
}

/* One group per tensor that may move, weighing its bytes: its producer
 * (a graph input: declared), a graph output (declared) and its readers
 * other than the as-is ones; one per follower (its channels-first kernel's
 * cost). p is initialized here. */
static wq_status roles_problem(const wq_graph *g, const layout_roles *r, wq_lplan *p,
                               wq_error *err) {
  WQ_TRY(wq_lplan_init(p, r->n_vars, g->n_tensors + g->n_nodes, err));
  for (int t = 0; t < g->n_tensors; t++) {
    if (!movable(g, t))
      continue;
    p->weight[t] = tensor_bytes(&g->tensors[t]);
    if (g->tensors[t].is_input || g->tensors[t].is_output)
      WQ_TRY(wq_lplan_add(p, t, WQ_LPLAN_DECLARED, err));
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (r->role[i] == ROLE_FOLLOW) {
      /* Channels-first, Resize and DepthToSpace gather their result element
       * by element (measured slower than a transition of the same bytes;
       * channels-last they copy whole pixels): that costs the bytes they
       * write. */
      const int penalty = g->n_tensors + i;
      p->weight[penalty] = tensor_bytes(&g->tensors[n->outputs[0]]);
      WQ_TRY(wq_lplan_add(p, penalty, r->var[i], err));
      WQ_TRY(wq_lplan_add(p, penalty, WQ_LPLAN_CHANNELS_LAST, err));
    }
    for (int k = 0; k < n->n_outputs; k++)
      if (movable(g, n->outputs[k]))
        WQ_TRY(wq_lplan_add(p, n->outputs[k], member_of(r, i, k == 0 && out_follows(r, i)), err));
    for (int k = 0; k < n->n_inputs; k++)
      if (movable(g, n->inputs[k]) && !reads_as_is(g, r, i, n, k))
        WQ_TRY(wq_lplan_add(p, n->inputs[k], member_of(r, i, arg_follows(g, r, i, n, k)), err));
  }
  return WQ_OK;
}

wq_status wq_layout_problem(const wq_graph *g, wq_lplan *p, int *node_var, wq_error *err) {
  layout_roles r;
  memset(&r, 0, sizeof r);
  memset(p, 0, sizeof *p);
  wq_status st = roles_classify(g, &r, err);
  if (st == WQ_OK)
    st = roles_problem(g, &r, p, err);
  if (st == WQ_OK && node_var)
    memcpy(node_var, r.var, (size_t)g->n_nodes * sizeof *node_var);
  roles_free(&r);
  return st;
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
  return WQ_OK;
}

/* The version of original tensor t its producer wrote (the channels-last
 * twin when the channels-first one is not written). */
static int as_written(const layout_ctx *c, int t) {
  return t >= 0 && t < c->n_original && c->twin[t] >= 0 && !c->nchw_live[t] ? c->twin[t] : t;
}

/* Places node i (moved out of the graph as n) with channels-last label
 * `last`: rewires its inputs to the layouts it reads, inserting the
 * transitions they need before it, and its output to the layout it
 * writes. The node keeps its op; its kernel follows its tensors' layouts. */
static wq_status place_node(layout_ctx *c, const layout_roles *r, int i, bool last, wq_node *n,
                            wq_error *err) {
  const int role = r->role[i];
  bool declared = false;
  for (int k = 0; k < n->n_inputs; k++) {
    const int t = n->inputs[k];
    if (reads_as_is(c->g, r, i, n, k)) {
      if (!n->rec.layout_as_is && !(n->rec.layout_as_is = calloc((size_t)n->n_inputs, 1)))
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
      n->rec.layout_as_is[k] = 1; /* the transitions' needed_by leave it out */
      n->inputs[k] = as_written(c, t);
    } else if (last && arg_follows(c->g, r, i, n, k)) {
      WQ_TRY(nhwc_of(c, t, &n->inputs[k], err)); /* converts it when not yet channels-last */
    } else {
      declared = declared || movable(c->g, t);
      WQ_TRY(ensure_nchw(c, t, err)); /* weights, bias, roi, scales: layout-free constants */
    }
  }
  /* The decision record: the label and why it is that one. */
  for (int k = 0; k < n->n_outputs; k++)
    declared = declared || movable(c->g, n->outputs[k]);
  n->rec.layout_last = last;
  if (role_free(role))
    n->rec.layout_why = last && (role == ROLE_QUANTIZE || role == ROLE_DEQUANTIZE)
                            ? WQ_LWHY_FUSED_BOUNDARY
                            : WQ_LWHY_PLANNED;
  else if (role != ROLE_PLAIN)
    n->rec.layout_why = WQ_LWHY_KERNEL_LAST;
  else
    n->rec.layout_why = declared              ? WQ_LWHY_DECLARED
                        : n->rec.layout_as_is ? WQ_LWHY_AS_WRITTEN
                                              : WQ_LWHY_NOT_PLANNED;
  if (last && role == ROLE_QUANTIZE) {
    WQ_TRY(twin_output(c, n, err));
    c->stats.transitions++; /* fused: it writes channels-last codes from channels-first floats */
  } else if (last && role == ROLE_DEQUANTIZE) {
    c->stats.transitions++; /* fused: it reads channels-last codes into channels-first floats */
  } else if (last && out_follows(r, i)) {
    WQ_TRY(twin_output(c, n, err));
    c->stats.nodes_nhwc++;
  }
  return push_node(c, n, err);
}

wq_status wq_pass_layout_int8(wq_graph *g, wq_layout_stats *stats, wq_error *err) {
  layout_ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.n_original = g->n_tensors;
  layout_roles r;
  memset(&r, 0, sizeof r);
  wq_lplan plan;
  memset(&plan, 0, sizeof plan);
  int64_t planned = 0;
  wq_status st = roles_classify(g, &r, err);
  if (st == WQ_OK)
    st = roles_problem(g, &r, &plan, err);
  if (st == WQ_OK) {
    r.labels = malloc((size_t)r.n_vars + 1);
    c.twin = malloc(sizeof(int) * (size_t)(g->n_tensors + 1));
    c.nchw_live = malloc(sizeof(bool) * (size_t)(g->n_tensors + 1));
    if (!r.labels || !c.twin || !c.nchw_live)
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  int64_t *flip = NULL;
  if (st == WQ_OK)
    st = wq_lplan_solve(&plan, r.labels, &planned, err);
  if (st == WQ_OK && !(flip = malloc(((size_t)r.n_vars + 1) * sizeof *flip)))
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  if (st == WQ_OK) /* each free label's margin, for the decision records */
    st = wq_lplan_flip_costs(&plan, r.labels, flip, err);
  /* What the planner charged each tensor and follower, for the records. */
  if (st == WQ_OK && (!(c.charge = malloc(((size_t)plan.n_groups + 1) * sizeof *c.charge)) ||
                      wq_lplan_charges(&plan, r.labels, c.charge) < 0))
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  wq_lplan_free(&plan);
  if (st != WQ_OK) {
    roles_free(&r);
    free(c.twin);
    free(c.nchw_live);
    free(c.charge);
    free(flip);
    return st;
  }
  for (int t = 0; t < g->n_tensors; t++) {
    c.twin[t] = -1;
    c.nchw_live[t] = true;
  }
  /* Nodes move into c.order one by one (transitions interleaved); on
   * failure the rest are moved unchanged so the graph stays whole. */
  int i = 0;
  for (; i < g->n_nodes && st == WQ_OK; i++) {
    wq_node n = g->nodes[i];
    memset(&g->nodes[i], 0, sizeof g->nodes[i]);
    const bool last = r.var[i] >= 0 ? r.labels[r.var[i]] : r.role[i] != ROLE_PLAIN;
    n.rec.layout_flip = r.var[i] >= 0 ? flip[r.var[i]] : 0;
    n.rec.planned_bytes = c.charge[c.n_original + i]; /* a channels-first follower's gather */
    st = place_node(&c, &r, i, last, &n, err);
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
  roles_free(&r);
  free(c.twin);
  free(c.nchw_live);
  free(c.charge);
  free(flip);
  c.stats.planned_bytes = planned;
  c.stats.free_labels = r.n_vars;
  if (stats)
    *stats = c.stats;
  return st;
}
