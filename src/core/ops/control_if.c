/* If: runs then_branch or else_branch by a one-element condition. Input 0
 * is the condition; the values the branches read from the enclosing graph
 * follow as ordinary inputs (ir/subgraph.h binds them at import). A
 * condition known at load never reaches this kernel: the fold pass puts the
 * taken branch in the If's place (passes/fold_control.h). Otherwise the
 * taken branch runs node by node here, its intermediates malloc'ed, once
 * for the shapes (infer) and once for the values. */
#include <stdlib.h>
#include <string.h>

#include "../runtime/executor.h"
#include "op.h"

static const wq_graph *branch(const wq_node *node, bool taken) {
  const wq_attr *a = wq_node_attr(node, taken ? "then_branch" : "else_branch");
  return a && a->type == WQ_ATTR_GRAPH ? a->g : NULL;
}

static wq_status if_prepare(wq_node *node, wq_error *err) {
  for (int b = 0; b < 2; b++) {
    const wq_attr *a = wq_node_attr(node, b ? "then_branch" : "else_branch");
    if (!a || a->type != WQ_ATTR_GRAPH || !a->g || a->g->n_outputs != node->n_outputs)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "If: %s must be a graph with as many outputs as the node",
                     b ? "then_branch" : "else_branch");
    WQ_TRY(wq_graph_resolve_ops(a->g, err));
  }
  return WQ_OK;
}

/* Runs the branch the condition in[0] takes, node by node on malloc'ed
 * intermediates, with its captured tensors bound to in[1..]. copy: its
 * outputs are copied into out (shaped by infer); otherwise out gets their
 * shapes (infer runs the branch too: its shapes may hang on data). */
static wq_status run_branch(const wq_node *node, const wq_value *in, wq_value *out, bool copy,
                            wq_error *err) {
  const wq_graph *s = branch(node, *(const unsigned char *)in[0].data != 0);
  wq_value *values = calloc((size_t)s->n_tensors + 1, sizeof *values);
  bool *owned = calloc((size_t)s->n_tensors + 1, sizeof *owned);
  wq_status st = values && owned ? WQ_OK : WQ_ERR_OUT_OF_MEMORY;
  for (int t = 0; st == WQ_OK && t < s->n_tensors; t++)
    values[t] = wq_tensor_value(&s->tensors[t]);
  for (int j = 0; st == WQ_OK && j < s->n_inputs && j + 1 < node->n_inputs; j++)
    if (s->inputs[j] >= 0)
      values[s->inputs[j]] = in[j + 1];
  for (int i = 0; i < s->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &s->nodes[i];
    wq_value *io = calloc((size_t)n->n_inputs + (size_t)n->n_outputs + 1, sizeof *io);
    if (!io) {
      st = WQ_ERR_OUT_OF_MEMORY;
      break;
    }
    for (int k = 0; k < n->n_inputs; k++)
      io[k] = n->inputs[k] >= 0 ? values[n->inputs[k]]
                                : (wq_value){.dtype = WQ_DT_UNDEFINED, .rank = -1};
    st = wq_run_node(n, io, io + n->n_inputs, err);
    for (int k = 0; k < n->n_outputs && st == WQ_OK; k++) {
      int t = n->outputs[k];
      if (t >= 0)
        values[t] = io[n->n_inputs + k];
      if (t >= 0)
        owned[t] = true;
      else
        free(io[n->n_inputs + k].data);
    }
    free(io);
  }
  for (int k = 0; k < node->n_outputs && st == WQ_OK; k++) {
    wq_value v = values[s->outputs[k]];
    if (!copy) {
      out[k] = v;
      out[k].data = NULL;
    } else if (v.dtype != out[k].dtype || wq_value_numel(&v) != wq_value_numel(&out[k])) {
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "If: branch output %d does not have the shape inferred for it", k);
    } else if (out[k].data) {
      memcpy(out[k].data, v.data, wq_value_nbytes(&v));
    }
  }
  for (int t = 0; values && owned && t < s->n_tensors; t++)
    if (owned[t])
      free(values[t].data);
  free(values);
  free(owned);
  return st == WQ_ERR_OUT_OF_MEMORY ? wq_fail(err, st, node->name, "out of memory") : st;
}

static wq_status if_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const wq_value *c = &in[0];
  if ((c->rank >= 0 && wq_value_numel(c) != 1) || c->dtype != WQ_DT_BOOL)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "If: the condition must be one bool, not %s of %lld elements",
                   wq_dtype_name(c->dtype), (long long)wq_value_numel(c));
  /* Before every input is known (at load), only the dtypes are. */
  bool known = true;
  for (int k = 0; k < node->n_inputs; k++)
    known = known && in[k].data;
  if (known)
    return run_branch(node, in, out, false, err);
  const wq_graph *t = branch(node, true);
  for (int k = 0; k < node->n_outputs; k++)
    out[k] = (wq_value){.dtype = t->tensors[t->outputs[k]].dtype, .rank = -1};
  return WQ_OK;
}

static wq_status if_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  return run_branch(node, in, out, true, err);
}

const wq_op wq_op_if = {.op_type = "If",
                        .domain = "",
                        .min_opset = 1,
                        .min_inputs = 1,
                        .max_inputs = 1 << 20,
                        .min_outputs = 1,
                        .max_outputs = 1 << 20,
                        .prepare = if_prepare,
                        .infer = if_infer,
                        .run = if_run};
