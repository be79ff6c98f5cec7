/* Finding the quantized operands of a node: parameters of Q/DQ nodes, the
 * int8 tensors behind DequantizeLinear (live or folded), the QuantizeLinear
 * that quantizes a node's result and the activation in between. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../ir/format.h"
#include "../kernels/ref/quant_ref.h"
#include "../quant/qparams.h"
#include "lower_internal.h"

wq_status lower_why(lower_ctx *c, wq_reason code, const char *fmt, ...) {
  c->reason = code;
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(c->why, sizeof c->why, fmt, ap);
  va_end(ap);
  return WQ_OK;
}

static const char *tensor_name(const lower_ctx *c, int t) {
  return t >= 0 && t < c->g->n_tensors ? c->g->tensors[t].name : "(none)";
}

/* A constant input's value, or false. */
static bool constant_value(const lower_ctx *c, int t, wq_value *out) {
  if (t < 0 || t >= c->g->n_tensors)
    return false;
  const wq_tensor *tensor = &c->g->tensors[t];
  if (!tensor->is_constant || !tensor->data)
    return false;
  *out = wq_tensor_value(tensor);
  return wq_value_shape_known(out);
}

/* qparams from ONNX's (scale, zero point, axis, block_size) form. */
static bool qparams_from_parts(lower_ctx *c, const char *node_name, int data_tensor,
                               int scale_tensor, int zp_tensor, int64_t axis, int64_t block_size,
                               wq_qparams *out) {
  const wq_tensor *data = &c->g->tensors[data_tensor];
  wq_value scale, zp;
  if (!constant_value(c, scale_tensor, &scale)) {
    lower_why(c, WQ_REASON_NOT_CONSTANT, "scale '%s' of '%s' is not a constant",
              tensor_name(c, scale_tensor), node_name);
    return false;
  }
  bool has_zp = zp_tensor >= 0;
  if (has_zp && !constant_value(c, zp_tensor, &zp)) {
    lower_why(c, WQ_REASON_NOT_CONSTANT, "zero point '%s' of '%s' is not a constant",
              tensor_name(c, zp_tensor), node_name);
    return false;
  }
  if (data->rank < 0) {
    lower_why(c, WQ_REASON_UNKNOWN_SHAPE, "the shape of '%s' is unknown", data->name);
    return false;
  }
  /* Symbolic dims (a dynamic batch) do not change per-tensor or per-axis
   * parameters: an unknown dim counts as 1, or as the scale's length along
   * the quantized axis. */
  int64_t dims[WQ_MAX_RANK];
  int64_t along = axis < 0 ? axis + data->rank : axis;
  for (int d = 0; d < data->rank; d++)
    dims[d] = data->dims[d] >= 0              ? data->dims[d]
              : d == along && scale.rank == 1 ? scale.dims[0]
                                              : 1;
  wq_error local;
  wq_error_clear(&local);
  if (wq_qparams_from_onnx(out, data->dtype, data->rank, dims, &scale, has_zp ? &zp : NULL, axis,
                           block_size, node_name, data->name, &local) != WQ_OK) {
    lower_why(c, WQ_REASON_NO_QPARAMS, "quantization parameters of '%s' are not usable: %s",
              data->name, local.message);
    return false;
  }
  return true;
}

bool lower_node_qparams(lower_ctx *c, const wq_node *node, int data_tensor, wq_qparams *out) {
  int64_t axis = 1, block_size = 0;
  const wq_attr *a = wq_node_attr(node, "axis");
  if (a && a->type == WQ_ATTR_INT)
    axis = a->i;
  a = wq_node_attr(node, "block_size");
  if (a && a->type == WQ_ATTR_INT && node->opset >= 21)
    block_size = a->i;
  int zp = node->n_inputs > 2 ? node->inputs[2] : -1;
  return qparams_from_parts(c, node->name, data_tensor, node->inputs[1], zp, axis, block_size, out);
}

bool lower_qparams_equal(const wq_qparams *a, const wq_qparams *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->count != b->count || !a->scale || !b->scale)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->scale_dims[i] != b->scale_dims[i] || a->block[i] != b->block[i])
      return false;
  for (int64_t i = 0; i < a->count; i++)
    if (a->scale[i] != b->scale[i] || a->zero_point[i] != b->zero_point[i])
      return false;
  return true;
}

