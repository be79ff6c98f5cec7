/* Channels-last data movement on int8/uint8 codes (domain "wasmq"), which
 * the layout pass (passes/layout_int8.c) puts where a Resize or
 * DepthToSpace reads a channels-last tensor:
 *   ResizeNearestNHWC   ONNX Resize (mode nearest, every opset's inputs and
 *                       attributes) on x [N, (H,) W, C]; N and C are not
 *                       resized. The source pixel of every output pixel is
 *                       found once when planned by running ONNX Resize itself
 *                       on a tensor of pixel indices, so the mapping is the
 *                       reference's exactly;
 *   DepthToSpaceNHWC    ONNX DepthToSpace (blocksize, mode DCR/CRD) on
 *                       x [N, H, W, C] -> [N, H*b, W*b, C/b²].
 * Codes are copied, so quantization parameters pass through unchanged. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "int8_common.h"

/* [N, S..., C] dims as [N, C, S...] (to_nchw) or back. */
static void permute_dims(const int64_t *in, int rank, bool to_nchw, int64_t *out) {
  out[0] = in[0];
  for (int d = 1; d < rank; d++)
    out[d] = to_nchw ? in[d == 1 ? rank - 1 : d - 1] : in[d == rank - 1 ? 1 : d + 1];
}

/* ---- ResizeNearestNHWC -------------------------------------------------- */

typedef struct {
  const wq_op *resize; /* ONNX Resize: its parsing, shape rules and index math */
  void *resize_state;
  bool planned;
  int64_t x_dims[WQ_MAX_RANK]; /* the NHWC input shape planned for */
  int x_rank;
  int32_t *src_h, *src_w; /* source row / column of every output row / column */
  int64_t out_h, out_w;
} resize_nhwc_state;

static void resize_nhwc_free(void *p) {
  resize_nhwc_state *s = p;
  if (!s)
    return;
  if (s->resize && s->resize->free_state && s->resize_state)
    s->resize->free_state(s->resize_state);
  free(s->src_h);
  free(s->src_w);
  free(s);
}

/* The node as ONNX Resize sees it: same attributes, inputs and opset. */
static wq_node resize_view(const wq_node *node) {
  const resize_nhwc_state *s = node->op_state;
  wq_node view = *node;
  view.op = s->resize;
  view.op_state = s->resize_state;
  return view;
}

static wq_status resize_nhwc_prepare(wq_node *node, wq_error *err) {
  resize_nhwc_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "ResizeNearestNHWC: out of memory");
  s->resize = wq_op_by_id(WQ_OPID(resize));
  if (!s->resize) {
    free(s);
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "ResizeNearestNHWC: ONNX Resize is not registered");
  }
  wq_node view = *node;
  view.op_state = NULL;
  wq_status st = s->resize->prepare ? s->resize->prepare(&view, err) : WQ_OK;
  s->resize_state = view.op_state;
  const char *mode = "nearest";
  if (st == WQ_OK)
    st = wq_attr_string(node, "mode", "nearest", &mode, err);
  if (st == WQ_OK && strcmp(mode, "nearest") != 0)
    st = wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                 "ResizeNearestNHWC: mode '%s' (only nearest moves codes unchanged)", mode);
  if (st != WQ_OK) {
    resize_nhwc_free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

static wq_status resize_nhwc_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                   wq_error *err) {
  WQ_TRY(wq_int8_expect_8bit(node, "X", in[0].dtype, err));
  out[0].dtype = in[0].dtype;
  out[0].rank = in[0].rank;
  if (in[0].rank < 0)
    return WQ_OK;
  if (in[0].rank < 3 || in[0].rank > 4)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ResizeNearestNHWC: X must be [N, (H,) W, C], has rank %d", in[0].rank);
  wq_value view_in[4];
  const int n = node->n_inputs < 4 ? node->n_inputs : 4;
  for (int k = 0; k < n; k++)
    view_in[k] = in[k];
  permute_dims(in[0].dims, in[0].rank, true, view_in[0].dims);
  wq_value nchw_out;
  memset(&nchw_out, 0, sizeof nchw_out);
  wq_node view = resize_view(node);
  WQ_TRY(view.op->infer(&view, view_in, &nchw_out, err));
  const int r = in[0].rank;
  if (nchw_out.rank != r)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "ResizeNearestNHWC: output rank %d, expected %d",
                   nchw_out.rank, r);
  if ((nchw_out.dims[0] >= 0 && nchw_out.dims[0] != in[0].dims[0]) ||
      (nchw_out.dims[1] >= 0 && nchw_out.dims[1] != in[0].dims[r - 1]))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "ResizeNearestNHWC: resizing N or C ([%lld, %lld] -> [%lld, %lld]) is not "
                   "supported",
                   (long long)in[0].dims[0], (long long)in[0].dims[r - 1],
                   (long long)nchw_out.dims[0], (long long)nchw_out.dims[1]);
  permute_dims(nchw_out.dims, r, false, out[0].dims);
  return WQ_OK;
}

