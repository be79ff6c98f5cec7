#include "nn_window.h"

#include <stdio.h>

wq_status wq_window_read_ints(const wq_node *node, const char *name, int64_t *dst, int cap,
                              int *count, wq_error *err) {
  const int64_t *vals;
  size_t n;
  WQ_TRY(wq_attr_ints(node, name, &vals, &n, err));
  if (n > (size_t)cap)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: attribute %s has %zu entries (max %d)",
                   node->op_type, name, n, cap);
  for (size_t i = 0; i < n; i++)
    dst[i] = vals[i];
  *count = (int)n;
  return WQ_OK;
}

/* Values in [min, max]; a stride may be huge (valid ONNX: one window),
 * lengths (pads, kernel sizes) are bounded by the largest dim. */
static wq_status check_range(const wq_node *node, const char *name, const int64_t *v, int n,
                             int64_t min, int64_t max, wq_error *err) {
  for (int i = 0; i < n; i++)
    if (v[i] < min || v[i] > max)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "%s: attribute %s[%d] is %lld (must be in %lld..%lld)", node->op_type, name, i,
                     (long long)v[i], (long long)min, (long long)max);
  return WQ_OK;
}

wq_status wq_conv_group_parse(const wq_node *node, int64_t *group, wq_error *err) {
  WQ_TRY(wq_attr_int(node, "group", 1, group, err));
  if (*group < 1 || *group > WQ_MAX_DIM)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: group is %lld (must be from 1 to %lld)", node->op_type, (long long)*group,
                   (long long)WQ_MAX_DIM);
  return WQ_OK;
}

wq_status wq_window_attrs_parse(const wq_node *node, wq_window_attrs *a, wq_error *err) {
  const char *auto_pad;
  WQ_TRY(wq_attr_string(node, "auto_pad", "NOTSET", &auto_pad, err));
  if (!wq_auto_pad_parse(auto_pad, &a->auto_pad))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                   node->op_type, auto_pad);
  WQ_TRY(wq_window_read_ints(node, "kernel_shape", a->kernel_shape, WQ_CONV_MAX_SPATIAL,
                             &a->n_kernel_shape, err));
  WQ_TRY(wq_window_read_ints(node, "strides", a->strides, WQ_CONV_MAX_SPATIAL, &a->n_strides, err));
  WQ_TRY(wq_window_read_ints(node, "dilations", a->dilations, WQ_CONV_MAX_SPATIAL, &a->n_dilations,
                             err));
  WQ_TRY(wq_window_read_ints(node, "pads", a->pads, 2 * WQ_CONV_MAX_SPATIAL, &a->n_pads, err));
  WQ_TRY(check_range(node, "kernel_shape", a->kernel_shape, a->n_kernel_shape, 1, WQ_MAX_DIM, err));
  WQ_TRY(check_range(node, "strides", a->strides, a->n_strides, 1, INT64_MAX, err));
  WQ_TRY(check_range(node, "dilations", a->dilations, a->n_dilations, 1, INT64_MAX, err));
  WQ_TRY(check_range(node, "pads", a->pads, a->n_pads, 0, WQ_MAX_DIM, err));
  return WQ_OK;
}

static wq_status check_len(const wq_node *node, const char *name, int have, int want, int n_spatial,
                           wq_error *err) {
  if (have != 0 && have != want)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: %s has %d entries but the input has %d spatial dims (needs %d)",
                   node->op_type, name, have, n_spatial, want);
  return WQ_OK;
}

/* SAME padding needs a negative total pad when the stride outruns the
 * window (e.g. kernel 1, stride 8 over 5 rows). onnxruntime then pads
 * negatively, starting the first window inside the input: with a negative
 * begin pad its results differ from clamping to 0, so that case is refused
 * rather than computed differently. A negative end pad only trims rows no
 * window reaches: clamped, it gives the same result. */
static wq_status check_same_pads(const wq_node *node, wq_auto_pad ap, int i,
                                 const wq_conv_geometry *g, wq_error *err) {
  int64_t keff;
  if ((ap != WQ_AUTO_PAD_SAME_UPPER && ap != WQ_AUTO_PAD_SAME_LOWER) || g->in[i] < 1 ||
      !wq_muladd_i64(g->kernel[i] - 1, g->dilation[i], 1, &keff) || keff > WQ_MAX_DIM)
    return WQ_OK; /* resolve reports what is wrong with these */
  int64_t s = g->stride[i], out = g->in[i] / s + (g->in[i] % s != 0);
  int64_t total = (out - 1) * s + keff - g->in[i]; /* (out - 1) * s < in: no overflow */
  int64_t begin = ap == WQ_AUTO_PAD_SAME_LOWER ? (total + 1) / 2 : total / 2; /* toward 0 */
  if (begin < 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: attribute auto_pad %s pads spatial axis %d negatively (begin %lld): "
                   "not supported",
                   node->op_type, ap == WQ_AUTO_PAD_SAME_LOWER ? "SAME_LOWER" : "SAME_UPPER", i,
                   (long long)begin);
  return WQ_OK;
}

