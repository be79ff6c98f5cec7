/* QConvToFloat and QGemmToFloat (domain "wasmq"): the integer conv / matrix
 * product of dynamically quantized models with their float rescale fused
 * into the kernel's output stage. They replace ConvInteger / MatMulInteger
 * -> Cast(float) -> Mul(scale) [-> Add(bias)] [-> Relu] (lower_rescale.c):
 *   y = relu?((float)acc * scale[m] + bias[m])
 * rounded step by step like that chain (kernels/qgemm.h), so the result is
 * bit-identical to running it op by op.
 *
 * Inputs: x (int8/uint8; its zero point from the tensor's qparams), w
 * (constant int8/uint8, zero points from its qparams: per tensor or per
 * output channel), scale (constant float, 1 or M values), bias (optional
 * constant float [M]). Attribute relu (0/1). QConvToFloat: x [N, C, (H,) W]
 * NCHW, w [M, C/group, (kH,) kW], Conv's window attributes and group,
 * output [N, M, (OH,) OW] float; it runs the NHWC kernels of
 * kernels/qconv.h, reading x and writing y as the layout pass stores them
 * (a channels-first one through a channels-last copy). QGemmToFloat: x [..., K], w
 * [N, K] (the canonical QGemm weight), output [..., N] float.
 *
 * A QGemmToFloat whose x is float quantizes it at every run by
 * DynamicQuantizeLinear's rule (uint8, one scale and zero point for the
 * whole tensor); scale is then the weight's, and the output stage
 * multiplies by x_scale * scale[n] (one float32 product), as onnxruntime's
 * DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(x_scale * w_scale)
 * and its DynamicQuantizeMatMul compute it. The product runs on the packed
 * GEMM with that run's zero point and multipliers. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/config.h"
#include "../kernels/qconv.h"
#include "../kernels/qgemm.h"
#include "../kernels/quantize.h"
#include "../runtime/parallel.h"
#include "int8_common.h"
#include "quant_common.h"

typedef struct {
  bool conv;
  bool dynamic;   /* gemm with a float x, quantized per run */
  float *w_scale; /* dynamic: [N] */
  wq_window_attrs win;
  int64_t group;
  bool relu;
  /* Filled by the plan hook. */
  bool planned;
  bool x_last, y_last; /* conv: x, y stored channels-last */
  int64_t x_dims[WQ_MAX_RANK], x_numel;
  int x_rank;
  wq_qconv_plan conv_plan; /* conv */
  wq_qgemm_packed gemm;    /* gemm */
  int64_t N, K;
} to_float_state;

static void to_float_free(void *p) {
  to_float_state *s = p;
  if (!s)
    return;
  wq_qconv_plan_free(&s->conv_plan);
  wq_qgemm_packed_free(&s->gemm);
  free(s->w_scale);
  free(s);
}

static wq_status to_float_prepare(wq_node *node, bool conv, wq_error *err) {
  to_float_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  int64_t relu = 0;
  s->conv = conv;
  s->group = 1;
  wq_status st = wq_attr_int(node, "relu", 0, &relu, err);
  if (st == WQ_OK && relu != 0 && relu != 1)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: relu is %lld (must be 0 or 1)",
                 node->op_type, (long long)relu);
  if (st == WQ_OK && conv)
    st = wq_window_attrs_parse(node, &s->win, err);
  if (st == WQ_OK && conv)
    st = wq_conv_group_parse(node, &s->group, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  s->relu = relu == 1;
  node->op_state = s;
  return WQ_OK;
}

static wq_status qconv_to_float_prepare(wq_node *node, wq_error *err) {
  return to_float_prepare(node, true, err);
}

static wq_status qgemm_to_float_prepare(wq_node *node, wq_error *err) {
  return to_float_prepare(node, false, err);
}

/* Output shape (and, for convs, the geometry) from x and w. */
static wq_status to_float_shape(const wq_node *node, const wq_value *x, const wq_value *w,
                                wq_value *out, wq_conv_geometry *geo, wq_error *err) {
  const to_float_state *s = node->op_state;
  out->dtype = WQ_DT_FLOAT;
  if (x->rank < 0 || w->rank < 0) {
    out->rank = -1;
    return WQ_OK;
  }
  if (!s->conv) {
    if (w->rank != 2 || x->rank < 1 ||
        (x->dims[x->rank - 1] >= 0 && w->dims[1] >= 0 && x->dims[x->rank - 1] != w->dims[1]))
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "QGemmToFloat: x must be [..., K] and w [N, K] with the same K");
    *out = *x;
    out->dtype = WQ_DT_FLOAT;
    out->dims[x->rank - 1] = w->dims[0];
    return WQ_OK;
  }
  if (x->rank < 3 || x->rank > 4 || w->rank != x->rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvToFloat: x must be [N, C, (H,) W] and w [M, C/group, (kH,) kW] (ranks "
                   "%d and %d)",
                   x->rank, w->rank);
  const int64_t C = x->dims[1], M = w->dims[0], Cg = w->dims[1];
  if ((C >= 0 && Cg >= 0 && C != Cg * s->group) || (M >= 0 && M % s->group != 0))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "QConvToFloat: channels %lld -> %lld do not split into %lld groups of %lld",
                   (long long)C, (long long)M, (long long)s->group, (long long)Cg);
  WQ_TRY(wq_window_geometry(node, &s->win, x->rank - 2, &x->dims[2], &w->dims[2], false, true, geo,
                            err));
  out->rank = x->rank;
  out->dims[0] = x->dims[0];
  out->dims[1] = M;
  for (int i = 0; i < geo->n_spatial; i++)
    out->dims[2 + i] = geo->out[i];
  return WQ_OK;
}

