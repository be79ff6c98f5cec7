/* Channels-last int8 ops (domain "wasmq") that the layout pass
 * (passes/layout_int8.c) puts inside int8 regions, and the explicit
 * transitions at their boundaries:
 *   ToNHWC / ToNCHW      [N, C, S...] <-> [N, S..., C] on 8-bit codes;
 *   QuantizeLinearNHWC, DequantizeLinearNHWC   such a transition fused into
 *                        the Quantize/DequantizeLinear at a region's edge;
 *   QConvNHWC            QConv's inputs, attributes and quantization on
 *                        x [N, (H,) W, C] -> y [N, (OH,) OW, M]; the
 *                        algorithm (kernels/qconv.h) is chosen when planned
 *                        and appended to the node's lowering note;
 *   QAveragePoolNHWC, QGlobalAveragePoolNHWC   QAveragePool's semantics;
 *   MaxPoolNHWC          MaxPool (no Indices output) on int8/uint8 codes.
 * Weights keep ONNX's [M, C/group, kH, kW] layout; only activations move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../kernels/nhwc.h"
#include "../kernels/qconv.h"
#include "../kernels/quantize.h"
#include "../passes/layout_int8.h"
#include "../passes/lower.h"
#include "../runtime/parallel.h"
#include "int8_common.h"
#include "nn_window.h"

/* ---- transitions ------------------------------------------------------- */

/* ToNHWC / ToNCHW, and the same conversions fused into the Quantize /
 * DequantizeLinear at an int8 region's edge by the layout pass:
 * QuantizeLinearNHWC (float [N, C, S...] -> codes [N, S..., C]) and
 * DequantizeLinearNHWC (codes [N, S..., C] -> float [N, C, S...]), inputs
 * as QuantizeLinear's with a constant per-tensor scale and zero point
 * (passes/layout_int8.c checks that; their values were checked at load). */
enum { BOUNDARY_TILE = 4096 };

static wq_status transition_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  const bool to_nhwc = node->op->flags & WQ_OP_FLAG_TO_NHWC;
  out[0] = in[0];
  out[0].data = NULL;
  if (node->n_inputs > 2) /* fused: codes of the zero point's dtype, or float */
    out[0].dtype = to_nhwc ? in[2].dtype : WQ_DT_FLOAT;
  if (in[0].rank < 0)
    return WQ_OK;
  const int r = in[0].rank;
  if (r < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: input must have rank >= 3 (has %d)",
                   node->op_type, r);
  for (int d = 1; d < r; d++)
    out[0].dims[d] =
        to_nhwc ? in[0].dims[d == r - 1 ? 1 : d + 1] : in[0].dims[d == 1 ? r - 1 : d - 1];
  return WQ_OK;
}

/* The fused conversion in tiles of pixels through a small buffer: quantized
 * channel by channel, then transposed into place (or transposed out, then
 * dequantized) with the kernels of the two nodes it replaces, so the same
 * bits, in one pass over memory. Tiles are independent: threads take
 * shares of them. */
typedef struct {
  bool to_nhwc;
  const wq_value *in;
  wq_value *out;
  int64_t c, s, step, tiles_per_image;
} boundary_job;

static void boundary_tiles(void *ctx, int64_t t0, int64_t t1) {
  const boundary_job *j = ctx;
  const bool to_nhwc = j->to_nhwc;
  const wq_value *in = j->in, *out = j->out;
  const int64_t c = j->c, s = j->s;
  const wq_dtype dt = to_nhwc ? out[0].dtype : in[0].dtype;
  const float scale = *(const float *)in[1].data;
  const int32_t zp = (int32_t)wq_value_get_int(&in[2], 0), qmin = dt == WQ_DT_INT8 ? -128 : 0;
  uint8_t tile[BOUNDARY_TILE];
  float *f = to_nhwc ? in[0].data : out[0].data;
  uint8_t *codes = to_nhwc ? out[0].data : in[0].data;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t b = t / j->tiles_per_image, p = t % j->tiles_per_image * j->step;
    const int64_t len = s - p < j->step ? s - p : j->step;
    uint8_t *at = codes + (b * s + p) * c;
    if (!to_nhwc)
      wq_nhwc_to_nchw_u8(1, c, len, at, tile);
    for (int64_t k = 0; k < c; k++) {
      float *fk = f + (b * c + k) * s + p;
      if (to_nhwc)
        wq_quantize_f32_q8(fk, len, scale, zp, dt, qmin, qmin + 255, tile + k * len);
      else
        wq_dequantize_q8_f32(tile + k * len, len, scale, zp, dt, fk);
    }
    if (to_nhwc)
      wq_nchw_to_nhwc_u8(1, c, len, tile, at);
  }
}

