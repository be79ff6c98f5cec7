/* The lowering pass driver: capture before folding, attach qparams, try
 * each node in order (the graph stays topologically sorted because nodes
 * are rewritten in place), record why (code and sentence), remove what
 * was absorbed. Strictness is the partition pass's (partition.h). */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

void wq_lower_capture_free(wq_lower_capture *c) {
  if (!c)
    return;
  for (int r = 0; r < c->n_records; r++)
    free(c->records[r].node_name);
  free(c->records);
  free(c);
}

int wq_lower_capture_count(const wq_lower_capture *c) { return c ? c->n_records : 0; }

wq_status wq_lower_capture_new(const wq_graph *g, wq_lower_capture **out, wq_error *err) {
  *out = NULL;
  wq_lower_capture *c = calloc(1, sizeof *c);
  if (!c)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  c->records = calloc((size_t)g->n_nodes + 1, sizeof *c->records);
  if (!c->records) {
    free(c);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (!wq_node_is(n, WQ_OPID(dequantize_linear)) || n->n_inputs < 2 || n->n_outputs < 1 ||
        n->inputs[0] < 0 || n->inputs[1] < 0 || n->outputs[0] < 0)
      continue;
    wq_lower_dq_record *r = &c->records[c->n_records];
    r->float_tensor = n->outputs[0];
    r->q_tensor = n->inputs[0];
    r->scale_tensor = n->inputs[1];
    r->zp_tensor = n->n_inputs > 2 ? n->inputs[2] : -1;
    r->axis = 1;
    r->block_size = 0;
    const wq_attr *a = wq_node_attr(n, "axis");
    if (a && a->type == WQ_ATTR_INT)
      r->axis = a->i;
    a = wq_node_attr(n, "block_size");
    if (a && a->type == WQ_ATTR_INT && n->opset >= 21)
      r->block_size = a->i;
    r->node_name = wq_strdup(n->name);
    if (!r->node_name) {
      wq_lower_capture_free(c);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
    }
    c->n_records++;
  }
  *out = c;
  return WQ_OK;
}

/* The op's capability record picks the rule (ops/op.h wq_int8_kind) after
 * its check said yes. */
static wq_status try_node(lower_ctx *c, int i, bool *done, wq_error *err) {
  const wq_node *n = &c->g->nodes[i];
  wq_int8_answer a;
  if (wq_node_is(n, WQ_OPID(sub))) {
    /* A LayerNorm's centring: no int8 Sub of its own (the check below says
     * why when this does not match). */
    WQ_TRY(lower_normalize(c, i, done, err));
    if (*done)
      return WQ_OK;
  }
  if (wq_op_int8_check(c->g, n, &a) != WQ_REASON_INT8)
    return lower_why(c, a.reason, "%s", a.detail);
  lower_qlinear_operand contrib[LOWER_CONTRIB_MAX_OPERANDS];
  switch (n->op->int8) {
  case WQ_INT8_CONV: return lower_conv(c, i, done, err);
  case WQ_INT8_GEMM: return lower_gemm(c, i, done, err);
  case WQ_INT8_QLINEAR: return lower_qlinear(c, i, done, err);
  case WQ_INT8_CONTRIB:
    if (lower_contrib_operands(n, contrib) > 0)
      return lower_contrib(c, i, done, err);
    break;
  case WQ_INT8_INTEGER: {
    const bool conv = wq_node_is(n, WQ_OPID(conv_integer)); /* before the node is rewritten */
    WQ_TRY(lower_dynamic(c, i, done, err));
    if (*done || c->why[0] || (!conv && !wq_node_is(n, WQ_OPID(matmul_integer))))
      return WQ_OK;
    WQ_TRY(lower_integer(c, i, done, err));
    return *done ? lower_float_rescale(c, i, conv, err) : WQ_OK;
  }
  case WQ_INT8_BINARY: return lower_binary(c, i, done, err);
  case WQ_INT8_POOL: return lower_pool(c, i, done, err);
  case WQ_INT8_CONCAT: return lower_concat(c, i, done, err);
  case WQ_INT8_REDUCE: return lower_reduce_mean(c, i, done, err);
  case WQ_INT8_LOOKUP: return lower_lookup(c, i, done, err);
  case WQ_INT8_MOVE: return lower_data_movement(c, i, done, err);
  case WQ_INT8_SOFTMAX: return lower_softmax(c, i, done, err);
  default: break;
  }
  return lower_why(c, WQ_REASON_UNSUPPORTED_OP, "no int8 lowering for %s", n->op_type);
}

