/* Unary elementwise ops: Sqrt, Exp, Log, Neg, Relu, LeakyRelu, Sigmoid, Tanh,
 * HardSigmoid, HardSwish, Elu, Softplus, Gelu, Clip, Identity, Cast. Kernels are in
 * kernels/ref/ew_unary.c and ew_cast.c. Attributes are few and cheap to read,
 * so they are read where used (prepare only validates them at load). */
#include <string.h>

#include "../kernels/ref/ew_cast.h"
#include "../kernels/ref/ew_unary.h"
#include "elementwise_common.h"

/* ---- float activations ---- */

typedef struct {
  ew_unary_kind kind;
  float alpha, beta;
} unary_params;

static wq_status unary_params_of(const wq_node *node, unary_params *p, wq_error *err) {
  static const struct {
    const char *op_type;
    ew_unary_kind kind;
  } kinds[] = {{"Sqrt", EW_UNARY_SQRT},
               {"Exp", EW_UNARY_EXP},
               {"Relu", EW_UNARY_RELU},
               {"LeakyRelu", EW_UNARY_LEAKY_RELU},
               {"Sigmoid", EW_UNARY_SIGMOID},
               {"Tanh", EW_UNARY_TANH},
               {"HardSigmoid", EW_UNARY_HARD_SIGMOID},
               {"HardSwish", EW_UNARY_HARD_SWISH},
               {"Elu", EW_UNARY_ELU},
               {"Softplus", EW_UNARY_SOFTPLUS},
               {"Gelu", EW_UNARY_GELU},
               {"Log", EW_UNARY_LOG},
               {"Neg", EW_UNARY_NEG}};
  p->kind = EW_UNARY_RELU;
  p->alpha = p->beta = 0.0f;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (strcmp(kinds[i].op_type, node->op_type) != 0)
      continue;
    p->kind = kinds[i].kind;
    if (p->kind == EW_UNARY_LEAKY_RELU)
      WQ_TRY(wq_attr_float(node, "alpha", 0.01f, &p->alpha, err));
    if (p->kind == EW_UNARY_ELU)
      WQ_TRY(wq_attr_float(node, "alpha", 1.0f, &p->alpha, err));
    if (p->kind == EW_UNARY_GELU) {
      const wq_attr *a = wq_node_attr(node, "approximate");
      bool tanh_approx = a && a->type == WQ_ATTR_STRING && strcmp(a->s, "tanh") == 0;
      if (a && !tanh_approx && !(a->type == WQ_ATTR_STRING && strcmp(a->s, "none") == 0))
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                       "Gelu: approximate must be \"none\" or \"tanh\"");
      p->beta = tanh_approx ? 1.0f : 0.0f;
    }
    if (p->kind == EW_UNARY_HARD_SIGMOID) {
      WQ_TRY(wq_attr_float(node, "alpha", 0.2f, &p->alpha, err));
      WQ_TRY(wq_attr_float(node, "beta", 0.5f, &p->beta, err));
    }
    return WQ_OK;
  }
  return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: not a unary elementwise op",
                 node->op_type);
}

static wq_status unary_prepare(wq_node *node, wq_error *err) {
  unary_params p;
  return unary_params_of(node, &p, err);
}

static wq_status unary_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  unary_params p;
  WQ_TRY(unary_params_of(node, &p, err));
  static const wq_dtype float_only[] = {WQ_DT_FLOAT};
  static const wq_dtype relu_types[] = {WQ_DT_FLOAT,  WQ_DT_INT8,   WQ_DT_INT16,
                                        WQ_DT_INT32,  WQ_DT_INT64,  WQ_DT_UINT8,
                                        WQ_DT_UINT16, WQ_DT_UINT32, WQ_DT_UINT64};
  if (p.kind == EW_UNARY_RELU)
    WQ_TRY(ew_check_dtype(node, "input", in[0].dtype, relu_types,
                          (int)(sizeof relu_types / sizeof relu_types[0]), err));
  else
    WQ_TRY(ew_check_dtype(node, "input", in[0].dtype, float_only, 1, err));
  return ew_infer_same_shape(node, &in[0], in[0].dtype, &out[0], err);
}

