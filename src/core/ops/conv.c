/* Conv (opset 1+): N-D spatial, groups (incl. depthwise), pads, strides,
 * dilations, auto_pad, optional bias; kernel from kernel_shape or W. */
#include <stdlib.h>

#include "../kernels/conv_f32.h"
#include "nn_window.h"
#include "op.h"

typedef struct {
  wq_window_attrs win;
  int64_t group;
  bool relu; /* a Relu folded in by passes/fuse_float.c */
} conv_state;

static wq_status conv_prepare(wq_node *node, wq_error *err) {
  conv_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Conv: out of memory");
  wq_status st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK)
    st = wq_conv_group_parse(node, &s->group, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

/* Checks X, W, B against each other and fills the geometry (out[] -1 where
 * unknown). Shared by infer and run. */
static wq_status conv_resolve(const wq_node *node, const wq_value *in, wq_conv_geometry *g,
                              wq_error *err) {
  const conv_state *s = node->op_state;
  const wq_value *x = &in[0], *w = &in[1];
  const wq_value *b = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  if (x->dtype != WQ_DT_FLOAT || w->dtype != WQ_DT_FLOAT || (b && b->dtype != WQ_DT_FLOAT))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Conv: only float tensors are supported (X %s, W %s%s%s)",
                   wq_dtype_name(x->dtype), wq_dtype_name(w->dtype), b ? ", B " : "",
                   b ? wq_dtype_name(b->dtype) : "");
  if (w->rank < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Conv: weight W has an unknown rank");
  if (w->rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Conv: W must be [M, C/group, k1, ...] (rank >= 3), has rank %d", w->rank);
  if (x->rank >= 0 && x->rank != w->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Conv: X has rank %d but W has rank %d", x->rank,
                   w->rank);
  int64_t c = x->rank >= 0 ? x->dims[1] : -1, m = w->dims[0], cw = w->dims[1];
  if (c >= 0 && cw >= 0 && c != cw * s->group)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Conv: X has %lld channels but W.shape[1] * group = %lld * %lld = %lld",
                   (long long)c, (long long)cw, (long long)s->group, (long long)(cw * s->group));
  if (m >= 0 && m % s->group != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Conv: W has %lld output channels, not a multiple of group %lld", (long long)m,
                   (long long)s->group);
  if (b && (b->rank != 1 || (m >= 0 && b->dims[0] >= 0 && b->dims[0] != m)))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Conv: bias B must be [%lld] (one per output channel), has rank %d dim %lld",
                   (long long)m, b->rank, b->rank > 0 ? (long long)b->dims[0] : 0LL);
  int n_spatial = w->rank - 2;
  int64_t in_spatial[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < n_spatial && i < WQ_CONV_MAX_SPATIAL; i++)
    in_spatial[i] = x->rank >= 0 ? x->dims[2 + i] : -1;
  return wq_window_geometry(node, &s->win, n_spatial, in_spatial, w->dims + 2, false, true, g, err);
}

static wq_status conv_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  if (in[1].rank < 0) {
    /* Weight shape unknown until run time (a graph-input weight). */
    out[0].dtype = WQ_DT_FLOAT;
    out[0].rank = in[0].rank;
    for (int i = 0; i < in[0].rank; i++)
      out[0].dims[i] = i == 0 ? in[0].dims[0] : -1;
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(conv_resolve(node, in, &g, err));
  out[0].dtype = WQ_DT_FLOAT;
  out[0].rank = g.n_spatial + 2;
  out[0].dims[0] = in[0].rank >= 0 ? in[0].dims[0] : -1;
  out[0].dims[1] = in[1].dims[0];
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[2 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "Conv output", err));
  return WQ_OK;
}

static wq_status conv_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const conv_state *s = node->op_state;
  wq_conv_geometry g;
  WQ_TRY(conv_resolve(node, in, &g, err));
  const wq_value *b = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  wq_status st = wq_conv_f32(&g, in[0].dims[0], in[0].dims[1], in[1].dims[0], s->group, in[0].data,
                             in[1].data, b ? b->data : NULL, s->relu, out[0].data);
  if (st != WQ_OK)
    return wq_fail(err, st, node->name, "Conv: out of memory for im2col scratch");
  return WQ_OK;
}

/* The im2col scratch of a run at the graph's shapes (none while they are
 * symbolic: the memory limit then sees only the arena and outputs). */
static int64_t conv_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  const conv_state *s = node->op_state;
  wq_value in[3];
  wq_node_input_values(g, node, in, 3);
  wq_conv_geometry geo;
  wq_error err;
  *scratch = 0;
  if (s && wq_value_shape_known(&in[0]) && wq_value_shape_known(&in[1]) &&
      conv_resolve(node, in, &geo, &err) == WQ_OK)
    *scratch =
        wq_conv_f32_scratch_bytes(&geo, in[0].dims[0], in[0].dims[1], in[1].dims[0], s->group);
  return 0;
}

const wq_op wq_op_conv = {
    .int8 = WQ_INT8_CONV,
    .int8_as = WQ_OPID(int8_conv),
    .quant_role = WQ_QROLE_LINEAR,

    .op_type = "Conv",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .prepare = conv_prepare,
    .free_state = free,
    .infer = conv_infer,
    .run = conv_run,
    .memory = conv_memory,
};

bool wq_conv_fuse_relu(wq_node *node) {
  if (node->op != &wq_op_conv || !node->op_state)
    return false;
  ((conv_state *)node->op_state)->relu = true;
  return true;
}
