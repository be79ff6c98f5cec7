/* wq_model_graph_json: the decision records of docs/graph-json.md, built
 * from the executed graph, the partition report and the model's plan. The
 * same bytes back `wasmq inspect --json` (native and npx) and npm
 * model.graph(): nodes and tensors in graph order, keys in the documented
 * order, floats as %.9g, nothing timed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/text.h"
#include "../passes/layout_int8.h"
#include "../passes/lower.h"
#include "../passes/partition.h"
#include "../quant/qparams.h"
#include "model_internal.h"

static void put_ints(wq_text *t, const int *v, int n) {
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

static const char *node_role(const wq_node *n) {
  switch (n->rec.reason) {
  case WQ_REASON_TRANSITION: return "transition";
  case WQ_REASON_SHAPE: return "data";
  case WQ_REASON_BOUNDARY: return n->op_type[0] == 'D' ? "dequantize" : "quantize";
  default: return "compute";
  }
}

/* The tensor's layout record: its name, the memory order of the logical
 * dims, and the packing (packed_dim -1 and block 0: not packed). */
static void put_layout(wq_text *t, const wq_tensor *x) {
  int rank = x->rank > 0 ? x->rank : 0;
  wq_text_put(t, "{\"name\":\"%s\",\"order\":[", wq_layout_name(x->layout, rank));
  for (int d = 0; d < rank; d++)
    wq_text_put(t, "%s%d", d ? "," : "", wq_layout_logical_dim(x->layout, rank, d));
  wq_text_put(t, "],\"packed_dim\":%d,\"block\":%d}", x->layout.block ? x->layout.packed_dim : -1,
              x->layout.block);
}

/* Logical dims (channels-first also for a channels-last tensor). */
static void put_dims(wq_text *t, const wq_tensor *x) {
  wq_text_put(t, "[");
  for (int d = 0; d < x->rank; d++)
    wq_text_put(t, "%s%lld", d ? "," : "", (long long)x->dims[d]);
  wq_text_put(t, "]");
}

static void put_qparams(wq_text *t, const wq_qparams *q) {
  if (!q || !q->scale || !q->zero_point) {
    wq_text_put(t, "null");
    return;
  }
  int axis = -1;
  for (int d = 0; d < q->rank; d++)
    if (q->scale_dims[d] > 1)
      axis = d;
  wq_text_put(t, "{\"dtype\":\"%s\",\"granularity\":\"%s\",\"axis\":%d,\"scale\":[",
              wq_dtype_api_name(q->dtype),
              q->count == 1 ? "per-tensor"
              : axis >= 0   ? "per-channel"
                            : "blockwise",
              axis);
  for (int64_t k = 0; k < q->count; k++)
    wq_text_put(t, "%s%.9g", k ? "," : "", (double)q->scale[k]);
  wq_text_put(t, "],\"zero_point\":[");
  for (int64_t k = 0; k < q->count; k++)
    wq_text_put(t, "%s%d", k ? "," : "", (int)q->zero_point[k]);
  wq_text_put(t, "]}");
}

/* A layout decision record: the label ("NCHW", "NHWC" or null), whether
 * the planner could choose it, and why it is that one (WQ_LWHY_*). */
static void put_layout_why(wq_text *t, const wq_decision *d) {
  const int why = d->layout_why;
  const bool last = d->layout_last;
  const bool none = why == WQ_LWHY_NOT_PLANNED || why == WQ_LWHY_AS_WRITTEN;
  const bool free_label = why == WQ_LWHY_PLANNED || why == WQ_LWHY_FUSED_BOUNDARY;
  wq_text_put(t, "{\"label\":%s,\"fixed\":%s,\"why\":\"%s\",\"other_bytes\":",
              none   ? "null"
              : last ? "\"NHWC\""
                     : "\"NCHW\"",
              free_label ? "false" : "true", wq_layout_why_name(why));
  wq_text_put(t, free_label ? "%lld" : "null", (long long)d->layout_flip);
  wq_text_put(t, ",\"planned_bytes\":%lld}", (long long)d->planned_bytes);
}