/* Conversions of fewer elements stay on one thread (~1 element per ns: a
 * region's few us of overhead would eat the gain); shares of >= 8 tiles. */
#define BOUNDARY_PARALLEL_MIN ((int64_t)1 << 16)

static void boundary_run(bool to_nhwc, const wq_value *in, wq_value *out, int64_t n, int64_t c,
                         int64_t s) {
  const int64_t step = BOUNDARY_TILE / c;
  boundary_job job = {to_nhwc, in, out, c, s, step, (s + step - 1) / step};
  const int64_t tiles = n * job.tiles_per_image;
  if (wq_parallel_threads() > 1 && n * c * s >= BOUNDARY_PARALLEL_MIN)
    wq_parallel_for(tiles, tiles / 16 > 8 ? (tiles + 15) / 16 : 8, boundary_tiles, &job);
  else
    boundary_tiles(&job, 0, tiles);
}

static wq_status transition_run(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const bool to_nhwc = node->op->flags & WQ_OP_FLAG_TO_NHWC;
  const int r = in[0].rank;
  const int64_t n = in[0].dims[0], c = to_nhwc ? in[0].dims[1] : in[0].dims[r - 1];
  const int64_t total = wq_value_numel(&in[0]);
  const int64_t s = n * c > 0 ? total / (n * c) : 0;
  if (total == 0)
    return WQ_OK;
  if (node->n_inputs > 2) /* c <= BOUNDARY_TILE: the layout pass fuses no more (C is static) */
    boundary_run(to_nhwc, in, out, n, c, s);
  else if (wq_dtype_size(in[0].dtype) != 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: dtype %s is not 8-bit codes",
                   node->op_type, wq_dtype_name(in[0].dtype));
  else if (s == 1 || c == 1) /* the same bytes in both layouts */
    memcpy(out[0].data, in[0].data, (size_t)total);
  else if (to_nhwc)
    wq_nchw_to_nhwc_u8(n, c, s, in[0].data, out[0].data);
  else
    wq_nhwc_to_nchw_u8(n, c, s, in[0].data, out[0].data);
  return WQ_OK;
}

#define TRANSITION_OP(sym, name, inputs, flag, kind, lcap)                                         \
  const wq_op sym = {.op_type = name,                                                              \
                     .domain = WQ_INT8_DOMAIN,                                                     \
                     .min_opset = 1,                                                               \
                     .min_inputs = inputs,                                                         \
                     .max_inputs = inputs,                                                         \
                     .min_outputs = 1,                                                             \
                     .max_outputs = 1,                                                             \
                     .flags = flag,                                                                \
                     .int8 = kind,                                                                 \
                     .layout = lcap,                                                               \
                     .infer = transition_infer,                                                    \
                     .run = transition_run};
TRANSITION_OP(wq_op_to_nhwc, "ToNHWC", 1, WQ_OP_FLAG_TO_NHWC, WQ_INT8_KERNEL, WQ_LCAP_TO_NHWC)
TRANSITION_OP(wq_op_to_nchw, "ToNCHW", 1, 0, WQ_INT8_KERNEL, WQ_LCAP_TO_NCHW)
TRANSITION_OP(wq_op_quantize_linear_nhwc, "QuantizeLinearNHWC", 3,
              WQ_OP_FLAG_TO_NHWC | WQ_OP_FLAG_FUSED_BOUNDARY, WQ_INT8_QUANTIZE, WQ_LCAP_TO_NHWC)
TRANSITION_OP(wq_op_dequantize_linear_nhwc, "DequantizeLinearNHWC", 3, WQ_OP_FLAG_FUSED_BOUNDARY,
              WQ_INT8_DEQUANTIZE, WQ_LCAP_TO_NCHW)

