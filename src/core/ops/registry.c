/* The registry table, assembled from the per-family lists. */
#include <string.h>

#include "op.h"

#define WQ_OP_ENTRY(sym) extern const wq_op sym;
#include "list_elementwise.inc"
#include "list_nn.inc"
#include "list_quant.inc"
#include "list_int8.inc"
#include "list_layout.inc"
#include "list_tensor.inc"
#undef WQ_OP_ENTRY

static const wq_op *const registry[] = {
#define WQ_OP_ENTRY(sym) &sym,
#include "list_elementwise.inc"
#include "list_nn.inc"
#include "list_quant.inc"
#include "list_int8.inc"
#include "list_layout.inc"
#include "list_tensor.inc"
#undef WQ_OP_ENTRY
    NULL};

static int domain_is_default(const char *d) {
  return d == NULL || d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

static int same_domain(const char *a, const char *b) {
  if (domain_is_default(a) || domain_is_default(b))
    return domain_is_default(a) && domain_is_default(b);
  return strcmp(a, b) == 0;
}

const wq_op *wq_op_find(const char *domain, const char *op_type) {
  for (int i = 0; registry[i]; i++)
    if (strcmp(registry[i]->op_type, op_type) == 0 && same_domain(registry[i]->domain, domain))
      return registry[i];
  return NULL;
}

int wq_op_count(void) { return (int)(sizeof registry / sizeof registry[0]) - 1; }

const wq_op *wq_op_at(int i) { return (i >= 0 && i < wq_op_count()) ? registry[i] : NULL; }

int wq_op_is_int8_family(const char *op_type) {
  static const char *const names[] = {"QuantizeLinear",
                                      "DequantizeLinear",
                                      "DynamicQuantizeLinear",
                                      "QLinearConv",
                                      "QLinearMatMul",
                                      "QLinearAdd",
                                      "QLinearMul",
                                      "QLinearSigmoid",
                                      "QLinearConcat",
                                      "QLinearAveragePool",
                                      "QLinearGlobalAveragePool",
                                      "QLinearLeakyRelu",
                                      "QLinearSoftmax",
                                      "MatMulInteger",
                                      "ConvInteger",
                                      "QGemm",
                                      NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], op_type) == 0)
      return 1;
  return 0;
}

wq_status wq_graph_resolve_ops(wq_graph *g, wq_error *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *n = &g->nodes[i];
    const wq_op *op = wq_op_find(n->domain, n->op_type);
    if (!op)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name, "unsupported op %s%s%s", n->op_type,
                     domain_is_default(n->domain) ? "" : " in domain ",
                     domain_is_default(n->domain) ? "" : n->domain);
    if (n->opset < op->min_opset)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name,
                     "%s at opset %d is not supported (need opset >= %d)", n->op_type, n->opset,
                     op->min_opset);
    if (n->n_inputs < op->min_inputs || n->n_inputs > op->max_inputs)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "%s takes %d..%d inputs, got %d",
                     n->op_type, op->min_inputs, op->max_inputs, n->n_inputs);
    if (n->n_outputs < op->min_outputs || n->n_outputs > op->max_outputs)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "%s gives %d..%d outputs, got %d",
                     n->op_type, op->min_outputs, op->max_outputs, n->n_outputs);
    for (int k = 0; k < op->min_inputs; k++)
      if (n->inputs[k] < 0)
        return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "%s: required input %d is empty",
                       n->op_type, k);
    n->op = op;
    if (op->prepare) {
      wq_status st = op->prepare(n, err);
      if (st != WQ_OK) {
        wq_error_set_node(err, n->name);
        return st;
      }
    }
  }
  return WQ_OK;
}

const char *wq_quant_role_name(wq_quant_role role) {
  switch (role) {
  case WQ_QROLE_LINEAR:
    return "linear";
  case WQ_QROLE_CLAMP:
    return "clamp";
  case WQ_QROLE_OWN_OUTPUT:
    return "own-output";
  case WQ_QROLE_SHARED:
    return "shared";
  case WQ_QROLE_NONE:
    break;
  }
  return "none";
}
