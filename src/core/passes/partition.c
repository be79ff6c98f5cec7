/* The partition pass, the backends/regions report and the summary line. */
#include "partition.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/checked.h"
#include "../ir/text.h"
#include "../ops/int8_common.h"
#include "lower.h"

#define WQ_REASON_NAME_(name) #name,
static const char *const reason_names[WQ_REASON_COUNT] = {WQ_REASON_LIST(WQ_REASON_NAME_)};
#undef WQ_REASON_NAME_

const char *wq_reason_name(int code) {
  return code >= 0 && code < WQ_REASON_COUNT ? reason_names[code] : reason_names[0];
}

int wq_partition_mode_parse(const char *s) {
  if (!s)
    return -1;
  if (strcmp(s, "int+fp") == 0)
    return WQ_PARTITION_INT_FP;
  if (strcmp(s, "int") == 0)
    return WQ_PARTITION_INT;
  if (strcmp(s, "fp") == 0)
    return WQ_PARTITION_FP;
  return -1;
}

const char *wq_partition_mode_name(wq_partition_mode mode) {
  return mode == WQ_PARTITION_INT ? "int" : mode == WQ_PARTITION_FP ? "fp" : "int+fp";
}

const char *wq_backend_name(wq_backend b) {
  return b == WQ_BACKEND_INT8_SIMD ? "int8-simd" : b == WQ_BACKEND_INT8_REF ? "int8-ref" : "float";
}

/* Bytes of t with symbolic dims counted as `unknown` (0: no static size);
 * 0 past int64 (declared dims may be anything). */
static int64_t dims_bytes(const wq_tensor *t, int64_t unknown) {
  int64_t n = t->rank < 0 ? 0 : (int64_t)wq_dtype_size(t->dtype);
  for (int d = 0; d < t->rank; d++)
    if (!wq_mul_i64(n, t->dims[d] < 0 ? unknown : t->dims[d], &n))
      return 0;
  return n;
}

int64_t wq_tensor_static_bytes(const wq_tensor *t) { return dims_bytes(t, 0); }

bool wq_fused_boundary(const wq_graph *g, const wq_node *n) {
  if (!n->op || (n->op->int8 != WQ_INT8_QUANTIZE && n->op->int8 != WQ_INT8_DEQUANTIZE) ||
      n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
    return false;
  const wq_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
  return wq_layout_channels_last(x->layout, x->rank) != wq_layout_channels_last(y->layout, y->rank);
}

static int kind_of(const wq_node *n) { return n->op ? n->op->int8 : WQ_INT8_NONE; }

/* Quantize/DequantizeLinear, fused ones included (the registry's kinds). */
static bool is_boundary(const wq_node *n) {
  return kind_of(n) == WQ_INT8_QUANTIZE || kind_of(n) == WQ_INT8_DEQUANTIZE;
}

static bool is_8bit(wq_dtype dt) { return dt == WQ_DT_INT8 || dt == WQ_DT_UINT8; }

/* An op of the file that computes on quantized data itself (run by its
 * scalar reference kernel when the lowering left it as it is). */
static bool is_quantized_file_op(const wq_node *n) {
  int k = kind_of(n);
  return k == WQ_INT8_QLINEAR || k == WQ_INT8_INTEGER || k == WQ_INT8_CONTRIB;
}

/* Every output is a 64-bit integer tensor: Shape -> Gather -> Concat
 * plumbing a dynamic batch leaves. It moves no activation data. */
static bool computes_shapes(const wq_graph *g, const wq_node *n) {
  if (n->n_outputs == 0)
    return false;
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && g->tensors[n->outputs[k]].dtype != WQ_DT_INT64)
      return false;
  return true;
}

static bool moves_int8(const wq_graph *g, const wq_node *n) {
  return n->n_inputs > 0 && n->inputs[0] >= 0 && n->n_outputs > 0 && n->outputs[0] >= 0 &&
         is_8bit(g->tensors[n->inputs[0]].dtype) && is_8bit(g->tensors[n->outputs[0]].dtype);
}

