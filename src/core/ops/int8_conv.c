/* QConv (domain "wasmq"): Conv's geometry (group, pads, strides, dilations,
 * auto_pad, kernel_shape) over an int8/uint8 activation x (channels-first
 * [N, C, spatial...] or channels-last [N, spatial..., C], its layout) with a constant
 * int8/uint8 weight w [M, C/group, kernel...] and an optional constant int32
 * bias [M] already in accumulator units (s_x * s_w[m]). Quantization
 * parameters come from the tensors: x per tensor, w per tensor or per output
 * channel, y per tensor. Attributes beyond Conv's: y_dtype (int8, uint8, or
 * int32 = raw accumulator as ConvInteger), act_min/act_max (fused relu/clip
 * clamp in output codes). The plan hook picks the kernel by x's layout:
 * channels-first runs wq_int8_conv_ref on weights prepacked zero-point-free
 * with the bias and per-channel multipliers; channels-last (the layout pass
 * makes int8 regions so) runs the SIMD algorithms of kernels/qconv.h, the
 * one chosen returned as the plan's kernel. y has x's layout. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/config.h"
#include "../kernels/qconv.h"
#include "../kernels/ref/int8_conv_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "int8_common.h"
#include "nn_window.h"

typedef struct {
  wq_window_attrs win;
  int64_t group;
  wq_dtype y_dtype;
  int32_t act_min, act_max;
  bool leaky; /* fused LeakyRelu (act_alpha) */
  float leaky_alpha;
  /* Filled by the plan hook. */
  bool planned;
  bool channels_last; /* planned for a channels-last x */
  int64_t M, weight_numel;
  int32_t x_zero_point, y_zero_point;
  int32_t *w;        /* [M, C/group, kernel...] centered */
  int32_t *bias;     /* [M] or NULL */
  float *multiplier; /* [M] (s_x * s_w[m]) / s_y; NULL for int32 output */
  /* Channels-last: the plan of kernels/qconv.h for this x shape. */
  int64_t x_dims[WQ_MAX_RANK];
  int x_rank;
  /* Planned for one batch item (a symbolic batch): runs item by item, any
   * batch size; x_item/y_item are the bytes of one item. */
  bool per_item;
  int64_t x_item, y_item;
  wq_qconv_plan plan;
} qconv_state;

static void qconv_free(void *p) {
  qconv_state *s = p;
  if (!s)
    return;
  free(s->w);
  free(s->bias);
  free(s->multiplier);
  wq_qconv_plan_free(&s->plan);
  free(s);
}

