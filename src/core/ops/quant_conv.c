/* QLinearConv and ConvInteger: Conv's geometry (group, pads, strides,
 * dilations, auto_pad) over zero-point-free int32 operands. Weights may be
 * quantized per output channel, activations per tensor (ConvInteger also
 * accepts a per-input-channel x_zero_point). */
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/quant_ref.h"
#include "../kernels/ref/ref_qconv.h"
#include "nn_window.h"
#include "quant_common.h"

/* Output shape and geometry; *known is false while any dim is unknown. */
static wq_status qconv_shapes(const wq_node *node, const wq_value *x, const wq_value *w,
                              wq_value *out, wq_qconv_shape *s, bool *known, wq_error *err) {
  memset(s, 0, sizeof *s);
  *known = false;
  if (x->rank < 0 || w->rank < 0) {
    out->rank = -1;
    return WQ_OK;
  }
  if (x->rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: x must be [N, C, spatial...], has rank %d",
                   node->op_type, x->rank);
  if (w->rank != x->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: w has rank %d but x has rank %d",
                   node->op_type, w->rank, x->rank);
  int64_t group;
  WQ_TRY(wq_conv_group_parse(node, &group, err));
  int64_t C = x->dims[1], M = w->dims[0], Cg = w->dims[1];
  if (C >= 0 && Cg >= 0 && C != Cg * group)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: x has %lld channels but w expects %lld per group x %lld groups",
                   node->op_type, (long long)C, (long long)Cg, (long long)group);
  if (M >= 0 && M % group != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: %lld output channels do not split into %lld groups", node->op_type,
                   (long long)M, (long long)group);
  wq_window_attrs attrs;
  WQ_TRY(wq_window_attrs_parse(node, &attrs, err));
  int ns = x->rank - 2;
  WQ_TRY(wq_window_geometry(node, &attrs, ns, &x->dims[2], &w->dims[2], false, true, &s->geo, err));
  out->rank = x->rank;
  out->dims[0] = x->dims[0];
  out->dims[1] = M;
  bool all_known = wq_value_shape_known(x) && wq_value_shape_known(w);
  for (int i = 0; i < ns; i++) {
    out->dims[2 + i] = s->geo.out[i];
    if (s->geo.out[i] < 0)
      all_known = false;
  }
  s->N = x->dims[0], s->C = C, s->M = M, s->group = group;
  *known = all_known;
  if (all_known)
    WQ_TRY(wq_shape_check(out->dims, out->rank, node->name, node->op_type, err));
  return WQ_OK;
}

static bool inputs_shape_known(const wq_node *node, const wq_value *in) {
  for (int i = 0; i < node->n_inputs; i++)
    if (wq_quant_optional_input(node, in, i) && !wq_value_shape_known(&in[i]))
      return false;
  return true;
}

/* Centered int32 copies of x and w, plus the accumulator buffer. */
typedef struct {
  int32_t *x, *w, *acc;
} qconv_buffers;

static void qconv_buffers_free(qconv_buffers *b) {
  free(b->x);
  free(b->w);
  free(b->acc);
  memset(b, 0, sizeof *b);
}

static wq_status qconv_compute(const wq_node *node, const wq_qconv_shape *s, const wq_value *x,
                               const wq_qparams *qx, const wq_value *w, const wq_qparams *qw,
                               const int32_t *bias, int64_t n_out, qconv_buffers *b,
                               wq_error *err) {
  memset(b, 0, sizeof *b);
  int64_t nx = wq_value_numel(x), nw = wq_value_numel(w);
  b->x = malloc((size_t)(nx > 0 ? nx : 1) * sizeof(int32_t));
  b->w = malloc((size_t)(nw > 0 ? nw : 1) * sizeof(int32_t));
  b->acc = malloc((size_t)(n_out > 0 ? n_out : 1) * sizeof(int32_t));
  if (!b->x || !b->w || !b->acc) {
    qconv_buffers_free(b);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  }
  wq_ref_q_center(x->data, nx, qx, b->x);
  wq_ref_q_center(w->data, nw, qw, b->w);
  wq_ref_qconv_acc(s, b->x, b->w, bias, b->acc);
  return WQ_OK;
}