/* Appends `extra` to the node's lowering note (shown by info --lowered). */
static wq_status note_append(wq_node *node, const char *extra, wq_error *err) {
  const char *why = wq_lower_why(node);
  size_t len = (why ? strlen(why) + 2 : 0) + strlen(extra) + 1;
  char *text = malloc(len);
  if (!text)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  wq_format(text, len, "%s%s%s", why ? why : "", why ? "; " : "", extra);
  wq_status st = wq_layout_set_note(node, text, err);
  free(text);
  return st;
}

/* Spatial dims of an NHWC value: dims[1 .. rank-2]. */
static void nhwc_spatial(const wq_value *x, int64_t *spatial) {
  for (int i = 0; i < x->rank - 2; i++)
    spatial[i] = x->dims[1 + i];
}

/* ---- QConvNHWC --------------------------------------------------------- */

typedef struct {
  wq_window_attrs win;
  int64_t group;
  wq_dtype y_dtype;
  int32_t act_min, act_max;
  bool planned;
  int64_t x_dims[WQ_MAX_RANK]; /* the shape the plan was made for */
  int x_rank;
  /* Planned for one batch item (a symbolic batch): runs item by item, any
   * batch size; x_item/y_item are the bytes of one item. */
  bool per_item;
  int64_t x_item, y_item;
  wq_qconv_plan plan;
} qconv_nhwc_state;

static void qconv_nhwc_free(void *p) {
  qconv_nhwc_state *s = p;
  if (!s)
    return;
  wq_qconv_plan_free(&s->plan);
  free(s);
}

static wq_status qconv_nhwc_prepare(wq_node *node, wq_error *err) {
  qconv_nhwc_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConvNHWC: out of memory");
  wq_status st = wq_int8_conv_attrs_parse(node, false, &s->win, &s->group, &s->y_dtype, &s->act_min,
                                          &s->act_max, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

static wq_status qconv_nhwc_geometry(const wq_node *node, const wq_value *x, const wq_value *w,
                                     wq_conv_geometry *g, wq_error *err) {
  const qconv_nhwc_state *s = node->op_state;
  if (x->rank < 3 || x->rank > 4 || w->rank != x->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvNHWC: x must be [N, (H,) W, C] and w [M, C/group, (kH,) kW] (ranks %d "
                   "and %d)",
                   x->rank, w->rank);
  const int64_t C = x->dims[x->rank - 1], M = w->dims[0], Cg = w->dims[1];
  if (C >= 0 && Cg >= 0 && C != Cg * s->group)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvNHWC: x has %lld channels but w expects %lld per group x %lld groups",
                   (long long)C, (long long)Cg, (long long)s->group);
  if (M >= 0 && M % s->group != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvNHWC: %lld output channels do not split into %lld groups", (long long)M,
                   (long long)s->group);
  int64_t spatial[WQ_CONV_MAX_SPATIAL];
  nhwc_spatial(x, spatial);
  return wq_window_geometry(node, &s->win, x->rank - 2, spatial, &w->dims[2], false, true, g, err);
}

static wq_status qconv_nhwc_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  const qconv_nhwc_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "x", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "w", in[1].dtype, err));
  out[0].dtype = s->y_dtype;
  if (in[0].rank < 0 || in[1].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(qconv_nhwc_geometry(node, &in[0], &in[1], &g, err));
  out[0].rank = in[0].rank;
  out[0].dims[0] = in[0].dims[0];
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[1 + i] = g.out[i];
  out[0].dims[in[0].rank - 1] = in[1].dims[0];
  bool has_bias = node->n_inputs > 2 && wq_value_present(&in[2]);
  if (has_bias &&
      (in[2].dtype != WQ_DT_INT32 || (in[2].rank >= 0 && in[1].dims[0] >= 0 &&
                                      (in[2].rank != 1 || in[2].dims[0] != in[1].dims[0]))))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConvNHWC: bias must be int32 [%lld]",
                   (long long)in[1].dims[0]);
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "QConvNHWC output", err));
  return WQ_OK;
}

