#include "fold_constants.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"
#include "../runtime/executor.h"

/* Folding a node whose outputs are larger than this would bloat the model in
 * memory for no gain (e.g. ConstantOfShape building a big zero tensor). */
#define WQ_FOLD_MAX_BYTES ((size_t)16 << 20)

static bool tensor_shape_known(const wq_tensor *t) {
  if (t->rank < 0)
    return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0)
      return false;
  return true;
}

static void store_shape(wq_tensor *t, const wq_value *v) {
  t->dtype = v->dtype;
  if (v->rank < 0)
    return; /* keep whatever the model declared */
  t->rank = v->rank;
  for (int i = 0; i < v->rank; i++) {
    t->dims[i] = v->dims[i];
    if (v->dims[i] >= 0) {
      free(t->dim_params[i]);
      t->dim_params[i] = NULL;
    }
  }
}

/* Runs node `i` on constant inputs and turns its outputs into constants. */
static wq_status fold_node(wq_graph *g, const wq_node *node, wq_value *in, wq_value *out,
                           wq_error *err) {
  WQ_TRY(wq_run_node(node, in, out, err));
  for (int k = 0; k < node->n_outputs; k++) {
    int t = node->outputs[k];
    if (t < 0) {
      free(out[k].data);
      continue;
    }
    wq_tensor *tensor = &g->tensors[t];
    store_shape(tensor, &out[k]);
    free(tensor->data);
    tensor->data = out[k].data;
    tensor->nbytes = wq_value_nbytes(&out[k]);
    tensor->is_constant = true;
  }
  return WQ_OK;
}

wq_status wq_pass_fold_constants(wq_graph *g, int fold, wq_fold_stats *stats, wq_error *err) {
  wq_fold_stats local = {0, 0};
  wq_status st = WQ_OK;
  int i = 0;
  while (i < g->n_nodes && st == WQ_OK) {
    wq_node *node = &g->nodes[i];
    wq_value *in = calloc((size_t)node->n_inputs + 1, sizeof *in);
    wq_value *out = calloc((size_t)node->n_outputs + 1, sizeof *out);
    if (!in || !out) {
      free(in);
      free(out);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
    }
    bool shapes_known = true, all_constant = true;
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t < 0) {
        in[k].dtype = WQ_DT_UNDEFINED;
        in[k].rank = -1;
        continue;
      }
      const wq_tensor *tensor = &g->tensors[t];
      in[k] = wq_tensor_value(tensor);
      if (!tensor_shape_known(tensor))
        shapes_known = false;
      if (!tensor->is_constant)
        all_constant = false;
    }
    bool removed = false;
    if (shapes_known) {
      for (int k = 0; k < node->n_outputs; k++) {
        out[k].dtype = WQ_DT_UNDEFINED;
        out[k].rank = -1;
      }
      st = node->op->infer(node, in, out, err);
      if (st != WQ_OK) {
        wq_error_set_node(err, node->name);
      } else {
        local.shapes_inferred++;
        bool outputs_known = true;
        size_t out_bytes = 0;
        for (int k = 0; k < node->n_outputs; k++) {
          if (node->outputs[k] < 0)
            continue;
          store_shape(&g->tensors[node->outputs[k]], &out[k]);
          if (!wq_value_shape_known(&out[k]))
            outputs_known = false;
          else
            out_bytes += wq_value_nbytes(&out[k]);
        }
        bool shape_only = (node->op->flags & WQ_OP_FLAG_SHAPE_ONLY) != 0;
        if (fold && outputs_known && (all_constant || shape_only) &&
            out_bytes <= WQ_FOLD_MAX_BYTES) {
          /* A shape-only op reads dims, never elements, so NULL data is fine. */
          st = fold_node(g, node, in, out, err);
          if (st == WQ_OK) {
            wq_graph_remove_node(g, i);
            local.nodes_folded++;
            removed = true;
          }
        }
      }
    }
    free(in);
    free(out);
    if (!removed)
      i++;
  }
  if (stats)
    *stats = local;
  return st;
}
