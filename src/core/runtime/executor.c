#include "executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"

/* Makes sure an error raised inside an op names the node it came from. */
static wq_status attribute_error(const wq_node *node, wq_status st, wq_error *err) {
  if (err && err->node[0] == '\0') {
    size_t cap = sizeof err->node;
    strncpy(err->node, node->name, cap - 1);
    err->node[cap - 1] = '\0';
  }
  if (err && err->code == WQ_OK)
    err->code = st;
  return st;
}

wq_status wq_exec_plan_init(wq_exec_plan *plan, const wq_graph *g, wq_error *err) {
  plan->graph = g;
  plan->last_use = malloc(sizeof(int) * (size_t)(g->n_tensors ? g->n_tensors : 1));
  if (!plan->last_use)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory planning execution");
  for (int t = 0; t < g->n_tensors; t++)
    plan->last_use[t] = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] >= 0)
        plan->last_use[g->nodes[i].inputs[k]] = i;
  return WQ_OK;
}

void wq_exec_plan_free(wq_exec_plan *plan) {
  free(plan->last_use);
  plan->last_use = NULL;
}

void wq_exec_values_release(int n, wq_value *values, bool *owned) {
  for (int i = 0; i < n; i++) {
    if (owned[i])
      free(values[i].data);
    if (owned[i])
      values[i].data = NULL;
    owned[i] = false;
  }
}

static void reset_value(wq_value *v) {
  memset(v, 0, sizeof *v);
  v->dtype = WQ_DT_UNDEFINED;
  v->rank = -1;
}

wq_status wq_run_node(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  for (int k = 0; k < node->n_outputs; k++)
    reset_value(&out[k]);
  wq_status st = node->op->infer(node, in, out, err);
  if (st != WQ_OK)
    return attribute_error(node, st, err);
  for (int k = 0; k < node->n_outputs; k++) {
    if (node->outputs[k] < 0 && out[k].dtype == WQ_DT_UNDEFINED)
      continue;
    char what[64];
    snprintf(what, sizeof what, "%s output %d", node->op_type, k);
    if (out[k].rank < 0 || !wq_value_shape_known(&out[k])) {
      st = wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: output %d shape could not be inferred",
                   node->op_type, k);
      goto fail;
    }
    st = wq_shape_check(out[k].dims, out[k].rank, node->name, what, err);
    if (st != WQ_OK)
      goto fail;
    if (!wq_dtype_supported(out[k].dtype)) {
      st = wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: output dtype %s is not supported",
                   node->op_type, wq_dtype_name(out[k].dtype));
      goto fail;
    }
    size_t nbytes = wq_value_nbytes(&out[k]);
    /* Zero-sized tensors still get a valid pointer so kernels need no NULL checks. */
    out[k].data = calloc(nbytes ? nbytes : 1, 1);
    if (!out[k].data) {
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory for %zu bytes",
                   node->op_type, nbytes);
      goto fail;
    }
  }
  st = node->op->run(node, in, out, err);
  if (st != WQ_OK)
    goto fail;
  return WQ_OK;
fail:
  for (int k = 0; k < node->n_outputs; k++) {
    free(out[k].data);
    out[k].data = NULL;
  }
  return attribute_error(node, st, err);
}

#define WQ_STACK_ARGS 16

wq_status wq_execute(const wq_exec_plan *plan, wq_value *values, bool *owned, wq_error *err) {
  const wq_graph *g = plan->graph;
  wq_status st = WQ_OK;
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *node = &g->nodes[i];
    wq_value in_stack[WQ_STACK_ARGS], out_stack[WQ_STACK_ARGS];
    wq_value *in = in_stack, *out = out_stack;
    if (node->n_inputs > WQ_STACK_ARGS || node->n_outputs > WQ_STACK_ARGS) {
      in = calloc((size_t)node->n_inputs + 1, sizeof *in);
      out = calloc((size_t)node->n_outputs + 1, sizeof *out);
      if (!in || !out) {
        free(in == in_stack ? NULL : in);
        free(out == out_stack ? NULL : out);
        st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
        break;
      }
    }
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t < 0) {
        reset_value(&in[k]);
        continue;
      }
      in[k] = values[t];
      if (!in[k].data && wq_value_nbytes(&in[k]) > 0) {
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: input '%s' has no value",
                     node->op_type, g->tensors[t].name);
        break;
      }
    }
    if (st == WQ_OK)
      st = wq_run_node(node, in, out, err);
    if (st == WQ_OK) {
      for (int k = 0; k < node->n_outputs; k++) {
        int t = node->outputs[k];
        if (t < 0) {
          free(out[k].data); /* an omitted optional output the kernel still produced */
          continue;
        }
        if (owned[t])
          free(values[t].data);
        values[t] = out[k];
        owned[t] = true;
      }
      /* Release intermediates whose last consumer was this node. */
      for (int k = 0; k < node->n_inputs; k++) {
        int t = node->inputs[k];
        if (t >= 0 && plan->last_use[t] == i && owned[t] && !g->tensors[t].is_output) {
          free(values[t].data);
          values[t].data = NULL;
          owned[t] = false;
        }
      }
    }
    if (in != in_stack)
      free(in);
    if (out != out_stack)
      free(out);
  }
  if (st != WQ_OK) {
    for (int t = 0; t < g->n_tensors; t++)
      if (owned[t] && !g->tensors[t].is_output) {
        free(values[t].data);
        values[t].data = NULL;
        owned[t] = false;
      }
  }
  return st;
}
