/* Ops that create tensors from attributes: Constant and ConstantOfShape. */
#include <string.h>

#include "tensor_util.h"

/* Checks an attribute tensor is a movable dense tensor whose byte count
 * matches its shape. */
static wq_status check_attr_tensor(const wq_node *node, const char *name, const wq_tensor *t,
                                   wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, t->dtype, name, &elem, err));
  WQ_TRY(wq_shape_check(t->dims, t->rank, node->name, name, err));
  int64_t n = wq_tu_prod(t->dims, 0, t->rank);
  if ((size_t)n * elem != t->nbytes || (t->nbytes > 0 && t->data == NULL))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: attribute '%s' holds %zu bytes for %lld %s elements", node->op_type, name,
                   t->nbytes, (long long)n, wq_dtype_name(t->dtype));
  return WQ_OK;
}

/* ------------------------------------------------------------- Constant */

/* The single attribute that carries the constant's value. */
static wq_status constant_attr(const wq_node *node, const wq_attr **out, wq_error *err) {
  static const char *const names[] = {"value",         "value_float",  "value_floats",
                                      "value_int",     "value_ints",   "value_string",
                                      "value_strings", "sparse_value", NULL};
  const wq_attr *found = NULL;
  for (int i = 0; names[i]; i++) {
    const wq_attr *a = wq_node_attr(node, names[i]);
    if (!a)
      continue;
    if (found)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "Constant: both '%s' and '%s' are set, exactly one is allowed", found->name,
                     a->name);
    found = a;
  }
  if (!found)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Constant: no value attribute");
  const char *n = found->name;
  if (strcmp(n, "value_string") == 0 || strcmp(n, "value_strings") == 0 ||
      strcmp(n, "sparse_value") == 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Constant: attribute '%s' is not supported",
                   n);
  wq_attr_type want = strcmp(n, "value") == 0          ? WQ_ATTR_TENSOR
                      : strcmp(n, "value_float") == 0  ? WQ_ATTR_FLOAT
                      : strcmp(n, "value_floats") == 0 ? WQ_ATTR_FLOATS
                      : strcmp(n, "value_int") == 0    ? WQ_ATTR_INT
                                                       : WQ_ATTR_INTS;
  if (found->type != want || (want == WQ_ATTR_TENSOR && found->t == NULL))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Constant: attribute '%s' has the wrong type (%d)", n, (int)found->type);
  if (want == WQ_ATTR_TENSOR)
    WQ_TRY(check_attr_tensor(node, "value", found->t, err));
  if ((want == WQ_ATTR_FLOATS || want == WQ_ATTR_INTS) && found->count > (size_t)WQ_MAX_ELEMENTS)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Constant: '%s' has too many elements", n);
  *out = found;
  return WQ_OK;
}

static wq_status constant_prepare(wq_node *node, wq_error *err) {
  const wq_attr *a = NULL;
  return constant_attr(node, &a, err);
}

static wq_status constant_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  (void)in;
  const wq_attr *a = NULL;
  WQ_TRY(constant_attr(node, &a, err));
  memset(out[0].dims, 0, sizeof out[0].dims);
  switch (a->type) {
  case WQ_ATTR_TENSOR:
    out[0].dtype = a->t->dtype;
    out[0].rank = a->t->rank;
    memcpy(out[0].dims, a->t->dims, (size_t)a->t->rank * sizeof a->t->dims[0]);
    break;
  case WQ_ATTR_FLOAT:
  case WQ_ATTR_INT:
    out[0].dtype = a->type == WQ_ATTR_FLOAT ? WQ_DT_FLOAT : WQ_DT_INT64;
    out[0].rank = 0;
    break;
  default: /* FLOATS, INTS */
    out[0].dtype = a->type == WQ_ATTR_FLOATS ? WQ_DT_FLOAT : WQ_DT_INT64;
    out[0].rank = 1;
    out[0].dims[0] = (int64_t)a->count;
    break;
  }
  return WQ_OK;
}

static wq_status constant_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  (void)in;
  const wq_attr *a = NULL;
  WQ_TRY(constant_attr(node, &a, err));
  size_t want = wq_value_nbytes(&out[0]);
  const void *src = NULL;
  size_t n = 0;
  switch (a->type) {
  case WQ_ATTR_TENSOR: src = a->t->data, n = a->t->nbytes; break;
  case WQ_ATTR_FLOAT: src = &a->f, n = sizeof a->f; break;
  case WQ_ATTR_INT: src = &a->i, n = sizeof a->i; break;
  case WQ_ATTR_FLOATS: src = a->floats, n = a->count * sizeof(float); break;
  default: src = a->ints, n = a->count * sizeof(int64_t); break;
  }
  if (n != want)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Constant: output buffer is %zu bytes, the value %zu", want, n);
  wq_tu_copy(out[0].data, src, n);
  return WQ_OK;
}

const wq_op wq_op_constant = {.op_type = "Constant",
                              .domain = "",
                              .min_opset = 1,
                              .min_inputs = 0,
                              .max_inputs = 0,
                              .min_outputs = 1,
                              .max_outputs = 1,
                              .prepare = constant_prepare,
                              .infer = constant_infer,
                              .run = constant_run};

/* ------------------------------------------------------ ConstantOfShape */

/* The fill element: the one-element 'value' tensor, or float32 0. */
static wq_status fill_value(const wq_node *node, wq_dtype *dtype, const void **bytes,
                            wq_error *err) {
  static const float zero = 0.0f;
  const wq_attr *a = wq_node_attr(node, "value");
  if (!a) {
    *dtype = WQ_DT_FLOAT;
    *bytes = &zero;
    return WQ_OK;
  }
  if (a->type != WQ_ATTR_TENSOR || !a->t)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "ConstantOfShape: attribute 'value' must be a tensor");
  WQ_TRY(check_attr_tensor(node, "value", a->t, err));
  if (wq_tu_prod(a->t->dims, 0, a->t->rank) != 1)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "ConstantOfShape: 'value' must hold exactly one element");
  *dtype = a->t->dtype;
  *bytes = a->t->data;
  return WQ_OK;
}

static wq_status cos_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  wq_dtype dtype = WQ_DT_UNDEFINED;
  const void *bytes = NULL;
  WQ_TRY(fill_value(node, &dtype, &bytes, err));
  int64_t len = 0;
  WQ_TRY(wq_tu_int_list_len(node, &in[0], "shape", &len, err));
  if (len > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "ConstantOfShape: output rank %lld exceeds the maximum %d", (long long)len,
                   WQ_MAX_RANK);
  wq_tu_set_unknown(&out[0], dtype, (int)len);
  if (in[0].data == NULL)
    return WQ_OK;
  int count = 0;
  WQ_TRY(wq_tu_read_ints(node, &in[0], "shape", out[0].dims, WQ_MAX_RANK, &count, err));
  return wq_shape_check(out[0].dims, count, node->name, "ConstantOfShape output", err);
}

static wq_status cos_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  (void)in;
  wq_dtype dtype = WQ_DT_UNDEFINED;
  const void *bytes = NULL;
  WQ_TRY(fill_value(node, &dtype, &bytes, err));
  size_t elem = wq_dtype_size(dtype);
  int64_t n = wq_value_numel(&out[0]);
  unsigned char *dst = out[0].data;
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + (size_t)i * elem, bytes, elem);
  return WQ_OK;
}

const wq_op wq_op_constant_of_shape = {.op_type = "ConstantOfShape",
                                       .domain = "",
                                       .min_opset = 9,
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .infer = cos_infer,
                                       .run = cos_run};
