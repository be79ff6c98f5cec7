#include "fold_control.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"
#include "../runtime/executor.h"

static int producer_of(const wq_graph *g, int t) {
  for (int i = 0; t >= 0 && i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] == t)
        return i;
  return -1;
}

/* Gather(Shape(x), constant indices) with every selected dim of x static:
 * the Shape runs on x's dims with each symbolic one set to a marker no real
 * dim reaches, the Gather on that vector, and the result is kept when no
 * marker was picked. */
#define SYMBOLIC_DIM ((int64_t)1 << 50)
static int fold_static_dims(wq_graph *g) {
  int folded = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *n = &g->nodes[i];
    if (!wq_node_is(n, WQ_OPID(gather)) || n->outputs[0] < 0 ||
        !g->tensors[n->inputs[1]].is_constant)
      continue;
    int p = producer_of(g, n->inputs[0]);
    if (p < 0 || !wq_node_is(&g->nodes[p], WQ_OPID(shape)) ||
        g->tensors[g->nodes[p].inputs[0]].rank < 0)
      continue;
    wq_value x = wq_tensor_value(&g->tensors[g->nodes[p].inputs[0]]), in[2], out;
    for (int d = 0; d < x.rank; d++)
      if (x.dims[d] < 0)
        x.dims[d] = SYMBOLIC_DIM;
    wq_error ignored;
    wq_error_clear(&ignored);
    if (wq_run_node(&g->nodes[p], &x, &in[0], &ignored) != WQ_OK)
      continue;
    in[1] = wq_tensor_value(&g->tensors[n->inputs[1]]);
    wq_status st = wq_run_node(n, in, &out, &ignored);
    free(in[0].data);
    if (st != WQ_OK)
      continue;
    bool all_static = out.dtype == WQ_DT_INT64;
    for (int64_t e = 0; all_static && e < wq_value_numel(&out); e++)
      all_static = ((const int64_t *)out.data)[e] != SYMBOLIC_DIM;
    if (!all_static) {
      free(out.data);
      continue;
    }
    wq_tensor *t = &g->tensors[n->outputs[0]];
    t->dtype = out.dtype;
    t->rank = out.rank;
    for (int d = 0; d < out.rank; d++) {
      t->dims[d] = out.dims[d];
      free(t->dim_params[d]);
      t->dim_params[d] = NULL;
    }
    free(t->data);
    t->data = out.data;
    t->nbytes = wq_value_nbytes(&out);
    t->is_constant = true;
    wq_graph_remove_node(g, i--);
    folded++;
  }
  return folded;
}

/* Moves subgraph tensor t into g under a unique name: shape, data and
 * qparams change owner. */
static int adopt_tensor(wq_graph *g, wq_tensor *t) {
  int idx = wq_graph_add_unique_tensor(g, t->name, "");
  if (idx < 0)
    return -1;
  wq_tensor *d = &g->tensors[idx];
  char *name = d->name;
  *d = *t;
  d->name = name;
  d->is_input = d->is_output = false;
  memset(t->dim_params, 0, sizeof t->dim_params);
  t->data = NULL;
  t->qparams = NULL;
  return idx;
}

