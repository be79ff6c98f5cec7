/* QAveragePool and QGlobalAveragePool (domain "wasmq"): AveragePool's
 * window attributes (kernel_shape, strides, pads, dilations, auto_pad,
 * ceil_mode, count_include_pad) over int8/uint8 data with per-tensor
 * quantization parameters on the input and output tensors. Attribute
 * y_dtype. X channels-first [N, C, spatial...] or channels-last
 * [N, spatial..., C] (the kernel follows its layout; Y has X's). */
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/int8_pool_ref.h"
#include "int8_common.h"
#include "int8_nhwc.h"
#include "nn_window.h"

typedef struct {
  wq_window_attrs win;
  bool ceil_mode, count_include_pad, global;
  wq_dtype y_dtype;
  bool planned;
  wq_int8_pool_quant q;
} qpool_state;

static wq_status qpool_prepare(wq_node *node, wq_error *err) {
  qpool_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  s->global = strcmp(node->op_type, "QGlobalAveragePool") == 0;
  int64_t ceil_mode = 0, count_include_pad = 0;
  wq_status st = wq_int8_read_y_dtype(node, false, &s->y_dtype, err);
  if (st == WQ_OK && !s->global)
    st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "ceil_mode", 0, &ceil_mode, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "count_include_pad", 0, &count_include_pad, err);
  if (st == WQ_OK && !s->global && s->win.n_kernel_shape == 0)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: kernel_shape attribute is required",
                 node->op_type);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->ceil_mode = ceil_mode != 0;
  s->count_include_pad = count_include_pad != 0;
  node->op_state = s;
  return WQ_OK;
}

static wq_status qpool_geometry(const wq_node *node, const wq_value *x, wq_conv_geometry *g,
                                wq_error *err) {
  const qpool_state *s = node->op_state;
  int rank = s->win.n_kernel_shape + 2;
  if (x->rank >= 0 && x->rank != rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: input has rank %d but kernel_shape has %d dims", node->op_type, x->rank,
                   s->win.n_kernel_shape);
  int64_t in_spatial[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < rank - 2; i++)
    in_spatial[i] = x->rank >= 0 ? x->dims[2 + i] : -1;
  return wq_window_geometry(node, &s->win, rank - 2, in_spatial, NULL, s->ceil_mode, true, g, err);
}

static wq_status qpool_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const qpool_state *s = node->op_state;
  WQ_TRY(wq_int8_expect_8bit(node, "X", in[0].dtype, err));
  out[0].dtype = s->y_dtype;
  if (s->global) {
    out[0].rank = in[0].rank;
    if (in[0].rank >= 0 && in[0].rank < 2)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QGlobalAveragePool: X must have rank >= 2");
    for (int d = 0; d < in[0].rank; d++)
      out[0].dims[d] = d < 2 ? in[0].dims[d] : 1;
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(qpool_geometry(node, &in[0], &g, err));
  out[0].rank = g.n_spatial + 2;
  out[0].dims[0] = in[0].rank >= 0 ? in[0].dims[0] : -1;
  out[0].dims[1] = in[0].rank >= 0 ? in[0].dims[1] : -1;
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[2 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "pool output", err));
  return WQ_OK;
}

static wq_status qpool_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel, wq_error *err) {
  (void)kernel;
  qpool_state *s = node->op_state;
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

static wq_status qpool_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const qpool_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].dtype != s->q.x_dtype)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: X is %s but was planned as %s",
                   node->op_type, wq_dtype_name(in[0].dtype), wq_dtype_name(s->q.x_dtype));
  const int64_t batch = in[0].dims[0], channels = in[0].dims[1], planes = batch * channels;
  if (wq_layout_channels_last(in[0].layout, in[0].rank)) {
    if (s->global) {
      int64_t pixels = planes > 0 ? wq_value_numel(&in[0]) / planes : 0;
      wq_qgap_nhwc(batch, pixels, channels, &s->q, in[0].data, out[0].data);
      return WQ_OK;
    }
    wq_conv_geometry g;
    WQ_TRY(qpool_geometry(node, &in[0], &g, err));
    if (g.n_spatial > 2)
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "%s: channels-last with %d spatial dims (1 or 2 supported)", node->op_type,
                     g.n_spatial);
    wq_pool2d p = wq_pool2d_of(&g, batch, channels);
    wq_qavgpool_nhwc(&p, s->count_include_pad, &s->q, in[0].data, out[0].data);
    return WQ_OK;
  }
  if (s->global) {
    int64_t plane = planes > 0 ? wq_value_numel(&in[0]) / planes : 0;
    wq_int8_global_avgpool_ref(planes, plane, &s->q, in[0].data, out[0].data);
    return WQ_OK;
  }
  wq_conv_geometry g;
  WQ_TRY(qpool_geometry(node, &in[0], &g, err));
  wq_int8_avgpool_ref(&g, planes, s->count_include_pad, &s->q, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_int8_average_pool = {.int8 = WQ_INT8_KERNEL,
                                       .layout = WQ_LCAP_NHWC_KERNEL,
                                       .op_type = "QAveragePool",
                                       .domain = WQ_INT8_DOMAIN,
                                       .min_opset = 1,
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .prepare = qpool_prepare,
                                       .free_state = free,
                                       .infer = qpool_infer,
                                       .run = qpool_run,
                                       .plan = qpool_plan};

const wq_op wq_op_int8_global_average_pool = {.int8 = WQ_INT8_KERNEL,
                                              .layout = WQ_LCAP_NHWC_KERNEL,
                                              .op_type = "QGlobalAveragePool",
                                              .domain = WQ_INT8_DOMAIN,
                                              .min_opset = 1,
                                              .min_inputs = 1,
                                              .max_inputs = 1,
                                              .min_outputs = 1,
                                              .max_outputs = 1,
                                              .prepare = qpool_prepare,
                                              .free_state = free,
                                              .infer = qpool_infer,
                                              .run = qpool_run,
                                              .plan = qpool_plan};
