#include "fold_control.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"

static int producer_of(const wq_graph *g, int t) {
  for (int i = 0; t >= 0 && i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] == t)
        return i;
  return -1;
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

/* Puts the nodes of the taken branch of the If at node i in its place.
 * Leaves the If as it is (*done false) when a branch output is not written
 * by a node of its own (an outer value or a constant handed through, or
 * one tensor as two outputs): the If kernel runs that. */
static wq_status inline_branch(wq_graph *g, int i, bool *done, wq_error *err) {
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
  *done = true;
  for (int k = 0; k < s->n_outputs && *done; k++) {
    int t = s->outputs[k];
    *done =
        map[t] < 0 && n->outputs[k] >= 0 && !s->tensors[t].is_constant && producer_of(s, t) >= 0;
    map[t] = n->outputs[k];
  }
  const int first = g->n_nodes;
  bool ok = true;
  for (int t = 0; *done && ok && t < s->n_tensors; t++)
    if (map[t] < 0 && (s->tensors[t].is_constant || producer_of(s, t) >= 0))
      ok = (map[t] = adopt_tensor(g, &s->tensors[t])) >= 0;
  for (int j = 0; *done && ok && j < s->n_nodes; j++) {
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
  free(map);
  if (!*done)
    return WQ_OK;
  if (ok)
    s->n_nodes = 0;
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
    int changed = 0;
    for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
      const wq_node *n = &g->nodes[i];
      if (!wq_node_is(n, WQ_OPID(if)) || !g->tensors[n->inputs[0]].is_constant ||
          g->tensors[n->inputs[0]].dtype != WQ_DT_BOOL || !g->tensors[n->inputs[0]].data)
        continue;
      bool done = false;
      st = inline_branch(g, i, &done, err);
      sum.ifs_inlined += done;
      changed += done;
    }
    if (!changed)
      break;
  }
  if (stats)
    *stats = sum;
  return st;
}
