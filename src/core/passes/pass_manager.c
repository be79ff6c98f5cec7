/* The pass manager and the IR check it runs between passes. */
#include "pass_manager.h"

#include <stdlib.h>
#include <string.h>

void wq_pass_stat_set(wq_pass_record *rec, const char *name, int64_t value) {
  for (int k = 0; k < rec->n_stats; k++)
    if (strcmp(rec->stats[k].name, name) == 0) {
      rec->stats[k].value = value;
      return;
    }
  if (rec->n_stats < WQ_PASS_MAX_STATS)
    rec->stats[rec->n_stats++] = (wq_pass_stat){name, value};
}

#if !defined(__EMSCRIPTEN__)
static const char *tensor_name(const wq_graph *g, int t) {
  return g->tensors[t].name ? g->tensors[t].name : "?";
}

/* producer[t]: the node writing tensor t, -1 for none. */
static wq_status check_nodes(const wq_graph *g, bool ops_resolved, int *producer, wq_error *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    const char *name = n->name ? n->name : "?";
    if (!n->op_type || (n->n_inputs > 0 && !n->inputs) || (n->n_outputs > 0 && !n->outputs))
      return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "node %d has no op type or argument list", i);
    if (ops_resolved && !n->op)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "%s is not resolved to a registry op",
                     n->op_type);
    for (int k = 0; k < n->n_inputs; k++) {
      int t = n->inputs[k];
      if (t < -1 || t >= g->n_tensors)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "input %d is tensor %d of %d", k, t,
                       g->n_tensors);
      if (t < 0 || g->tensors[t].is_constant || g->tensors[t].is_input)
        continue;
      if (producer[t] < 0)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, name,
                       "input %d '%s' is read before any node writes it", k, tensor_name(g, t));
    }
    for (int k = 0; k < n->n_outputs; k++) {
      int t = n->outputs[k];
      if (t < -1 || t >= g->n_tensors)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "output %d is tensor %d of %d", k, t,
                       g->n_tensors);
      if (t < 0)
        continue;
      if (producer[t] >= 0)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "output '%s' is also written by '%s'",
                       tensor_name(g, t), g->nodes[producer[t]].name);
      if (g->tensors[t].is_constant || g->tensors[t].is_input)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, name, "output '%s' is a %s", tensor_name(g, t),
                       g->tensors[t].is_input ? "graph input" : "constant");
      producer[t] = i;
    }
  }
  return WQ_OK;
}

wq_status wq_graph_validate(const wq_graph *g, bool ops_resolved, wq_error *err) {
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].rank < -1 || g->tensors[t].rank > WQ_MAX_RANK)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "tensor '%s' has rank %d", tensor_name(g, t),
                     g->tensors[t].rank);
  int *producer = malloc(((size_t)g->n_tensors + 1) * sizeof *producer);
  if (!producer)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory checking the graph");
  for (int t = 0; t < g->n_tensors; t++)
    producer[t] = -1;
  wq_status st = check_nodes(g, ops_resolved, producer, err);
  for (int i = 0; i < g->n_inputs && st == WQ_OK; i++)
    if (g->inputs[i] < 0 || g->inputs[i] >= g->n_tensors)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph input %d is tensor %d of %d", i,
                   g->inputs[i], g->n_tensors);
  for (int i = 0; i < g->n_outputs && st == WQ_OK; i++) {
    int t = g->outputs[i];
    if (t < 0 || t >= g->n_tensors)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph output %d is tensor %d of %d", i, t,
                   g->n_tensors);
    else if (producer[t] < 0 && !g->tensors[t].is_constant && !g->tensors[t].is_input)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "graph output '%s' is never written",
                   tensor_name(g, t));
  }
  free(producer);
  return st;
}
#else
/* The shipped .wasm leaves the check out (its size budget); the native
 * test builds run it after every pass. */
wq_status wq_graph_validate(const wq_graph *g, bool ops_resolved, wq_error *err) {
  (void)g;
  (void)ops_resolved;
  (void)err;
  return WQ_OK;
}
#endif

wq_status wq_pass_run_all(const wq_pass *passes, int n, void *ctx, wq_graph *g, bool validate,
                          wq_pass_record *records, wq_error *err) {
  bool resolved = false;
  for (int p = 0; p < n; p++) {
    wq_pass_record *rec = &records[p];
    memset(rec, 0, sizeof *rec);
    rec->name = passes[p].name;
  }
  for (int p = 0; p < n; p++) {
    const wq_pass *pass = &passes[p];
    if (pass->enabled && !pass->enabled(ctx))
      continue;
    records[p].ran = true;
    WQ_TRY(pass->run(ctx, g, &records[p], err));
    resolved = resolved || pass->ops_resolved;
    if (!validate)
      continue;
    wq_error local;
    wq_error_clear(&local);
    if (wq_graph_validate(g, resolved, &local) != WQ_OK)
      return wq_fail(err, local.code, local.node[0] ? local.node : NULL,
                     "graph check after pass '%s': %s", pass->name, local.message);
  }
  return WQ_OK;
}
