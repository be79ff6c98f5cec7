/* wq_lower_describe: the text behind `wasmq info MODEL --lowered`. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ir/text.h"
#include "../ops/int8_common.h"
#include "layout_int8.h"
#include "lower_internal.h"
#include "partition.h"

typedef enum { KIND_INT8, KIND_BOUNDARY, KIND_FLOAT } node_kind;

static bool is_8bit(wq_dtype dt) { return dt == WQ_DT_INT8 || dt == WQ_DT_UINT8; }

/* From the registry's int8 kinds (ops/op.h), then the data types. */
static node_kind kind_of(const wq_graph *g, const wq_node *n) {
  int k = n->op ? n->op->int8 : WQ_INT8_NONE;
  if (k == WQ_INT8_QUANTIZE || k == WQ_INT8_DEQUANTIZE)
    return KIND_BOUNDARY;
  if (k == WQ_INT8_KERNEL)
    return KIND_INT8;
  if (n->n_inputs > 0 && n->inputs[0] >= 0 && n->n_outputs > 0 && n->outputs[0] >= 0 &&
      is_8bit(g->tensors[n->inputs[0]].dtype) && is_8bit(g->tensors[n->outputs[0]].dtype))
    return KIND_INT8;
  return KIND_FLOAT;
}

static void put_qparams(wq_text *t, const wq_graph *g, const char *role, int idx) {
  if (idx < 0)
    return;
  const wq_tensor *tensor = &g->tensors[idx];
  if (!tensor->qparams)
    return;
  char desc[200];
  wq_qparams_describe(tensor->qparams, desc, sizeof desc);
  wq_text_put(t, "      %s '%s': %s; layout %s\n", role, tensor->name, desc,
              wq_layout_name(tensor->layout, tensor->rank));
}

char *wq_lower_describe(const wq_graph *g) {
  wq_text t = {0};
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < g->n_nodes; i++)
    counts[kind_of(g, &g->nodes[i])]++;
  bool ran = false;
  for (int i = 0; i < g->n_nodes && !ran; i++)
    ran = wq_lower_why(&g->nodes[i]) != NULL;
  wq_text_put(&t, "lowered graph: %d nodes (%d int8, %d quantize/dequantize, %d float)%s\n",
              g->n_nodes, counts[KIND_INT8], counts[KIND_BOUNDARY], counts[KIND_FLOAT],
              ran ? "" : " -- lowering did not run");
  static const char *const labels[] = {"int8 ", "q/dq ", "float"};
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    node_kind kind = kind_of(g, n);
    char op[96];
    wq_format(op, sizeof op, "%s%s%s",
              kind == KIND_INT8 && n->domain && n->domain[0] ? n->domain : "",
              kind == KIND_INT8 && n->domain && n->domain[0] ? "." : "", n->op_type);
    wq_text_put(&t, "  [%s] %-26s %s\n", labels[kind], op, n->name);
    if (kind != KIND_FLOAT) {
      for (int k = 0; k < n->n_inputs; k++) {
        char role[32];
        wq_format(role, sizeof role, "in%d", k);
        put_qparams(&t, g, role, n->inputs[k]);
      }
      for (int k = 0; k < n->n_outputs; k++) {
        char role[32];
        wq_format(role, sizeof role, "out%d", k);
        put_qparams(&t, g, role, n->outputs[k]);
      }
    }
    /* What a boundary pass costs: one read of its input, one write of its
     * output (a fused layout transition moves nothing more). */
    if (kind == KIND_BOUNDARY && n->n_inputs > 0 && n->inputs[0] >= 0 && n->n_outputs > 0 &&
        n->outputs[0] >= 0) {
      wq_value x = wq_tensor_value(&g->tensors[n->inputs[0]]);
      wq_value y = wq_tensor_value(&g->tensors[n->outputs[0]]);
      if (wq_value_shape_known(&x) && wq_value_shape_known(&y))
        wq_text_put(&t, "      bytes: %zu read (%s) + %zu written (%s), one pass\n",
                    wq_value_nbytes(&x), wq_dtype_name(x.dtype), wq_value_nbytes(&y),
                    wq_dtype_name(y.dtype));
    }
    /* The decision record: its code, what the node replaced, the sentence. */
    const wq_decision *d = &n->rec;
    wq_text_put(&t, "      decision: %s", wq_reason_name(d->reason));
    for (int k = 0; k + 1 < d->n_sources; k += 2)
      wq_text_put(&t, "%s%s '%s'", k ? ", " : " from ", d->sources[k], d->sources[k + 1]);
    wq_text_put(&t, "\n");
    if (d->detail)
      wq_text_put(&t, "      why: %s\n", d->detail);
    if (n->rec.kernel)
      wq_text_put(&t, "      kernel: %s (%s)\n", n->rec.kernel,
                  n->rec.kernel_isa ? n->rec.kernel_isa : "");
    if (n->rec.layout_why) /* the layout pass's decision record */
      wq_text_put(&t, "      layout: %s %s\n",
                  n->rec.layout_why == WQ_LWHY_AS_WRITTEN ? "any"
                  : n->rec.layout_last                    ? "NHWC"
                                                          : "NCHW",
                  wq_layout_why_name(n->rec.layout_why));
    if (n->rec.planned_bytes || n->rec.moved_bytes) /* what the layout planner counted */
      wq_text_put(&t, "      layout bytes: %lld planned, %lld moved per run\n",
                  (long long)n->rec.planned_bytes, (long long)n->rec.moved_bytes);
  }
  return wq_text_take(&t);
}
