/* MaxPool (opset 1+; Indices output from 8, ceil_mode/dilations from 10,
 * int8/uint8 from 12; int8/uint8 codes also channels-last [N, spatial..., C]
 * when the layout pass stores them so, without Indices), AveragePool (count_include_pad from 7,
 * ceil_mode from 10, dilations from 19), GlobalAveragePool and GlobalMaxPool. */
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/ref/ref_pool.h"
#include "int8_nhwc.h"
#include "nn_window.h"
#include "op.h"

typedef struct {
  wq_window_attrs win;
  bool ceil_mode;
  bool count_include_pad; /* AveragePool */
  bool column_major;      /* MaxPool storage_order = 1 */
} pool_state;

static wq_status pool_prepare(wq_node *node, wq_error *err) {
  pool_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  int64_t ceil_mode = 0, count_include_pad = 0, storage_order = 0;
  wq_status st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "ceil_mode", 0, &ceil_mode, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "count_include_pad", 0, &count_include_pad, err);
  if (st == WQ_OK)
    st = wq_attr_int(node, "storage_order", 0, &storage_order, err);
  if (st == WQ_OK && s->win.n_kernel_shape == 0)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: kernel_shape attribute is required",
                 node->op_type);
  if (st == WQ_OK && storage_order != 0 && storage_order != 1)
    st =
        wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: storage_order is %lld (must be 0 or 1)",
                node->op_type, (long long)storage_order);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->ceil_mode = ceil_mode != 0;
  s->count_include_pad = count_include_pad != 0;
  s->column_major = storage_order == 1;
  node->op_state = s;
  return WQ_OK;
}

static bool is_max_pool(const wq_node *node) { return node->op_type[0] == 'M'; }

static wq_status pool_resolve(const wq_node *node, const wq_value *x, wq_conv_geometry *g,
                              wq_error *err) {
  const pool_state *s = node->op_state;
  bool dtype_ok = x->dtype == WQ_DT_FLOAT ||
                  (is_max_pool(node) && (x->dtype == WQ_DT_INT8 || x->dtype == WQ_DT_UINT8));
  if (!dtype_ok)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: input type %s is not supported",
                   node->op_type, wq_dtype_name(x->dtype));
  int rank = x->rank >= 0 ? x->rank : s->win.n_kernel_shape + 2;
  if (x->rank >= 0 && x->rank != s->win.n_kernel_shape + 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: input has rank %d but kernel_shape has %d dims (needs rank %d)",
                   node->op_type, x->rank, s->win.n_kernel_shape, s->win.n_kernel_shape + 2);
  int64_t in_spatial[WQ_CONV_MAX_SPATIAL];
  for (int i = 0; i < rank - 2; i++)
    in_spatial[i] = x->rank >= 0 ? x->dims[2 + i] : -1;
  return wq_window_geometry(node, &s->win, rank - 2, in_spatial, NULL, s->ceil_mode, true, g, err);
}

static wq_status pool_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  wq_conv_geometry g;
  WQ_TRY(pool_resolve(node, &in[0], &g, err));
  if (wq_layout_channels_last(in[0].layout, in[0].rank) &&
      (!is_max_pool(node) || wq_dtype_size(in[0].dtype) != 1 || node->n_outputs > 1 ||
       g.n_spatial > 2))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: channels-last only for MaxPool on 8-bit codes, 1 or 2 spatial dims, "
                   "without Indices",
                   node->op_type);
  out[0].dtype = in[0].dtype;
  out[0].rank = g.n_spatial + 2;
  out[0].dims[0] = in[0].rank >= 0 ? in[0].dims[0] : -1;
  out[0].dims[1] = in[0].rank >= 0 ? in[0].dims[1] : -1;
  for (int i = 0; i < g.n_spatial; i++)
    out[0].dims[2 + i] = g.out[i];
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "pool output", err));
  if (node->n_outputs > 1) {
    out[1] = out[0];
    out[1].dtype = WQ_DT_INT64;
  }
  return WQ_OK;
}

