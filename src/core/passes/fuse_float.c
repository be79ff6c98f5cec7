#include "fuse_float.h"

#include <string.h>

#include "../ops/op.h"

/* The only node reading tensor t, or -1 (none, several, or a graph output). */
static int sole_consumer(const wq_graph *g, int t) {
  if (g->tensors[t].is_output)
    return -1;
  int consumer = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t) {
        if (consumer >= 0)
          return -1;
        consumer = i;
      }
  return consumer;
}

static bool is_onnx_op(const wq_node *n, const char *op_type) {
  return strcmp(n->op_type, op_type) == 0 &&
         (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0);
}

void wq_pass_fuse_float(wq_graph *g, int *fused) {
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *conv = &g->nodes[i];
    if (!is_onnx_op(conv, "Conv") || conv->n_outputs != 1 || conv->outputs[0] < 0 ||
        conv->n_inputs < 1 || conv->inputs[0] < 0 ||
        g->tensors[conv->inputs[0]].dtype != WQ_DT_FLOAT)
      continue;
    int j = sole_consumer(g, conv->outputs[0]);
    if (j <= i)
      continue;
    const wq_node *relu = &g->nodes[j];
    if (!is_onnx_op(relu, "Relu") || relu->n_outputs != 1 || relu->outputs[0] < 0 ||
        !wq_conv_fuse_relu(conv))
      continue;
    /* The Conv now writes the Relu's output; its own tensor is left unused. */
    conv->outputs[0] = relu->outputs[0];
    wq_graph_remove_node(g, j);
    count++;
  }
  if (fused)
    *fused = count;
}