static bool is_int8_domain(const wq_node *n) {
  return n->domain && strcmp(n->domain, WQ_INT8_DOMAIN) == 0;
}

/* True when a float node reads a DequantizeLinear result or feeds a
 * QuantizeLinear: it sits on the quantized path. */
static bool on_quantized_path(const lower_ctx *c, int i) {
  const wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  for (int k = 0; k < n->n_inputs; k++) {
    int p = n->inputs[k] >= 0 ? lower_producer(c, n->inputs[k]) : -1;
    if (p >= 0 && wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear)))
      return true;
  }
  for (int k = 0; k < n->n_outputs; k++)
    for (int j = i + 1; j < g->n_nodes; j++) {
      if (c->absorbed[j] || !wq_node_is(&g->nodes[j], WQ_OPID(quantize_linear)))
        continue;
      if (n->outputs[k] >= 0 && g->nodes[j].inputs[0] == n->outputs[k])
        return true;
    }
  return false;
}

/* Why a Quantize/DequantizeLinear node remains after lowering. */
static void boundary_why(const lower_ctx *c, int i, char *buf, size_t cap) {
  const wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  int t = n->outputs[0];
  if (wq_node_is(n, WQ_OPID(quantize_linear))) {
    int p = lower_producer(c, n->inputs[0]);
    wq_format(buf, cap, "stays: quantizes float '%s' (%s) into the int8 path",
              g->tensors[n->inputs[0]].name,
              p < 0 ? (g->tensors[n->inputs[0]].is_input ? "a graph input" : "a constant")
                    : g->nodes[p].op_type);
    return;
  }
  int reader = -1;
  int readers = t >= 0 ? lower_consumers(c, t, &reader) : 0;
  if (t >= 0 && g->tensors[t].is_output)
    wq_format(buf, cap, "stays: dequantizes the graph output '%s'", g->tensors[t].name);
  else if (reader >= 0)
    wq_format(buf, cap, "stays: %d float reader(s), e.g. %s '%s'", readers,
              g->nodes[reader].op_type, g->nodes[reader].name);
  else
    wq_format(buf, cap, "stays: dequantizes for float readers");
}

/* Two QuantizeLinear nodes of the same float tensor with the same
 * parameters (hoisting creates them, e.g. x -> Q and x -> Flatten -> Q)
 * compute the same codes: readers of the later one read the earlier one. */
static wq_status merge_duplicate_quantize(lower_ctx *c, wq_error *err) {
  wq_graph *g = c->g;
  for (int j = 0; j < g->n_nodes; j++) {
    const wq_node *b = &g->nodes[j];
    if (c->absorbed[j] || !wq_node_is(b, WQ_OPID(quantize_linear)) ||
        g->tensors[b->outputs[0]].is_output)
      continue;
    for (int i = 0; i < j; i++) {
      const wq_node *a = &g->nodes[i];
      if (c->absorbed[i] || !wq_node_is(a, WQ_OPID(quantize_linear)) ||
          a->inputs[0] != b->inputs[0])
        continue;
      const wq_tensor *ya = &g->tensors[a->outputs[0]], *yb = &g->tensors[b->outputs[0]];
      if (!ya->qparams || !yb->qparams || !lower_qparams_equal(ya->qparams, yb->qparams))
        continue;
      for (int k = 0; k < g->n_nodes; k++)
        for (int in = 0; in < g->nodes[k].n_inputs; in++)
          if (g->nodes[k].inputs[in] == b->outputs[0])
            g->nodes[k].inputs[in] = a->outputs[0];
      c->absorbed[j] = true;
      c->stats.nodes_absorbed++;
      char why[WQ_LOWER_WHY_MAX];
      wq_format(why, sizeof why, "removed: the same codes as QuantizeLinear '%s'", a->name);
      WQ_TRY(lower_note(c, j, why, err));
      break;
    }
  }
  return WQ_OK;
}

/* What the lowering folded into each node: per node of the graph as the
 * node loop starts, its op type and inputs then, and the node that
 * absorbed it (-1: none yet, -2: absorbed before the loop). */
typedef struct {
  int n;
  char **op_type;
  int **inputs;
  int *n_inputs;
  int *into;
} lower_sources;