bool lower_per_tensor_equal(const wq_qparams *a, const wq_qparams *b) {
  return a && b && a->scale && b->scale && a->dtype == b->dtype && wq_qparams_is_per_tensor(a) &&
         wq_qparams_is_per_tensor(b) && a->scale[0] == b->scale[0] &&
         a->zero_point[0] == b->zero_point[0];
}

/* Gives tensor t the parameters qp unless it already has some. */
static wq_status attach(lower_ctx *c, int t, const wq_qparams *qp, wq_error *err) {
  if (t < 0 || c->g->tensors[t].qparams)
    return WQ_OK;
  return lower_set_qparams(c, t, qp, err);
}

static wq_status attach_from_parts(lower_ctx *c, const char *node_name, int data_tensor,
                                   int scale_tensor, int zp_tensor, int64_t axis,
                                   int64_t block_size, wq_error *err) {
  if (data_tensor < 0 || c->g->tensors[data_tensor].qparams)
    return WQ_OK;
  wq_qparams qp;
  if (!qparams_from_parts(c, node_name, data_tensor, scale_tensor, zp_tensor, axis, block_size,
                          &qp))
    return WQ_OK; /* stays without parameters; its readers say why */
  wq_status st = attach(c, data_tensor, &qp, err);
  wq_qparams_free(&qp);
  return st;
}

int lower_contrib_operands(const wq_node *n,
                           lower_qlinear_operand out[LOWER_CONTRIB_MAX_OPERANDS]) {
  /* Inputs (data, scale, zero point) and the output's (scale, zero point). */
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_add)) || wq_node_is(n, WQ_OPID(contrib_qlinear_mul))) {
    out[0] = (lower_qlinear_operand){0, 1, 2};
    out[1] = (lower_qlinear_operand){3, 4, 5};
    out[2] = (lower_qlinear_operand){-1, 6, 7};
    return 3;
  }
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_global_average_pool)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_sigmoid)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_leaky_relu)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_reduce_mean)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_average_pool)) ||
      wq_node_is(n, WQ_OPID(contrib_qlinear_softmax))) {
    out[0] = (lower_qlinear_operand){0, 1, 2};
    out[1] = (lower_qlinear_operand){-1, 3, 4};
    return 2;
  }
  if (wq_node_is(n, WQ_OPID(contrib_qgemm))) {
    /* A, and Y when quantized (y_scale present); B is attached on its own
     * (per-column parameters along its N axis). */
    out[0] = (lower_qlinear_operand){0, 1, 2};
    if (n->n_inputs < 8 || n->inputs[7] < 0)
      return 1;
    out[1] = (lower_qlinear_operand){-1, 7, 8};
    return 2;
  }
  if (wq_node_is(n, WQ_OPID(contrib_qlinear_concat))) {
    /* Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input. */
    int inputs = (n->n_inputs - 2) / 3;
    if (n->n_inputs < 5 || (n->n_inputs - 2) % 3 != 0 || inputs + 1 > LOWER_CONTRIB_MAX_OPERANDS)
      return 0;
    out[0] = (lower_qlinear_operand){-1, 0, 1};
    for (int k = 0; k < inputs; k++)
      out[1 + k] = (lower_qlinear_operand){2 + 3 * k, 3 + 3 * k, 4 + 3 * k};
    return inputs + 1;
  }
  return 0;
}

/* Tensor of operand o of node n (its output for data -1), or -1 if absent. */
static int operand_tensor(const wq_node *n, const lower_qlinear_operand *o) {
  if (o->data < 0)
    return n->outputs[0];
  return o->data < n->n_inputs ? n->inputs[o->data] : -1;
}