static wq_status qconv_nhwc_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  qconv_nhwc_state *s = node->op_state;
  const wq_tensor *w;
  WQ_TRY(wq_int8_constant_input(node, g, 1, "w", &w, err));
  wq_value wv = wq_tensor_value(w);
  wq_value xv = wq_tensor_value(&g->tensors[node->inputs[0]]);
  WQ_TRY(wq_int8_expect_8bit(node, "w", wv.dtype, err));
  s->per_item = xv.rank >= 1 && xv.dims[0] < 0;
  if (s->per_item)
    xv.dims[0] = 1;
  if (!wq_value_shape_known(&xv) || !wq_value_shape_known(&wv))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvNHWC: x and w shapes must be static (but for the batch)");
  wq_conv_geometry geo;
  WQ_TRY(qconv_nhwc_geometry(node, &xv, &wv, &geo, err));
  const wq_qparams *qx, *qw, *qy;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qw, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  float sx, sy;
  int32_t zx, zy;
  WQ_TRY(wq_int8_per_tensor(node, qx, "x", &sx, &zx, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "y", &sy, &zy, err));
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QConvNHWC: y quantization parameters are %s but y_dtype is %s",
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  if (!wq_qparams_is_per_tensor(qw) && wq_qparams_channel_axis(qw) != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QConvNHWC: w must be quantized per tensor or per output channel");
  const int64_t M = wv.dims[0], per_m = wq_value_numel(&wv) / (M > 0 ? M : 1);
  const wq_tensor *bias = NULL;
  if (node->n_inputs > 2 && node->inputs[2] >= 0) {
    WQ_TRY(wq_int8_constant_input(node, g, 2, "bias", &bias, err));
    if (bias->dtype != WQ_DT_INT32 || bias->rank != 1 || bias->dims[0] != M)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConvNHWC: bias must be int32 [%lld]",
                     (long long)M);
  }
  float *mult = malloc(sizeof(float) * (size_t)(M > 0 ? M : 1));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)(M > 0 ? M : 1));
  if (!mult || !wzp) {
    free(mult);
    free(wzp);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConvNHWC: out of memory");
  }
  for (int64_t m = 0; m < M; m++) {
    int64_t at = wq_qparams_index_of(qw, m * per_m);
    mult[m] = wq_qgemm_multiplier(sx, qw->scale[at], sy);
    wzp[m] = qw->zero_point[at];
  }
  wq_qconv_desc d = {.batch = xv.dims[0],
                     .in_channels = xv.dims[xv.rank - 1],
                     .out_channels = M,
                     .group = s->group,
                     .geo = geo,
                     .x_dtype = qx->dtype,
                     .x_zero_point = zx,
                     .w_dtype = wv.dtype,
                     .w = wv.data,
                     .w_zero_point = wzp,
                     .w_zero_point_count = M,
                     .bias = bias ? bias->data : NULL,
                     .multiplier = mult,
                     .multiplier_count = M,
                     .y_dtype = s->y_dtype,
                     .y_zero_point = zy,
                     .y_min = s->act_min,
                     .y_max = s->act_max};
  wq_qconv_plan_free(&s->plan);
  s->planned = false;
  wq_status st = wq_qconv_plan_init(&s->plan, &d, node->name, err);
  free(mult);
  free(wzp);
  WQ_TRY(st);
  s->x_rank = xv.rank;
  memcpy(s->x_dims, xv.dims, sizeof s->x_dims);
  s->x_item = wq_value_numel(&xv) * (int64_t)wq_dtype_size(qx->dtype);
  s->y_item = M; /* 8-bit output codes */
  for (int i = 0; i < geo.n_spatial; i++)
    s->y_item *= geo.out[i];
  s->planned = true;
  char note[96];
  wq_format(note, sizeof note, "kernel %s", wq_qconv_algo_name(s->plan.algo));
  return note_append(node, note, err);
}

static wq_status qconv_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const qconv_nhwc_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  const int first = s->per_item ? 1 : 0;
  if (in[0].rank != s->x_rank ||
      memcmp(in[0].dims + first, s->x_dims + first, sizeof(int64_t) * (size_t)(in[0].rank - first)))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvNHWC: x shape differs from the planned one");
  const int64_t items = s->per_item ? in[0].dims[0] : 1;
  wq_status st = WQ_OK;
  for (int64_t b = 0; b < items && st == WQ_OK; b++)
    st = wq_qconv_run(&s->plan, (const unsigned char *)in[0].data + b * s->x_item,
                      (unsigned char *)out[0].data + b * s->y_item, err);
  if (st != WQ_OK)
    wq_error_set_node(err, node->name);
  return st;
}

