/* ConvTranspose (opset 1+): groups, pads, strides, dilations,
 * output_padding, output_shape, auto_pad. Output size follows the ONNX spec:
 * full = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1,
 * then cropped by pads (explicit, or derived from output_shape / auto_pad;
 * a negative derived padding is clamped to 0 so the extra rows are at the end). */
#include <stdlib.h>

#include "../kernels/conv_f32.h"
#include "nn_window.h"
#include "op.h"

typedef struct {
  wq_window_attrs win;
  int64_t group;
  int n_output_padding, n_output_shape;
  int64_t output_padding[WQ_CONV_MAX_SPATIAL];
  int64_t output_shape[WQ_MAX_RANK];
} conv_transpose_state;

static wq_status conv_transpose_prepare(wq_node *node, wq_error *err) {
  conv_transpose_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "ConvTranspose: out of memory");
  wq_status st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK)
    st = wq_conv_group_parse(node, &s->group, err);
  if (st == WQ_OK)
    st = wq_window_read_ints(node, "output_padding", s->output_padding, WQ_CONV_MAX_SPATIAL,
                             &s->n_output_padding, err);
  if (st == WQ_OK)
    st = wq_window_read_ints(node, "output_shape", s->output_shape, WQ_MAX_RANK, &s->n_output_shape,
                             err);
  /* output_padding adds rows a stride would not reach: from 0 to below
   * max(stride, dilation) along each axis, as onnxruntime checks. */
  for (int i = 0; st == WQ_OK && i < s->n_output_padding; i++) {
    int64_t stride = i < s->win.n_strides ? s->win.strides[i] : 1;
    int64_t dilation = i < s->win.n_dilations ? s->win.dilations[i] : 1;
    int64_t limit = stride > dilation ? stride : dilation;
    if (s->output_padding[i] < 0 || s->output_padding[i] >= limit)
      st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "ConvTranspose: attribute output_padding[%d] is %lld (must be from 0 to below "
                   "max(stride, dilation) = %lld)",
                   i, (long long)s->output_padding[i], (long long)limit);
  }
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

static wq_status conv_transpose_resolve(const wq_node *node, const wq_value *in,
                                        wq_conv_geometry *g, wq_error *err) {
  const conv_transpose_state *s = node->op_state;
  const wq_value *x = &in[0], *w = &in[1];
  const wq_value *b = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  if (x->dtype != WQ_DT_FLOAT || w->dtype != WQ_DT_FLOAT || (b && b->dtype != WQ_DT_FLOAT))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "ConvTranspose: only float tensors are supported (X %s, W %s)",
                   wq_dtype_name(x->dtype), wq_dtype_name(w->dtype));
  if (w->rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: W must be [C, M/group, k1, ...] (rank >= 3), has rank %d",
                   w->rank);
  if (x->rank >= 0 && x->rank != w->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "ConvTranspose: X has rank %d but W has rank %d",
                   x->rank, w->rank);
  int64_t c = x->rank >= 0 ? x->dims[1] : -1, cw = w->dims[0], mg = w->dims[1];
  if (c >= 0 && cw >= 0 && c != cw)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: X has %lld channels but W.shape[0] is %lld", (long long)c,
                   (long long)cw);
  if (cw >= 0 && cw % s->group != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: %lld input channels are not a multiple of group %lld",
                   (long long)cw, (long long)s->group);
  int64_t m = mg >= 0 ? mg * s->group : -1;
  if (b && (b->rank != 1 || (m >= 0 && b->dims[0] >= 0 && b->dims[0] != m)))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: bias B must be [%lld] (W.shape[1] * group)", (long long)m);
  int n = w->rank - 2;
  int64_t in_spatial[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < n; i++)
    in_spatial[i] = x->rank >= 0 ? x->dims[2 + i] : -1;
  WQ_TRY(wq_window_geometry(node, &s->win, n, in_spatial, w->dims + 2, false, false, g, err));
  if (s->n_output_padding && s->n_output_padding != n)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: output_padding has %d entries for %d spatial dims",
                   s->n_output_padding, n);
  /* output_shape may list only the spatial dims or all of them. */
  const int64_t *out_shape = NULL;
  if (s->n_output_shape == n)
    out_shape = s->output_shape;
  else if (s->n_output_shape == n + 2)
    out_shape = s->output_shape + 2;
  else if (s->n_output_shape != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ConvTranspose: output_shape has %d entries for %d spatial dims",
                   s->n_output_shape, n);
  for (int i = 0; i < n; i++) {
    if (in_spatial[i] < 0 || g->kernel[i] < 0) {
      g->out[i] = -1;
      continue;
    }
    /* stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1, checked:
     * the attributes may be anything up to INT64_MAX. */
    int64_t full, keff;
    int64_t out_pad = s->n_output_padding ? s->output_padding[i] : 0;
    if (!wq_muladd_i64(g->kernel[i] - 1, g->dilation[i], 1, &keff) ||
        !wq_muladd_i64(g->stride[i], in_spatial[i] - 1, keff, &full) ||
        !wq_add_i64(full, out_pad, &full) || full > WQ_MAX_DIM ||
        (out_shape && (out_shape[i] < 1 || out_shape[i] > WQ_MAX_DIM)))
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "ConvTranspose: spatial axis %d: output size overflows the %lld limit "
                     "(strides, dilations, output_padding or output_shape too large)",
                     i, (long long)WQ_MAX_DIM);
    wq_auto_pad ap = s->win.auto_pad;
    if (out_shape || ap == WQ_AUTO_PAD_SAME_UPPER || ap == WQ_AUTO_PAD_SAME_LOWER) {
      int64_t target = out_shape ? out_shape[i] : 0;
      if (!out_shape && (!wq_mul_i64(in_spatial[i], g->stride[i], &target) || target > WQ_MAX_DIM))
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "ConvTranspose: spatial axis %d: input %lld times stride %lld overflows the "
                       "%lld limit",
                       i, (long long)in_spatial[i], (long long)g->stride[i], (long long)WQ_MAX_DIM);
      int64_t total = full - target;
      if (total < 0)
        total = 0;
      g->pad_begin[i] = ap == WQ_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
      g->pad_end[i] = total - g->pad_begin[i];
      g->out[i] = target;
    } else {
      if (ap == WQ_AUTO_PAD_VALID)
        g->pad_begin[i] = g->pad_end[i] = 0;
      g->out[i] = full - g->pad_begin[i] - g->pad_end[i];
    }
    if (g->out[i] < 1)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "ConvTranspose: spatial axis %d: output size %lld is not positive", i,
                     (long long)g->out[i]);
  }
  return WQ_OK;
}

