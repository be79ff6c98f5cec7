/* Binary elementwise ops with numpy multidirectional broadcasting (opset 7+):
 * Add, Sub, Mul, Div, Pow, Equal, PRelu. All share one shape inference and the one
 * broadcasting iteration in kernels/ref/ew_broadcast.c; only the inner loop
 * differs (kernels/ref/ew_binary.c, which also defines integer semantics). */
#include <string.h>

#include "../kernels/ref/ew_binary.h"
#include "elementwise_common.h"

static ew_binary_kind kind_of(const wq_node *node) {
  const char *t = node->op_type;
  if (strcmp(t, "Add") == 0)
    return EW_BINARY_ADD;
  if (strcmp(t, "Sub") == 0)
    return EW_BINARY_SUB;
  if (strcmp(t, "Mul") == 0)
    return EW_BINARY_MUL;
  if (strcmp(t, "Div") == 0)
    return EW_BINARY_DIV;
  if (strcmp(t, "Pow") == 0)
    return EW_BINARY_POW;
  if (strcmp(t, "PRelu") == 0)
    return EW_BINARY_PRELU;
  return EW_BINARY_EQUAL;
}

/* Numpy broadcasting that tolerates dims unknown at load (-1): an unknown
 * dim against 1 or another unknown stays unknown, against a known d > 1 it
 * must be d. */
static wq_status broadcast_dims(const wq_node *node, const wq_value *a, const wq_value *b,
                                wq_value *out, wq_error *err) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    int64_t d;
    if (da == db || db == 1)
      d = da;
    else if (da == 1)
      d = db;
    else if (da < 0)
      d = db;
    else if (db < 0)
      d = da;
    else {
      char sa[128], sb[128];
      wq_dims_format(a->dims, a->rank, sa, sizeof sa);
      wq_dims_format(b->dims, b->rank, sb, sizeof sb);
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", node->op_type,
                     sa, sb, i, (long long)da, (long long)db);
    }
    out->dims[i] = d;
  }
  out->rank = r;
  return WQ_OK;
}

static wq_status binary_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  const wq_value *a = &in[0], *b = &in[1];
  ew_binary_kind kind = kind_of(node);
  if (!wq_value_present(a) || !wq_value_present(b))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: both operands are required",
                   node->op_type);
  if (!ew_binary_loop_for(kind, a->dtype, b->dtype)) {
    char sa[128], sb[128];
    wq_dims_format(a->dims, a->rank, sa, sizeof sa);
    wq_dims_format(b->dims, b->rank, sb, sizeof sb);
    if (kind != EW_BINARY_POW && a->dtype != b->dtype)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: operands must have the same dtype, got %s %s and %s %s", node->op_type,
                     wq_dtype_name(a->dtype), sa, wq_dtype_name(b->dtype), sb);
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: dtypes %s %s and %s %s are not supported", node->op_type,
                   wq_dtype_name(a->dtype), sa, wq_dtype_name(b->dtype), sb);
  }
  out->dtype = ew_binary_result_dtype(kind, a->dtype);
  out->data = NULL;
  if (a->rank < 0 || b->rank < 0) {
    out->rank = -1;
    return WQ_OK;
  }
  if (a->rank > WQ_MAX_RANK || b->rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: rank above %d", node->op_type,
                   WQ_MAX_RANK);
  WQ_TRY(broadcast_dims(node, a, b, out, err));
  /* PRelu's slope broadcasts to X (one direction): the output is X's shape. */
  if (kind == EW_BINARY_PRELU &&
      (out->rank != a->rank || memcmp(out->dims, a->dims, sizeof(int64_t) * (size_t)a->rank) != 0))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "PRelu: slope does not broadcast to X's shape");
  if (wq_value_shape_known(out))
    return wq_shape_check(out->dims, out->rank, node->name, node->op_type, err);
  return WQ_OK;
}

static wq_status binary_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  ew_binary_kind kind = kind_of(node);
  ew_binary_loop loop = ew_binary_loop_for(kind, in[0].dtype, in[1].dtype);
  if (!loop)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: dtypes %s and %s are not supported",
                   node->op_type, wq_dtype_name(in[0].dtype), wq_dtype_name(in[1].dtype));
  const wq_value *b = &in[1];
  /* x^2 of a float x (variance, magnitude): the speed-built float Mul loop
   * on x and x, the same correctly rounded x * x as Pow's own loop. */
  if (kind == EW_BINARY_POW && in[0].dtype == WQ_DT_FLOAT && b->dtype == WQ_DT_FLOAT &&
      wq_value_numel(b) == 1 && *(const float *)b->data == 2.0f) {
    b = &in[0];
    loop = ew_binary_float_loop(EW_BINARY_MUL);
  }
  ew_broadcast_run(&in[0], wq_dtype_size(in[0].dtype), b, wq_dtype_size(b->dtype), &out[0],
                   wq_dtype_size(out[0].dtype), loop);
  return WQ_OK;
}

/* Opsets 1-6 used the legacy broadcast/axis attributes; 7+ is numpy style. */
#define EW_BINARY_OP(sym, name, role, kind, as)                                                    \
  const wq_op sym = {.op_type = name,                                                              \
                     .domain = "",                                                                 \
                     .min_opset = 7,                                                               \
                     .quant_role = role,                                                           \
                     .int8 = kind,                                                                 \
                     .int8_as = as,                                                                \
                     .min_inputs = 2,                                                              \
                     .max_inputs = 2,                                                              \
                     .min_outputs = 1,                                                             \
                     .max_outputs = 1,                                                             \
                     .infer = binary_infer,                                                        \
                     .run = binary_run};

EW_BINARY_OP(wq_op_add, "Add", WQ_QROLE_OWN_OUTPUT, WQ_INT8_BINARY, WQ_OPID(int8_add))
EW_BINARY_OP(wq_op_sub, "Sub", WQ_QROLE_OWN_OUTPUT, WQ_INT8_LOOKUP, WQ_OPID(int8_lookup))
EW_BINARY_OP(wq_op_mul, "Mul", WQ_QROLE_OWN_OUTPUT, WQ_INT8_BINARY, WQ_OPID(int8_mul))
EW_BINARY_OP(wq_op_div, "Div", WQ_QROLE_OWN_OUTPUT, WQ_INT8_LOOKUP, WQ_OPID(int8_lookup))
EW_BINARY_OP(wq_op_pow, "Pow", WQ_QROLE_NONE, WQ_INT8_NONE, WQ_OPID_NONE)
EW_BINARY_OP(wq_op_equal, "Equal", WQ_QROLE_NONE, WQ_INT8_NONE, WQ_OPID_NONE)
EW_BINARY_OP(wq_op_prelu, "PRelu", WQ_QROLE_NONE, WQ_INT8_NONE, WQ_OPID_NONE)