static wq_status unary_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  unary_params p;
  WQ_TRY(unary_params_of(node, &p, err));
  int64_t n = wq_value_numel(&in[0]);
  if (in[0].dtype == WQ_DT_FLOAT) {
    ew_unary_float(p.kind, p.alpha, p.beta, in[0].data, out[0].data, n);
    return WQ_OK;
  }
  if (p.kind == EW_UNARY_RELU && ew_relu_int(in[0].dtype, in[0].data, out[0].data, n))
    return WQ_OK;
  return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: dtype %s is not supported",
                 node->op_type, wq_dtype_name(in[0].dtype));
}

#define EW_UNARY_OP(sym, name, opset, role)                                                        \
  const wq_op sym = {.op_type = name,                                                              \
                     .domain = "",                                                                 \
                     .min_opset = opset,                                                           \
                     .quant_role = role,                                                           \
                     .int8 = WQ_INT8_LOOKUP,                                                       \
                     .int8_as = WQ_OPID(int8_lookup),                                              \
                     .min_inputs = 1,                                                              \
                     .max_inputs = 1,                                                              \
                     .min_outputs = 1,                                                             \
                     .max_outputs = 1,                                                             \
                     .prepare = unary_prepare,                                                     \
                     .infer = unary_infer,                                                         \
                     .run = unary_run};

/* Opset 1 versions differ only by the legacy consumed_inputs hint. */
EW_UNARY_OP(wq_op_sqrt, "Sqrt", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_exp, "Exp", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_relu, "Relu", 1, WQ_QROLE_CLAMP)
EW_UNARY_OP(wq_op_leaky_relu, "LeakyRelu", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_sigmoid, "Sigmoid", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_tanh, "Tanh", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_hard_sigmoid, "HardSigmoid", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_hard_swish, "HardSwish", 14, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_elu, "Elu", 6, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_softplus, "Softplus", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_gelu, "Gelu", 20, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_log, "Log", 1, WQ_QROLE_OWN_OUTPUT)
EW_UNARY_OP(wq_op_neg, "Neg", 1, WQ_QROLE_OWN_OUTPUT)

/* ---- Clip ---- */

static const wq_dtype clip_types[] = {WQ_DT_FLOAT,  WQ_DT_INT8,   WQ_DT_INT16,
                                      WQ_DT_INT32,  WQ_DT_INT64,  WQ_DT_UINT8,
                                      WQ_DT_UINT16, WQ_DT_UINT32, WQ_DT_UINT64};

/* Opsets < 11 take the bounds as float attributes; later opsets as optional
 * scalar inputs 1 (min) and 2 (max). */
static wq_status clip_prepare(wq_node *node, wq_error *err) {
  if (node->opset < 11) {
    if (node->n_inputs != 1)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "Clip: opset %d takes min/max as attributes and 1 input, got %d inputs",
                     node->opset, node->n_inputs);
    float v;
    WQ_TRY(wq_attr_float(node, "min", 0.0f, &v, err));
    WQ_TRY(wq_attr_float(node, "max", 0.0f, &v, err));
  }
  return WQ_OK;
}

static wq_status clip_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  if (node->opset < 11) {
    static const wq_dtype float_only[] = {WQ_DT_FLOAT};
    WQ_TRY(ew_check_dtype(node, "input", in[0].dtype, float_only, 1, err));
    if (node->n_inputs != 1)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Clip: opset %d takes 1 input, got %d",
                     node->opset, node->n_inputs);
  } else {
    WQ_TRY(ew_check_dtype(node, "input", in[0].dtype, clip_types,
                          (int)(sizeof clip_types / sizeof clip_types[0]), err));
    for (int i = 1; i < node->n_inputs; i++) {
      const wq_value *bound = &in[i];
      const char *what = i == 1 ? "min" : "max";
      if (!wq_value_present(bound))
        continue;
      if (bound->dtype != in[0].dtype)
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "Clip: %s has dtype %s but the input is %s",
                       what, wq_dtype_name(bound->dtype), wq_dtype_name(in[0].dtype));
      int64_t n = wq_value_numel(bound);
      if (n >= 0 && n != 1) {
        char s[128];
        wq_dims_format(bound->dims, bound->rank, s, sizeof s);
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "Clip: %s must be a scalar, got shape %s",
                       what, s);
      }
    }
  }
  return ew_infer_same_shape(node, &in[0], in[0].dtype, &out[0], err);
}

