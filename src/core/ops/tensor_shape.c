/* Shape plumbing ops whose output is the input's bytes under a new shape
 * (Reshape, Flatten, Squeeze, Unsqueeze) plus Shape, which reads only the
 * input's shape. */
#include <string.h>

#include "tensor_util.h"

/* ---------------------------------------------------------------- Shape */

static int64_t clamp_shape_bound(int64_t v, int rank) {
  if (v < 0)
    v += rank;
  if (v < 0)
    v = 0;
  if (v > rank)
    v = rank;
  return v;
}

/* Opset 15 added start/end (negative counts from the back, clamped). */
static wq_status shape_bounds(const wq_node *node, int rank, int64_t *start, int64_t *end,
                              wq_error *err) {
  int64_t s = 0, e = rank;
  if (node->opset >= 15) {
    WQ_TRY(wq_attr_int(node, "start", 0, &s, err));
    WQ_TRY(wq_attr_int(node, "end", rank, &e, err));
  }
  *start = clamp_shape_bound(s, rank);
  *end = clamp_shape_bound(e, rank);
  if (*end < *start)
    *end = *start;
  return WQ_OK;
}

static wq_status shape_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  wq_tu_set_unknown(&out[0], WQ_DT_INT64, 1);
  if (in[0].rank < 0)
    return WQ_OK;
  int64_t start = 0, end = 0;
  WQ_TRY(shape_bounds(node, in[0].rank, &start, &end, err));
  out[0].dims[0] = end - start;
  return WQ_OK;
}

static wq_status shape_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  int64_t start = 0, end = 0;
  WQ_TRY(shape_bounds(node, in[0].rank, &start, &end, err));
  int64_t *dst = out[0].data;
  for (int64_t i = start; i < end; i++) {
    if (in[0].dims[i] < 0)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Shape: dim %lld of the input is unknown",
                     (long long)i);
    dst[i - start] = in[0].dims[i];
  }
  return WQ_OK;
}

const wq_op wq_op_shape = {.op_type = "Shape",
                           .domain = "",
                           .min_opset = 1,
                           .min_inputs = 1,
                           .max_inputs = 1,
                           .min_outputs = 1,
                           .max_outputs = 1,
                           .flags = WQ_OP_FLAG_SHAPE_ONLY,
                           .infer = shape_infer,
                           .run = shape_run};

/* -------------------------------------------------------------- Reshape */

/* Largest value a product is allowed to reach before it counts as overflow;
 * products saturate here so huge requested dims cannot wrap int64. */
static int64_t saturating_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (a > (WQ_MAX_ELEMENTS + 1) / b)
    return WQ_MAX_ELEMENTS + 1;
  int64_t p = a * b;
  return p > WQ_MAX_ELEMENTS ? WQ_MAX_ELEMENTS + 1 : p;
}

/* The requested shape: attribute before opset 5, input 1 from then on.
 * *known is false when the shape input's data is not available yet; *count
 * is then its length or -1. */
static wq_status reshape_request(const wq_node *node, const wq_value *in, int64_t *shape,
                                 int *count, bool *known, wq_error *err) {
  *known = true;
  if (node->opset < 5) {
    bool present = false;
    WQ_TRY(wq_tu_attr_ints(node, "shape", shape, WQ_MAX_RANK, count, &present, err));
    if (!present)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Reshape: attribute 'shape' missing");
    return WQ_OK;
  }
  if (!wq_tu_has_input(node, in, 1))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Reshape: input 'shape' is missing");
  int64_t len = 0;
  WQ_TRY(wq_tu_int_list_len(node, &in[1], "shape", &len, err));
  if (len > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Reshape: requested rank %lld exceeds the maximum %d", (long long)len,
                   WQ_MAX_RANK);
  if (in[1].data == NULL) {
    *known = false;
    *count = (int)len;
    return WQ_OK;
  }
  return wq_tu_read_ints(node, &in[1], "shape", shape, WQ_MAX_RANK, count, err);
}