static int optional_input(const wq_node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

bool lower_contrib_operand_matches(lower_ctx *c, const wq_node *n, const lower_qlinear_operand *o) {
  int t = operand_tensor(n, o);
  const wq_tensor *tt = t >= 0 ? &c->g->tensors[t] : NULL;
  if (!tt || !tt->qparams) {
    lower_why(c, WQ_REASON_NO_QPARAMS, "'%s' has no usable quantization parameters",
              tt ? tt->name : "?");
    return false;
  }
  wq_qparams qp;
  if (!qparams_from_parts(c, n->name, t, optional_input(n, o->scale), optional_input(n, o->zp), 1,
                          0, &qp))
    return false;
  bool same = lower_qparams_equal(&qp, tt->qparams);
  wq_qparams_free(&qp);
  if (!same)
    lower_why(c, WQ_REASON_QPARAMS_MISMATCH,
              "'%s' carries other quantization parameters than %s '%s' reads it with", tt->name,
              n->op_type, n->name);
  return same;
}

wq_status lower_attach_qparams(lower_ctx *c, wq_error *err) {
  wq_graph *g = c->g;
  /* Producers first: a tensor's parameters are those it was written with. */
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (wq_node_is(n, WQ_OPID(quantize_linear))) {
      wq_qparams qp;
      if (lower_node_qparams(c, n, n->outputs[0], &qp)) {
        wq_status st = attach(c, n->outputs[0], &qp, err);
        wq_qparams_free(&qp);
        WQ_TRY(st);
      }
    } else if (wq_node_is(n, WQ_OPID(qlinear_conv))) {
      WQ_TRY(attach_from_parts(c, n->name, n->outputs[0], n->inputs[6], n->inputs[7], 1, 0, err));
    } else if (wq_node_is(n, WQ_OPID(qlinear_matmul))) {
      WQ_TRY(attach_from_parts(c, n->name, n->outputs[0], n->inputs[6], n->inputs[7], 1, 0, err));
    } else {
      lower_qlinear_operand ops[LOWER_CONTRIB_MAX_OPERANDS];
      for (int k = 0, count = lower_contrib_operands(n, ops); k < count; k++)
        if (ops[k].data < 0)
          WQ_TRY(attach_from_parts(c, n->name, n->outputs[0], optional_input(n, ops[k].scale),
                                   optional_input(n, ops[k].zp), 1, 0, err));
    }
  }
  /* Then readers, for int8 tensors no node writes (graph inputs, constants). */
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    if (wq_node_is(n, WQ_OPID(dequantize_linear))) {
      wq_qparams qp;
      if (g->tensors[n->inputs[0]].qparams || !lower_node_qparams(c, n, n->inputs[0], &qp))
        continue;
      wq_status st = attach(c, n->inputs[0], &qp, err);
      wq_qparams_free(&qp);
      WQ_TRY(st);
    } else if (wq_node_is(n, WQ_OPID(qlinear_conv))) {
      WQ_TRY(attach_from_parts(c, n->name, n->inputs[0], n->inputs[1], n->inputs[2], 1, 0, err));
      /* Conv weights [M, C, k...]: a 1-D scale is per output channel. */
      WQ_TRY(attach_from_parts(c, n->name, n->inputs[3], n->inputs[4], n->inputs[5], 0, 0, err));
    } else if (wq_node_is(n, WQ_OPID(qlinear_matmul))) {
      WQ_TRY(attach_from_parts(c, n->name, n->inputs[0], n->inputs[1], n->inputs[2], 1, 0, err));
      /* b [K, N]: a 1-D scale is per column (the last axis). */
      WQ_TRY(attach_from_parts(c, n->name, n->inputs[3], n->inputs[4], n->inputs[5], -1, 0, err));
    } else {
      if (wq_node_is(n, WQ_OPID(contrib_qgemm)) && n->n_inputs > 4) {
        /* B [K, N] ([N, K] with transB): a 1-D scale is per column. */
        const wq_attr *tb = wq_node_attr(n, "transB");
        int axis = tb && tb->type == WQ_ATTR_INT && tb->i != 0 ? 0 : 1;
        WQ_TRY(attach_from_parts(c, n->name, n->inputs[3], n->inputs[4], optional_input(n, 5), axis,
                                 0, err));
      }
      lower_qlinear_operand ops[LOWER_CONTRIB_MAX_OPERANDS];
      for (int k = 0, count = lower_contrib_operands(n, ops); k < count; k++)
        if (ops[k].data >= 0)
          WQ_TRY(attach_from_parts(c, n->name, operand_tensor(n, &ops[k]),
                                   optional_input(n, ops[k].scale), optional_input(n, ops[k].zp), 1,
                                   0, err));
    }
  }
  if (c->capture)
    for (int r = 0; r < c->capture->n_records; r++) {
      const wq_lower_dq_record *rec = &c->capture->records[r];
      if (rec->q_tensor < g->n_tensors && g->tensors[rec->q_tensor].is_constant)
        WQ_TRY(attach_from_parts(c, rec->node_name, rec->q_tensor, rec->scale_tensor,
                                 rec->zp_tensor, rec->axis, rec->block_size, err));
    }
  return WQ_OK;
}