static void sources_free(lower_sources *s) {
  for (int i = 0; i < s->n; i++) {
    if (s->op_type)
      free(s->op_type[i]);
    if (s->inputs)
      free(s->inputs[i]);
  }
  free(s->op_type);
  free(s->inputs);
  free(s->n_inputs);
  free(s->into);
  memset(s, 0, sizeof *s);
}

static wq_status sources_init(lower_sources *s, const lower_ctx *c, wq_error *err) {
  const wq_graph *g = c->g;
  size_t n = (size_t)g->n_nodes + 1;
  s->op_type = calloc(n, sizeof *s->op_type);
  s->inputs = calloc(n, sizeof *s->inputs);
  s->n_inputs = calloc(n, sizeof *s->n_inputs);
  s->into = calloc(n, sizeof *s->into);
  bool ok = s->op_type && s->inputs && s->n_inputs && s->into;
  for (int i = 0; ok && i < g->n_nodes; i++) {
    const wq_node *node = &g->nodes[i];
    s->n = i + 1;
    s->op_type[i] = wq_strdup(node->op_type);
    s->inputs[i] = malloc(sizeof(int) * (size_t)(node->n_inputs + 1));
    ok = s->op_type[i] && s->inputs[i];
    if (ok)
      memcpy(s->inputs[i], node->inputs, sizeof(int) * (size_t)node->n_inputs);
    s->n_inputs[i] = node->n_inputs;
    s->into[i] = c->absorbed[i] ? -2 : -1;
  }
  if (ok)
    return WQ_OK;
  sources_free(s);
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
}

/* Nodes absorbed while node i was lowered are folded into it. */
static void sources_note(lower_sources *s, const lower_ctx *c, int i) {
  for (int j = 0; j < s->n; j++)
    if (j != i && c->absorbed[j] && s->into[j] == -1)
      s->into[j] = i;
}

static bool reads(const wq_node *n, int t) {
  for (int k = 0; k < n->n_inputs; k++)
    if (n->inputs[k] == t)
      return true;
  return false;
}

/* Gives each lowered node's record its sources: op type and
 * name of what it replaced, in order: itself as written, the
 * DequantizeLinear nodes it no longer reads through, the nodes it absorbed. */
static wq_status sources_attach(const lower_sources *s, lower_ctx *c, const bool *lowered,
                                wq_error *err) {
  wq_graph *g = c->g;
  char **list = malloc(sizeof(char *) * 2 * ((size_t)s->n + 1));
  if (!list)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  wq_status st = WQ_OK;
  for (int i = 0; i < s->n && st == WQ_OK; i++) {
    wq_node *n = &g->nodes[i];
    if (!lowered[i] || c->absorbed[i] || !is_int8_domain(n))
      continue;
    int count = 0;
    list[count++] = s->op_type[i];
    list[count++] = g->nodes[i].name;
    for (int k = 0; k < s->n_inputs[i]; k++) {
      int t = s->inputs[i][k];
      int p = t >= 0 ? lower_producer(c, t) : -1;
      if (p >= 0 && p < s->n && wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear)) &&
          !reads(n, t)) {
        list[count++] = s->op_type[p];
        list[count++] = g->nodes[p].name;
      }
    }
    for (int j = 0; j < s->n; j++)
      if (s->into[j] == i) {
        list[count++] = s->op_type[j];
        list[count++] = g->nodes[j].name;
      }
    st = lower_set_sources(n, (const char *const *)list, count, err);
  }
  free(list);
  return st;
}

/* The lowering proper, on the loaded graph or (c->dry) on a check's shadow:
 * attach parameters, move quantization across data movement, then match and
 * rewrite node by node. Only the loaded graph gets the explanations of the
 * nodes left as they are, the source lists and the dead-node sweep. */
