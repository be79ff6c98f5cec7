/* Pad: constant, edge, reflect and wrap modes; negative pads crop. */
#include <math.h>
#include <string.h>

#include "../kernels/ref/pad_ref.h"
#include "tensor_util.h"

typedef struct {
  bool known; /* false while pads/axes data is not available */
  wq_pad_mode mode;
  int64_t begin[WQ_MAX_RANK], end[WQ_MAX_RANK];
} pad_plan;

static wq_status pad_mode(const wq_node *node, wq_pad_mode *mode, wq_error *err) {
  const char *m = NULL;
  WQ_TRY(wq_attr_string(node, "mode", "constant", &m, err));
  if (strcmp(m, "constant") == 0)
    *mode = WQ_PAD_CONSTANT;
  else if (strcmp(m, "edge") == 0)
    *mode = WQ_PAD_EDGE;
  else if (strcmp(m, "reflect") == 0)
    *mode = WQ_PAD_REFLECT;
  else if (strcmp(m, "wrap") == 0)
    *mode = WQ_PAD_WRAP;
  else
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Pad: unknown mode '%s'", m);
  return WQ_OK;
}

/* Reads pads (attribute 'paddings' in opset 1, 'pads' in 2..10, input 1
 * from 11) and axes (input 3, opset 18) into per-dim begin/end. */
static wq_status pad_read(const wq_node *node, const wq_value *in, int rank, pad_plan *plan,
                          wq_error *err) {
  int64_t pads[2 * WQ_MAX_RANK], axes[WQ_MAX_RANK];
  int n_pads, n_axes = rank;
  plan->known = true;
  if (node->opset < 11) {
    const char *name = node->opset < 2 ? "paddings" : "pads";
    bool present = false;
    WQ_TRY(wq_tu_attr_ints(node, name, pads, 2 * WQ_MAX_RANK, &n_pads, &present, err));
    if (!present)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Pad: attribute '%s' missing", name);
  } else {
    if (!wq_tu_has_input(node, in, 1))
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Pad: input 'pads' is missing");
    int64_t len = 0;
    WQ_TRY(wq_tu_int_list_len(node, &in[1], "pads", &len, err));
    bool has_axes = node->opset >= 18 && wq_tu_has_input(node, in, 3);
    if (has_axes)
      WQ_TRY(wq_tu_int_list_len(node, &in[3], "axes", &len, err));
    if (in[1].data == NULL || (has_axes && in[3].data == NULL)) {
      plan->known = false;
      return WQ_OK;
    }
    WQ_TRY(wq_tu_read_ints(node, &in[1], "pads", pads, 2 * WQ_MAX_RANK, &n_pads, err));
    if (has_axes)
      WQ_TRY(wq_tu_read_ints(node, &in[3], "axes", axes, WQ_MAX_RANK, &n_axes, err));
  }
  if (rank < 0) {
    plan->known = false;
    return WQ_OK;
  }
  bool explicit_axes = node->opset >= 18 && wq_tu_has_input(node, in, 3);
  if (!explicit_axes) {
    n_axes = rank;
    for (int i = 0; i < rank; i++)
      axes[i] = i;
  }
  if (n_pads != 2 * n_axes)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Pad: %d pads for %d axes (need %d)", n_pads,
                   n_axes, 2 * n_axes);
  WQ_TRY(wq_tu_unique_axes(node, axes, n_axes, rank, "axes", err));
  for (int d = 0; d < rank; d++)
    plan->begin[d] = plan->end[d] = 0;
  for (int i = 0; i < n_axes; i++) {
    int64_t b = pads[i], e = pads[i + n_axes];
    if (b > WQ_MAX_ELEMENTS || e > WQ_MAX_ELEMENTS || b < -WQ_MAX_ELEMENTS || e < -WQ_MAX_ELEMENTS)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Pad: pads %lld, %lld for axis %lld are too large", (long long)b, (long long)e,
                     (long long)axes[i]);
    plan->begin[axes[i]] = b;
    plan->end[axes[i]] = e;
  }
  return WQ_OK;
}