static wq_status reshape_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  int64_t shape[WQ_MAX_RANK];
  int count = 0;
  bool known = false;
  WQ_TRY(reshape_request(node, in, shape, &count, &known, err));
  wq_tu_set_unknown(&out[0], in[0].dtype, count);
  if (!known)
    return WQ_OK;

  int64_t allowzero = 0;
  if (node->opset >= 14)
    WQ_TRY(wq_attr_int(node, "allowzero", 0, &allowzero, err));

  char want[160], have[160];
  wq_dims_format(shape, count, want, sizeof want);
  wq_dims_format(in[0].dims, in[0].rank, have, sizeof have);

  int inferred = -1;
  bool any_unknown = false, has_zero = false;
  int64_t product = 1; /* of every output dim except the inferred one */
  for (int i = 0; i < count; i++) {
    int64_t d = shape[i];
    if (d == -1) {
      if (inferred >= 0)
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Reshape: requested shape %s has more than one -1", want);
      inferred = i;
      continue;
    }
    if (d < -1)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Reshape: requested shape %s has invalid dim %lld at index %d", want,
                     (long long)d, i);
    if (d == 0 && !allowzero) {
      if (in[0].rank >= 0 && i >= in[0].rank)
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Reshape: requested shape %s copies dim %d (0) but input shape %s has "
                       "rank %d",
                       want, i, have, in[0].rank);
      d = in[0].rank >= 0 ? in[0].dims[i] : -1;
    }
    if (d == 0)
      has_zero = true;
    out[0].dims[i] = d;
    if (d < 0)
      any_unknown = true;
    else
      product = saturating_mul(product, d);
  }
  if (allowzero && has_zero && inferred >= 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Reshape: requested shape %s has both 0 and -1 with allowzero=1", want);

  int64_t n_in = wq_value_numel(&in[0]);
  if (inferred >= 0) {
    if (n_in < 0 || any_unknown) {
      out[0].dims[inferred] = -1;
    } else if (product == 0 || n_in % product != 0) {
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Reshape: cannot reshape input shape %s (%lld elements) into %s", have,
                     (long long)n_in, want);
    } else {
      out[0].dims[inferred] = n_in / product;
    }
  } else if (n_in >= 0 && !any_unknown && product != n_in) {
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Reshape: cannot reshape input shape %s (%lld elements) into %s", have,
                   (long long)n_in, want);
  }
  if (wq_tu_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "Reshape output", err));
  return WQ_OK;
}

const wq_op wq_op_reshape = {.int8 = WQ_INT8_MOVE,
                             .quant_role = WQ_QROLE_SHARED,
                             .op_type = "Reshape",
                             .domain = "",
                             .min_opset = 1,
                             .min_inputs = 1,
                             .max_inputs = 2,
                             .min_outputs = 1,
                             .max_outputs = 1,
                             .infer = reshape_infer,
                             .run = wq_tu_run_copy};

/* -------------------------------------------------------------- Flatten */

static wq_status flatten_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  wq_tu_set_unknown(&out[0], in[0].dtype, 2);
  int64_t axis = 0;
  WQ_TRY(wq_attr_int(node, "axis", 1, &axis, err));
  if (in[0].rank < 0)
    return WQ_OK;
  int rank = in[0].rank;
  /* axis may equal rank (everything in the outer dim); negative from opset 11. */
  int64_t lo = node->opset >= 11 ? -(int64_t)rank : 0;
  if (axis < lo || axis > rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Flatten: axis %lld is out of range [%lld, %d] for rank %d", (long long)axis,
                   (long long)lo, rank, rank);
  int a = (int)(axis < 0 ? axis + rank : axis);
  out[0].dims[0] = wq_tu_prod(in[0].dims, 0, a);
  out[0].dims[1] = wq_tu_prod(in[0].dims, a, rank);
  if (wq_tu_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, 2, node->name, "Flatten output", err));
  return WQ_OK;
}

const wq_op wq_op_flatten = {.int8 = WQ_INT8_MOVE,
                             .quant_role = WQ_QROLE_SHARED,
                             .op_type = "Flatten",
                             .domain = "",
                             .min_opset = 1,
                             .min_inputs = 1,
                             .max_inputs = 1,
                             .min_outputs = 1,
                             .max_outputs = 1,
                             .infer = flatten_infer,
                             .run = wq_tu_run_copy};

/* ------------------------------------------------- Squeeze / Unsqueeze */

/* Axes come from the attribute before opset 13 and from input 1 after.
 * *present: axes were given at all; *known: their values are available
 * (when not, *count is their number or -1). */
