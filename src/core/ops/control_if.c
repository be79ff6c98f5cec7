/* If: runs then_branch or else_branch by a one-element condition. Input 0
 * is the condition; the values the branches read from the enclosing graph
 * follow as ordinary inputs (ir/subgraph.h binds them at import). A
 * condition known at load never reaches this kernel: the fold pass puts the
 * taken branch in the If's place (passes/fold_control.h). Otherwise the
 * taken branch runs node by node here, its intermediates malloc'ed. */
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

/* values/owned: one entry per tensor of s. Binds the captured tensors to
 * in[1..], then runs (run) or infers (shapes only) every node of s. On a
 * shape pass, a node that cannot be inferred leaves its outputs unknown. */
static wq_status eval_branch(const wq_node *node, const wq_graph *s, const wq_value *in, bool run,
                             wq_value *values, bool *owned, wq_error *err) {
  for (int t = 0; t < s->n_tensors; t++) {
    values[t] = wq_tensor_value(&s->tensors[t]);
    if (!s->tensors[t].is_constant)
      values[t].data = NULL;
  }
  for (int j = 0; j < s->n_inputs && j + 1 < node->n_inputs; j++)
    if (s->inputs[j] >= 0)
      values[s->inputs[j]] = in[j + 1];
  wq_status st = WQ_OK;
  for (int i = 0; i < s->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &s->nodes[i];
    wq_value *io = calloc((size_t)n->n_inputs + (size_t)n->n_outputs + 1, sizeof *io);
    if (!io)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
    wq_value *ni = io, *no = io + n->n_inputs;
    bool known = true; /* infer is only asked with every present input's rank known */
    for (int k = 0; k < n->n_inputs; k++) {
      ni[k] = n->inputs[k] >= 0 ? values[n->inputs[k]]
                                : (wq_value){.dtype = WQ_DT_UNDEFINED, .rank = -1};
      known = known && (n->inputs[k] < 0 || ni[k].rank >= 0);
    }
    for (int k = 0; k < n->n_outputs; k++)
      no[k] = (wq_value){.dtype = WQ_DT_UNDEFINED, .rank = -1};
    if (run) {
      st = wq_run_node(n, ni, no, err);
    } else if (known) {
      wq_error ignored;
      if (n->op->infer(n, ni, no, &ignored) != WQ_OK)
        for (int k = 0; k < n->n_outputs; k++)
          no[k].rank = -1;
    }
    for (int k = 0; k < n->n_outputs && st == WQ_OK; k++) {
      int t = n->outputs[k];
      if (t < 0) {
        free(no[k].data);
        continue;
      }
      values[t] = no[k];
      owned[t] = no[k].data != NULL;
    }
    free(io);
  }
  return st;
}

/* Evaluates branch s: run copies its outputs into out (shaped by infer);
 * otherwise out gets their shapes, or with merge only what they agree on
 * with out's (the other branch's). */
static wq_status with_branch(const wq_node *node, const wq_graph *s, const wq_value *in, bool run,
                             wq_value *out, bool merge, wq_error *err) {
  wq_value *values = calloc((size_t)s->n_tensors + 1, sizeof *values);
  bool *owned = calloc((size_t)s->n_tensors + 1, sizeof *owned);
  wq_status st = values && owned ? eval_branch(node, s, in, run, values, owned, err)
                                 : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
  for (int k = 0; k < node->n_outputs && st == WQ_OK; k++) {
    wq_value v = values[s->outputs[k]];
    if (run) {
      if (v.dtype != out[k].dtype || wq_value_numel(&v) != wq_value_numel(&out[k]))
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "If: branch output %d does not have the shape inferred for it", k);
      else if (out[k].data)
        memcpy(out[k].data, v.data, wq_value_nbytes(&v));
      continue;
    }
    v.data = NULL;
    if (!merge) {
      out[k] = v;
      continue;
    }
    /* Both branches possible: keep what they agree on. */
    if (out[k].dtype != v.dtype || out[k].rank != v.rank)
      out[k].rank = -1;
    for (int d = 0; d < out[k].rank; d++)
      if (out[k].dims[d] != v.dims[d])
        out[k].dims[d] = -1;
  }
  for (int t = 0; values && owned && t < s->n_tensors; t++)
    if (owned[t])
      free(values[t].data);
  free(values);
  free(owned);
  return st;
}

static wq_status cond_of(const wq_node *node, const wq_value *c, int *taken, wq_error *err) {
  if ((c->rank >= 0 && wq_value_numel(c) != 1) || c->dtype != WQ_DT_BOOL)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "If: the condition must be one bool, not %s of %lld elements",
                   wq_dtype_name(c->dtype), (long long)wq_value_numel(c));
  *taken = c->data ? *(const unsigned char *)c->data != 0 : -1;
  return WQ_OK;
}

static wq_status if_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  int taken;
  WQ_TRY(cond_of(node, &in[0], &taken, err));
  if (taken >= 0)
    return with_branch(node, branch(node, taken), in, false, out, false, err);
  WQ_TRY(with_branch(node, branch(node, true), in, false, out, false, err));
  return with_branch(node, branch(node, false), in, false, out, true, err);
}

static wq_status if_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  int taken;
  WQ_TRY(cond_of(node, &in[0], &taken, err));
  return with_branch(node, branch(node, taken > 0), in, true, out, false, err);
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