static wq_status pool_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const pool_state *s = node->op_state;
  wq_conv_geometry g;
  WQ_TRY(pool_resolve(node, &in[0], &g, err));
  if (wq_layout_channels_last(in[0].layout, in[0].rank)) { /* MaxPool on codes (infer checked) */
    wq_pool2d p = wq_pool2d_of(&g, in[0].dims[0], in[0].dims[1]);
    wq_maxpool_nhwc_q8(&p, in[0].dtype == WQ_DT_UINT8, in[0].data, out[0].data);
    return WQ_OK;
  }
  int64_t planes = in[0].dims[0] * in[0].dims[1];
  if (!is_max_pool(node)) {
    wq_ref_avgpool_f32(&g, planes, s->count_include_pad, in[0].data, out[0].data);
    return WQ_OK;
  }
  int64_t *indices = node->n_outputs > 1 ? out[1].data : NULL;
  switch (in[0].dtype) {
  case WQ_DT_INT8:
    wq_ref_maxpool_i8(&g, planes, in[0].data, out[0].data, indices, s->column_major);
    break;
  case WQ_DT_UINT8:
    wq_ref_maxpool_u8(&g, planes, in[0].data, out[0].data, indices, s->column_major);
    break;
  default: wq_ref_maxpool_f32(&g, planes, in[0].data, out[0].data, indices, s->column_major);
  }
  return WQ_OK;
}

/* On int8 codes while nothing reads its Indices output. */
static void max_pool_int8_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a) {
  if (n->n_outputs > 1 && wq_op_readers(g, n->outputs[1]) > 0) {
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR, "MaxPool's Indices output is used");
  }
}

const wq_op wq_op_max_pool = {
    .int8 = WQ_INT8_MOVE,
    .layout = WQ_LCAP_NHWC_KERNEL,
    .int8_check = max_pool_int8_check,
    .quant_role = WQ_QROLE_SHARED,

    .op_type = "MaxPool",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 2,
    .prepare = pool_prepare,
    .free_state = free,
    .infer = pool_infer,
    .run = pool_run,
};

const wq_op wq_op_average_pool = {
    .int8 = WQ_INT8_POOL,
    .int8_as = WQ_OPID(int8_average_pool),
    .quant_role = WQ_QROLE_OWN_OUTPUT,

    .op_type = "AveragePool",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .prepare = pool_prepare,
    .free_state = free,
    .infer = pool_infer,
    .run = pool_run,
};

static wq_status global_pool_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                   wq_error *err) {
  if (in[0].dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: input type %s is not supported",
                   node->op_type, wq_dtype_name(in[0].dtype));
  out[0].dtype = WQ_DT_FLOAT;
  out[0].rank = in[0].rank;
  if (in[0].rank < 0)
    return WQ_OK;
  if (in[0].rank < 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: input must be [N, C, ...], has rank %d",
                   node->op_type, in[0].rank);
  for (int i = 0; i < in[0].rank; i++)
    out[0].dims[i] = i < 2 ? in[0].dims[i] : 1;
  return WQ_OK;
}

static wq_status global_pool_run(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  WQ_TRY(global_pool_infer(node, in, out, err));
  int64_t planes = in[0].dims[0] * in[0].dims[1];
  int64_t plane_size = planes > 0 ? wq_value_numel(&in[0]) / planes : 0;
  if (node->op_type[6] == 'A')
    wq_ref_global_avgpool_f32(planes, plane_size, in[0].data, out[0].data);
  else
    wq_ref_global_maxpool_f32(planes, plane_size, in[0].data, out[0].data);
  return WQ_OK;
}

const wq_op wq_op_global_average_pool = {
    .int8 = WQ_INT8_POOL,
    .int8_as = WQ_OPID(int8_global_average_pool),
    .quant_role = WQ_QROLE_OWN_OUTPUT,

    .op_type = "GlobalAveragePool",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .infer = global_pool_infer,
    .run = global_pool_run,
};

const wq_op wq_op_global_max_pool = {
    .op_type = "GlobalMaxPool",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .infer = global_pool_infer,
    .run = global_pool_run,
};