/* Runs ONNX Resize on an int32 [1, 1, (H,) W] tensor holding each pixel's
 * index: output pixel (oh, ow) then holds its source pixel. */
static wq_status resize_nhwc_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  resize_nhwc_state *s = node->op_state;
  s->planned = false;
  wq_value x = wq_tensor_value(&g->tensors[node->inputs[0]]);
  if (!wq_value_shape_known(&x) || x.rank < 3 || x.rank > 4)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ResizeNearestNHWC: X must have a static [N, (H,) W, C] shape");
  const int r = x.rank;
  const int64_t in_h = r == 4 ? x.dims[1] : 1, in_w = x.dims[r - 2];
  wq_value in[4];
  const int n_in = node->n_inputs < 4 ? node->n_inputs : 4;
  int64_t sizes[WQ_MAX_RANK];
  for (int k = 1; k < n_in; k++) {
    int t = node->inputs[k];
    if (t < 0) {
      memset(&in[k], 0, sizeof in[k]);
      in[k].dtype = WQ_DT_UNDEFINED;
      in[k].rank = -1;
      continue;
    }
    if (!g->tensors[t].is_constant || !g->tensors[t].data)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "ResizeNearestNHWC: input %d must be a constant", k);
    in[k] = wq_tensor_value(&g->tensors[t]);
  }
  /* sizes (opset 11+: input 3) name N and C too: they become 1 like the
   * index tensor's (only their entries change; `axes` says which). */
  if (n_in > 3 && node->inputs[3] >= 0 && in[3].dtype == WQ_DT_INT64 && in[3].rank == 1 &&
      in[3].dims[0] <= WQ_MAX_RANK && wq_value_numel(&in[3]) > 0) {
    const int64_t *axes = NULL;
    size_t n_axes = 0;
    WQ_TRY(wq_attr_ints(node, "axes", &axes, &n_axes, err));
    for (int64_t j = 0; j < in[3].dims[0]; j++) {
      int64_t axis = n_axes ? axes[j < (int64_t)n_axes ? j : 0] : j;
      if (axis < 0)
        axis += r;
      sizes[j] = axis == 0 || axis == 1 ? 1 : ((const int64_t *)in[3].data)[j];
    }
    in[3].data = sizes;
  }
  const int64_t pixels = in_h * in_w;
  int32_t *index = malloc(sizeof(int32_t) * (size_t)(pixels > 0 ? pixels : 1));
  if (!index)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "ResizeNearestNHWC: out of memory");
  for (int64_t i = 0; i < pixels; i++)
    index[i] = (int32_t)i;
  memset(&in[0], 0, sizeof in[0]);
  in[0].dtype = WQ_DT_INT32;
  in[0].rank = r;
  in[0].dims[0] = in[0].dims[1] = 1;
  in[0].dims[r - 2] = in_h;
  in[0].dims[r - 1] = in_w;
  in[0].data = index;
  wq_value out;
  memset(&out, 0, sizeof out);
  wq_node view = resize_view(node);
  wq_status st = view.op->infer(&view, in, &out, err);
  int64_t total = st == WQ_OK && wq_value_shape_known(&out) ? wq_value_numel(&out) : -1;
  const int64_t out_h = r == 4 ? out.dims[2] : 1, out_w = out.dims[r - 1];
  if (st == WQ_OK && (total < 0 || total != out_h * out_w))
    st = wq_fail(err, WQ_ERR_SHAPE, node->name,
                 "ResizeNearestNHWC: the resized pixel grid is not static");
  int32_t *map = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1)) : NULL;
  if (st == WQ_OK && !map)
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "ResizeNearestNHWC: out of memory");
  out.data = map;
  if (st == WQ_OK)
    st = view.op->run(&view, in, &out, err);
  free(index);
  free(s->src_h);
  free(s->src_w);
  s->src_h = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(out_h > 0 ? out_h : 1)) : NULL;
  s->src_w = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(out_w > 0 ? out_w : 1)) : NULL;
  if (st == WQ_OK && (!s->src_h || !s->src_w))
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "ResizeNearestNHWC: out of memory");
  /* Nearest resizing is separable: the first column and row give the
   * source row and column of every output pixel. */
  for (int64_t o = 0; st == WQ_OK && o < out_h + out_w; o++) {
    int32_t src = map[o < out_h ? o * out_w : o - out_h];
    if (src < 0 || src >= pixels)
      st = wq_fail(err, WQ_ERR_SHAPE, node->name, "ResizeNearestNHWC: source pixel %d of %lld",
                   (int)src, (long long)pixels);
    else if (o < out_h)
      s->src_h[o] = (int32_t)(src / in_w);
    else
      s->src_w[o - out_h] = (int32_t)(src % in_w);
  }
  free(map);
  if (st != WQ_OK)
    return st;
  s->out_h = out_h;
  s->out_w = out_w;
  s->x_rank = r;
  memcpy(s->x_dims, x.dims, sizeof s->x_dims);
  s->planned = true;
  return WQ_OK;
}