int lower_activation_input(lower_ctx *c, int t, const char *what) {
  const wq_graph *g = c->g;
  int p = lower_producer(c, t);
  if (p < 0 || !wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear))) {
    if (p < 0)
      lower_why(c, WQ_REASON_INPUT_NOT_QUANTIZED,
                "%s '%s' is %s, not the output of a DequantizeLinear", what, tensor_name(c, t),
                g->tensors[t].is_input ? "a graph input" : "a float constant");
    else
      lower_why(c, WQ_REASON_INPUT_NOT_QUANTIZED,
                "%s '%s' comes from %s '%s', not from a DequantizeLinear", what, tensor_name(c, t),
                lower_op_type(c, p), g->nodes[p].name);
    return -1;
  }
  const wq_node *dq = &g->nodes[p];
  int x = dq->inputs[0];
  const wq_tensor *xt = &g->tensors[x];
  if (xt->dtype != WQ_DT_INT8 && xt->dtype != WQ_DT_UINT8) {
    lower_why(c, WQ_REASON_UNSUPPORTED_DTYPE,
              "%s '%s' dequantizes %s data; int8 ops take int8 or uint8", what, tensor_name(c, t),
              wq_dtype_name(xt->dtype));
    return -1;
  }
  wq_qparams view;
  if (!lower_node_qparams(c, dq, x, &view))
    return -1;
  bool same = xt->qparams && lower_qparams_equal(&view, xt->qparams);
  bool per_tensor = wq_qparams_is_per_tensor(&view);
  wq_qparams_free(&view);
  if (!same) {
    lower_why(c, WQ_REASON_QPARAMS_MISMATCH,
              "DequantizeLinear '%s' reads '%s' with parameters that differ from those '%s' was "
              "written with",
              dq->name, xt->name, xt->name);
    return -1;
  }
  if (!per_tensor) {
    lower_why(c, WQ_REASON_PER_CHANNEL_ACTIVATION,
              "%s '%s' is quantized per channel; int8 activations are per tensor", what, xt->name);
    return -1;
  }
  return x;
}

/* The folded DequantizeLinear record of float constant t, or NULL. */
static const wq_lower_dq_record *captured(const lower_ctx *c, int t) {
  if (!c->capture)
    return NULL;
  for (int r = 0; r < c->capture->n_records; r++)
    if (c->capture->records[r].float_tensor == t)
      return &c->capture->records[r];
  return NULL;
}

int lower_constant_input(lower_ctx *c, int t, const char *what) {
  const wq_graph *g = c->g;
  int p = lower_producer(c, t);
  int q = -1;
  if (p >= 0 && wq_node_is(&g->nodes[p], WQ_OPID(dequantize_linear))) {
    q = g->nodes[p].inputs[0];
  } else if (p < 0 && g->tensors[t].is_constant) {
    const wq_lower_dq_record *rec = captured(c, t);
    if (!rec) {
      lower_why(c, WQ_REASON_INPUT_NOT_QUANTIZED, "%s '%s' is a float constant, not quantized",
                what, tensor_name(c, t));
      return -1;
    }
    q = rec->q_tensor;
  } else {
    lower_why(c, WQ_REASON_NOT_CONSTANT, "%s '%s' is not a constant (it comes from %s)", what,
              tensor_name(c, t), p >= 0 ? lower_op_type(c, p) : "a graph input");
    return -1;
  }
  const wq_tensor *qt = &g->tensors[q];
  if (!qt->is_constant || !qt->data) {
    lower_why(c, WQ_REASON_NOT_CONSTANT, "%s '%s' dequantizes '%s', which is not a constant", what,
              tensor_name(c, t), qt->name);
    return -1;
  }
  if (!qt->qparams) {
    lower_why(c, WQ_REASON_NO_QPARAMS, "%s '%s' has no usable quantization parameters", what,
              qt->name);
    return -1;
  }
  if (p >= 0) {
    wq_qparams view;
    if (!lower_node_qparams(c, &g->nodes[p], q, &view))
      return -1;
    bool same = lower_qparams_equal(&view, qt->qparams);
    wq_qparams_free(&view);
    if (!same) {
      lower_why(c, WQ_REASON_QPARAMS_MISMATCH,
                "'%s' is dequantized with different parameters by different nodes", qt->name);
      return -1;
    }
  }
  return q;
}

