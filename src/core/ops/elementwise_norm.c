/* Softmax and BatchNormalization (kernels in kernels/ref/ew_softmax.c and
 * ew_batchnorm.c). */
#include <string.h>

#include "../kernels/ref/ew_norm.h"
#include "elementwise_common.h"

static const wq_dtype float_only[] = {WQ_DT_FLOAT};

/* ---- Softmax ---- */

wq_status ew_softmax_view(const wq_node *node, const wq_value *x, bool legacy, ew_softmax_dims *v,
                          wq_error *err) {
  v->outer = v->n = v->inner = 1;
  int64_t axis_attr;
  WQ_TRY(wq_attr_int(node, "axis", legacy ? 1 : -1, &axis_attr, err));
  if (x->rank < 0)
    return WQ_OK;
  int axis;
  if (legacy && x->rank == 0 && (axis_attr == 0 || axis_attr == 1))
    axis = 0; /* a scalar coerces to [1, 1] */
  else
    WQ_TRY(ew_normalize_axis(node, axis_attr, x->rank, &axis, err));
  for (int i = 0; i < x->rank; i++) {
    if (i < axis)
      v->outer *= x->dims[i];
    else if (i == axis || legacy)
      v->n *= x->dims[i];
    else
      v->inner *= x->dims[i];
  }
  return WQ_OK;
}

static wq_status softmax_prepare(wq_node *node, wq_error *err) {
  int64_t axis;
  return wq_attr_int(node, "axis", 0, &axis, err);
}

static wq_status softmax_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  WQ_TRY(ew_check_dtype(node, "input", in[0].dtype, float_only, 1, err));
  ew_softmax_dims v;
  WQ_TRY(ew_softmax_view(node, &in[0], node->opset < 13, &v, err));
  return ew_infer_same_shape(node, &in[0], in[0].dtype, &out[0], err);
}

static wq_status softmax_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  ew_softmax_dims v;
  WQ_TRY(ew_softmax_view(node, &in[0], node->opset < 13, &v, err));
  if (wq_value_numel(&in[0]) > 0)
    ew_softmax_float(in[0].data, out[0].data, v.outer, v.n, v.inner);
  return WQ_OK;
}

const wq_op wq_op_softmax = {.int8 = WQ_INT8_SOFTMAX,
                             .int8_as = WQ_OPID(contrib_qlinear_softmax),
                             .op_type = "Softmax",
                             .domain = "",
                             .min_opset = 1,
                             .min_inputs = 1,
                             .max_inputs = 1,
                             .min_outputs = 1,
                             .max_outputs = 1,
                             .prepare = softmax_prepare,
                             .infer = softmax_infer,
                             .run = softmax_run};

/* ---- BatchNormalization ---- */

/* Inputs X, scale, B, input_mean, input_var. Opsets 7/9 (spatial attribute
 * in 7) and 14/15 (training_mode; outputs running_mean, running_var). In
 * opsets < 14 the extra outputs only exist for training, which has no
 * defined trigger there, so they are rejected. */
typedef struct {
  float epsilon, momentum;
  bool training, per_element;
} batchnorm_attrs;

static wq_status batchnorm_attrs_of(const wq_node *node, batchnorm_attrs *a, wq_error *err) {
  int64_t training = 0, spatial = 1;
  WQ_TRY(wq_attr_float(node, "epsilon", 1e-5f, &a->epsilon, err));
  WQ_TRY(wq_attr_float(node, "momentum", 0.9f, &a->momentum, err));
  if (node->opset >= 14)
    WQ_TRY(wq_attr_int(node, "training_mode", 0, &training, err));
  if (node->opset < 9)
    WQ_TRY(wq_attr_int(node, "spatial", 1, &spatial, err));
  if (training != 0 && training != 1)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "BatchNormalization: training_mode must be 0 or 1, got %lld",
                   (long long)training);
  a->training = training == 1;
  a->per_element = spatial == 0;
  int extra_outputs = 0;
  for (int i = 1; i < node->n_outputs; i++)
    extra_outputs += node->outputs[i] >= 0;
  if (extra_outputs && !a->training)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "BatchNormalization: %d statistics outputs requested outside training_mode "
                   "(opset %d); only inference or opset 14+ training_mode=1 are supported",
                   extra_outputs, node->opset);
  if (a->training && node->n_outputs > 3)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "BatchNormalization: training_mode gives at most 3 outputs, got %d",
                   node->n_outputs);
  return WQ_OK;
}

static wq_status batchnorm_prepare(wq_node *node, wq_error *err) {
  batchnorm_attrs a;
  return batchnorm_attrs_of(node, &a, err);
}

static wq_status batchnorm_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
  batchnorm_attrs a;
  WQ_TRY(batchnorm_attrs_of(node, &a, err));
  for (int i = 0; i < 5; i++)
    WQ_TRY(ew_check_dtype(node, names[i], in[i].dtype, float_only, 1, err));
  const wq_value *x = &in[0];
  if (x->rank >= 0 && x->rank < 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "BatchNormalization: X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
  int64_t channels = x->rank >= 0 ? x->dims[1] : -1;
  int64_t inner = 1;
  for (int i = 2; i < x->rank; i++)
    inner = (inner < 0 || x->dims[i] < 0) ? -1 : inner * x->dims[i];
  int64_t want = a.per_element ? ((channels < 0 || inner < 0) ? -1 : channels * inner) : channels;
  for (int i = 1; i < 5; i++) {
    int64_t n = wq_value_numel(&in[i]);
    if (want >= 0 && n >= 0 && n != want) {
      char xs[128], ps[128];
      wq_dims_format(x->dims, x->rank, xs, sizeof xs);
      wq_dims_format(in[i].dims, in[i].rank, ps, sizeof ps);
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "BatchNormalization: %s has shape %s, want %lld elements for X %s", names[i],
                     ps, (long long)want, xs);
    }
  }
  WQ_TRY(ew_infer_same_shape(node, x, WQ_DT_FLOAT, &out[0], err));
  for (int i = 1; i < node->n_outputs && i < 3; i++) {
    out[i].dtype = WQ_DT_FLOAT;
    out[i].data = NULL;
    out[i].rank = 1;
    out[i].dims[0] = channels;
    if (channels < 0)
      out[i].rank = -1;
  }
  return WQ_OK;
}

static wq_status batchnorm_run(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  batchnorm_attrs a;
  WQ_TRY(batchnorm_attrs_of(node, &a, err));
  const wq_value *x = &in[0];
  int64_t batch = x->dims[0], channels = x->dims[1], inner = 1;
  for (int i = 2; i < x->rank; i++)
    inner *= x->dims[i];
  if (a.training) {
    float *running_mean = node->n_outputs > 1 ? out[1].data : NULL;
    float *running_var = node->n_outputs > 2 ? out[2].data : NULL;
    ew_batchnorm_train_float(x->data, out[0].data, batch, channels, inner, in[1].data, in[2].data,
                             in[3].data, in[4].data, a.epsilon, a.momentum, running_mean,
                             running_var);
  } else {
    ew_batchnorm_float(x->data, out[0].data, batch, channels, inner, in[1].data, in[2].data,
                       in[3].data, in[4].data, a.epsilon, a.per_element);
  }
  return WQ_OK;
}

const wq_op wq_op_batch_normalization = {.op_type = "BatchNormalization",
                                         .domain = "",
                                         .min_opset = 7,
                                         .min_inputs = 5,
                                         .max_inputs = 5,
                                         .min_outputs = 1,
                                         .max_outputs = 5,
                                         .prepare = batchnorm_prepare,
                                         .infer = batchnorm_infer,
                                         .run = batchnorm_run};
