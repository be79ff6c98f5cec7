/* QLinearConv and ConvInteger: Conv's geometry (group, pads, strides,
 * dilations, auto_pad) over zero-point-free int32 operands. Weights may be
 * quantized per output channel, activations per tensor (ConvInteger also
 * accepts a per-input-channel x_zero_point). */
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/quant_ref.h"
#include "../kernels/ref/ref_qconv.h"
#include "../runtime/parallel.h"
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

/* Centered int32 copies of x and w, plus the accumulator buffer: taken from
 * the run's scratch block, which the plan sized from the static shapes
 * (qconv_ref_memory), so a run allocates nothing. Allocated instead when
 * the shapes were known only at run time (nothing was declared) or no block
 * is bound (constant folding at load). */
typedef struct {
  int32_t *x, *w, *acc;
  void *taken; /* the scratch mark to give back; NULL when allocated */
} qconv_buffers;

static void qconv_buffers_free(qconv_buffers *b) {
  if (b->taken) {
    wq_scratch_give(b->taken);
  } else {
    free(b->x);
    free(b->w);
    free(b->acc);
  }
  memset(b, 0, sizeof *b);
}

/* The scratch one run takes: x, w and the accumulators as int32. */
static int64_t qconv_scratch_bytes(int64_t nx, int64_t nw, int64_t n_out) {
  return wq_scratch_round(4 * (nx > 0 ? nx : 1)) + wq_scratch_round(4 * (nw > 0 ? nw : 1)) +
         wq_scratch_round(4 * (n_out > 0 ? n_out : 1));
}

static wq_status qconv_compute(const wq_node *node, const wq_qconv_shape *s, const wq_value *x,
                               const wq_qparams *qx, const wq_value *w, const wq_qparams *qw,
                               const int32_t *bias, int64_t n_out, qconv_buffers *b,
                               wq_error *err) {
  memset(b, 0, sizeof *b);
  int64_t nx = wq_value_numel(x), nw = wq_value_numel(w);
  size_t bx = (size_t)(nx > 0 ? nx : 1) * sizeof(int32_t);
  size_t bw = (size_t)(nw > 0 ? nw : 1) * sizeof(int32_t);
  size_t bacc = (size_t)(n_out > 0 ? n_out : 1) * sizeof(int32_t);
  void *mark = wq_scratch_take(0);
  b->x = wq_scratch_take((int64_t)bx);
  b->w = wq_scratch_take((int64_t)bw);
  b->acc = wq_scratch_take((int64_t)bacc);
  if (mark && b->x && b->w && b->acc) {
    b->taken = mark;
  } else {
    wq_scratch_give(mark);
    b->x = malloc(bx);
    b->w = malloc(bw);
    b->acc = malloc(bacc);
    if (!b->x || !b->w || !b->acc) {
      qconv_buffers_free(b);
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
    }
  }
  wq_ref_q_center(x->data, nx, qx, b->x);
  wq_ref_q_center(w->data, nw, qw, b->w);
  wq_ref_qconv_acc(s, b->x, b->w, bias, b->acc);
  return WQ_OK;
}

/* What a node keeps from plan time: its operands' qparams when every scale
 * and zero point is a constant and the shapes are static (the usual case),
 * so a run builds none. */
typedef struct {
  bool planned;
  wq_qparams x, w, y; /* y: QLinearConv only */
} qconv_ref_state;

static void qconv_ref_clear(qconv_ref_state *st) {
  wq_qparams_free(&st->x);
  wq_qparams_free(&st->w);
  wq_qparams_free(&st->y);
  st->planned = false;
}

static void qconv_ref_free(void *p) {
  if (p)
    qconv_ref_clear(p);
  free(p);
}

static wq_status qconv_ref_prepare(wq_node *node, wq_error *err) {
  node->op_state = calloc(1, sizeof(qconv_ref_state));
  return node->op_state
             ? WQ_OK
             : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
}

/* The graph's values of the node's inputs and output 0; false unless their
 * shapes are static and the inputs in `params` (a bit per input: scales and
 * zero points) are constants. */
static bool qconv_ref_static(const wq_node *node, const wq_graph *g, unsigned params, wq_value *in,
                             wq_value *y) {
  wq_node_input_values(g, node, in, node->n_inputs);
  *y = wq_tensor_value(&g->tensors[node->outputs[0]]);
  if (!wq_value_shape_known(y))
    return false;
  for (int i = 0; i < node->n_inputs; i++)
    if (wq_value_present(&in[i]) &&
        (!wq_value_shape_known(&in[i]) || ((params >> i & 1u) && !in[i].data)))
      return false;
  return true;
}

/* Forgets what an earlier plan kept; the node's state when this plan can keep
 * qparams (static shapes, constant `params` inputs: see qconv_ref_static),
 * NULL when the run must build them (or the node was never prepared). */
static qconv_ref_state *qconv_ref_replan(wq_node *node, const wq_graph *g, unsigned params,
                                         wq_value *in, wq_value *y) {
  qconv_ref_state *st = node->op_state;
  if (!st)
    return NULL;
  qconv_ref_clear(st);
  return qconv_ref_static(node, g, params, in, y) ? st : NULL;
}