/* ---- QLinearConv ------------------------------------------------------- */

typedef struct {
  wq_qparams x, w, y;
} qlinear_conv_params;

static void qlinear_conv_params_free(qlinear_conv_params *p) {
  wq_qparams_free(&p->x);
  wq_qparams_free(&p->w);
  wq_qparams_free(&p->y);
}

static wq_status require_per_tensor(const wq_node *node, const char *what, const wq_value *v,
                                    wq_error *err) {
  if (wq_value_numel(v) != 1) {
    char vs[96];
    wq_dims_format(v->dims, v->rank, vs, sizeof vs);
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QLinearConv: %s has shape %s; it must be a scalar (per-tensor)", what, vs);
  }
  return WQ_OK;
}

static wq_status qlinear_conv_params_build(const wq_node *node, const wq_value *in,
                                           const wq_value *y, qlinear_conv_params *p,
                                           wq_error *err) {
  memset(p, 0, sizeof *p);
  WQ_TRY(require_per_tensor(node, "x_scale", &in[1], err));
  WQ_TRY(require_per_tensor(node, "x_zero_point", &in[2], err));
  WQ_TRY(require_per_tensor(node, "y_scale", &in[6], err));
  WQ_TRY(require_per_tensor(node, "y_zero_point", &in[7], err));
  wq_status st = wq_qconv_operand_qparams(&p->x, node, "x", 1, &in[0], &in[1], &in[2], err);
  if (st == WQ_OK)
    st = wq_qconv_operand_qparams(&p->w, node, "w", 0, &in[3], &in[4], &in[5], err);
  if (st == WQ_OK)
    st = wq_qconv_operand_qparams(&p->y, node, "y", 1, y, &in[6], &in[7], err);
  if (st != WQ_OK)
    qlinear_conv_params_free(p);
  return st;
}

static wq_status qlinear_conv_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  WQ_TRY(wq_quant_check_qlinear_inputs(node, in, "x", "w", err));
  const wq_value *bias = wq_quant_optional_input(node, in, 8);
  if (bias)
    WQ_TRY(wq_quant_expect_dtype(node, "B", bias->dtype, WQ_QDT_BIT(WQ_DT_INT32), err));
  out[0].dtype = in[7].dtype;
  wq_qconv_shape s;
  bool known;
  WQ_TRY(qconv_shapes(node, &in[0], &in[3], &out[0], &s, &known, err));
  if (!known || !inputs_shape_known(node, in))
    return WQ_OK;
  if (bias && (bias->rank != 1 || bias->dims[0] != s.M)) {
    char bs[96];
    wq_dims_format(bias->dims, bias->rank, bs, sizeof bs);
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QLinearConv: B has shape %s, expected [%lld]",
                   bs, (long long)s.M);
  }
  qlinear_conv_params p;
  WQ_TRY(qlinear_conv_params_build(node, in, &out[0], &p, err));
  qlinear_conv_params_free(&p);
  return WQ_OK;
}

static wq_status qlinear_conv_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  wq_qconv_shape s;
  bool known;
  wq_value shape_out = out[0];
  WQ_TRY(qconv_shapes(node, &in[0], &in[3], &shape_out, &s, &known, err));
  qlinear_conv_params p;
  WQ_TRY(qlinear_conv_params_build(node, in, &out[0], &p, err));
  const wq_value *bias = wq_quant_optional_input(node, in, 8);
  int64_t n_out = wq_value_numel(&out[0]);
  qconv_buffers b;
  wq_status st = qconv_compute(node, &s, &in[0], &p.x, &in[3], &p.w,
                               bias ? (const int32_t *)bias->data : NULL, n_out, &b, err);
  if (st == WQ_OK) {
    const int64_t out_size = wq_conv_geometry_out_size(&s.geo);
    const float sx = p.x.scale[0], sy = p.y.scale[0];
    const int32_t zy = p.y.zero_point[0];
    for (int64_t n = 0; n < s.N; n++)
      for (int64_t m = 0; m < s.M; m++) {
        /* Output channel m's weight scale: element (m, 0, 0...) of w. */
        float sw = p.w.scale[wq_qparams_index_of(&p.w, m * (wq_value_numel(&in[3]) / s.M))];
        float multiplier = (sx * sw) / sy;
        int64_t base = (n * s.M + m) * out_size;
        for (int64_t o = 0; o < out_size; o++) {
          int32_t q = wq_ref_requantize_value(b.acc[base + o], multiplier, zy, p.y.qmin, p.y.qmax);
          wq_ref_q_store(out[0].data, out[0].dtype, base + o, q);
        }
      }
    qconv_buffers_free(&b);
  }
  qlinear_conv_params_free(&p);
  return st;
}

