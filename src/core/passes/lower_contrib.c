/* Lowering of onnxruntime's operator-format contrib ops (com.microsoft):
 * QLinearAdd/QLinearMul become QAdd/QMul and QLinearGlobalAveragePool (on
 * channels-first data) QGlobalAveragePool, with the operands' scales and
 * zero points moved onto their tensors (lower_attach_qparams). The wasmq
 * ops compute the same codes as the contrib ops' reference kernels, and
 * being ordinary int8 ops they join the layout pass's channels-last
 * regions instead of forcing transitions around them. */
#include <stdio.h>

#include "../ops/int8_common.h"
#include "lower_internal.h"

wq_status lower_contrib(lower_ctx *c, int i, bool *done, wq_error *err) {
  wq_graph *g = c->g;
  const wq_node *n = &g->nodes[i];
  lower_qlinear_operand ops[3];
  int count = lower_contrib_operands(n, ops);
  for (int k = 0; k < count; k++)
    if (!lower_contrib_operand_matches(c, n, &ops[k]))
      return WQ_OK;
  const int y = n->outputs[0];
  const wq_dtype y_dtype = g->tensors[y].dtype;
  const char *op_type;
  int inputs[2];
  int n_inputs;
  if (lower_is_contrib(n, "QLinearGlobalAveragePool")) {
    const wq_attr *a = wq_node_attr(n, "channels_last");
    if (a && a->type == WQ_ATTR_INT && a->i != 0)
      return lower_why(c, "channels-last input: runs on the contrib op's reference kernel");
    op_type = "QGlobalAveragePool";
    inputs[0] = n->inputs[0];
    n_inputs = 1;
  } else {
    op_type = lower_is_contrib(n, "QLinearAdd") ? "QAdd" : "QMul";
    inputs[0] = n->inputs[0];
    inputs[1] = n->inputs[3];
    n_inputs = 2;
  }
  char why[WQ_LOWER_WHY_MAX];
  snprintf(why, sizeof why, "%s from %s (com.microsoft, same arithmetic)", op_type, n->op_type);
  lower_attrs attrs = {0};
  wq_status st = lower_attrs_int(&attrs, "y_dtype", y_dtype, err);
  if (st == WQ_OK)
    st = lower_rewrite_node(c, i, WQ_INT8_DOMAIN, op_type, inputs, n_inputs, &y, 1, &attrs, err);
  lower_attrs_free(&attrs);
  WQ_TRY(st);
  lower_why(c, "%s", why);
  *done = true;
  return WQ_OK;
}
