/* wq_lower_describe: the text behind `wasmq info MODEL --lowered`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/text.h"
#include "../ops/int8_common.h"
#include "lower_internal.h"

typedef enum { KIND_INT8, KIND_BOUNDARY, KIND_FLOAT } node_kind;

static bool is_8bit(wq_dtype dt) { return dt == WQ_DT_INT8 || dt == WQ_DT_UINT8; }

static node_kind kind_of(const wq_graph *g, const wq_node *n) {
  if (n->domain && strcmp(n->domain, WQ_INT8_DOMAIN) == 0)
    return KIND_INT8;
  if (strcmp(n->op_type, "QuantizeLinear") == 0 || strcmp(n->op_type, "DequantizeLinear") == 0)
    return KIND_BOUNDARY;
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
  wq_text_put(t, "      %s '%s': %s\n", role, tensor->name, desc);
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
    snprintf(op, sizeof op, "%s%s%s",
             kind == KIND_INT8 && n->domain && n->domain[0] ? n->domain : "",
             kind == KIND_INT8 && n->domain && n->domain[0] ? "." : "", n->op_type);
    wq_text_put(&t, "  [%s] %-26s %s\n", labels[kind], op, n->name);
    if (kind != KIND_FLOAT) {
      for (int k = 0; k < n->n_inputs; k++) {
        char role[32];
        snprintf(role, sizeof role, "in%d", k);
        put_qparams(&t, g, role, n->inputs[k]);
      }
      for (int k = 0; k < n->n_outputs; k++) {
        char role[32];
        snprintf(role, sizeof role, "out%d", k);
        put_qparams(&t, g, role, n->outputs[k]);
      }
    }
    const char *why = wq_lower_why(n);
    if (why)
      wq_text_put(&t, "      why: %s\n", why);
  }
  return wq_text_take(&t);
}

/* JSON string with the escapes RFC 8259 requires. */
static void put_int_list(wq_text *t, const int *v, int n) {
  wq_text_put(t, "[");
  for (int i = 0; i < n; i++)
    wq_text_put(t, "%s%d", i ? "," : "", v[i]);
  wq_text_put(t, "]");
}

static const char *tensor_kind(const wq_tensor *x) {
  if (x->is_input)
    return "input";
  if (x->is_output)
    return "output";
  return x->is_constant ? "constant" : "intermediate";
}

/* A float-backend node that only computes shapes and indices: every output
 * is a 64-bit integer tensor (Shape -> Gather -> Concat -> Reshape plumbing
 * left by a dynamic batch). It moves no activation data. */
static bool computes_shapes(const wq_graph *g, const wq_node *n) {
  if (n->n_outputs == 0)
    return false;
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && g->tensors[n->outputs[k]].dtype != WQ_DT_INT64)
      return false;
  return true;
}

char *wq_lower_graph_json(const wq_graph *g) {
  wq_text t = {0};
  static const char *const backends[] = {"int8-simd", "int8-simd", "float"};
  static const char *const roles[] = {"compute", "quantize", "compute"};
  wq_text_put(&t, "{\"schema\":0,\"nodes\":[");
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    node_kind kind = kind_of(g, n);
    const char *role = roles[kind];
    if (kind == KIND_BOUNDARY && strcmp(n->op_type, "DequantizeLinear") == 0)
      role = "dequantize";
    if (kind == KIND_FLOAT && computes_shapes(g, n))
      role = "data";
    wq_text_put(&t, "%s{\"id\":%d,\"name\":", i ? "," : "", i);
    wq_text_json_string(&t, n->name);
    wq_text_put(&t, ",\"op\":");
    wq_text_json_string(&t, n->op_type);
    wq_text_put(&t, ",\"domain\":");
    wq_text_json_string(&t, n->domain);
    wq_text_put(&t, ",\"backend\":\"%s\",\"role\":\"%s\",\"why\":", backends[kind], role);
    wq_text_json_string(&t, wq_lower_why(n));
    wq_text_put(&t, ",\"inputs\":");
    put_int_list(&t, n->inputs, n->n_inputs);
    wq_text_put(&t, ",\"outputs\":");
    put_int_list(&t, n->outputs, n->n_outputs);
    wq_text_put(&t, "}");
  }
  wq_text_put(&t, "],\"tensors\":[");
  for (int i = 0; i < g->n_tensors; i++) {
    const wq_tensor *x = &g->tensors[i];
    wq_text_put(&t, "%s{\"id\":%d,\"name\":", i ? "," : "", i);
    wq_text_json_string(&t, x->name);
    wq_text_put(&t, ",\"kind\":\"%s\",\"dtype\":", tensor_kind(x));
    wq_text_json_string(&t, wq_dtype_name(x->dtype));
    wq_text_put(&t, ",\"dims\":");
    if (x->rank < 0) {
      wq_text_put(&t, "null");
    } else {
      wq_text_put(&t, "[");
      for (int d = 0; d < x->rank; d++)
        wq_text_put(&t, "%s%lld", d ? "," : "", (long long)x->dims[d]);
      wq_text_put(&t, "]");
    }
    wq_text_put(&t, ",\"qparams\":");
    const wq_qparams *q = x->qparams;
    if (!q || !q->scale || !q->zero_point) {
      wq_text_put(&t, "null");
    } else {
      int axis = -1;
      for (int d = 0; d < q->rank; d++)
        if (q->scale_dims[d] > 1)
          axis = d;
      wq_text_put(&t, "{\"dtype\":");
      wq_text_json_string(&t, wq_dtype_name(q->dtype));
      wq_text_put(&t, ",\"granularity\":\"%s\",\"axis\":%d,\"scale\":[",
                  q->count == 1 ? "per-tensor"
                  : axis >= 0   ? "per-channel"
                                : "blockwise",
                  axis);
      for (int64_t k = 0; k < q->count; k++)
        wq_text_put(&t, "%s%.9g", k ? "," : "", (double)q->scale[k]);
      wq_text_put(&t, "],\"zero_point\":[");
      for (int64_t k = 0; k < q->count; k++)
        wq_text_put(&t, "%s%d", k ? "," : "", (int)q->zero_point[k]);
      wq_text_put(&t, "]}");
    }
    wq_text_put(&t, "}");
  }
  wq_text_put(&t, "],\"inputs\":");
  put_int_list(&t, g->inputs, g->n_inputs);
  wq_text_put(&t, ",\"outputs\":");
  put_int_list(&t, g->outputs, g->n_outputs);
  wq_text_put(&t, "}\n");
  return wq_text_take(&t);
}