static wq_status to_float_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const to_float_state *s = node->op_state;
  if (s->conv || in[0].dtype != WQ_DT_FLOAT)
    WQ_TRY(wq_int8_expect_8bit(node, "x", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "w", in[1].dtype, err));
  for (int k = 2; k < node->n_inputs; k++)
    if (wq_value_present(&in[k]) && in[k].dtype != WQ_DT_FLOAT)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s must be float (has %s)", node->op_type,
                     k == 2 ? "scale" : "bias", wq_dtype_name(in[k].dtype));
  wq_conv_geometry geo;
  WQ_TRY(to_float_shape(node, &in[0], &in[1], &out[0], &geo, err));
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, node->op_type, err));
  return WQ_OK;
}

/* The constant float input k as M per-channel values (1 value broadcast),
 * into a new array; NULL in *out when the input is omitted. */
static wq_status channel_floats(const wq_node *node, const wq_graph *g, int k, int64_t M,
                                float **out, wq_error *err) {
  *out = NULL;
  if (node->n_inputs <= k || node->inputs[k] < 0)
    return WQ_OK;
  const wq_tensor *t;
  WQ_TRY(wq_int8_constant_input(node, g, k, k == 2 ? "scale" : "bias", &t, err));
  wq_value v = wq_tensor_value(t);
  int64_t count = wq_value_numel(&v);
  if (t->dtype != WQ_DT_FLOAT || (count != 1 && count != M))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s must be float with 1 or %lld values",
                   node->op_type, k == 2 ? "scale" : "bias", (long long)M);
  *out = malloc(sizeof(float) * (size_t)(M > 0 ? M : 1));
  if (!*out)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  for (int64_t m = 0; m < M; m++)
    (*out)[m] = ((const float *)t->data)[count == 1 ? 0 : m];
  return WQ_OK;
}