static wq_status squeeze_axes(const wq_node *node, const wq_value *in, int64_t *axes, int *count,
                              bool *present, bool *known, wq_error *err) {
  *known = true;
  if (node->opset < 13)
    return wq_tu_attr_ints(node, "axes", axes, WQ_MAX_RANK, count, present, err);
  *present = wq_tu_has_input(node, in, 1);
  *count = 0;
  if (!*present)
    return WQ_OK;
  int64_t len = 0;
  WQ_TRY(wq_tu_int_list_len(node, &in[1], "axes", &len, err));
  if (len > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %lld axes exceed the maximum %d",
                   node->op_type, (long long)len, WQ_MAX_RANK);
  if (in[1].data == NULL) {
    *known = false;
    *count = (int)len;
    return WQ_OK;
  }
  return wq_tu_read_ints(node, &in[1], "axes", axes, WQ_MAX_RANK, count, err);
}

static wq_status squeeze_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  int64_t axes[WQ_MAX_RANK];
  int count = 0;
  bool present = false, known = false;
  WQ_TRY(squeeze_axes(node, in, axes, &count, &present, &known, err));
  int rank = in[0].rank;
  wq_tu_set_unknown(&out[0], in[0].dtype, -1);
  if (rank < 0)
    return WQ_OK;
  if (present && !known) {
    if (count >= 0)
      out[0].rank = rank - count;
    return WQ_OK;
  }
  bool drop[WQ_MAX_RANK] = {false};
  if (present && count > 0) {
    WQ_TRY(wq_tu_unique_axes(node, axes, count, rank, "axes", err));
    for (int i = 0; i < count; i++) {
      int64_t d = in[0].dims[axes[i]];
      if (d >= 0 && d != 1)
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Squeeze: axis %lld has size %lld, only size-1 axes can be squeezed",
                       (long long)axes[i], (long long)d);
      drop[axes[i]] = true;
    }
  } else {
    /* No axes: every size-1 dim goes, so unknown dims leave the rank open. */
    for (int i = 0; i < rank; i++) {
      if (in[0].dims[i] < 0)
        return WQ_OK;
      drop[i] = in[0].dims[i] == 1;
    }
  }
  int r = 0;
  for (int i = 0; i < rank; i++)
    if (!drop[i])
      out[0].dims[r++] = in[0].dims[i];
  out[0].rank = r;
  return WQ_OK;
}

const wq_op wq_op_squeeze = {.int8 = WQ_INT8_MOVE,
                             .quant_role = WQ_QROLE_SHARED,
                             .op_type = "Squeeze",
                             .domain = "",
                             .min_opset = 1,
                             .min_inputs = 1,
                             .max_inputs = 2,
                             .min_outputs = 1,
                             .max_outputs = 1,
                             .infer = squeeze_infer,
                             .run = wq_tu_run_copy};

static wq_status unsqueeze_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  int64_t axes[WQ_MAX_RANK];
  int count = 0;
  bool present = false, known = false;
  WQ_TRY(squeeze_axes(node, in, axes, &count, &present, &known, err));
  if (!present)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Unsqueeze: axes are required");
  wq_tu_set_unknown(&out[0], in[0].dtype, -1);
  if (in[0].rank < 0 || count < 0)
    return WQ_OK;
  int rank = in[0].rank + count;
  if (rank > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Unsqueeze: output rank %d exceeds the maximum %d", rank, WQ_MAX_RANK);
  out[0].rank = rank;
  if (!known)
    return WQ_OK;
  /* Axes index the output, so they are normalized against the new rank. */
  WQ_TRY(wq_tu_unique_axes(node, axes, count, rank, "axes", err));
  bool inserted[WQ_MAX_RANK] = {false};
  for (int i = 0; i < count; i++)
    inserted[axes[i]] = true;
  int src = 0;
  for (int i = 0; i < rank; i++)
    out[0].dims[i] = inserted[i] ? 1 : in[0].dims[src++];
  return WQ_OK;
}

const wq_op wq_op_unsqueeze = {.int8 = WQ_INT8_MOVE,
                               .quant_role = WQ_QROLE_SHARED,
                               .op_type = "Unsqueeze",
                               .domain = "",
                               .min_opset = 1,
                               .min_inputs = 1,
                               .max_inputs = 2,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .infer = unsqueeze_infer,
                               .run = wq_tu_run_copy};