static wq_backend backend_of(const wq_graph *g, const wq_node *n) {
  if (n->rec.reason == WQ_REASON_MODE_FP || n->rec.reason == WQ_REASON_SHAPE)
    return is_quantized_file_op(n) ? WQ_BACKEND_INT8_REF : WQ_BACKEND_FLOAT;
  if (kind_of(n) == WQ_INT8_KERNEL || is_boundary(n))
    return WQ_BACKEND_INT8_SIMD;
  if (is_quantized_file_op(n))
    return WQ_BACKEND_INT8_REF;
  return moves_int8(g, n) ? WQ_BACKEND_INT8_SIMD : WQ_BACKEND_FLOAT;
}

/* producer[t] for the graph's tensors (-1: none); NULL out of memory. */
static int *producers(const wq_graph *g) {
  int *p = malloc(((size_t)g->n_tensors + 1) * sizeof *p);
  if (!p)
    return NULL;
  for (int t = 0; t < g->n_tensors; t++)
    p[t] = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] >= 0)
        p[g->nodes[i].outputs[k]] = i;
  return p;
}

/* A node reading a DequantizeLinear's result or feeding a QuantizeLinear:
 * it sits on the quantized path. quantized_by[t]: t is read by a
 * QuantizeLinear. */
static bool on_quantized_path(const wq_graph *g, const wq_node *n, const int *producer,
                              const bool *quantized_by) {
  for (int k = 0; k < n->n_inputs; k++) {
    int t = n->inputs[k];
    if (t >= 0 && producer[t] >= 0 && kind_of(&g->nodes[producer[t]]) == WQ_INT8_DEQUANTIZE)
      return true;
  }
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && quantized_by[n->outputs[k]])
      return true;
  return false;
}

/* producer[t] and quantized_by[t] (t is read by a QuantizeLinear), both
 * malloc'ed. */
static wq_status fail_int_mode(const wq_node *n, int reason, const char *why, wq_error *err) {
  return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name,
                 "partition mode int: %s '%s' is quantized but cannot run in int8 [%s]: %s",
                 n->op_type, n->name, wq_reason_name(reason), why ? why : "");
}

/* The partition walk: codes every node and, in int mode, fails on a float
 * one on the quantized path. */
static wq_status walk(wq_graph *g, wq_partition_mode mode, wq_partition_stats *stats,
                      wq_error *err) {
  wq_partition_stats s;
  memset(&s, 0, sizeof s);
  int *producer = producers(g);
  bool *quantized_by = calloc((size_t)g->n_tensors + 1, sizeof *quantized_by);
  if (!producer || !quantized_by) {
    free(producer);
    free(quantized_by);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "partition: out of memory");
  }
  for (int i = 0; i < g->n_nodes; i++)
    if (kind_of(&g->nodes[i]) == WQ_INT8_QUANTIZE && g->nodes[i].n_inputs > 0 &&
        g->nodes[i].inputs[0] >= 0)
      quantized_by[g->nodes[i].inputs[0]] = true;
  wq_status st = WQ_OK;
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    wq_node *n = &g->nodes[i];
    if (computes_shapes(g, n) && !is_boundary(n))
      n->rec.reason = WQ_REASON_SHAPE;
    else if (mode == WQ_PARTITION_FP)
      n->rec.reason = WQ_REASON_MODE_FP;
    else if (is_boundary(n))
      n->rec.reason = WQ_REASON_BOUNDARY;
    else if (n->rec.reason == WQ_REASON_NONE)
      n->rec.reason =
          backend_of(g, n) == WQ_BACKEND_FLOAT ? WQ_REASON_NOT_QUANTIZED : WQ_REASON_INT8;
    wq_backend b = backend_of(g, n);
    if (n->rec.reason == WQ_REASON_SHAPE) {
      s.shape++;
    } else if (n->rec.reason == WQ_REASON_BOUNDARY) {
      s.boundary++;
    } else if (b != WQ_BACKEND_FLOAT) {
      s.int8++;
    } else {
      s.floats++;
      if (mode == WQ_PARTITION_FP)
        continue;
      if (!on_quantized_path(g, n, producer, quantized_by)) {
        n->rec.reason = WQ_REASON_NOT_QUANTIZED;
        continue;
      }
      if (n->rec.reason == WQ_REASON_NOT_QUANTIZED || n->rec.reason == WQ_REASON_INT8)
        n->rec.reason = WQ_REASON_UNSUPPORTED_OP;
      s.on_path++;
      if (mode == WQ_PARTITION_INT)
        st = fail_int_mode(n, n->rec.reason, wq_lower_why(n), err);
    }
  }
  free(producer);
  free(quantized_by);
  if (stats)
    *stats = s;
  return st;
}