static void put_nodes(wq_text *t, const wq_graph *g, const wq_partition_report *r) {
  wq_text_put(t, "\"nodes\":[");
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    wq_text_put(t, "%s{\"id\":%d,\"name\":", i ? "," : "", i);
    wq_text_json_string(t, n->name);
    wq_text_put(t, ",\"op\":");
    wq_text_json_string(t, n->op_type);
    wq_text_put(t, ",\"domain\":");
    wq_text_json_string(t, n->domain);
    const wq_decision *d = &n->rec;
    for (int part = 0; part < 2; part++) {
      wq_text_put(t, part ? ",\"source_nodes\":[" : ",\"source_ops\":[");
      for (int k = 0; k + 1 < d->n_sources; k += 2) {
        wq_text_put(t, k ? "," : "");
        wq_text_json_string(t, d->sources[k + part]);
      }
      wq_text_put(t, "]");
    }
    wq_text_put(t, ",\"backend\":\"%s\",\"role\":\"%s\"", wq_backend_name(r->backend[i]),
                node_role(n));
    wq_text_put(t, ",\"region\":%d,\"reason\":{\"code\":\"%s\",\"detail\":", r->region[i],
                wq_reason_name(n->rec.reason));
    wq_text_json_string(t, d->detail ? d->detail : "");
    wq_text_put(t, "},\"kernel\":\"%s\",\"kernel_isa\":\"%s\"", d->kernel ? d->kernel : "",
                d->kernel_isa ? d->kernel_isa : "");
    wq_text_put(t, ",\"layout\":");
    put_layout_why(t, d);
    wq_text_put(t, ",\"inputs\":");
    put_ints(t, n->inputs, n->n_inputs);
    wq_text_put(t, ",\"outputs\":");
    put_ints(t, n->outputs, n->n_outputs);
    wq_text_put(t, "}");
  }
  wq_text_put(t, "]");
}

/* producer[t] and the last reader of each tensor (-1: none). */
static void tensor_links(const wq_graph *g, int *producer, int *last) {
  for (int x = 0; x < g->n_tensors; x++)
    producer[x] = last[x] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0)
        producer[n->outputs[k]] = i;
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0)
        last[n->inputs[k]] = i;
  }
}

static void put_tensors(wq_text *t, const wq_model *m, const int *producer, const int *last) {
  const wq_graph *g = m->ir->graph;
  wq_text_put(t, "\"tensors\":[");
  for (int x = 0; x < g->n_tensors; x++) {
    const wq_tensor *tensor = &g->tensors[x];
    wq_text_put(t, "%s{\"id\":%d,\"name\":", x ? "," : "", x);
    wq_text_json_string(t, tensor->name);
    wq_text_put(t, ",\"kind\":\"%s\",\"dtype\":\"%s\",\"dims\":", tensor_kind(tensor),
                wq_dtype_api_name(tensor->dtype));
    put_dims(t, tensor);
    wq_text_put(t, ",\"layout\":");
    put_layout(t, tensor);
    wq_text_put(t, ",\"qparams\":");
    put_qparams(t, tensor->qparams);
    wq_text_put(t, ",\"producer\":%d,\"consumers\":[", producer[x]);
    int listed = 0;
    for (int i = 0; i < g->n_nodes && last[x] >= 0; i++) {
      const wq_node *n = &g->nodes[i];
      bool reads = false;
      for (int k = 0; k < n->n_inputs && !reads; k++)
        reads = n->inputs[k] == x;
      if (reads)
        wq_text_put(t, "%s%d", listed++ ? "," : "", i);
    }
    int64_t bytes = wq_tensor_static_bytes(tensor);
    wq_text_put(t, "],\"bytes\":%lld,\"arena\":", (long long)bytes);
    /* The arena slot of the latest plan and the lifetime in execution
     * steps (the planner's [first, last]); offset null before a plan. */
    size_t offset = 0, size = (size_t)bytes;
    bool placed = wq_exec_tensor_slot(&m->plan, x, &offset, &size);
    if (!strcmp(tensor_kind(tensor), "intermediate") && producer[x] >= 0) {
      if (placed)
        wq_text_put(t, "{\"offset\":%zu,", offset);
      else
        wq_text_put(t, "{\"offset\":null,");
      wq_text_put(t, "\"size\":%zu,\"first\":%d,\"last\":%d}", size, producer[x],
                  last[x] > producer[x] ? last[x] : producer[x]);
    } else {
      wq_text_put(t, "null");
    }
    wq_text_put(t, "}");
  }
  wq_text_put(t, "]");
}