/* The clamp a Relu or Clip puts on codes of qparams (scale, zp, qmin,
 * qmax): quantization is monotonic, so quantize(clip(v, lo, hi)) ==
 * clamp(quantize(v), quantize(lo), quantize(hi)) for every zero point. */
static bool activation_clamp(lower_ctx *c, const wq_node *act, const wq_qparams *qp, int32_t *lo_q,
                             int32_t *hi_q) {
  float scale = qp->scale[0];
  int32_t zp = qp->zero_point[0];
  float lo = 0.0f, hi = 0.0f;
  bool has_lo = true, has_hi = false;
  if (wq_node_is(act, WQ_OPID(clip))) {
    has_lo = has_hi = false;
    if (act->opset < 11) {
      const wq_attr *a = wq_node_attr(act, "min");
      if (a && a->type == WQ_ATTR_FLOAT)
        has_lo = true, lo = a->f;
      a = wq_node_attr(act, "max");
      if (a && a->type == WQ_ATTR_FLOAT)
        has_hi = true, hi = a->f;
    } else {
      for (int k = 1; k <= 2 && k < act->n_inputs; k++) {
        int t = act->inputs[k];
        if (t < 0)
          continue;
        wq_value v;
        if (!constant_value(c, t, &v) || wq_value_numel(&v) != 1 || v.dtype != WQ_DT_FLOAT) {
          lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                    "Clip '%s' has a %s bound that is not a float constant", act->name,
                    k == 1 ? "min" : "max");
          return false;
        }
        float b = *(const float *)v.data;
        if (k == 1)
          has_lo = true, lo = b;
        else
          has_hi = true, hi = b;
      }
    }
  }
  *lo_q = qp->qmin;
  *hi_q = qp->qmax;
  if (has_lo)
    *lo_q = wq_ref_quantize_value(lo, scale, zp, qp->qmin, qp->qmax);
  if (has_hi)
    *hi_q = wq_ref_quantize_value(hi, scale, zp, qp->qmin, qp->qmax);
  if (*lo_q > *hi_q) {
    lower_why(c, WQ_REASON_UNSUPPORTED_ATTR, "Clip '%s' has min above max", act->name);
    return false;
  }
  return true;
}

/* The QuantizeLinear that is t's only reader, with per-tensor 8-bit
 * parameters; sets the sink's tensor, node and dtype. */
static bool quantize_reader(lower_ctx *c, int t, int reader, lower_sink *out) {
  const wq_graph *g = c->g;
  const wq_node *q = &g->nodes[reader];
  if (!wq_node_is(q, WQ_OPID(quantize_linear))) {
    lower_why(c, WQ_REASON_OUTPUT_NOT_QUANTIZED,
              "its result '%s' feeds %s '%s', not a QuantizeLinear", tensor_name(c, t), q->op_type,
              q->name);
    return false;
  }
  int y = q->outputs[0];
  const wq_tensor *yt = &g->tensors[y];
  if (yt->dtype != WQ_DT_INT8 && yt->dtype != WQ_DT_UINT8) {
    lower_why(c, WQ_REASON_UNSUPPORTED_DTYPE,
              "QuantizeLinear '%s' produces %s; int8 ops produce int8 or uint8", q->name,
              wq_dtype_name(yt->dtype));
    return false;
  }
  if (!yt->qparams) {
    wq_qparams tmp;
    if (lower_node_qparams(c, q, y, &tmp)) /* sets the reason */
      wq_qparams_free(&tmp);
    return false;
  }
  if (!wq_qparams_is_per_tensor(yt->qparams)) {
    lower_why(c, WQ_REASON_PER_CHANNEL_ACTIVATION,
              "QuantizeLinear '%s' quantizes per channel; int8 activations are per tensor",
              q->name);
    return false;
  }
  out->tensor = y;
  out->quantize_node = reader;
  out->dtype = yt->dtype;
  out->act_min = yt->qparams->qmin;
  out->act_max = yt->qparams->qmax;
  return true;
}