static wq_status conv_transpose_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                      wq_error *err) {
  const conv_transpose_state *s = node->op_state;
  if (in[1].rank < 0) {
    /* Weight shape unknown until run time (a graph-input weight). */
    out[0].dtype = WQ_DT_FLOAT;
    out[0].rank = in[0].rank;
    for (int i = 0; i < in[0].rank; i++)
      out[0].dims[i] = i == 0 ? in[0].dims[0] : -1;
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(conv_transpose_resolve(node, in, &g, err));
  out[0].dtype = WQ_DT_FLOAT;
  out[0].rank = g.n_spatial + 2;
  out[0].dims[0] = in[0].rank >= 0 ? in[0].dims[0] : -1;
  out[0].dims[1] = in[1].dims[1] >= 0 ? in[1].dims[1] * s->group : -1;
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[2 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "ConvTranspose output", err));
  return WQ_OK;
}

static wq_status conv_transpose_run(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  const conv_transpose_state *s = node->op_state;
  wq_conv_geometry g;
  WQ_TRY(conv_transpose_resolve(node, in, &g, err));
  for (int i = 0; i < g.n_spatial; i++)
    g.in[i] = in[0].dims[2 + i];
  const wq_value *b = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  wq_status st =
      wq_conv_transpose_f32(&g, in[0].dims[0], in[0].dims[1], in[1].dims[1] * s->group, s->group,
                            in[0].data, in[1].data, b ? b->data : NULL, out[0].data);
  if (st != WQ_OK)
    return wq_fail(err, st, node->name, "ConvTranspose: out of memory for col2im scratch");
  return WQ_OK;
}

/* The col2im scratch of a run at the graph's shapes (none while symbolic). */
static int64_t conv_transpose_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  const conv_transpose_state *s = node->op_state;
  wq_value in[3];
  wq_node_input_values(g, node, in, 3);
  wq_conv_geometry geo;
  wq_error err;
  *scratch = 0;
  if (s && wq_value_shape_known(&in[0]) && wq_value_shape_known(&in[1]) &&
      conv_transpose_resolve(node, in, &geo, &err) == WQ_OK) {
    for (int i = 0; i < geo.n_spatial; i++)
      geo.in[i] = in[0].dims[2 + i];
    *scratch = wq_conv_transpose_f32_scratch_bytes(&geo, in[0].dims[1], in[1].dims[1] * s->group,
                                                   s->group);
  }
  return 0;
}

const wq_op wq_op_conv_transpose = {
    .op_type = "ConvTranspose",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .prepare = conv_transpose_prepare,
    .free_state = free,
    .infer = conv_transpose_infer,
    .run = conv_transpose_run,
    .memory = conv_transpose_memory,
};