static wq_status lower_run(lower_ctx *c, wq_error *err) {
  wq_graph *g = c->g;
  bool *lowered = calloc((size_t)g->n_nodes + 1, sizeof *lowered);
  if (!lowered)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  wq_status st = lower_attach_qparams(c, err);
  if (st == WQ_OK)
    st = lower_move_quantization(c, err);
  if (st == WQ_OK)
    st = merge_duplicate_quantize(c, err);
  lower_sources sources;
  memset(&sources, 0, sizeof sources);
  if (st == WQ_OK && !c->dry)
    st = sources_init(&sources, c, err);
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    if (c->absorbed[i] || is_int8_domain(&g->nodes[i]) || lower_note_of(c, i)) {
      /* Already int8: a wasmq op, or moved onto int8 data above. */
      lowered[i] = true;
      continue;
    }
    c->why[0] = '\0';
    c->reason = WQ_REASON_NONE;
    bool done = false;
    if (wq_node_is(&g->nodes[i], WQ_OPID(dequantize_linear)))
      continue; /* explained once the others are done */
    if (wq_node_is(&g->nodes[i], WQ_OPID(quantize_linear))) {
      st = lower_requantize(c, i, &done, err);
      if (!c->dry)
        sources_note(&sources, c, i);
      if (st == WQ_OK && done && !c->absorbed[i]) {
        lowered[i] = true;
        c->stats.nodes_lowered++;
        g->nodes[i].rec.reason = WQ_REASON_INT8;
        st = lower_note(c, i, c->why, err);
      }
      continue; /* otherwise explained once the others are done */
    }
    st = try_node(c, i, &done, err);
    if (st != WQ_OK)
      break;
    if (!c->dry)
      sources_note(&sources, c, i);
    lowered[i] = done;
    if (done)
      c->stats.nodes_lowered++;
    g->nodes[i].rec.reason = done ? WQ_REASON_INT8 : c->reason;
    char buf[WQ_LOWER_WHY_MAX + 16];
    wq_format(buf, sizeof buf, "%s%s", done ? "" : "stays float: ", c->why);
    st = lower_note(c, i, buf, err);
  }
  if (c->dry) {
    free(lowered);
    return st;
  }
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    wq_node *n = &g->nodes[i];
    if (c->absorbed[i] || wq_lower_why(n))
      continue;
    char buf[WQ_LOWER_WHY_MAX];
    boundary_why(c, i, buf, sizeof buf);
    st = wq_node_set_detail(n, buf, err);
  }
  /* Nodes on the quantized path that stayed float (counted only). */
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &g->nodes[i];
    if (c->absorbed[i] || lowered[i] || wq_node_is(n, WQ_OPID(quantize_linear)) ||
        wq_node_is(n, WQ_OPID(dequantize_linear)) || !on_quantized_path(c, i))
      continue;
    c->stats.nodes_kept_float++;
  }
  if (st == WQ_OK)
    st = sources_attach(&sources, c, lowered, err);
  sources_free(&sources);
  if (st == WQ_OK)
    lower_remove_dead(c);
  free(lowered);
  return st;
}

wq_status wq_pass_lower(wq_graph *g, const wq_lower_capture *capture, wq_lower_stats *stats,
                        wq_error *err) {
  lower_ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.capture = capture;
  c.absorbed = calloc((size_t)g->n_nodes + 1, sizeof *c.absorbed);
  if (!c.absorbed)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  wq_status st = lower_run(&c, err);
  if (stats)
    *stats = c.stats;
  free(c.absorbed);
  return st;
}

void wq_lower_answers_free(wq_lower_answer *a, int n) {
  for (int i = 0; a && i < n; i++) {
    free(a[i].name);
    free(a[i].why);
  }
  free(a);
}

#ifndef __EMSCRIPTEN__
static const char *op_name(const wq_op *op) { return op ? op->op_type : "(none)"; }

wq_status wq_lower_answers_verify(const wq_graph *g, const wq_lower_answer *answers, int n,
                                  wq_error *err) {
  for (int k = 0; k < n; k++) {
    const wq_lower_answer *a = &answers[k];
    bool unique = true;
    for (int j = 0; j < n && unique; j++)
      unique = j == k || strcmp(answers[j].name, a->name) != 0;
    if (!unique)
      continue;
    const wq_node *node = NULL;
    for (int i = 0; i < g->n_nodes && !node; i++)
      if (strcmp(g->nodes[i].name, a->name) == 0)
        node = &g->nodes[i];
    const wq_op *want = a->as >= 0 ? wq_op_by_id(a->as) : a->op;
    const char *why = node ? wq_lower_why(node) : NULL;
    const char *differs = NULL;
    if (a->absorbed != (node == NULL))
      differs = a->absorbed ? "absorbed, but it is still there" : "kept, but it is gone";
    else if (node && node->rec.reason != a->reason)
      differs = "a different reason code";
    else if (node && node->op != want)
      differs = "a different op";
    else if (node && a->why && (!why || strcmp(why, a->why) != 0))
      differs = "a different note";
    else if (node && !a->why && !wq_node_is(node, WQ_OPID(quantize_linear)) &&
             !wq_node_is(node, WQ_OPID(dequantize_linear)))
      differs = "no note";
    if (differs)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, a->name,
                     "lowering check: the check answered %s as %s (%s), the lowering left %s "
                     "[%s]: %s",
                     wq_reason_name(a->reason), op_name(want), a->why ? a->why : "no note",
                     node ? op_name(node->op) : "nothing",
                     node ? wq_reason_name(node->rec.reason) : "-", differs);
  }
  return WQ_OK;
}
#else
wq_status wq_lower_answers_verify(const wq_graph *g, const wq_lower_answer *answers, int n,
                                  wq_error *err) {
  (void)g, (void)answers, (void)n, (void)err;
  return WQ_OK;
}
#endif