static wq_status qconv_prepare(wq_node *node, wq_error *err) {
  qconv_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConv: out of memory");
  wq_status st = wq_int8_conv_attrs_parse(node, &s->win, &s->group, &s->y_dtype, &s->act_min,
                                          &s->act_max, err);
  if (st == WQ_OK)
    st = wq_int8_read_act_alpha(node, s->y_dtype, &s->leaky, &s->leaky_alpha, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

/* Output shape and geometry from x and w; *known is false while a dim is
 * unknown. */
static wq_status qconv_shape(const wq_node *node, const wq_value *x, const wq_value *w,
                             wq_value *out, wq_qconv_shape *shape, bool *known, wq_error *err) {
  const qconv_state *s = node->op_state;
  memset(shape, 0, sizeof *shape);
  *known = false;
  out->dtype = s->y_dtype;
  if (x->rank < 0 || w->rank < 0) {
    out->rank = -1;
    return WQ_OK;
  }
  if (x->rank < 3 || w->rank != x->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConv: x must be [N, C, spatial...] and w of the same rank (ranks %d and %d)",
                   x->rank, w->rank);
  int64_t C = x->dims[1], M = w->dims[0], Cg = w->dims[1];
  if (C >= 0 && Cg >= 0 && C != Cg * s->group)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConv: x has %lld channels but w expects %lld per group x %lld groups",
                   (long long)C, (long long)Cg, (long long)s->group);
  if (M >= 0 && M % s->group != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConv: %lld output channels do not split into %lld groups", (long long)M,
                   (long long)s->group);
  int ns = x->rank - 2;
  WQ_TRY(wq_window_geometry(node, &s->win, ns, &x->dims[2], &w->dims[2], false, true, &shape->geo,
                            err));
  out->rank = x->rank;
  out->dims[0] = x->dims[0];
  out->dims[1] = M;
  bool all_known = wq_value_shape_known(x) && wq_value_shape_known(w);
  for (int i = 0; i < ns; i++) {
    out->dims[2 + i] = shape->geo.out[i];
    all_known = all_known && shape->geo.out[i] >= 0;
  }
  shape->N = x->dims[0], shape->C = C, shape->M = M, shape->group = s->group;
  *known = all_known;
  if (all_known)
    WQ_TRY(wq_shape_check(out->dims, out->rank, node->name, "QConv output", err));
  return WQ_OK;
}

static wq_status qconv_nhwc_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                                 wq_error *err) {
  qconv_state *s = node->op_state;
  if (s->y_dtype == WQ_DT_INT32)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QConv: int32 output (the raw accumulator) only channels-first");
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
                   "QConv: x and w shapes must be static (but for the batch)");
  if (xv.rank > 4)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QConv: channels-last x of rank %d (3 or 4 supported)", xv.rank);
  wq_value yv = {.rank = -1};
  wq_qconv_shape shape;
  bool known;
  WQ_TRY(qconv_shape(node, &xv, &wv, &yv, &shape, &known, err));
  const wq_conv_geometry geo = shape.geo;
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
                   "QConv: y quantization parameters are %s but y_dtype is %s",
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  if (!wq_qparams_is_per_tensor(qw) && wq_qparams_channel_axis(qw) != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "QConv: w must be quantized per tensor or per output channel");
  const int64_t M = wv.dims[0], per_m = wq_value_numel(&wv) / (M > 0 ? M : 1);
  const wq_tensor *bias = NULL;
  if (node->n_inputs > 2 && node->inputs[2] >= 0) {
    WQ_TRY(wq_int8_constant_input(node, g, 2, "bias", &bias, err));
    if (bias->dtype != WQ_DT_INT32 || bias->rank != 1 || bias->dims[0] != M)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: bias must be int32 [%lld]",
                     (long long)M);
  }
  float *mult = malloc(sizeof(float) * (size_t)(M > 0 ? M : 1));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)(M > 0 ? M : 1));
  if (!mult || !wzp) {
    free(mult);
    free(wzp);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConv: out of memory");
  }
  for (int64_t m = 0; m < M; m++) {
    int64_t at = wq_qparams_index_of(qw, m * per_m);
    mult[m] = wq_qgemm_multiplier(sx, qw->scale[at], sy);
    wzp[m] = qw->zero_point[at];
  }
  wq_qconv_desc d = {.batch = xv.dims[0],
                     .in_channels = xv.dims[1],
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
                     .y_max = s->act_max,
                     .leaky = s->leaky,
                     .leaky_alpha = s->leaky_alpha};
  wq_qconv_plan_free(&s->plan);
  s->planned = false;
  wq_status st =
      wq_qconv_plan_init(&s->plan, wq_kernels_of(g->kernels)->qconv, &d, node->name, err);
  free(mult);
  free(wzp);
  WQ_TRY(st);
  s->x_rank = xv.rank;
  memcpy(s->x_dims, xv.dims, sizeof s->x_dims);
  s->x_item = wq_value_numel(&xv) * (int64_t)wq_dtype_size(qx->dtype);
  s->y_item = M; /* 8-bit output codes */
  s->M = M;
  s->weight_numel = wq_value_numel(&wv);
  for (int i = 0; i < geo.n_spatial; i++)
    s->y_item *= geo.out[i];
  s->planned = true;
  kernel->name = wq_qconv_algo_name(s->plan.algo);
  kernel->isa = wq_isa_name(wq_qconv_isa(&s->plan));
  return WQ_OK;
}

static wq_status qconv_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const qconv_state *s = node->op_state;
  const int first = s->per_item ? 1 : 0;
  if (in[0].rank != s->x_rank ||
      memcmp(in[0].dims + first, s->x_dims + first, sizeof(int64_t) * (size_t)(in[0].rank - first)))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: x shape differs from the planned one");
  const int64_t items = s->per_item ? in[0].dims[0] : 1;
  wq_status st = WQ_OK;
  for (int64_t b = 0; b < items && st == WQ_OK; b++)
    st = wq_qconv_run(&s->plan, (const unsigned char *)in[0].data + b * s->x_item,
                      (unsigned char *)out[0].data + b * s->y_item, err);
  if (st != WQ_OK)
    wq_error_set_node(err, node->name);
  return st;
}