static wq_status to_float_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                               wq_error *err) {
  to_float_state *s = node->op_state;
  const wq_tensor *w;
  WQ_TRY(wq_int8_constant_input(node, g, 1, "w", &w, err));
  wq_value wv = wq_tensor_value(w);
  wq_value xv = wq_tensor_value(&g->tensors[node->inputs[0]]);
  WQ_TRY(wq_int8_expect_8bit(node, "w", wv.dtype, err));
  if (!wq_value_shape_known(&xv) || !wq_value_shape_known(&wv))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: x and w shapes must be static",
                   node->op_type);
  wq_value out;
  wq_conv_geometry geo;
  memset(&geo, 0, sizeof geo);
  WQ_TRY(to_float_shape(node, &xv, &wv, &out, &geo, err));
  const wq_qparams *qx = NULL, *qw;
  s->dynamic = !s->conv && xv.dtype == WQ_DT_FLOAT;
  if (!s->dynamic)
    WQ_TRY(wq_int8_tensor_qparams(node, g, 0, false, &qx, err));
  WQ_TRY(wq_int8_tensor_qparams(node, g, 1, false, &qw, err));
  float sx = 1.0f;
  int32_t zx = 0; /* dynamic: each run's zero point replaces it */
  if (qx)
    WQ_TRY(wq_int8_per_tensor(node, qx, "x", &sx, &zx, err));
  if (!wq_qparams_is_per_tensor(qw) && wq_qparams_channel_axis(qw) != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: w must be quantized per tensor or per output channel", node->op_type);
  const int64_t M = wv.dims[0], per_m = wq_value_numel(&wv) / (M > 0 ? M : 1);
  float *scale = NULL, *bias = NULL;
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)(M > 0 ? M : 1));
  wq_status st =
      wzp ? WQ_OK
          : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  if (st == WQ_OK)
    st = channel_floats(node, g, 2, M, &scale, err);
  if (st == WQ_OK && !scale)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: scale is required", node->op_type);
  if (st == WQ_OK)
    st = channel_floats(node, g, 3, M, &bias, err);
  if (st == WQ_OK) {
    for (int64_t m = 0; m < M; m++)
      wzp[m] = qw->zero_point[wq_qparams_index_of(qw, m * per_m)];
    wq_qconv_plan_free(&s->conv_plan);
    wq_qgemm_packed_free(&s->gemm);
    s->planned = false;
  }
  if (st == WQ_OK && s->conv) {
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
                       .multiplier = scale,
                       .multiplier_count = M,
                       .y_dtype = WQ_DT_FLOAT,
                       .float_bias = bias,
                       .float_relu = s->relu};
    st = wq_qconv_plan_init(&s->conv_plan, wq_kernels_of(g->kernels)->qconv, &d, node->name, err);
  } else if (st == WQ_OK) {
    s->N = M;
    s->K = wv.dims[1];
    free(s->w_scale);
    s->w_scale = NULL;
    if (s->dynamic) { /* keeps the weight scales; the multipliers change per run */
      s->w_scale = scale;
      scale = NULL;
    }
    wq_qgemm_desc d = {.n = M,
                       .k = s->K,
                       .a_dtype = qx ? qx->dtype : WQ_DT_UINT8,
                       .a_zero_point = zx,
                       .w_dtype = wv.dtype,
                       .w = wv.data,
                       .w_k_stride = 1,
                       .w_n_stride = s->K,
                       .w_zero_point = wzp,
                       .w_zero_point_count = M,
                       .multiplier = scale ? scale : s->w_scale,
                       .multiplier_count = M,
                       .y_dtype = WQ_DT_FLOAT,
                       .float_bias = bias,
                       .float_relu = s->relu};
    st = wq_qgemm_pack(&s->gemm, wq_kernels_of(g->kernels)->qgemm, &d, node->name, err);
  }
  free(wzp);
  free(scale);
  free(bias);
  WQ_TRY(st);
  s->x_rank = xv.rank;
  s->x_numel = wq_value_numel(&xv);
  memcpy(s->x_dims, xv.dims, sizeof s->x_dims);
  const wq_tensor *y = &g->tensors[node->outputs[0]];
  s->x_last = s->conv && wq_layout_channels_last(xv.layout, xv.rank);
  s->y_last = s->conv && wq_layout_channels_last(y->layout, y->rank);
  s->planned = true;
  if (s->conv) {
    kernel->name = wq_qconv_algo_name(s->conv_plan.algo);
    kernel->isa = wq_isa_name(wq_qconv_isa(&s->conv_plan));
  } else {
    kernel->name = wq_qgemm_kernel_name(wq_value_shape_known(&xv) ? wq_value_numel(&xv) / s->K : 0);
    kernel->isa = wq_isa_name(s->gemm.config->isa);
  }
  return WQ_OK;
}

/* x NCHW [images][channels][pixels] bytes -> NHWC [images][pixels][channels]. */
static void bytes_to_nhwc(const uint8_t *src, uint8_t *dst, int64_t images, int64_t channels,
                          int64_t pixels) {
  for (int64_t n = 0; n < images; n++, src += channels * pixels, dst += channels * pixels)
    for (int64_t c = 0; c < channels; c++)
      for (int64_t p = 0; p < pixels; p++)
        dst[p * channels + c] = src[c * pixels + p];
}

/* y NHWC [images][pixels][channels] floats -> NCHW [images][channels][pixels]. */
static void floats_to_nchw(const float *src, float *dst, int64_t images, int64_t channels,
                           int64_t pixels) {
  for (int64_t n = 0; n < images; n++, src += channels * pixels, dst += channels * pixels)
    for (int64_t c = 0; c < channels; c++)
      for (int64_t p = 0; p < pixels; p++)
        dst[c * pixels + p] = src[p * channels + c];
}