wq_status wq_window_geometry(const wq_node *node, const wq_window_attrs *a, int n_spatial,
                             const int64_t *in_spatial, const int64_t *weight_kernel,
                             bool ceil_mode, bool forward, wq_conv_geometry *g, wq_error *err) {
  if (n_spatial < 1 || n_spatial > WQ_CONV_MAX_SPATIAL)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: input needs 1..%d spatial dims after N and C, has %d", node->op_type,
                   WQ_CONV_MAX_SPATIAL, n_spatial);
  WQ_TRY(check_len(node, "kernel_shape", a->n_kernel_shape, n_spatial, n_spatial, err));
  WQ_TRY(check_len(node, "strides", a->n_strides, n_spatial, n_spatial, err));
  WQ_TRY(check_len(node, "dilations", a->n_dilations, n_spatial, n_spatial, err));
  WQ_TRY(check_len(node, "pads", a->n_pads, 2 * n_spatial, n_spatial, err));
  if (a->n_kernel_shape == 0 && !weight_kernel)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: kernel_shape attribute is required",
                   node->op_type);
  /* A pool's pads stay smaller than its window (as onnxruntime requires):
   * a window wholly in the padding has nothing to pool. */
  for (int i = 0; !weight_kernel && i < 2 * n_spatial && i < a->n_pads; i++)
    if (a->pads[i] >= a->kernel_shape[i % n_spatial])
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "%s: attribute pads[%d] is %lld, not smaller than kernel_shape[%d] = %lld",
                     node->op_type, i, (long long)a->pads[i], i % n_spatial,
                     (long long)a->kernel_shape[i % n_spatial]);
  g->n_spatial = n_spatial;
  bool unknown[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < n_spatial; i++) {
    g->kernel[i] = a->n_kernel_shape ? a->kernel_shape[i] : weight_kernel[i];
    if (a->n_kernel_shape && weight_kernel && weight_kernel[i] >= 0 &&
        weight_kernel[i] != a->kernel_shape[i])
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: kernel_shape[%d] = %lld but the weight's spatial dim is %lld",
                     node->op_type, i, (long long)a->kernel_shape[i], (long long)weight_kernel[i]);
    g->stride[i] = a->n_strides ? a->strides[i] : 1;
    g->dilation[i] = a->n_dilations ? a->dilations[i] : 1;
    g->pad_begin[i] = a->n_pads ? a->pads[i] : 0;
    g->pad_end[i] = a->n_pads ? a->pads[n_spatial + i] : 0;
    unknown[i] = in_spatial[i] < 0 || g->kernel[i] < 0;
    g->in[i] = unknown[i] ? 0 : in_spatial[i];
    g->out[i] = -1;
  }
  if (!forward)
    return WQ_OK;
  /* Resolve axis by axis so an unknown axis does not hide a bad known one. */
  for (int i = 0; i < n_spatial; i++) {
    if (unknown[i])
      continue;
    WQ_TRY(check_same_pads(node, a->auto_pad, i, g, err));
    wq_conv_geometry one = {.n_spatial = 1,
                            .in = {g->in[i]},
                            .kernel = {g->kernel[i]},
                            .stride = {g->stride[i]},
                            .dilation = {g->dilation[i]},
                            .pad_begin = {g->pad_begin[i]},
                            .pad_end = {g->pad_end[i]}};
    if (wq_conv_geometry_resolve(&one, a->auto_pad, ceil_mode) >= 0)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: spatial axis %d: input %lld with pads %lld+%lld is smaller than the "
                     "kernel %lld with dilation %lld",
                     node->op_type, i, (long long)g->in[i], (long long)g->pad_begin[i],
                     (long long)g->pad_end[i], (long long)g->kernel[i], (long long)g->dilation[i]);
    g->pad_begin[i] = one.pad_begin[0];
    g->pad_end[i] = one.pad_end[0];
    g->out[i] = one.out[0];
    g->stride[i] = one.stride[0]; /* resolve makes irrelevant strides and dilations 1 */
    g->dilation[i] = one.dilation[0];
  }
  for (int i = 0; i < n_spatial; i++)
    if (unknown[i])
      g->out[i] = -1;
  return WQ_OK;
}