/* Puts the nodes of the taken branch of the If at node i in its place. */
static wq_status inline_branch(wq_graph *g, int i, wq_error *err) {
  wq_node *n = &g->nodes[i];
  const wq_tensor *c = &g->tensors[n->inputs[0]];
  const wq_attr *a =
      wq_node_attr(n, *(const unsigned char *)c->data ? "then_branch" : "else_branch");
  wq_graph *s = a->g;
  int *map = malloc(((size_t)s->n_tensors + 1) * sizeof *map);
  if (!map)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory inlining an If branch");
  for (int t = 0; t < s->n_tensors; t++)
    map[t] = -1;
  for (int j = 0; j < s->n_inputs && j + 1 < n->n_inputs; j++)
    if (s->inputs[j] >= 0)
      map[s->inputs[j]] = n->inputs[j + 1];
  /* A branch output its own node writes becomes the If's output tensor. */
  for (int k = 0; k < s->n_outputs; k++) {
    int t = s->outputs[k];
    if (map[t] < 0 && !s->tensors[t].is_constant && producer_of(s, t) >= 0 && n->outputs[k] >= 0)
      map[t] = n->outputs[k];
  }
  const int first = g->n_nodes, n_out = n->n_outputs, opset = n->opset;
  int *if_out = malloc(((size_t)n_out + 1) * sizeof *if_out);
  bool ok = if_out != NULL;
  for (int k = 0; ok && k < n_out; k++)
    if_out[k] = n->outputs[k];
  for (int t = 0; ok && t < s->n_tensors; t++)
    if (map[t] < 0 && (s->tensors[t].is_constant || producer_of(s, t) >= 0))
      ok = (map[t] = adopt_tensor(g, &s->tensors[t])) >= 0;
  for (int j = 0; ok && j < s->n_nodes; j++) {
    wq_node *d = wq_graph_add_node(g);
    if (!(ok = d != NULL))
      break;
    *d = s->nodes[j];
    memset(&s->nodes[j], 0, sizeof s->nodes[j]);
    for (int k = 0; k < d->n_inputs; k++)
      d->inputs[k] = d->inputs[k] >= 0 ? map[d->inputs[k]] : -1;
    for (int k = 0; k < d->n_outputs; k++)
      d->outputs[k] = d->outputs[k] >= 0 ? map[d->outputs[k]] : -1;
  }
  if (ok)
    s->n_nodes = 0;
  /* Outputs the branch passes through (an outer value or a constant, or
   * one tensor twice) are copied by an Identity. */
  for (int k = 0; ok && k < n_out; k++) {
    int src = map[s->outputs[k]];
    if (if_out[k] < 0 || src == if_out[k])
      continue;
    wq_node *d = wq_graph_add_node(g);
    if (!(ok = d != NULL))
      break;
    d->name = wq_strdup(g->tensors[if_out[k]].name);
    d->op_type = wq_strdup("Identity");
    d->domain = wq_strdup("");
    d->opset = opset;
    d->inputs = malloc(sizeof *d->inputs);
    d->outputs = malloc(sizeof *d->outputs);
    if (!(ok = d->name && d->op_type && d->domain && d->inputs && d->outputs))
      break;
    d->inputs[0] = src;
    d->outputs[0] = if_out[k];
    d->n_inputs = d->n_outputs = 1;
    d->op = wq_op_registry[WQ_OPID(identity)];
  }
  free(if_out);
  free(map);
  /* Rotate the new nodes into the If's place, then drop the If. */
  int added = g->n_nodes - first;
  wq_node *tmp = ok ? malloc(((size_t)added + 1) * sizeof *tmp) : NULL;
  if (!tmp)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory inlining an If branch");
  memcpy(tmp, &g->nodes[first], (size_t)added * sizeof *tmp);
  memmove(&g->nodes[i + 1 + added], &g->nodes[i + 1], (size_t)(first - i - 1) * sizeof *tmp);
  memcpy(&g->nodes[i + 1], tmp, (size_t)added * sizeof *tmp);
  free(tmp);
  wq_graph_remove_node(g, i);
  return WQ_OK;
}

wq_status wq_pass_fold_control(wq_graph *g, int fold, wq_fold_control_stats *stats, wq_error *err) {
  wq_fold_control_stats sum;
  memset(&sum, 0, sizeof sum);
  wq_status st = WQ_OK;
  for (int round = 0; round < 16 && st == WQ_OK; round++) {
    wq_fold_stats f;
    st = wq_pass_fold_constants(g, fold, &f, err);
    sum.fold.nodes_folded += f.nodes_folded;
    sum.fold.shapes_inferred += f.shapes_inferred;
    sum.fold.shape_reads_rewired += f.shape_reads_rewired;
    if (st != WQ_OK || !fold)
      break;
    int changed = fold_static_dims(g);
    sum.static_dims_read += changed;
    for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
      const wq_node *n = &g->nodes[i];
      if (!wq_node_is(n, WQ_OPID(if)) || !g->tensors[n->inputs[0]].is_constant ||
          g->tensors[n->inputs[0]].dtype != WQ_DT_BOOL || !g->tensors[n->inputs[0]].data)
        continue;
      st = inline_branch(g, i, err);
      sum.ifs_inlined++;
      changed++;
    }
    if (!changed)
      break;
  }
  if (stats)
    *stats = sum;
  return st;
}