static wq_status to_float_run(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  const to_float_state *s = node->op_state;
  if (!s->planned)
    return wq_int8_not_planned(node, err);
  if (in[0].rank != s->x_rank ||
      memcmp(in[0].dims, s->x_dims, sizeof(int64_t) * (size_t)in[0].rank) ||
      s->x_last != wq_layout_channels_last(in[0].layout, in[0].rank) ||
      s->y_last != wq_layout_channels_last(out[0].layout, out[0].rank))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: x shape or layouts differ from the planned ones", node->op_type);
  wq_status st = WQ_OK;
  if (!s->conv) {
    const int64_t n = wq_value_numel(&in[0]);
    wq_qgemm_packed run = s->gemm;
    const void *x = in[0].data;
    float x_scale;
    /* dynamic: x quantized with this run's parameters, then the product
     * with that zero point and multipliers x_scale * w_scale[n], both in
     * this thread's scratch below the GEMM's own (to_float_memory) */
    void *taken = wq_scratch_take(0);
    if (s->dynamic) {
      WQ_TRY(wq_dynamic_qparams(node, x, n, &x_scale, &run.a_zero_point, err));
      run.multiplier = wq_scratch_take(4 * run.n_padded);
      x = wq_scratch_take(n + 16);
      if (!x || !run.multiplier) {
        wq_scratch_give(taken);
        return wq_scratch_missing(err, node->op_type, 4 * run.n_padded + n + 16);
      }
      wq_quantize_f32_q8(in[0].data, n, x_scale, run.a_zero_point, WQ_DT_UINT8, 0, 255, (void *)x);
      for (int64_t j = 0; j < s->N; j++) /* columns past N are never stored */
        run.multiplier[j] = x_scale * s->w_scale[j];
    }
    st = wq_qgemm_run(&run, n / s->K, x, s->K, out[0].data, s->N, err);
    wq_scratch_give(taken);
  } else {
    const wq_qconv_plan *p = &s->conv_plan;
    const int64_t in_pixels = p->in_h * p->in_w, out_pixels = p->out_h * p->out_w;
    const int64_t x_bytes = p->batch * p->in_channels * in_pixels;
    const int64_t y_floats = p->batch * p->out_channels * out_pixels;
    /* Channels-first x or y go through channels-last copies, in this
     * thread's scratch below the convolution's own (to_float_memory). */
    void *taken = wq_scratch_take(0);
    uint8_t *x_nhwc = s->x_last ? NULL : wq_scratch_take(x_bytes + 16);
    float *y_nhwc = s->y_last ? NULL : wq_scratch_take(4 * y_floats);
    if ((!s->x_last && !x_nhwc) || (!s->y_last && !y_nhwc)) {
      wq_scratch_give(taken);
      return wq_scratch_missing(err, node->op_type, x_bytes + 16 + 4 * y_floats);
    }
    if (x_nhwc)
      bytes_to_nhwc(in[0].data, x_nhwc, p->batch, p->in_channels, in_pixels);
    st = wq_qconv_run(p, x_nhwc ? x_nhwc : in[0].data, y_nhwc ? y_nhwc : out[0].data, err);
    if (st == WQ_OK && y_nhwc)
      floats_to_nchw(y_nhwc, out[0].data, p->batch, p->out_channels, out_pixels);
    wq_scratch_give(taken);
  }
  if (st != WQ_OK)
    wq_error_set_node(err, node->name);
  return st;
}

static int64_t to_float_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  (void)g;
  const to_float_state *s = node->op_state;
  *scratch = 0;
  if (!s || !s->planned)
    return 0;
  if (!s->conv) {
    /* dynamic: the run's multipliers and codes of x */
    *scratch =
        wq_qgemm_scratch_bytes(&s->gemm) +
        (s->dynamic ? wq_scratch_round(4 * s->gemm.n_padded) + wq_scratch_round(s->x_numel + 16)
                    : 0);
    return s->gemm.bytes;
  }
  /* to_float_run's channels-last copies of a channels-first x or y. */
  const wq_qconv_plan *p = &s->conv_plan;
  *scratch =
      wq_qconv_scratch_bytes(p) +
      (s->x_last ? 0 : wq_scratch_round(p->batch * p->in_channels * p->in_h * p->in_w + 16)) +
      (s->y_last ? 0 : wq_scratch_round(p->batch * p->out_channels * p->out_h * p->out_w * 4));
  return p->bytes;
}

const wq_op wq_op_int8_conv_to_float = {.int8 = WQ_INT8_KERNEL,
                                        .layout = WQ_LCAP_NHWC_FLOAT,
                                        .op_type = "QConvToFloat",
                                        .domain = WQ_INT8_DOMAIN,
                                        .min_opset = 1,
                                        .min_inputs = 3,
                                        .max_inputs = 4,
                                        .min_outputs = 1,
                                        .max_outputs = 1,
                                        .prepare = qconv_to_float_prepare,
                                        .free_state = to_float_free,
                                        .infer = to_float_infer,
                                        .run = to_float_run,
                                        .plan = to_float_plan,
                                        .memory = to_float_memory};

const wq_op wq_op_int8_gemm_to_float = {.int8 = WQ_INT8_KERNEL,
                                        .op_type = "QGemmToFloat",
                                        .domain = WQ_INT8_DOMAIN,
                                        .min_opset = 1,
                                        .min_inputs = 3,
                                        .max_inputs = 4,
                                        .min_outputs = 1,
                                        .max_outputs = 1,
                                        .prepare = qgemm_to_float_prepare,
                                        .free_state = to_float_free,
                                        .infer = to_float_infer,
                                        .run = to_float_run,
                                        .plan = to_float_plan,
                                        .memory = to_float_memory};