/* t's single reader (the graph output does not count as one). */
static bool single_reader(lower_ctx *c, int t, int *reader) {
  if (c->g->tensors[t].is_output) {
    lower_why(c, WQ_REASON_OUTPUT_NOT_QUANTIZED, "its result '%s' is a graph output (float)",
              tensor_name(c, t));
    return false;
  }
  int n = lower_consumers(c, t, reader);
  if (n != 1) {
    lower_why(c, WQ_REASON_OUTPUT_NOT_QUANTIZED,
              "its result '%s' has %d readers; it needs exactly one QuantizeLinear",
              tensor_name(c, t), n);
    return false;
  }
  return true;
}

/* The negative slope of a LeakyRelu, or of a PRelu whose slope is one
 * float constant; false when r is neither. */
static bool leaky_slope(const lower_ctx *c, const wq_node *r, float *alpha) {
  if (wq_node_is(r, WQ_OPID(leaky_relu))) {
    const wq_attr *a = wq_node_attr(r, "alpha");
    *alpha = a && a->type == WQ_ATTR_FLOAT ? a->f : 0.01f;
    return true;
  }
  wq_value v;
  if (!wq_node_is(r, WQ_OPID(prelu)) || r->n_inputs < 2 || r->inputs[1] < 0 ||
      !constant_value(c, r->inputs[1], &v) || v.dtype != WQ_DT_FLOAT || wq_value_numel(&v) != 1)
    return false;
  *alpha = *(const float *)v.data;
  return true;
}

bool lower_output_sink(lower_ctx *c, int t, int fuse, lower_sink *out) {
  memset(out, 0, sizeof *out);
  out->activation_node = -1;
  out->act_alpha = 1.0f;
  int reader;
  if (!single_reader(c, t, &reader))
    return false;
  const wq_node *r = &c->g->nodes[reader];
  float alpha = 1.0f;
  if (fuse >= LOWER_FUSE_LEAKY && leaky_slope(c, r, &alpha)) {
    if (!(alpha >= 0.0f && alpha <= 1.0f)) {
      lower_why(c, WQ_REASON_UNSUPPORTED_ATTR,
                "its result feeds %s '%s' of slope %g; a fused slope must be in [0, 1]", r->op_type,
                r->name, (double)alpha);
      return false;
    }
    int q_reader;
    if (!single_reader(c, r->outputs[0], &q_reader) ||
        !quantize_reader(c, r->outputs[0], q_reader, out))
      return false;
    out->activation_node = reader;
    out->leaky = true;
    out->act_alpha = alpha;
    return true;
  }
  bool is_act = wq_node_is(r, WQ_OPID(relu)) || wq_node_is(r, WQ_OPID(clip));
  if (!is_act || fuse < LOWER_FUSE_CLAMP)
    return quantize_reader(c, t, reader, out);
  int act_out = r->outputs[0], q_reader;
  if (!single_reader(c, act_out, &q_reader))
    return false;
  if (!quantize_reader(c, act_out, q_reader, out))
    return false;
  int32_t lo, hi;
  if (!activation_clamp(c, r, c->g->tensors[out->tensor].qparams, &lo, &hi))
    return false;
  out->activation_node = reader;
  out->act_min = lo;
  out->act_max = hi;
  return true;
}

void lower_absorb_sink(lower_ctx *c, const lower_sink *s, char *buf, size_t cap) {
  size_t len = strlen(buf);
  if (s->activation_node >= 0) {
    const wq_node *a = &c->g->nodes[s->activation_node];
    if (s->leaky)
      wq_format(buf + len, cap - len, " + %s '%s' (fused: negative slope %.7g)", a->op_type,
                a->name, (double)s->act_alpha);
    else
      wq_format(buf + len, cap - len, " + %s '%s' (fused: clamp [%d, %d])", a->op_type, a->name,
                (int)s->act_min, (int)s->act_max);
    c->absorbed[s->activation_node] = true;
    c->stats.nodes_absorbed++;
    len = strlen(buf);
  }
  wq_format(buf + len, cap - len, " + QuantizeLinear '%s'", c->g->nodes[s->quantize_node].name);
  c->absorbed[s->quantize_node] = true;
  c->stats.nodes_absorbed++;
}
