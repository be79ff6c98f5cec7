/* The registry table (ops.inc, sorted by domain and op type), its lookup
 * and the int8 capability check. */
#include <stdarg.h>
#include <string.h>

#include "../ir/format.h"
#include "op.h"

#define WQ_OP_ENTRY(name) extern const wq_op wq_op_##name;
#include "ops.inc"
#undef WQ_OP_ENTRY

/* Indexed by wq_op_id: [WQ_OPID_NONE] is NULL. */
const wq_op *const wq_op_registry[] = {
    NULL,
#define WQ_OP_ENTRY(name) &wq_op_##name,
#include "ops.inc"
#undef WQ_OP_ENTRY
};

_Static_assert(sizeof wq_op_registry / sizeof wq_op_registry[0] == WQ_OPID_COUNT,
               "one registry entry per op id");
_Static_assert(WQ_OPID_COUNT < 32767, "op ids fit wq_op.int8_as");
_Static_assert(WQ_INT8_KIND_COUNT < 256 && WQ_LCAP_COUNT < 256,
               "capability kinds fit wq_op's bytes");

static int domain_is_default(const char *d) {
  return d == NULL || d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

/* strcmp order of (domain, op_type), the default domain as "". */
static int compare_key(const wq_op *op, const char *domain, const char *op_type) {
  int c = strcmp(op->domain ? op->domain : "", domain_is_default(domain) ? "" : domain);
  return c ? c : strcmp(op->op_type, op_type);
}

/* Registry index of (domain, op_type), 0 when not registered. */
static int find_index(const char *domain, const char *op_type) {
  int lo = 1, hi = WQ_OPID_COUNT - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = compare_key(wq_op_registry[mid], domain, op_type);
    if (c == 0)
      return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return 0;
}

const wq_op *wq_op_find(const char *domain, const char *op_type) {
  return wq_op_registry[find_index(domain, op_type)];
}

const wq_op *wq_op_by_id(int id) {
  return id > 0 && id < WQ_OPID_COUNT ? wq_op_registry[id] : NULL;
}

int wq_op_id_of(const wq_op *op) {
  int id = op ? find_index(op->domain, op->op_type) : 0;
  return wq_op_registry[id] == op ? id : WQ_OPID_NONE;
}

int wq_op_count(void) { return WQ_OPID_COUNT - 1; }

const wq_op *wq_op_at(int i) { return wq_op_by_id(i + 1); }

int wq_op_is_int8_family(const char *op_type) {
  const wq_op *onnx = wq_op_find("", op_type), *ms = wq_op_find("com.microsoft", op_type);
  return (onnx && (onnx->flags & WQ_OP_FLAG_INT8)) || (ms && (ms->flags & WQ_OP_FLAG_INT8));
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
  case WQ_QROLE_LINEAR: return "linear";
  case WQ_QROLE_CLAMP: return "clamp";
  case WQ_QROLE_OWN_OUTPUT: return "own-output";
  case WQ_QROLE_SHARED: return "shared";
  case WQ_QROLE_NONE: break;
  }
  return "none";
}

bool wq_op_is_constant(const wq_graph *g, int t) {
  return t >= 0 && g->tensors[t].is_constant && g->tensors[t].data;
}

bool wq_op_is_scalar_constant(const wq_graph *g, int t) {
  if (!wq_op_is_constant(g, t) || g->tensors[t].rank < 0)
    return false;
  for (int d = 0; d < g->tensors[t].rank; d++)
    if (g->tensors[t].dims[d] != 1)
      return false;
  return true;
}

int wq_op_readers(const wq_graph *g, int t) {
  int readers = t >= 0 && g->tensors[t].is_output;
  for (int i = 0; t >= 0 && i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t) {
        readers++;
        break;
      }
  return readers;
}

void wq_int8_no(wq_int8_answer *a, int reason, const char *fmt, ...) {
  a->reason = reason;
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(a->detail, sizeof a->detail, fmt, ap);
  va_end(ap);
}

void wq_op_lookup_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a) {
  int varying = -1;
  for (int k = 0; k < n->n_inputs; k++) {
    int t = n->inputs[k];
    if (t < 0)
      continue;
    const wq_tensor *tt = &g->tensors[t];
    if (wq_op_is_constant(g, t)) {
      wq_value v = wq_tensor_value(tt);
      if (wq_value_numel(&v) == 1)
        continue;
      wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR,
                 "operand '%s' is a constant of %lld elements; a lookup table needs a single "
                 "varying input and scalar constants",
                 tt->name, (long long)wq_value_numel(&v));
      return;
    }
    if (varying >= 0) {
      wq_int8_no(a, WQ_REASON_UNSUPPORTED_OP, "both operands vary and %s has no int8 binary kernel",
                 n->op_type);
      return;
    }
    varying = k;
  }
  if (varying < 0)
    wq_int8_no(a, WQ_REASON_INPUT_NOT_QUANTIZED, "no varying input");
}

int wq_op_int8_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a) {
  const wq_op *op = n->op;
  memset(a, 0, sizeof *a);
  a->reason = WQ_REASON_INT8;
  if (!op || op->int8 == WQ_INT8_NONE) {
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_OP, "no int8 lowering for %s", n->op_type);
    return a->reason;
  }
  const wq_op *as = wq_op_by_id(op->int8_as);
  a->as = as ? as->op_type : op->op_type;
  if (op->int8 == WQ_INT8_LOOKUP)
    wq_op_lookup_check(g, n, a);
  if (a->reason == WQ_REASON_INT8 && op->int8_check)
    op->int8_check(g, n, a);
  return a->reason;
}

const char *wq_int8_kind_name(int kind) {
  static const char *const names[WQ_INT8_KIND_COUNT] = {
      "none",   "conv",   "gemm",   "qlinear", "integer",  "contrib",    "binary", "pool",
      "concat", "reduce", "lookup", "move",    "quantize", "dequantize", "kernel", "softmax"};
  return kind > 0 && kind < WQ_INT8_KIND_COUNT ? names[kind] : names[0];
}

const char *wq_layout_cap_name(int cap) {
  static const char *const names[WQ_LCAP_COUNT] = {"nchw",       "nhwc-kernel",     "follow",
                                                   "agnostic",   "agnostic-binary", "agnostic-all",
                                                   "nhwc-float", "to-nhwc",         "to-nchw"};
  return cap > 0 && cap < WQ_LCAP_COUNT ? names[cap] : names[0];
}