static void put_regions(wq_text *t, const wq_graph *g, const wq_partition_report *r) {
  wq_text_put(t, "\"regions\":[");
  for (int id = 1; id <= r->n_regions; id++) {
    int first = -1, transitions = 0;
    int64_t bytes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
      if (r->region[i] != id)
        continue;
      if (first < 0)
        first = i;
      transitions += wq_fused_boundary(g, &g->nodes[i]);
      if (g->nodes[i].rec.reason == WQ_REASON_TRANSITION) {
        transitions++;
        bytes += g->nodes[i].rec.moved_bytes;
      }
    }
    wq_text_put(t, "%s{\"id\":%d,\"backend\":\"%s\",\"nodes\":[", id > 1 ? "," : "", id,
                wq_backend_name(r->backend[first]));
    int listed = 0;
    for (int i = 0; i < g->n_nodes; i++)
      if (r->region[i] == id)
        wq_text_put(t, "%s%d", listed++ ? "," : "", i);
    wq_text_put(t, "],\"transitions\":%d,\"transition_bytes\":%lld}", transitions,
                (long long)bytes);
  }
  wq_text_put(t, "]");
}

/* Why a transition exists: the nodes that read its result in the order it
 * writes (not those reading any layout as written), whether that is a graph
 * output (declared order), and its input's producer with its decision
 * record (-1: a graph input, declared). */
static void put_transition_why(wq_text *t, const wq_graph *g, const wq_node *tr,
                               const int *producer) {
  const int y = tr->outputs[0], p = producer[tr->inputs[0]];
  wq_text_put(t, ",\"needed_by\":[");
  int listed = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    bool needs = false;
    for (int k = 0; k < n->n_inputs && !needs; k++)
      needs = n->inputs[k] == y && !(n->rec.layout_as_is && n->rec.layout_as_is[k]);
    if (needs)
      wq_text_put(t, "%s%d", listed++ ? "," : "", i);
  }
  wq_text_put(t, "],\"graph_output\":%s,\"producer\":%d,\"producer_layout\":",
              g->tensors[y].is_output ? "true" : "false", p);
  const wq_decision declared = {.layout_why = WQ_LWHY_DECLARED};
  put_layout_why(t, p >= 0 ? &g->nodes[p].rec : &declared);
}

static void put_transitions(wq_text *t, const wq_graph *g, const wq_partition_report *r,
                            const int *producer) {
  wq_text_put(t, "\"transitions\":[");
  int listed = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    bool fused = wq_fused_boundary(g, n);
    if ((n->rec.reason != WQ_REASON_TRANSITION && !fused) || n->n_inputs < 1 || n->n_outputs < 1)
      continue;
    const wq_tensor *y = &g->tensors[n->outputs[0]];
    bool to_nhwc = wq_layout_channels_last(y->layout, y->rank);
    wq_text_put(t,
                "%s{\"node\":%d,\"from\":\"%s\",\"to\":\"%s\",\"tensor_in\":%d,\"tensor_out\":%d,"
                "\"bytes\":%lld,\"planned_bytes\":%lld,\"region\":%d,\"fused\":%s",
                listed++ ? "," : "", i, to_nhwc ? "NCHW" : "NHWC", to_nhwc ? "NHWC" : "NCHW",
                n->inputs[0], n->outputs[0],
                (long long)n->rec.moved_bytes,
                (long long)n->rec.planned_bytes, r->region[i], fused ? "true" : "false");
    put_transition_why(t, g, n, producer);
    wq_text_put(t, "}");
  }
  wq_text_put(t, "]");
}

static void put_passes(wq_text *t, const wq_model *m) {
  wq_text_put(t, "\"passes\":[");
  for (int p = 0; p < wq_model_pass_count(m); p++) {
    const wq_pass_record *rec = wq_model_pass(m, p);
    wq_text_put(t, "%s{\"name\":\"%s\",\"ran\":%s,\"stats\":{", p ? "," : "", rec->name,
                rec->ran ? "true" : "false");
    for (int k = 0; k < rec->n_stats; k++)
      wq_text_put(t, "%s\"%s\":%lld", k ? "," : "", rec->stats[k].name,
                  (long long)rec->stats[k].value);
    wq_text_put(t, "}}");
  }
  wq_text_put(t, "]");
}