static wq_status pad_prepare_shape(const wq_node *node, const wq_value *in, wq_value *out,
                                   pad_plan *plan, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  WQ_TRY(pad_mode(node, &plan->mode, err));
  if (node->opset >= 11 && wq_tu_has_input(node, in, 2)) {
    const wq_value *cv = &in[2];
    if (cv->dtype != in[0].dtype)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Pad: constant_value is %s but data is %s",
                     wq_dtype_name(cv->dtype), wq_dtype_name(in[0].dtype));
    if (cv->rank >= 0 && wq_value_numel(cv) >= 0 && wq_value_numel(cv) != 1)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Pad: constant_value must hold one element, has %lld",
                     (long long)wq_value_numel(cv));
  }
  int rank = in[0].rank;
  wq_tu_set_unknown(out, in[0].dtype, rank);
  WQ_TRY(pad_read(node, in, rank, plan, err));
  if (!plan->known)
    return WQ_OK;
  for (int d = 0; d < rank; d++) {
    int64_t dim = in[0].dims[d], b = plan->begin[d], e = plan->end[d];
    if (dim < 0) {
      plan->known = false;
      continue;
    }
    int64_t kept = dim - (b < 0 ? -b : 0) - (e < 0 ? -e : 0);
    if (kept < 0)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Pad: pads %lld, %lld crop more than axis %d's %lld elements", (long long)b,
                     (long long)e, d, (long long)dim);
    if (kept == 0 && (b > 0 || e > 0) && plan->mode != WQ_PAD_CONSTANT)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Pad: cannot extend empty axis %d in edge/reflect/wrap mode", d);
    out->dims[d] = dim + b + e;
  }
  if (wq_tu_shape_known(out))
    WQ_TRY(wq_shape_check(out->dims, rank, node->name, "Pad output", err));
  return WQ_OK;
}

static wq_status pad_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  pad_plan plan;
  return pad_prepare_shape(node, in, &out[0], &plan, err);
}

/* Writes `v` as one element of `dtype` (opset < 11 gives the fill as a
 * float attribute whatever the data type). */
static wq_status store_scalar(const wq_node *node, wq_dtype dtype, double v, void *dst,
                              wq_error *err) {
  switch (dtype) {
  case WQ_DT_FLOAT: *(float *)dst = (float)v; return WQ_OK;
  case WQ_DT_DOUBLE: *(double *)dst = v; return WQ_OK;
  default: break;
  }
  if (wq_dtype_is_integer(dtype) || dtype == WQ_DT_BOOL) {
    /* Integer data padded with a float value: truncate like a cast. */
    double t = isfinite(v) ? trunc(v) : 0.0;
    if (t < -9.2e18 || t > 9.2e18)
      t = 0.0;
    int64_t i = dtype == WQ_DT_BOOL ? (v != 0.0) : (int64_t)t;
    switch (wq_dtype_size(dtype)) {
    case 1: *(uint8_t *)dst = (uint8_t)i; return WQ_OK;
    case 2: *(uint16_t *)dst = (uint16_t)i; return WQ_OK;
    case 4: *(uint32_t *)dst = (uint32_t)i; return WQ_OK;
    default: *(uint64_t *)dst = (uint64_t)i; return WQ_OK;
    }
  }
  if (v == 0.0) { /* +0.0 is all-zero bytes in every float format */
    memset(dst, 0, wq_dtype_size(dtype));
    return WQ_OK;
  }
  return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Pad: value %g for %s data is not supported",
                 v, wq_dtype_name(dtype));
}

static wq_status pad_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  pad_plan plan;
  wq_value shape;
  WQ_TRY(pad_prepare_shape(node, in, &shape, &plan, err));
  int rank = in[0].rank;
  if (!plan.known || shape.rank != out[0].rank ||
      memcmp(shape.dims, out[0].dims, (size_t)rank * sizeof shape.dims[0]) != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Pad: output shape disagrees with the inputs");
  size_t elem = wq_dtype_size(in[0].dtype);
  unsigned char fill[16] = {0};
  if (node->opset >= 11) {
    if (wq_tu_has_input(node, in, 2))
      memcpy(fill, in[2].data, elem);
  } else {
    float v = 0.0f;
    WQ_TRY(wq_attr_float(node, "value", 0.0f, &v, err));
    WQ_TRY(store_scalar(node, in[0].dtype, v, fill, err));
  }
  if (!wq_ref_pad(in[0].data, out[0].data, elem, rank, in[0].dims, plan.begin, plan.end, plan.mode,
                  fill))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Pad: out of memory");
  return WQ_OK;
}

const wq_op wq_op_pad = {.op_type = "Pad",
                         .domain = "",
                         .min_opset = 1,
                         .min_inputs = 1,
                         .max_inputs = 4,
                         .min_outputs = 1,
                         .max_outputs = 1,
                         .infer = pad_infer,
                         .run = pad_run};