const wq_op wq_op_qlinear_conv = {.int8 = WQ_INT8_QLINEAR,
                                  .int8_as = WQ_OPID(int8_conv),
                                  .op_type = "QLinearConv",
                                  .domain = "",
                                  .min_opset = 10,
                                  .min_inputs = 8,
                                  .max_inputs = 9,
                                  .min_outputs = 1,
                                  .max_outputs = 1,
                                  .flags = WQ_OP_FLAG_INT8,
                                  .infer = qlinear_conv_infer,
                                  .run = qlinear_conv_run};

/* ---- ConvInteger ------------------------------------------------------- */

static wq_status conv_integer_params(const wq_node *node, const wq_value *in, wq_qparams *qx,
                                     wq_qparams *qw, wq_error *err) {
  WQ_TRY(wq_qconv_operand_qparams(qx, node, "x_zero_point", 1, &in[0], NULL,
                                  wq_quant_optional_input(node, in, 2), err));
  wq_status st = wq_qconv_operand_qparams(qw, node, "w_zero_point", 0, &in[1], NULL,
                                          wq_quant_optional_input(node, in, 3), err);
  if (st != WQ_OK)
    wq_qparams_free(qx);
  return st;
}

static wq_status conv_integer_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  WQ_TRY(wq_quant_check_integer_inputs(node, in, "x", "w", "x_zero_point", "w_zero_point", err));
  out[0].dtype = WQ_DT_INT32;
  wq_qconv_shape s;
  bool known;
  WQ_TRY(qconv_shapes(node, &in[0], &in[1], &out[0], &s, &known, err));
  if (!known || !inputs_shape_known(node, in))
    return WQ_OK;
  wq_qparams qx, qw;
  WQ_TRY(conv_integer_params(node, in, &qx, &qw, err));
  wq_qparams_free(&qx);
  wq_qparams_free(&qw);
  return WQ_OK;
}

static wq_status conv_integer_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  wq_qconv_shape s;
  bool known;
  wq_value shape_out = out[0];
  WQ_TRY(qconv_shapes(node, &in[0], &in[1], &shape_out, &s, &known, err));
  wq_qparams qx, qw;
  WQ_TRY(conv_integer_params(node, in, &qx, &qw, err));
  qconv_buffers b;
  wq_status st =
      qconv_compute(node, &s, &in[0], &qx, &in[1], &qw, NULL, wq_value_numel(&out[0]), &b, err);
  if (st == WQ_OK) {
    if (wq_value_numel(&out[0]) > 0)
      memcpy(out[0].data, b.acc, (size_t)wq_value_numel(&out[0]) * sizeof(int32_t));
    qconv_buffers_free(&b);
  }
  wq_qparams_free(&qx);
  wq_qparams_free(&qw);
  return st;
}

const wq_op wq_op_conv_integer = {.int8 = WQ_INT8_INTEGER,
                                  .int8_as = WQ_OPID(int8_conv),
                                  .op_type = "ConvInteger",
                                  .domain = "",
                                  .min_opset = 10,
                                  .min_inputs = 2,
                                  .max_inputs = 4,
                                  .min_outputs = 1,
                                  .max_outputs = 1,
                                  .flags = WQ_OP_FLAG_INT8,
                                  .infer = conv_integer_infer,
                                  .run = conv_integer_run};