wq_status wq_partition_check_int(const wq_graph *g, const bool *gone, const bool *rewritten,
                                 const char *const *why, wq_error *err) {
  int *producer = malloc(((size_t)g->n_tensors + 1) * sizeof *producer);
  bool *quantized_by = calloc((size_t)g->n_tensors + 1, sizeof *quantized_by);
  if (!producer || !quantized_by) {
    free(producer);
    free(quantized_by);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "partition: out of memory");
  }
  /* The graph after the lowering: absorbed nodes are gone, rewritten ones
   * run int8 ops (a QuantizeLinear rewritten as a requantizing lookup no
   * longer quantizes a float tensor). */
  for (int t = 0; t < g->n_tensors; t++)
    producer[t] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (gone[i])
      continue;
    for (int k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0)
        producer[n->outputs[k]] = i;
    if (!rewritten[i] && kind_of(n) == WQ_INT8_QUANTIZE && n->n_inputs > 0 && n->inputs[0] >= 0)
      quantized_by[n->inputs[0]] = true;
  }
  wq_status st = WQ_OK;
  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *n = &g->nodes[i];
    if (gone[i] || rewritten[i] || is_boundary(n) || computes_shapes(g, n) ||
        backend_of(g, n) != WQ_BACKEND_FLOAT || !on_quantized_path(g, n, producer, quantized_by))
      continue;
    int code = n->rec.reason;
    if (code == WQ_REASON_NONE || code == WQ_REASON_NOT_QUANTIZED || code == WQ_REASON_INT8)
      code = WQ_REASON_UNSUPPORTED_OP;
    st = fail_int_mode(n, code, why[i], err);
  }
  free(producer);
  free(quantized_by);
  return st;
}

wq_status wq_pass_partition(wq_graph *g, wq_partition_mode mode, wq_partition_stats *stats,
                            wq_error *err) {
  return walk(g, mode, stats, err);
}

void wq_partition_report_free(wq_partition_report *r) {
  free(r->backend);
  free(r->region);
  memset(r, 0, sizeof *r);
}