static wq_status resize_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  const resize_nhwc_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].rank != s->x_rank ||
      memcmp(in[0].dims, s->x_dims, sizeof(int64_t) * (size_t)in[0].rank))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "ResizeNearestNHWC: X shape differs from the planned one");
  const int r = in[0].rank;
  wq_resize_nhwc rz = {.batch = in[0].dims[0],
                       .in_h = r == 4 ? in[0].dims[1] : 1,
                       .in_w = in[0].dims[r - 2],
                       .out_h = s->out_h,
                       .out_w = s->out_w,
                       .channels = in[0].dims[r - 1],
                       .src_h = s->src_h,
                       .src_w = s->src_w};
  wq_resize_nearest_nhwc_q8(&rz, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_resize_nearest_nhwc = {.int8 = WQ_INT8_KERNEL,
                                         .layout = WQ_LCAP_NHWC,
                                         .op_type = "ResizeNearestNHWC",
                                         .domain = WQ_INT8_DOMAIN,
                                         .min_opset = 1,
                                         .min_inputs = 1,
                                         .max_inputs = 4,
                                         .min_outputs = 1,
                                         .max_outputs = 1,
                                         .prepare = resize_nhwc_prepare,
                                         .free_state = resize_nhwc_free,
                                         .infer = resize_nhwc_infer,
                                         .run = resize_nhwc_run,
                                         .plan = resize_nhwc_plan};

/* ---- DepthToSpaceNHWC --------------------------------------------------- */

typedef struct {
  int64_t block;
  bool crd;
} d2s_nhwc_state;

static wq_status d2s_nhwc_prepare(wq_node *node, wq_error *err) {
  int64_t block = 0;
  const char *mode = "DCR";
  if (!wq_node_attr(node, "blocksize"))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "DepthToSpaceNHWC: attribute 'blocksize' missing");
  WQ_TRY(wq_attr_int(node, "blocksize", 0, &block, err));
  if (block <= 0 || block > 4096)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "DepthToSpaceNHWC: blocksize %lld is invalid",
                   (long long)block);
  if (node->opset >= 11) /* mode arrived in opset 11 */
    WQ_TRY(wq_attr_string(node, "mode", "DCR", &mode, err));
  if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "DepthToSpaceNHWC: mode '%s' is not DCR or CRD", mode);
  d2s_nhwc_state *s = malloc(sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "DepthToSpaceNHWC: out of memory");
  s->block = block;
  s->crd = strcmp(mode, "CRD") == 0;
  node->op_state = s;
  return WQ_OK;
}

static wq_status d2s_nhwc_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const d2s_nhwc_state *s = node->op_state;
  const int64_t b = s->block;
  WQ_TRY(wq_int8_expect_8bit(node, "input", in[0].dtype, err));
  out[0].dtype = in[0].dtype;
  out[0].rank = 4;
  if (in[0].rank < 0) {
    for (int d = 0; d < 4; d++)
      out[0].dims[d] = -1;
    return WQ_OK;
  }
  if (in[0].rank != 4)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "DepthToSpaceNHWC: input must be [N, H, W, C], has rank %d", in[0].rank);
  const int64_t *d = in[0].dims;
  if (d[3] >= 0 && d[3] % (b * b) != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "DepthToSpaceNHWC: %lld channels are not divisible by blocksize^2 = %lld",
                   (long long)d[3], (long long)(b * b));
  out[0].dims[0] = d[0];
  out[0].dims[1] = d[1] < 0 ? -1 : d[1] * b;
  out[0].dims[2] = d[2] < 0 ? -1 : d[2] * b;
  out[0].dims[3] = d[3] < 0 ? -1 : d[3] / (b * b);
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, 4, node->name, "DepthToSpaceNHWC output", err));
  return WQ_OK;
}

static wq_status d2s_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  (void)err;
  const d2s_nhwc_state *s = node->op_state;
  const int64_t *d = in[0].dims;
  if (wq_value_numel(&out[0]) > 0)
    wq_depth_to_space_nhwc_q8(d[0], d[1], d[2], d[3], s->block, s->crd, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_depth_to_space_nhwc = {.int8 = WQ_INT8_KERNEL,
                                         .layout = WQ_LCAP_NHWC,
                                         .op_type = "DepthToSpaceNHWC",
                                         .domain = WQ_INT8_DOMAIN,
                                         .min_opset = 1,
                                         .min_inputs = 1,
                                         .max_inputs = 1,
                                         .min_outputs = 1,
                                         .max_outputs = 1,
                                         .prepare = d2s_nhwc_prepare,
                                         .free_state = free,
                                         .infer = d2s_nhwc_infer,
                                         .run = d2s_nhwc_run};
