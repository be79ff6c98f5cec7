#include "subgraph.h"

#include <stdlib.h>
#include <string.h>

bool wq_subgraph_defines(const wq_graph *s, int t) {
  const wq_tensor *x = &s->tensors[t];
  if (x->is_constant || x->is_input)
    return true;
  for (int i = 0; i < s->n_nodes; i++)
    for (int k = 0; k < s->nodes[i].n_outputs; k++)
      if (s->nodes[i].outputs[k] == t)
        return true;
  return false;
}

/* Position of parent tensor p among n's inputs after the first, appending
 * it when absent; -1 when out of memory. */
static int extra_input(wq_node *n, int p) {
  for (int k = 1; k < n->n_inputs; k++)
    if (n->inputs[k] == p)
      return k - 1;
  int *in = realloc(n->inputs, ((size_t)n->n_inputs + 1) * sizeof *in);
  if (!in)
    return -1;
  n->inputs = in;
  in[n->n_inputs++] = p;
  return n->n_inputs - 2;
}

/* Records subgraph tensor t as read from the parent: binds it to an input
 * of n and, in s->inputs, at that input's position. */
static wq_status capture(wq_graph *g, wq_node *n, wq_graph *s, int t, wq_error *err) {
  if (t < 0 || wq_subgraph_defines(s, t))
    return WQ_OK;
  int p = wq_graph_find_tensor(g, s->tensors[t].name);
  if (p < 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "a subgraph reads '%s', never defined",
                   s->tensors[t].name);
  int k = extra_input(n, p);
  if (k < 0 || k >= s->n_inputs) {
    int *in = k < 0 ? NULL : realloc(s->inputs, ((size_t)k + 1) * sizeof *in);
    if (!in)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "out of memory");
    for (int j = s->n_inputs; j <= k; j++)
      in[j] = -1;
    s->inputs = in;
    s->n_inputs = k + 1;
  }
  s->inputs[k] = t;
  return WQ_OK;
}

wq_status wq_graph_bind_captures(wq_graph *g, wq_error *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    bool has_graph = false, declared = false;
    for (int a = 0; a < g->nodes[i].n_attrs; a++) {
      const wq_attr *at = &g->nodes[i].attrs[a];
      if (at->type == WQ_ATTR_GRAPHS)
        declared = true;
      if (at->type != WQ_ATTR_GRAPH || !at->g)
        continue;
      has_graph = true;
      declared = declared || at->g->n_inputs > 0;
      WQ_TRY(wq_graph_bind_captures(at->g, err));
    }
    if (!has_graph || declared)
      continue;
    for (int a = 0; a < g->nodes[i].n_attrs; a++) {
      wq_graph *s = g->nodes[i].attrs[a].type == WQ_ATTR_GRAPH ? g->nodes[i].attrs[a].g : NULL;
      for (int j = 0; s && j < s->n_nodes; j++)
        for (int k = 0; k < s->nodes[j].n_inputs; k++)
          WQ_TRY(capture(g, &g->nodes[i], s, s->nodes[j].inputs[k], err));
      for (int k = 0; s && k < s->n_outputs; k++)
        WQ_TRY(capture(g, &g->nodes[i], s, s->outputs[k], err));
    }
  }
  return WQ_OK;
}