static wq_status qconv_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  WQ_TRY(wq_int8_expect_8bit(node, "x", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "w", in[1].dtype, err));
  bool has_bias = node->n_inputs > 2 && wq_value_present(&in[2]);
  if (has_bias && in[2].dtype != WQ_DT_INT32)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: bias has dtype %s; it must be int32",
                   wq_dtype_name(in[2].dtype));
  wq_qconv_shape shape;
  bool known;
  WQ_TRY(qconv_shape(node, &in[0], &in[1], &out[0], &shape, &known, err));
  if (has_bias && in[2].rank >= 0 && shape.M >= 0 && (in[2].rank != 1 || in[2].dims[0] != shape.M))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: bias must have shape [%lld]",
                   (long long)shape.M);
  const qconv_state *s = node->op_state;
  if (s->planned && in[1].rank >= 0 && wq_value_numel(&in[1]) != s->weight_numel)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: w does not match the planned weights");
  return WQ_OK;
}

static wq_status qconv_ref_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  qconv_state *s = node->op_state;
  const wq_tensor *w;
  WQ_TRY(wq_int8_constant_input(node, g, 1, "w", &w, err));
  wq_value wv = wq_tensor_value(w);
  WQ_TRY(wq_int8_expect_8bit(node, "w", wv.dtype, err));
  if (wv.rank < 3 || !wq_value_shape_known(&wv))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: w must be [M, C/group, kernel...]");
  const wq_qparams *qx, *qw, *qy = NULL;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qw, err));
  float sx, sy = 1.0f;
  WQ_TRY(wq_int8_per_tensor(node, qx, "x", &sx, &s->x_zero_point, err));
  if (s->y_dtype != WQ_DT_INT32) {
    WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
    WQ_TRY(wq_int8_per_tensor(node, qy, "y", &sy, &s->y_zero_point, err));
    if (qy->dtype != s->y_dtype)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "QConv: y quantization parameters are %s but y_dtype is %s",
                     wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  }
  const int64_t M = wv.dims[0], numel = wq_value_numel(&wv);
  WQ_TRY(wq_int8_prepare_weights(node, g, &wv, qw, sx, sy, s->y_dtype != WQ_DT_INT32, &s->w,
                                 &s->bias, &s->multiplier, err));
  s->M = M;
  s->weight_numel = numel;
  s->planned = true;
  return WQ_OK;
}

/* The kernel follows x's layout (the tensor's, as the layout pass left it). */
static wq_status qconv_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel, wq_error *err) {
  qconv_state *s = node->op_state;
  const wq_tensor *x = &g->tensors[node->inputs[0]];
  s->planned = false;
  s->channels_last = wq_layout_channels_last(x->layout, x->rank);
  return s->channels_last ? qconv_nhwc_plan(node, g, kernel, err) : qconv_ref_plan(node, g, err);
}

static int64_t qconv_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  (void)g;
  const qconv_state *s = node->op_state;
  *scratch = s && s->planned && s->channels_last ? wq_qconv_scratch_bytes(&s->plan) : 0;
  return !s || !s->planned  ? 0
         : s->channels_last ? s->plan.bytes
                            : wq_int8_weights_bytes(s->weight_numel, s->M);
}

static wq_status qconv_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qconv_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (s->channels_last != wq_layout_channels_last(in[0].layout, in[0].rank))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: x layout differs from the planned one");
  if (s->channels_last)
    return qconv_nhwc_run(node, in, out, err);
  wq_int8_conv_params p;
  memset(&p, 0, sizeof p);
  bool known;
  wq_value shape_out = out[0];
  WQ_TRY(qconv_shape(node, &in[0], &in[1], &shape_out, &p.shape, &known, err));
  if (!known || p.shape.M != s->M)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConv: shapes do not match the plan");
  p.x_dtype = in[0].dtype;
  p.x_zero_point = s->x_zero_point;
  p.w = s->w;
  p.bias = s->bias;
  p.out = (wq_int8_requant){.y_dtype = s->y_dtype,
                            .multiplier = s->multiplier,
                            .zero_point = s->y_zero_point,
                            .act_min = s->act_min,
                            .act_max = s->act_max,
                            .leaky = s->leaky,
                            .leaky_alpha = s->leaky_alpha};
  wq_int8_conv_ref(&p, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_int8_conv = {.int8 = WQ_INT8_KERNEL,
                               .layout = WQ_LCAP_NHWC_KERNEL,
                               .op_type = "QConv",
                               .domain = WQ_INT8_DOMAIN,
                               .min_opset = 1,
                               .min_inputs = 2,
                               .max_inputs = 3,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .prepare = qconv_prepare,
                               .free_state = qconv_free,
                               .infer = qconv_infer,
                               .run = qconv_run,
                               .plan = qconv_plan,
                               .memory = qconv_memory};