static wq_status clip_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  int64_t n = wq_value_numel(&in[0]);
  const void *lo = NULL, *hi = NULL;
  float lo_attr, hi_attr;
  if (node->opset < 11) {
    if (wq_node_attr(node, "min")) {
      WQ_TRY(wq_attr_float(node, "min", 0.0f, &lo_attr, err));
      lo = &lo_attr;
    }
    if (wq_node_attr(node, "max")) {
      WQ_TRY(wq_attr_float(node, "max", 0.0f, &hi_attr, err));
      hi = &hi_attr;
    }
  } else {
    if (node->n_inputs > 1 && wq_value_present(&in[1]) && wq_value_numel(&in[1]) == 1)
      lo = in[1].data;
    if (node->n_inputs > 2 && wq_value_present(&in[2]) && wq_value_numel(&in[2]) == 1)
      hi = in[2].data;
  }
  if (!ew_clip(in[0].dtype, in[0].data, out[0].data, n, lo, hi))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Clip: dtype %s is not supported",
                   wq_dtype_name(in[0].dtype));
  return WQ_OK;
}

const wq_op wq_op_clip = {.int8 = WQ_INT8_LOOKUP,
                          .int8_as = WQ_OPID(int8_lookup),
                          .quant_role = WQ_QROLE_CLAMP,
                          .op_type = "Clip",
                          .domain = "",
                          .min_opset = 1,
                          .min_inputs = 1,
                          .max_inputs = 3,
                          .min_outputs = 1,
                          .max_outputs = 1,
                          .prepare = clip_prepare,
                          .infer = clip_infer,
                          .run = clip_run};

/* ---- Identity ---- */

static wq_status identity_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  if (!wq_dtype_supported(in[0].dtype))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Identity: dtype %s is not supported",
                   wq_dtype_name(in[0].dtype));
  return ew_infer_same_shape(node, &in[0], in[0].dtype, &out[0], err);
}

static wq_status identity_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  (void)node;
  (void)err;
  size_t bytes = wq_value_nbytes(&in[0]);
  if (bytes > 0 && out[0].data != in[0].data)
    memmove(out[0].data, in[0].data, bytes);
  return WQ_OK;
}

const wq_op wq_op_identity = {.int8 = WQ_INT8_MOVE,
                              .layout = WQ_LCAP_AGNOSTIC,
                              .quant_role = WQ_QROLE_SHARED,
                              .op_type = "Identity",
                              .domain = "",
                              .min_opset = 1,
                              .min_inputs = 1,
                              .max_inputs = 1,
                              .min_outputs = 1,
                              .max_outputs = 1,
                              .infer = identity_infer,
                              .run = identity_run};

/* ---- Cast ---- */

/* Opset 1 gave `to` as a type-name string; 6+ as the TensorProto enum. */
static wq_status cast_target(const wq_node *node, wq_dtype *to, wq_error *err) {
  if (!wq_node_attr(node, "to"))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Cast: attribute 'to' is required");
  int64_t v;
  WQ_TRY(wq_attr_int(node, "to", 0, &v, err));
  if (v <= 0 || v >= WQ_DT_COUNT_ || !wq_dtype_supported((int)v))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Cast: target dtype %s (%lld) is not supported",
                   wq_dtype_name((int)(v >= 0 && v < WQ_DT_COUNT_ ? v : -1)), (long long)v);
  *to = (wq_dtype)v;
  return WQ_OK;
}

static wq_status cast_prepare(wq_node *node, wq_error *err) {
  wq_dtype to = WQ_DT_UNDEFINED;
  return cast_target(node, &to, err);
}

static wq_status cast_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  wq_dtype to = WQ_DT_UNDEFINED;
  WQ_TRY(cast_target(node, &to, err));
  if (!ew_cast_supported(in[0].dtype, to))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Cast: %s -> %s is not supported",
                   wq_dtype_name(in[0].dtype), wq_dtype_name(to));
  return ew_infer_same_shape(node, &in[0], to, &out[0], err);
}

static wq_status cast_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  if (!ew_cast(in[0].dtype, in[0].data, out[0].dtype, out[0].data, wq_value_numel(&in[0])))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Cast: %s -> %s is not supported",
                   wq_dtype_name(in[0].dtype), wq_dtype_name(out[0].dtype));
  return WQ_OK;
}

/* Opset 19+ adds `saturate`, which only concerns float8 targets. */
const wq_op wq_op_cast = {.op_type = "Cast",
                          .domain = "",
                          .min_opset = 6,
                          .min_inputs = 1,
                          .max_inputs = 1,
                          .min_outputs = 1,
                          .max_outputs = 1,
                          .prepare = cast_prepare,
                          .infer = cast_infer,
                          .run = cast_run};