const wq_op wq_op_int8_conv_nhwc = {.int8 = WQ_INT8_KERNEL,
                                    .layout = WQ_LCAP_NHWC,
                                    .op_type = "QConvNHWC",
                                    .domain = WQ_INT8_DOMAIN,
                                    .min_opset = 1,
                                    .min_inputs = 2,
                                    .max_inputs = 3,
                                    .min_outputs = 1,
                                    .max_outputs = 1,
                                    .prepare = qconv_nhwc_prepare,
                                    .free_state = qconv_nhwc_free,
                                    .infer = qconv_nhwc_infer,
                                    .run = qconv_nhwc_run,
                                    .plan = qconv_nhwc_plan};

/* ---- pools ------------------------------------------------------------- */

typedef enum { POOL_AVERAGE, POOL_GLOBAL_AVERAGE, POOL_MAX } pool_kind;

typedef struct {
  pool_kind kind;
  wq_window_attrs win;
  bool ceil_mode, count_include_pad;
  wq_dtype y_dtype; /* average pools */
  bool planned;
  wq_int8_pool_quant q;
} pool_nhwc_state;

static pool_kind pool_kind_of(const wq_node *node) {
  if (strcmp(node->op_type, "QGlobalAveragePoolNHWC") == 0)
    return POOL_GLOBAL_AVERAGE;
  return strcmp(node->op_type, "MaxPoolNHWC") == 0 ? POOL_MAX : POOL_AVERAGE;
}

static wq_status pool_nhwc_prepare(wq_node *node, wq_error *err) {
  pool_nhwc_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  s->kind = pool_kind_of(node);
  int64_t ceil_mode = 0, count_include_pad = 0, storage_order = 0;
  wq_status st = WQ_OK;
  if (s->kind != POOL_MAX)
    st = wq_int8_read_y_dtype(node, false, &s->y_dtype, err);
  if (st == WQ_OK && s->kind != POOL_GLOBAL_AVERAGE)
    st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "ceil_mode", 0, &ceil_mode, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "count_include_pad", 0, &count_include_pad, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "storage_order", 0, &storage_order, err);
  if (st == WQ_OK && s->kind != POOL_GLOBAL_AVERAGE && s->win.n_kernel_shape == 0)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: kernel_shape attribute is required",
                 node->op_type);
  if (st == WQ_OK && s->kind != POOL_GLOBAL_AVERAGE && s->win.n_kernel_shape > 2)
    st = wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %d spatial dims (1 or 2 supported)",
                 node->op_type, s->win.n_kernel_shape);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->ceil_mode = ceil_mode != 0;
  s->count_include_pad = count_include_pad != 0;
  node->op_state = s;
  return WQ_OK;
}

static wq_status pool_nhwc_geometry(const wq_node *node, const wq_value *x, wq_conv_geometry *g,
                                    wq_error *err) {
  const pool_nhwc_state *s = node->op_state;
  if (x->rank != s->win.n_kernel_shape + 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: input has rank %d but kernel_shape has %d dims", node->op_type, x->rank,
                   s->win.n_kernel_shape);
  int64_t spatial[WQ_CONV_MAX_SPATIAL];
  nhwc_spatial(x, spatial);
  return wq_window_geometry(node, &s->win, x->rank - 2, spatial, NULL, s->ceil_mode, true, g, err);
}

static wq_status pool_nhwc_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  const pool_nhwc_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "X", in[0].dtype, err));
  out[0].dtype = s->kind == POOL_MAX ? in[0].dtype : s->y_dtype;
  out[0].rank = in[0].rank;
  if (in[0].rank < 0)
    return WQ_OK;
  if (in[0].rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: X must be [N, spatial..., C]",
                   node->op_type);
  const int r = in[0].rank;
  out[0].dims[0] = in[0].dims[0];
  out[0].dims[r - 1] = in[0].dims[r - 1];
  if (s->kind == POOL_GLOBAL_AVERAGE) {
    for (int d = 1; d < r - 1; d++)
      out[0].dims[d] = 1;
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(pool_nhwc_geometry(node, &in[0], &g, err));
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[1 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "pool output", err));
  return WQ_OK;
}