/* Holds the qparams' scales and zero points; declares the run's scratch. */
static int64_t qconv_ref_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  const qconv_ref_state *st = node->op_state;
  const int w_input = wq_node_is(node, WQ_OPID(qlinear_conv)) ? 3 : 1;
  wq_value x = wq_tensor_value(&g->tensors[node->inputs[0]]);
  wq_value w = wq_tensor_value(&g->tensors[node->inputs[w_input]]);
  wq_value y = wq_tensor_value(&g->tensors[node->outputs[0]]);
  const int64_t nx = wq_value_numel(&x), nw = wq_value_numel(&w), ny = wq_value_numel(&y);
  *scratch = nx >= 0 && nw >= 0 && ny >= 0 ? qconv_scratch_bytes(nx, nw, ny) : 0;
  return st && st->planned ? 8 * (st->x.count + st->w.count + st->y.count) : 0;
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

static wq_status qlinear_conv_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                                   wq_error *err) {
  (void)kernel;
  wq_value in[9], y;
  qconv_ref_state *st = qconv_ref_replan(node, g, 0xf6u /* inputs 1, 2, 4, 5, 6, 7 */, in, &y);
  if (!st)
    return WQ_OK;
  qlinear_conv_params p;
  WQ_TRY(qlinear_conv_params_build(node, in, &y, &p, err));
  st->x = p.x, st->w = p.w, st->y = p.y;
  st->planned = true;
  return WQ_OK;
}

static wq_status qlinear_conv_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  const qconv_ref_state *st = node->op_state;
  wq_qconv_shape s;
  bool known;
  wq_value shape_out = out[0];
  WQ_TRY(qconv_shapes(node, &in[0], &in[3], &shape_out, &s, &known, err));
  qlinear_conv_params built;
  memset(&built, 0, sizeof built);
  const bool planned = st && st->planned;
  if (!planned)
    WQ_TRY(qlinear_conv_params_build(node, in, &out[0], &built, err));
  const qlinear_conv_params *p = planned ? &(qlinear_conv_params){st->x, st->w, st->y} : &built;
  const wq_value *bias = wq_quant_optional_input(node, in, 8);
  int64_t n_out = wq_value_numel(&out[0]);
  qconv_buffers b;
  wq_status st_run = qconv_compute(node, &s, &in[0], &p->x, &in[3], &p->w,
                                   bias ? (const int32_t *)bias->data : NULL, n_out, &b, err);
  if (st_run == WQ_OK) {
    const int64_t out_size = wq_conv_geometry_out_size(&s.geo);
    const float sx = p->x.scale[0], sy = p->y.scale[0];
    const int32_t zy = p->y.zero_point[0];
    for (int64_t n = 0; n < s.N; n++)
      for (int64_t m = 0; m < s.M; m++) {
        /* Output channel m's weight scale: element (m, 0, 0...) of w. */
        float sw = p->w.scale[wq_qparams_index_of(&p->w, m * (wq_value_numel(&in[3]) / s.M))];
        float multiplier = (sx * sw) / sy;
        int64_t base = (n * s.M + m) * out_size;
        for (int64_t o = 0; o < out_size; o++) {
          int32_t q =
              wq_ref_requantize_value(b.acc[base + o], multiplier, zy, p->y.qmin, p->y.qmax);
          wq_ref_q_store(out[0].data, out[0].dtype, base + o, q);
        }
      }
    qconv_buffers_free(&b);
  }
  qlinear_conv_params_free(&built);
  return st_run;
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
                                  .prepare = qconv_ref_prepare,
                                  .free_state = qconv_ref_free,
                                  .infer = qlinear_conv_infer,
                                  .run = qlinear_conv_run,
                                  .plan = qlinear_conv_plan,
                                  .memory = qconv_ref_memory};

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

static wq_status conv_integer_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                                   wq_error *err) {
  (void)kernel;
  wq_value in[4], y;
  qconv_ref_state *st = qconv_ref_replan(node, g, 0xcu /* inputs 2, 3 */, in, &y);
  if (!st)
    return WQ_OK;
  WQ_TRY(conv_integer_params(node, in, &st->x, &st->w, err));
  st->planned = true;
  return WQ_OK;
}

static wq_status conv_integer_run(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  const qconv_ref_state *st = node->op_state;
  wq_qconv_shape s;
  bool known;
  wq_value shape_out = out[0];
  WQ_TRY(qconv_shapes(node, &in[0], &in[1], &shape_out, &s, &known, err));
  wq_qparams qx, qw;
  memset(&qx, 0, sizeof qx);
  memset(&qw, 0, sizeof qw);
  const bool planned = st && st->planned;
  if (!planned)
    WQ_TRY(conv_integer_params(node, in, &qx, &qw, err));
  qconv_buffers b;
  wq_status st_run = qconv_compute(node, &s, &in[0], planned ? &st->x : &qx, &in[1],
                                   planned ? &st->w : &qw, NULL, wq_value_numel(&out[0]), &b, err);
  if (st_run == WQ_OK) {
    if (wq_value_numel(&out[0]) > 0)
      memcpy(out[0].data, b.acc, (size_t)wq_value_numel(&out[0]) * sizeof(int32_t));
    qconv_buffers_free(&b);
  }
  wq_qparams_free(&qx);
  wq_qparams_free(&qw);
  return st_run;
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
                                  .prepare = qconv_ref_prepare,
                                  .free_state = qconv_ref_free,
                                  .infer = conv_integer_infer,
                                  .run = conv_integer_run,
                                  .plan = conv_integer_plan,
                                  .memory = qconv_ref_memory};
