/* Moving quantization across ops that only move elements (DESIGN.md seed
 * 000: shared-parameter ops next to quantized tensors must not fall to
 * float). For such an op F and per-tensor parameters:
 *   QuantizeLinear(F(t))   == F(QuantizeLinear(t))    (hoist Q above F)
 *   F(DequantizeLinear(x)) == DequantizeLinear(F(x))  (sink DQ below F)
 * exactly: F copies elements (Reshape, Transpose, Flatten, ...), or picks
 * a maximum (MaxPool), and quantization is monotonic. So GlobalAveragePool
 * → Flatten → Q becomes GlobalAveragePool → Q → Flatten on int8, and DQ →
 * Flatten → Gemm becomes Flatten on int8 → DQ → Gemm, after which the
 * neighbours lower as usual. The graph stays topologically sorted: the
 * moved node is rotated to just before (after) F. */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "lower_internal.h"

/* Ops whose every output element is a copy of an input element, or the
 * largest of some (no padding value, no interpolation, no extrapolation):
 * the registry's pure data-movement ops (WQ_INT8_MOVE) whose check says yes
 * (Resize nearest, MaxPool without a read Indices output). */
static bool moves_elements(lower_ctx *c, const wq_node *n) {
  wq_int8_answer a;
  const wq_attr *mode = wq_node_attr(n, "mode"); /* Resize linear runs on codes but mixes them */
  if (wq_node_is(n, WQ_OPID(resize)) && mode && mode->s && strcmp(mode->s, "nearest") != 0)
    return false;
  return n->op && n->op->int8 == WQ_INT8_MOVE && n->n_outputs >= 1 && n->outputs[0] >= 0 &&
         wq_op_int8_check(c->g, n, &a) == WQ_REASON_INT8;
}

/* Moves element `from` of an array of `size`-byte elements to position
 * `to`, keeping the others' order. */
static void rotate_array(void *base, size_t size, int from, int to) {
  char *a = base, moved[sizeof(wq_node)];
  memcpy(moved, a + (size_t)from * size, size);
  if (from > to)
    memmove(a + (size_t)(to + 1) * size, a + (size_t)to * size, (size_t)(from - to) * size);
  else
    memmove(a + (size_t)from * size, a + (size_t)(from + 1) * size, (size_t)(to - from) * size);
  memcpy(a + (size_t)to * size, moved, size);
}

/* Moves node `from` to position `to` keeping the others' order (in a
 * check, their loaded-graph indices too). */
static void rotate(lower_ctx *c, int from, int to) {
  rotate_array(c->g->nodes, sizeof(wq_node), from, to);
  if (c->node_id)
    rotate_array(c->node_id, sizeof(int), from, to);
}

/* A per-tensor quantized tensor shaped like float tensor `like`. */
static wq_status add_quantized_like(lower_ctx *c, int like, int qparams_of, int *out,
                                    wq_error *err) {
  *out = -1;
  if (c->g->tensors[like].rank < 0)
    return WQ_OK;
  int t = lower_add_tensor(c, c->g->tensors[like].name, "_q");
  if (t < 0)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  wq_tensor *tt = &c->g->tensors[t];
  const wq_tensor *lt = &c->g->tensors[like];
  const wq_qparams *src = c->g->tensors[qparams_of].qparams;
  tt->dtype = src->dtype;
  tt->rank = lt->rank;
  memcpy(tt->dims, lt->dims, sizeof tt->dims);
  wq_qparams qp;
  wq_error local;
  wq_error_clear(&local);
  wq_status st = wq_qparams_init_per_tensor(&qp, src->dtype, tt->rank, tt->dims, src->scale[0],
                                            src->zero_point[0], NULL, tt->name, &local);
  if (st == WQ_ERR_OUT_OF_MEMORY)
    return wq_fail(err, st, NULL, "lowering: out of memory");
  if (st != WQ_OK)
    return WQ_OK; /* leave it; the tensor simply stays unused */
  st = lower_set_qparams(c, t, &qp, err);
  wq_qparams_free(&qp);
  WQ_TRY(st);
  *out = t;
  return WQ_OK;
}