static wq_status pool_nhwc_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  pool_nhwc_state *s = node->op_state;
  if (s->kind == POOL_MAX) {
    s->planned = true;
    return WQ_OK;
  }
  const wq_qparams *qx, *qy;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  WQ_TRY(wq_int8_per_tensor(node, qx, "X", &s->q.x_scale, &s->q.x_zero_point, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "Y", &s->q.y_scale, &s->q.y_zero_point, err));
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: output quantization parameters are %s but y_dtype is %s", node->op_type,
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  s->q.x_dtype = qx->dtype;
  s->q.y_dtype = qy->dtype;
  s->q.y_min = qy->qmin;
  s->q.y_max = qy->qmax;
  s->planned = true;
  return WQ_OK;
}

/* The 2-D window of a 1-D or 2-D geometry. */
static wq_pool2d pool2d_of(const wq_conv_geometry *g, int64_t batch, int64_t channels) {
  const int two = g->n_spatial == 2, w = g->n_spatial - 1;
  wq_pool2d p = {.batch = batch,
                 .channels = channels,
                 .in_h = two ? g->in[0] : 1,
                 .in_w = g->in[w],
                 .out_h = two ? g->out[0] : 1,
                 .out_w = g->out[w],
                 .kernel_h = two ? g->kernel[0] : 1,
                 .kernel_w = g->kernel[w],
                 .stride_h = two ? g->stride[0] : 1,
                 .stride_w = g->stride[w],
                 .dil_h = two ? g->dilation[0] : 1,
                 .dil_w = g->dilation[w],
                 .pad_top = two ? g->pad_begin[0] : 0,
                 .pad_left = g->pad_begin[w],
                 .pad_bottom = two ? g->pad_end[0] : 0,
                 .pad_right = g->pad_end[w]};
  return p;
}

static wq_status pool_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  const pool_nhwc_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (s->kind != POOL_MAX && in[0].dtype != s->q.x_dtype)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: X is %s but was planned as %s",
                   node->op_type, wq_dtype_name(in[0].dtype), wq_dtype_name(s->q.x_dtype));
  const int r = in[0].rank;
  const int64_t batch = in[0].dims[0], channels = in[0].dims[r - 1];
  if (s->kind == POOL_GLOBAL_AVERAGE) {
    int64_t pixels = batch * channels > 0 ? wq_value_numel(&in[0]) / (batch * channels) : 0;
    wq_qgap_nhwc(batch, pixels, channels, &s->q, in[0].data, out[0].data);
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(pool_nhwc_geometry(node, &in[0], &g, err));
  wq_pool2d p = pool2d_of(&g, batch, channels);
  if (s->kind == POOL_MAX)
    wq_maxpool_nhwc_q8(&p, in[0].dtype == WQ_DT_UINT8, in[0].data, out[0].data);
  else
    wq_qavgpool_nhwc(&p, s->count_include_pad, &s->q, in[0].data, out[0].data);
  return WQ_OK;
}

#define POOL_OP(sym, name)                                                                         \
  const wq_op sym = {.op_type = name,                                                              \
                     .domain = WQ_INT8_DOMAIN,                                                     \
                     .int8 = WQ_INT8_KERNEL,                                                       \
                     .layout = WQ_LCAP_NHWC,                                                       \
                     .min_opset = 1,                                                               \
                     .min_inputs = 1,                                                              \
                     .max_inputs = 1,                                                              \
                     .min_outputs = 1,                                                             \
                     .max_outputs = 1,                                                             \
                     .prepare = pool_nhwc_prepare,                                                 \
                     .free_state = free,                                                           \
                     .infer = pool_nhwc_infer,                                                     \
                     .run = pool_nhwc_run,                                                         \
                     .plan = pool_nhwc_plan}

POOL_OP(wq_op_int8_average_pool_nhwc, "QAveragePoolNHWC");
POOL_OP(wq_op_int8_global_average_pool_nhwc, "QGlobalAveragePoolNHWC");
POOL_OP(wq_op_max_pool_nhwc, "MaxPoolNHWC");