/* Union-find root with path halving. */
static int find_root(int *parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

/* Node i computes shapes only (counted apart from the float nodes). */
static bool shape_node(const wq_graph *g, const wq_node *n) {
  return n->rec.reason == WQ_REASON_SHAPE ||
         (n->rec.reason == WQ_REASON_NONE && computes_shapes(g, n));
}

/* Node i is one of the report's float nodes (r->floats). */
static bool counted_float(const wq_graph *g, const wq_partition_report *r, int i) {
  return r->backend[i] == WQ_BACKEND_FLOAT && !shape_node(g, &g->nodes[i]);
}

wq_status wq_partition_report_build(const wq_graph *g, wq_partition_report *r, wq_error *err) {
  memset(r, 0, sizeof *r);
  size_t nn = (size_t)g->n_nodes + 1;
  r->n_nodes = g->n_nodes;
  r->backend = calloc(nn, sizeof *r->backend);
  r->region = calloc(nn, sizeof *r->region);
  int *parent = calloc(nn, sizeof *parent);
  int *producer = producers(g);
  if (!r->backend || !r->region || !parent || !producer) {
    free(parent);
    free(producer);
    wq_partition_report_free(r);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "partition report: out of memory");
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    r->backend[i] = backend_of(g, n);
    parent[i] = i;
    if (shape_node(g, n))
      r->shape++;
    else if (is_boundary(n) && r->backend[i] != WQ_BACKEND_FLOAT)
      r->boundary++;
    else if (r->backend[i] != WQ_BACKEND_FLOAT)
      r->int8++;
    else
      r->floats++;
    if (n->rec.reason == WQ_REASON_TRANSITION) {
      r->transitions++;
      r->transition_bytes += n->rec.moved_bytes;
    }
    if (wq_fused_boundary(g, n)) {
      r->transitions++;
      r->fused++;
    }
  }
  /* Int8 nodes joined through the tensors between them. */
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (r->backend[i] == WQ_BACKEND_FLOAT)
      continue;
    for (int k = 0; k < n->n_inputs; k++) {
      int p = n->inputs[k] >= 0 ? producer[n->inputs[k]] : -1;
      if (p >= 0 && r->backend[p] != WQ_BACKEND_FLOAT) {
        int a = find_root(parent, i), b = find_root(parent, p);
        parent[a > b ? a : b] = a > b ? b : a; /* the earliest node is the root */
      }
    }
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (r->backend[i] == WQ_BACKEND_FLOAT) {
      r->region[i] = -1;
      continue;
    }
    int root = find_root(parent, i);
    r->region[i] = root == i ? ++r->n_regions : r->region[root];
  }
  free(parent);
  free(producer);
  return WQ_OK;
}

static void put_bytes(wq_text *t, int64_t bytes) {
  if (bytes >= (int64_t)1 << 20)
    wq_text_put(t, "%.1f MB", (double)bytes / (1 << 20));
  else if (bytes >= 1024)
    wq_text_put(t, "%.1f KB", (double)bytes / 1024);
  else
    wq_text_put(t, "%lld B", (long long)bytes);
}

char *wq_partition_summary(const wq_graph *g, const wq_partition_report *r) {
  wq_text t = {0};
  wq_text_put(&t, "int8: %d of %d nodes in %d region%s; quantize/dequantize: %d; float: %d node%s",
              r->int8, g->n_nodes, r->n_regions, r->n_regions == 1 ? "" : "s", r->boundary,
              r->floats, r->floats == 1 ? "" : "s");
  /* Every node counted as float, per op and reason code in order of first
   * appearance, so the listed counts add up to the total. */
  int listed = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (!counted_float(g, r, i))
      continue;
    bool seen = false;
    for (int j = 0; j < i && !seen; j++)
      seen = counted_float(g, r, j) && g->nodes[j].rec.reason == n->rec.reason &&
             strcmp(g->nodes[j].op_type, n->op_type) == 0;
    if (seen)
      continue;
    int count = 0;
    for (int j = i; j < g->n_nodes; j++)
      count += counted_float(g, r, j) && g->nodes[j].rec.reason == n->rec.reason &&
               strcmp(g->nodes[j].op_type, n->op_type) == 0;
    wq_text_put(&t, "%s%s x%d %s", listed ? ", " : " (", n->op_type, count,
                wq_reason_name(n->rec.reason));
    listed++;
  }
  if (listed)
    wq_text_put(&t, ")");
  if (r->shape)
    wq_text_put(&t, "; shape computations: %d", r->shape);
  wq_text_put(&t, "; %d transition%s moving ", r->transitions, r->transitions == 1 ? "" : "s");
  put_bytes(&t, r->transition_bytes);
  if (r->fused)
    wq_text_put(&t, " (%d fused)", r->fused);
  return wq_text_take(&t);
}