/* Hoists QuantizeLinear node q above F = producer of its input. */
static wq_status try_hoist(lower_ctx *c, int q, bool *moved, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *qn = &g->nodes[q];
  int y = qn->outputs[0];
  if (!g->tensors[y].qparams || !wq_qparams_is_per_tensor(g->tensors[y].qparams))
    return WQ_OK;
  int f = lower_producer(c, qn->inputs[0]);
  if (f < 0 || !moves_elements(c, &g->nodes[f]))
    return WQ_OK;
  int u = g->nodes[f].outputs[0], t = g->nodes[f].inputs[0];
  if (u != qn->inputs[0] || g->tensors[u].is_output || lower_consumers(c, u, NULL) != 1 ||
      g->tensors[t].dtype != WQ_DT_FLOAT)
    return WQ_OK;
  int tq;
  WQ_TRY(add_quantized_like(c, t, y, &tq, err));
  if (tq < 0)
    return WQ_OK;
  /* Q: t -> tq ; F: tq -> y ; u is gone. */
  g->nodes[q].inputs[0] = t;
  g->nodes[q].outputs[0] = tq;
  g->nodes[f].inputs[0] = tq;
  g->nodes[f].outputs[0] = y;
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s on int8 data (QuantizeLinear '%s' moved above it)",
            g->nodes[f].op_type, qn->name);
  WQ_TRY(lower_note(c, f, why, err));
  rotate(c, q, f);
  c->stats.nodes_lowered++;
  *moved = true;
  return WQ_OK;
}

/* Sinks DequantizeLinear node d below F, its only reader. */
static wq_status try_sink(lower_ctx *c, int d, bool *moved, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *dn = &g->nodes[d];
  int x = dn->inputs[0], u = dn->outputs[0];
  const wq_tensor *xt = &g->tensors[x];
  if (!xt->qparams || !wq_qparams_is_per_tensor(xt->qparams) || g->tensors[u].is_output)
    return WQ_OK;
  int f;
  if (lower_consumers(c, u, &f) != 1 || !moves_elements(c, &g->nodes[f]) ||
      g->nodes[f].inputs[0] != u)
    return WQ_OK;
  for (int k = 1; k < g->nodes[f].n_inputs; k++)
    if (g->nodes[f].inputs[k] == u)
      return WQ_OK;
  int v = g->nodes[f].outputs[0];
  /* The DequantizeLinear's own view must be the tensor's parameters. */
  wq_qparams view;
  if (!lower_node_qparams(c, dn, x, &view))
    return WQ_OK;
  bool same = lower_qparams_equal(&view, xt->qparams);
  wq_qparams_free(&view);
  if (!same)
    return WQ_OK;
  int vq;
  WQ_TRY(add_quantized_like(c, v, x, &vq, err));
  if (vq < 0)
    return WQ_OK;
  /* F: x -> vq ; DQ: vq -> v ; u is gone. Scale/zero point stay per tensor. */
  g->nodes[f].inputs[0] = x;
  g->nodes[f].outputs[0] = vq;
  g->nodes[d].inputs[0] = vq;
  g->nodes[d].outputs[0] = v;
  char why[WQ_LOWER_WHY_MAX];
  wq_format(why, sizeof why, "%s on int8 data (DequantizeLinear '%s' moved below it)",
            g->nodes[f].op_type, dn->name);
  WQ_TRY(lower_note(c, f, why, err));
  rotate(c, d, f);
  c->stats.nodes_lowered++;
  *moved = true;
  return WQ_OK;
}

wq_status lower_move_quantization(lower_ctx *c, wq_error *err) {
  wq_graph *g = c->g;
  /* Each move shortens a float run between a data-movement op and a Q/DQ;
   * the bound only guards against a cycle of moves. */
  for (int round = 0; round < 4 * g->n_nodes + 4; round++) {
    bool moved = false;
    for (int i = 0; i < g->n_nodes && !moved; i++) {
      if (wq_node_is(&g->nodes[i], WQ_OPID(quantize_linear)))
        WQ_TRY(try_hoist(c, i, &moved, err));
      else if (wq_node_is(&g->nodes[i], WQ_OPID(dequantize_linear)))
        WQ_TRY(try_sink(c, i, &moved, err));
    }
    if (!moved)
      break;
  }
  return WQ_OK;
}