wq_status wq_lower_check(const wq_graph *g, const wq_lower_capture *capture, bool strict,
                         wq_lower_answer **answers, wq_error *err) {
  if (answers)
    *answers = NULL;
  const int n = g->n_nodes;
  lower_ctx c;
  memset(&c, 0, sizeof c);
  c.capture = capture;
  c.dry = true;
  c.g = lower_shadow_new(g);
  c.absorbed = calloc((size_t)n + 1, sizeof *c.absorbed);
  c.node_id = malloc(((size_t)n + 1) * sizeof *c.node_id);
  c.dry_why = calloc((size_t)n + 1, sizeof *c.dry_why);
  c.dry_as = malloc(((size_t)n + 1) * sizeof *c.dry_as);
  bool *gone = calloc((size_t)n + 1, sizeof *gone);
  bool *rewritten = calloc((size_t)n + 1, sizeof *rewritten);
  const char **why = calloc((size_t)n + 1, sizeof *why);
  wq_status st = WQ_OK;
  if (!c.g || !c.absorbed || !c.node_id || !c.dry_why || !c.dry_as || !gone || !rewritten || !why)
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering check: out of memory");
  for (int i = 0; st == WQ_OK && i < n; i++) {
    c.node_id[i] = i;
    c.dry_as[i] = -1;
  }
  if (st == WQ_OK)
    st = lower_run(&c, err);
  /* The shadow keeps the node count; moves only reorder its nodes. */
  for (int i = 0; st == WQ_OK && i < n; i++) {
    int id = c.node_id[i];
    gone[i] = c.absorbed[i];
    rewritten[i] = c.dry_as[id] >= 0;
    why[i] = c.dry_why[id];
  }
  /* The sweep of lower_remove_dead: Quantize/DequantizeLinear nodes whose
   * result nobody reads any more go too. */
  for (int i = n - 1; st == WQ_OK && i >= 0; i--) {
    const wq_node *q = &c.g->nodes[i];
    if (gone[i] || rewritten[i] || !lower_is_sweepable(q))
      continue;
    bool read = false;
    for (int k = 0; k < q->n_outputs && !read; k++)
      read = q->outputs[k] >= 0 && (c.g->tensors[q->outputs[k]].is_output ||
                                    lower_consumers(&c, q->outputs[k], NULL) > 0);
    gone[i] = !read;
    c.absorbed[i] = c.absorbed[i] || !read;
  }
  /* The answers are given also when strict fails (they say why); only
   * native builds verify with them (size budget of the wasm). */
#ifndef __EMSCRIPTEN__
  if (st == WQ_OK && answers) {
    wq_lower_answer *a = calloc((size_t)n + 1, sizeof *a);
    if (!a)
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering check: out of memory");
    for (int i = 0; st == WQ_OK && i < n; i++) {
      int id = c.node_id[i];
      a[id].name = wq_strdup(g->nodes[id].name);
      a[id].op = g->nodes[id].op;
      a[id].reason = c.g->nodes[i].rec.reason;
      a[id].absorbed = c.absorbed[i];
      a[id].as = c.dry_as[id];
      a[id].why = c.dry_why[id] ? wq_strdup(c.dry_why[id]) : NULL;
      if (!a[id].name || (c.dry_why[id] && !a[id].why))
        st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering check: out of memory");
    }
    if (st == WQ_OK)
      *answers = a;
    else
      wq_lower_answers_free(a, n);
  }
#endif
  if (st == WQ_OK && strict)
    st = wq_partition_check_int(c.g, gone, rewritten, why, err);
  for (int i = 0; c.dry_why && i < n; i++)
    free(c.dry_why[i]);
  lower_shadow_free(c.g, g->n_tensors);
  free(c.absorbed), free(c.node_id), free(c.dry_why), free(c.dry_as);
  free(gone), free(rewritten), free(why);
  return st;
}