/* The capability record (ops/op.h) of each op the graph runs, in the
 * registry's order (domain, op type): what the viewer's legend and programs
 * read instead of their own lists of op names. */
static void put_legend(wq_text *t, const wq_graph *g) {
  wq_text_put(t, "\"legend\":{\"ops\":[");
  const char *sep = "";
  for (int id = 1; id < WQ_OPID_COUNT; id++) {
    const wq_op *op = wq_op_registry[id];
    int i = 0;
    while (i < g->n_nodes && g->nodes[i].op != op)
      i++;
    if (i == g->n_nodes)
      continue;
    const wq_op *as = wq_op_by_id(op->int8_as);
    /* The activation layouts its kernels take (the kernel follows them;
     * Quantize/DequantizeLinear's codes side takes NHWC too, a fused
     * transition). */
    const int cap = op->layout;
    const bool both =
        cap != WQ_LCAP_NCHW || id == WQ_OPID(quantize_linear) || id == WQ_OPID(dequantize_linear);
    const char *layouts = both ? "\"NCHW\",\"NHWC\"" : "\"NCHW\"";
    wq_text_put(t,
                "%s{\"op\":\"%s\",\"domain\":\"%s\",\"int8\":\"%s\",\"as\":\"%s\","
                "\"layout\":\"%s\",\"layouts\":[%s]}",
                sep, op->op_type, op->domain, wq_int8_kind_name(op->int8), as ? as->op_type : "",
                wq_layout_cap_name(cap), layouts);
    sep = ",";
  }
  wq_text_put(t, "]}");
}

char *wq_model_graph_json(const wq_model *m) {
  const wq_graph *g = m->ir->graph;
  wq_partition_report r;
  if (wq_partition_report_build(g, &r, NULL) != WQ_OK)
    return NULL;
  int *producer = malloc(((size_t)g->n_tensors + 1) * sizeof *producer);
  int *last = malloc(((size_t)g->n_tensors + 1) * sizeof *last);
  char *summary = wq_partition_summary(g, &r);
  if (!producer || !last || !summary) {
    free(producer);
    free(last);
    free(summary);
    wq_partition_report_free(&r);
    return NULL;
  }
  tensor_links(g, producer, last);
  wq_text t = {0};
  wq_text_put(&t, "{\"schema\":1,\"mode\":\"%s\",\"summary\":", wq_partition_mode_name(m->mode));
  wq_text_json_string(&t, summary);
  wq_text_put(&t, ",\"inputs\":");
  put_ints(&t, g->inputs, g->n_inputs);
  wq_text_put(&t, ",\"outputs\":");
  put_ints(&t, g->outputs, g->n_outputs);
  wq_text_put(&t, ",");
  put_nodes(&t, g, &r);
  wq_text_put(&t, ",");
  put_tensors(&t, m, producer, last);
  wq_text_put(&t, ",");
  put_regions(&t, g, &r);
  wq_text_put(&t, ",");
  put_transitions(&t, g, &r, producer);
  wq_memory_info mem;
  wq_model_memory(m, &mem);
  wq_text_put(&t, ",\"memory\":{\"arena_bytes\":%zu,\"lower_bound_bytes\":%zu,\"planned\":%s},",
              mem.arena_bytes, mem.lower_bound_bytes, mem.planned ? "true" : "false");
  put_passes(&t, m);
  wq_text_put(&t, ",");
  put_legend(&t, g);
  wq_text_put(&t, "}\n");
  free(producer);
  free(last);
  free(summary);
  wq_partition_report_free(&r);
  return wq_text_take(&t);
}

char *wq_model_partition_summary(const wq_model *m) {
  wq_partition_report r;
  if (wq_partition_report_build(m->ir->graph, &r, NULL) != WQ_OK)
    return NULL;
  char *s = wq_partition_summary(m->ir->graph, &r);
  wq_partition_report_free(&r);
  return s;
}
