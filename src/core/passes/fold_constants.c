#include "fold_constants.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/topo.h"
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

/* Shapes through symbolic dims (a dynamic batch): when every input's rank
 * is known, the node is probed twice, with each unknown dim of the graph
 * set to 1 and then to 2. An output dim equal in both probes is static, one
 * that differs stays unknown. Small integer tensors computed from shapes
 * (the Shape -> Gather -> Concat -> Reshape plumbing of exported models) are
 * evaluated in each probe, so a Reshape to [batch, -1] still gets its
 * static dims. Only shapes are recorded, nothing is folded, and a node whose
 * probes fail keeps unknown outputs for the run-time inference. This lets
 * the int8 lowering see ranks and channel counts of models exported with a
 * dynamic batch. */
#define WQ_PROBE_MAX_ELEMENTS 64

typedef struct {
  wq_value *values[2]; /* per tensor and probe: evaluated small tensors (data owned) */
} symbolic_probe;

static void probe_free(symbolic_probe *pr, int n_tensors) {
  for (int p = 0; p < 2; p++) {
    if (!pr->values[p])
      continue;
    for (int t = 0; t < n_tensors; t++)
      free(pr->values[p][t].data);
    free(pr->values[p]);
  }
}

static bool probe_symbolic_dims(wq_graph *g, const wq_node *node, const wq_value *in,
                                symbolic_probe *pr, const int64_t sizes[2]) {
  for (int k = 0; k < node->n_inputs; k++)
    if (node->inputs[k] >= 0 && in[k].rank < 0)
      return true;
  const int ni = node->n_inputs, no = node->n_outputs;
  wq_value *probe_in = calloc(2 * (size_t)ni + 1, sizeof *probe_in);
  wq_value *probe_out = calloc(2 * (size_t)no + 1, sizeof *probe_out);
  bool ok = probe_in && probe_out, evaluated = ok;
  for (int p = 0; p < 2 && ok; p++) {
    for (int k = 0; k < ni; k++) {
      wq_value *v = &probe_in[p * ni + k];
      int t = node->inputs[k];
      *v = t >= 0 && pr->values[p][t].data ? pr->values[p][t] : in[k];
      for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
          v->dims[d] = sizes[p];
      if (t >= 0 && !v->data)
        evaluated = false;
    }
    wq_value *out = &probe_out[p * no];
    for (int k = 0; k < no; k++) {
      out[k].dtype = WQ_DT_UNDEFINED;
      out[k].rank = -1;
    }
    wq_error ignored;
    wq_error_clear(&ignored);
    ok = node->op->infer(node, &probe_in[p * ni], out, &ignored) == WQ_OK;
    /* Evaluate small shape computations (every input known in this probe,
     * or a shape-only op) so their readers see values, not just shapes. */
    bool shape_only = (node->op->flags & WQ_OP_FLAG_SHAPE_ONLY) != 0;
    for (int k = 0; k < no && ok; k++)
      if (!wq_value_shape_known(&out[k]) || wq_value_numel(&out[k]) > WQ_PROBE_MAX_ELEMENTS)
        evaluated = false;
    if (ok && (evaluated || shape_only)) {
      wq_value *run_out = calloc((size_t)no + 1, sizeof *run_out);
      if (run_out && wq_run_node(node, &probe_in[p * ni], run_out, &ignored) == WQ_OK) {
        for (int k = 0; k < no; k++) {
          int t = node->outputs[k];
          if (t >= 0) {
            free(pr->values[p][t].data);
            pr->values[p][t] = run_out[k];
          } else {
            free(run_out[k].data);
          }
        }
      }
      free(run_out);
    }
  }
  for (int k = 0; k < no && ok; k++) {
    const wq_value *a = &probe_out[k], *b = &probe_out[no + k];
    if (node->outputs[k] < 0 || a->rank < 0 || a->rank != b->rank || a->dtype != b->dtype)
      continue;
    wq_value shape = *a;
    shape.data = NULL;
    for (int d = 0; d < a->rank; d++)
      if (a->dims[d] != b->dims[d] || a->dims[d] < 0)
        shape.dims[d] = -1;
    wq_tensor *t = &g->tensors[node->outputs[k]];
    if (t->rank >= 0 && t->rank != shape.rank)
      continue; /* disagrees with the declaration: left to run time */
    store_shape(t, &shape);
  }
  free(probe_in);
  free(probe_out);
  return ok;
}

/* Probes with unknown dims 1 and 2 first; when that fails (a convolution
 * whose window does not fit a 1x1 image), with 64 and 128. */
static void infer_through_symbolic_dims(wq_graph *g, const wq_node *node, const wq_value *in,
                                        symbolic_probe *pr) {
  static const int64_t small[2] = {1, 2}, large[2] = {64, 128};
  if (!probe_symbolic_dims(g, node, in, pr, small))
    probe_symbolic_dims(g, node, in, pr, large);
}

/* A shape-only reader (Shape) of a DequantizeLinear's result reads the
 * DequantizeLinear's input instead: both have the same dims. A
 * DequantizeLinear left with no reader is dropped, so a quantized model's
 * Shape -> Gather -> Reshape plumbing no longer dequantizes (and converts
 * to the declared layout) a whole feature map only for its dims. */
static int read_shapes_before_dequantize(wq_graph *g) {
  int rewired = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *reader = &g->nodes[i];
    if (!reader->op || !(reader->op->flags & WQ_OP_FLAG_SHAPE_ONLY) || reader->n_inputs < 1 ||
        reader->inputs[0] < 0)
      continue;
    for (int j = 0; j < g->n_nodes; j++) {
      const wq_node *dq = &g->nodes[j];
      if (dq->n_outputs < 1 || dq->outputs[0] != reader->inputs[0] ||
          !wq_node_is(dq, WQ_OPID(dequantize_linear)) || dq->n_inputs < 1 || dq->inputs[0] < 0)
        continue;
      reader->inputs[0] = dq->inputs[0];
      rewired++;
      if (!g->tensors[dq->outputs[0]].is_output && !wq_graph_tensor_is_read(g, dq->outputs[0])) {
        wq_graph_remove_node(g, j);
        i -= j < i;
      }
      break;
    }
  }
  return rewired;
}

wq_status wq_pass_fold_constants(wq_graph *g, int fold, wq_fold_stats *stats, wq_error *err) {
  wq_fold_stats local = {0, 0, 0};
  wq_status st = WQ_OK;
  /* Tensor indices stay valid: removing nodes keeps the tensor table. */
  symbolic_probe probe = {{calloc((size_t)g->n_tensors + 1, sizeof(wq_value)),
                           calloc((size_t)g->n_tensors + 1, sizeof(wq_value))}};
  if (fold)
    local.shape_reads_rewired = read_shapes_before_dequantize(g);
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
    bool removed = false, probed_input = false;
    for (int k = 0; k < node->n_inputs && probe.values[0]; k++)
      if (node->inputs[k] >= 0 && probe.values[0][node->inputs[k]].data)
        probed_input = true;
    if ((!shapes_known || probed_input) && probe.values[0] && probe.values[1])
      infer_through_symbolic_dims(g, node, in, &probe);
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
  probe_free(&probe, g->n_tensors);
  if (stats)
    *stats = local;
  return st;
}
