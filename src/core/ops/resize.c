/* Resize: opset 10 [X, scales]; opset 11+ [X, roi, scales, sizes]; opset 18
 * axes, keep_aspect_ratio_policy, antialias; opset 19 half_pixel_symmetric.
 * Modes nearest (any fixed-size dtype), linear and cubic (float, N-D,
 * separable). Output sizes need the scales/sizes data: without it shape
 * inference gives the rank with unknown (-1) resized dims. Nearest mode also
 * runs on 8-bit codes stored channels-last (rank 3 or 4, N and C not
 * resized) when the layout pass stores them so: the source pixel of every
 * output pixel is found when planned by running this op itself on a tensor
 * of pixel indices, so the mapping is the reference's exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "../kernels/quantize.h"
#include "../kernels/ref/ref_resize.h"
#include "../quant/qparams.h"
#include "op.h"

typedef struct {
  wq_resize_mode mode;
  wq_resize_coord_mode coord;
  wq_resize_nearest_mode nearest;
  float cubic_a, extrapolation;
  bool exclude_outside, antialias;
  int keep_aspect; /* 0 stretch, 1 not_larger, 2 not_smaller */
  int n_axes;      /* 0: all axes */
  int64_t axes[WQ_MAX_RANK];
  /* Channels-last plan: the input shape it is for, the source row / column
   * of every output row / column. */
  bool nhwc_planned;
  int64_t x_dims[WQ_MAX_RANK];
  int x_rank;
  int32_t *src_h, *src_w;
  int64_t out_h, out_w;
  /* Bilinear on codes, planned from the tensors' qparams: X's layout and
   * parameters, Y's, the H, W scales (lin_sizes: out / in of the run). */
  bool q8_linear, lin_sizes, lin_nhwc;
  float lin_scale[2], x_scale, y_scale;
  int32_t x_zero_point, y_zero_point;
} resize_state;

static void resize_free(void *p) {
  resize_state *s = p;
  if (!s)
    return;
  free(s->src_h);
  free(s->src_w);
  free(s);
}

typedef struct {
  const char *name;
  int value;
} name_value;

static bool lookup(const name_value *table, const char *name, int *out) {
  for (int i = 0; table[i].name; i++)
    if (strcmp(table[i].name, name) == 0) {
      *out = table[i].value;
      return true;
    }
  return false;
}

static const name_value mode_names[] = {{"nearest", WQ_RESIZE_NEAREST},
                                        {"linear", WQ_RESIZE_LINEAR},
                                        {"bilinear", WQ_RESIZE_LINEAR}, /* Upsample-7 spelling */
                                        {"cubic", WQ_RESIZE_CUBIC},
                                        {NULL, 0}};
static const name_value coord_names[] = {{"half_pixel", WQ_RESIZE_HALF_PIXEL},
                                         {"half_pixel_symmetric", WQ_RESIZE_HALF_PIXEL_SYMMETRIC},
                                         {"pytorch_half_pixel", WQ_RESIZE_PYTORCH_HALF_PIXEL},
                                         {"align_corners", WQ_RESIZE_ALIGN_CORNERS},
                                         {"asymmetric", WQ_RESIZE_ASYMMETRIC},
                                         {"tf_half_pixel_for_nn", WQ_RESIZE_TF_HALF_PIXEL_FOR_NN},
                                         {"tf_crop_and_resize", WQ_RESIZE_TF_CROP_AND_RESIZE},
                                         {NULL, 0}};
static const name_value nearest_names[] = {{"round_prefer_floor", WQ_RESIZE_ROUND_PREFER_FLOOR},
                                           {"round_prefer_ceil", WQ_RESIZE_ROUND_PREFER_CEIL},
                                           {"floor", WQ_RESIZE_FLOOR},
                                           {"ceil", WQ_RESIZE_CEIL},
                                           {NULL, 0}};
static const name_value keep_aspect_names[] = {
    {"stretch", 0}, {"not_larger", 1}, {"not_smaller", 2}, {NULL, 0}};

static wq_status parse_enum(const wq_node *node, const char *attr, const char *dflt,
                            const name_value *table, int *out, wq_error *err) {
  const char *s;
  WQ_TRY(wq_attr_string(node, attr, dflt, &s, err));
  if (!lookup(table, s, out))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Resize: %s '%s' is not supported", attr,
                   s);
  return WQ_OK;
}

static wq_status resize_parse(const wq_node *node, resize_state *s, wq_error *err) {
  int v;
  WQ_TRY(parse_enum(node, "mode", "nearest", mode_names, &v, err));
  s->mode = (wq_resize_mode)v;
  if (node->opset < 11) {
    /* Resize-10 has only `mode`: asymmetric coordinates, legacy rounding. */
    s->coord = WQ_RESIZE_ASYMMETRIC;
    s->nearest = WQ_RESIZE_NEAREST_LEGACY;
    if (s->mode == WQ_RESIZE_CUBIC)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "Resize: mode cubic needs opset >= 11 (model imports %d)", node->opset);
  } else {
    WQ_TRY(parse_enum(node, "coordinate_transformation_mode", "half_pixel", coord_names, &v, err));
    s->coord = (wq_resize_coord_mode)v;
    WQ_TRY(parse_enum(node, "nearest_mode", "round_prefer_floor", nearest_names, &v, err));
    s->nearest = (wq_resize_nearest_mode)v;
  }
  WQ_TRY(wq_attr_float(node, "cubic_coeff_a", -0.75f, &s->cubic_a, err));
  WQ_TRY(wq_attr_float(node, "extrapolation_value", 0.0f, &s->extrapolation, err));
  int64_t exclude_outside, antialias;
  WQ_TRY(wq_attr_int(node, "exclude_outside", 0, &exclude_outside, err));
  WQ_TRY(wq_attr_int(node, "antialias", 0, &antialias, err));
  s->exclude_outside = exclude_outside != 0;
  s->antialias = antialias != 0 && s->mode != WQ_RESIZE_NEAREST;
  WQ_TRY(parse_enum(node, "keep_aspect_ratio_policy", "stretch", keep_aspect_names, &s->keep_aspect,
                    err));
  const int64_t *axes;
  size_t n_axes;
  WQ_TRY(wq_attr_ints(node, "axes", &axes, &n_axes, err));
  if (n_axes > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Resize: %zu axes (max %d)", n_axes,
                   WQ_MAX_RANK);
  s->n_axes = (int)n_axes;
  if (n_axes)
    memcpy(s->axes, axes, sizeof(int64_t) * n_axes);
  return WQ_OK;
}

static wq_status resize_prepare(wq_node *node, wq_error *err) {
  resize_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
  wq_status st = resize_parse(node, s, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

/* Everything the kernels need, per axis of X. */
typedef struct {
  int rank;
  bool known; /* false: scales/sizes data not available (shape inference) */
  int64_t out[WQ_MAX_RANK];
  double scale[WQ_MAX_RANK];
  double roi_start[WQ_MAX_RANK], roi_end[WQ_MAX_RANK];
  bool resized[WQ_MAX_RANK]; /* axis listed in `axes` (all when absent) */
  bool roi_missing;          /* tf_crop_and_resize roi data not known (yet) */
} resize_plan;

/* An optional input counts as given when present with a non-empty shape. */
static int input_given(const wq_node *node, const wq_value *in, int i) {
  if (i >= node->n_inputs || !wq_value_present(&in[i]))
    return 0;
  int64_t n = wq_value_numel(&in[i]);
  if (n < 0)
    return -1; /* shape unknown */
  return n > 0;
}

static wq_status resize_plan_build(const wq_node *node, const wq_value *in, resize_plan *p,
                                   wq_error *err) {
  const resize_state *s = node->op_state;
  const wq_value *x = &in[0];
  int rank = x->rank;
  p->rank = rank;
  p->known = false;
  p->roi_missing = false;
  if (node->opset < 11 && node->n_inputs != 2)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Resize: opset %d takes exactly 2 inputs (X, scales), got %d", node->opset,
                   node->n_inputs);
  bool fixed_size = wq_dtype_size(x->dtype) > 0 && wq_dtype_supported(x->dtype);
  /* Linear mode takes 8-bit codes once planned with their parameters. */
  bool codes = s->mode == WQ_RESIZE_LINEAR && wq_dtype_size(x->dtype) == 1;
  if (!fixed_size || (s->mode != WQ_RESIZE_NEAREST && x->dtype != WQ_DT_FLOAT && !codes))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Resize: input type %s is not supported in mode %s", wq_dtype_name(x->dtype),
                   s->mode == WQ_RESIZE_NEAREST ? "nearest" : "linear/cubic");
  if (rank < 0)
    return WQ_OK;
  /* Which axes are resized. */
  int n_axes = s->n_axes ? s->n_axes : rank;
  int64_t axes[WQ_MAX_RANK];
  for (int i = 0; i < rank; i++)
    p->resized[i] = s->n_axes == 0;
  for (int i = 0; i < s->n_axes; i++) {
    int64_t a = s->axes[i] < 0 ? s->axes[i] + rank : s->axes[i];
    if (a < 0 || a >= rank || p->resized[a])
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "Resize: axes[%d] = %lld is out of range or repeated for rank %d", i,
                     (long long)s->axes[i], rank);
    p->resized[a] = true;
    axes[i] = a;
  }
  if (s->n_axes == 0)
    for (int i = 0; i < rank; i++)
      axes[i] = i;
  for (int i = 0; i < rank; i++) {
    p->out[i] = p->resized[i] ? -1 : x->dims[i];
    p->scale[i] = 1.0;
    p->roi_start[i] = 0.0;
    p->roi_end[i] = 1.0;
  }
  int scales_at = node->opset < 11 ? 1 : 2, sizes_at = node->opset < 11 ? -1 : 3;
  int have_scales = input_given(node, in, scales_at);
  int have_sizes = sizes_at > 0 ? input_given(node, in, sizes_at) : 0;
  if (have_scales < 0 || have_sizes < 0)
    return WQ_OK;
  if (have_scales == have_sizes)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Resize: exactly one of scales and sizes must be given (%s)",
                   have_scales ? "both are" : "neither is");
  const wq_value *v = have_scales ? &in[scales_at] : &in[sizes_at];
  if (v->rank != 1 || v->dims[0] != n_axes)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Resize: %s must be 1-D with %d entries (one per resized axis), has rank %d "
                   "and %lld entries",
                   have_scales ? "scales" : "sizes", n_axes, v->rank, (long long)wq_value_numel(v));
  if (have_scales && v->dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Resize: scales must be float, is %s",
                   wq_dtype_name(v->dtype));
  if (have_sizes && v->dtype != WQ_DT_INT64)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Resize: sizes must be int64, is %s",
                   wq_dtype_name(v->dtype));
  /* roi: only tf_crop_and_resize reads it. */
  if (s->coord == WQ_RESIZE_TF_CROP_AND_RESIZE) {
    int have_roi = input_given(node, in, 1);
    if (have_roi < 0 || (have_roi && !in[1].data))
      p->roi_missing = true;
    else if (!have_roi)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "Resize: tf_crop_and_resize needs the roi input");
  }
  if (s->coord == WQ_RESIZE_TF_CROP_AND_RESIZE && !p->roi_missing) {
    const wq_value *roi = &in[1];
    if (roi->rank != 1 || roi->dims[0] != 2 * n_axes ||
        (roi->dtype != WQ_DT_FLOAT && roi->dtype != WQ_DT_DOUBLE))
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Resize: roi must be a float tensor of %d entries (start and end per axis)",
                     2 * n_axes);
    for (int i = 0; i < n_axes; i++) {
      p->roi_start[axes[i]] = wq_value_get_double(roi, i);
      p->roi_end[axes[i]] = wq_value_get_double(roi, n_axes + i);
    }
  }
  if (!v->data)
    return WQ_OK;
  if (x->rank >= 0)
    for (int i = 0; i < n_axes; i++)
      if (x->dims[axes[i]] < 0)
        return WQ_OK;
  if (have_scales) {
    for (int i = 0; i < n_axes; i++) {
      double sc = ((const float *)v->data)[i];
      if (!(sc > 0.0))
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                       "Resize: scales[%d] is %g (must be > 0)", i, sc);
      p->scale[axes[i]] = sc;
      if (!wq_double_to_dim(sc * (double)x->dims[axes[i]], &p->out[axes[i]]))
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Resize: scales[%d] = %g makes output dim %d larger than the %lld limit", i,
                       sc, (int)axes[i], (long long)WQ_MAX_DIM);
    }
  } else {
    const int64_t *sizes = v->data;
    for (int i = 0; i < n_axes; i++) {
      int64_t in_len = x->dims[axes[i]];
      /* Size 0 from a non-empty axis is scale 0, refused as for scales
       * (and by onnxruntime). */
      if (sizes[i] < 0 || (in_len == 0) != (sizes[i] == 0))
        return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                       "Resize: sizes[%d] = %lld is invalid for input dim %lld", i,
                       (long long)sizes[i], (long long)in_len);
      p->out[axes[i]] = sizes[i];
      p->scale[axes[i]] = in_len > 0 ? (double)sizes[i] / (double)in_len : 1.0;
    }
    if (s->keep_aspect != 0) {
      double sc = p->scale[axes[0]];
      for (int i = 1; i < n_axes; i++) {
        double c = p->scale[axes[i]];
        sc = s->keep_aspect == 1 ? (c < sc ? c : sc) : (c > sc ? c : sc);
      }
      for (int i = 0; i < n_axes; i++) {
        p->scale[axes[i]] = sc;
        if (!wq_double_to_dim(sc * (double)x->dims[axes[i]] + 0.5, &p->out[axes[i]]))
          return wq_fail(err, WQ_ERR_SHAPE, node->name,
                         "Resize: sizes with keep_aspect_ratio_policy make output dim %d larger "
                         "than the %lld limit",
                         (int)axes[i], (long long)WQ_MAX_DIM);
      }
    }
  }
  WQ_TRY(wq_shape_check(p->out, rank, node->name, "Resize output", err));
  p->known = true;
  return WQ_OK;
}

static wq_status resize_nchw_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                   wq_error *err) {
  resize_plan p;
  WQ_TRY(resize_plan_build(node, in, &p, err));
  out[0].dtype = in[0].dtype;
  out[0].rank = p.rank;
  for (int i = 0; i < p.rank; i++)
    out[0].dims[i] = p.known ? p.out[i] : (p.resized[i] ? -1 : in[0].dims[i]);
  return WQ_OK;
}

/* A channels-last X (codes, N and C not resized) has the same logical
 * shapes. */
static wq_status resize_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  WQ_TRY(resize_nchw_infer(node, in, out, err));
  if (!wq_layout_channels_last(in[0].layout, in[0].rank))
    return WQ_OK;
  if (wq_dtype_size(in[0].dtype) != 1 || in[0].rank > 4)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Resize: channels-last only on 8-bit codes of rank 3 or 4");
  if ((out[0].dims[0] >= 0 && out[0].dims[0] != in[0].dims[0]) ||
      (out[0].dims[1] >= 0 && out[0].dims[1] != in[0].dims[1]))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Resize: resizing N or C ([%lld, %lld] -> [%lld, %lld]) channels-last is not "
                   "supported",
                   (long long)in[0].dims[0], (long long)in[0].dims[1], (long long)out[0].dims[0],
                   (long long)out[0].dims[1]);
  return WQ_OK;
}

static wq_resize_axis axis_of(const resize_state *s, const resize_plan *p, const wq_value *x,
                              int d) {
  return (wq_resize_axis){s->coord,  p->scale[d],     x->dims[d],
                          p->out[d], p->roi_start[d], p->roi_end[d]};
}

static wq_status run_nearest(const wq_node *node, const resize_plan *p, const wq_value *x,
                             wq_value *y, wq_error *err) {
  const resize_state *s = node->op_state;
  int64_t total = 0;
  for (int d = 0; d < p->rank; d++)
    total += p->out[d];
  int64_t *tables = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
  if (!tables)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
  const int64_t *table_of[WQ_MAX_RANK];
  int64_t *t = tables;
  for (int d = 0; d < p->rank; d++) {
    wq_resize_axis ax = axis_of(s, p, x, d);
    for (int64_t o = 0; o < p->out[d]; o++) {
      double xo = wq_resize_source_coord(&ax, o);
      t[o] = wq_resize_outside(&ax, xo) ? -1 : wq_resize_nearest_index(&ax, s->nearest, xo);
    }
    table_of[d] = t;
    t += p->out[d];
  }
  /* Extrapolation value in X's element type. */
  union {
    float f;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
  } extra = {0};
  switch (x->dtype) {
  case WQ_DT_FLOAT: extra.f = s->extrapolation; break;
  case WQ_DT_INT8: extra.i8 = (int8_t)s->extrapolation; break;
  case WQ_DT_UINT8:
  case WQ_DT_BOOL: extra.u8 = (uint8_t)s->extrapolation; break;
  case WQ_DT_INT16: extra.i16 = (int16_t)s->extrapolation; break;
  case WQ_DT_UINT16: extra.u16 = (uint16_t)s->extrapolation; break;
  case WQ_DT_INT32: extra.i32 = (int32_t)s->extrapolation; break;
  case WQ_DT_UINT32: extra.u32 = (uint32_t)s->extrapolation; break;
  case WQ_DT_INT64: extra.i64 = (int64_t)s->extrapolation; break;
  case WQ_DT_UINT64: extra.u64 = (uint64_t)s->extrapolation; break;
  default: break;
  }
  wq_ref_resize_nearest(p->rank, x->dims, p->out, wq_dtype_size(x->dtype), x->data, y->data,
                        table_of, &extra);
  free(tables);
  return WQ_OK;
}

/* An axis pass is skipped when it maps every output index to itself. */
static bool is_identity(int64_t len, int n_taps, const int64_t *index, const float *weight,
                        const uint8_t *outside) {
  for (int64_t o = 0; o < len; o++) {
    if (outside[o])
      return false;
    for (int t = 0; t < n_taps; t++) {
      float w = weight[o * n_taps + t];
      if (w != 0.0f && (index[o * n_taps + t] != o || w != 1.0f))
        return false;
    }
  }
  return true;
}

static wq_status run_interpolate(const wq_node *node, const resize_plan *p, const wq_value *x,
                                 wq_value *y, wq_error *err) {
  const resize_state *s = node->op_state;
  int rank = p->rank;
  int64_t out_numel = 1, scratch_numel = 1;
  for (int d = 0; d < rank; d++) {
    out_numel *= p->out[d];
    scratch_numel *= p->out[d] > x->dims[d] ? p->out[d] : x->dims[d];
  }
  if (out_numel == 0)
    return WQ_OK;
  /* Per-axis tap tables. */
  int n_taps[WQ_MAX_RANK];
  int64_t tap_total = 0, out_total = 0;
  for (int d = 0; d < rank; d++) {
    n_taps[d] = wq_resize_tap_count(s->mode, s->antialias, p->scale[d]);
    tap_total += p->out[d] * n_taps[d];
    out_total += p->out[d];
  }
  int64_t *index = malloc(sizeof(int64_t) * (size_t)tap_total);
  float *weight = malloc(sizeof(float) * (size_t)tap_total);
  uint8_t *outside = malloc((size_t)out_total);
  float *bufs[2] = {malloc(sizeof(float) * (size_t)scratch_numel),
                    malloc(sizeof(float) * (size_t)scratch_numel)};
  wq_status st = WQ_OK;
  if (!index || !weight || !outside || !bufs[0] || !bufs[1]) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
    goto done;
  }
  int64_t tap_at[WQ_MAX_RANK], out_at[WQ_MAX_RANK];
  bool needed[WQ_MAX_RANK];
  int64_t ti = 0, oi = 0;
  for (int d = 0; d < rank; d++) {
    wq_resize_axis ax = axis_of(s, p, x, d);
    tap_at[d] = ti;
    out_at[d] = oi;
    wq_resize_axis_taps(&ax, s->mode, s->antialias, s->cubic_a, s->exclude_outside, n_taps[d],
                        index + ti, weight + ti, outside + oi);
    needed[d] = p->out[d] != x->dims[d] ||
                !is_identity(p->out[d], n_taps[d], index + ti, weight + ti, outside + oi);
    ti += p->out[d] * n_taps[d];
    oi += p->out[d];
  }
  int64_t dims[WQ_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
  const float *src = x->data;
  /* Passes run from the last axis down, so the lowest needed axis is the
   * final pass and writes Y. */
  int which = 0, final_axis = -1;
  for (int d = rank - 1; d >= 0; d--)
    if (needed[d])
      final_axis = d;
  if (final_axis < 0) {
    memcpy(y->data, x->data, sizeof(float) * (size_t)out_numel);
    goto done;
  }
  /* Last axis first, like ONNX's nested 1-D interpolation. */
  for (int d = rank - 1; d >= 0; d--) {
    if (!needed[d])
      continue;
    float *dst = d == final_axis ? (float *)y->data : bufs[which];
    wq_ref_resize_axis_f32(rank, dims, d, p->out[d], n_taps[d], index + tap_at[d],
                           weight + tap_at[d], outside + out_at[d], s->extrapolation, src, dst);
    dims[d] = p->out[d];
    src = dst;
    which ^= 1;
  }
done:
  free(index);
  free(weight);
  free(outside);
  free(bufs[0]);
  free(bufs[1]);
  return st;
}

static wq_status resize_nhwc_run(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  const resize_state *s = node->op_state;
  if (!s->nhwc_planned)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Resize: run channels-last before being planned so");
  if (in[0].rank != s->x_rank ||
      memcmp(in[0].dims, s->x_dims, sizeof(int64_t) * (size_t)in[0].rank))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Resize: X shape differs from the planned one");
  const int r = in[0].rank;
  wq_resize_nhwc rz = {.batch = in[0].dims[0],
                       .in_h = r == 4 ? in[0].dims[2] : 1,
                       .in_w = in[0].dims[r - 1],
                       .out_h = s->out_h,
                       .out_w = s->out_w,
                       .channels = in[0].dims[1],
                       .src_h = s->src_h,
                       .src_w = s->src_w};
  wq_resize_nearest_nhwc_q8(&rz, in[0].data, out[0].data);
  return WQ_OK;
}

static wq_status resize_q8_linear_run(const wq_node *node, const wq_value *x, wq_value *y,
                                      wq_error *err);

static wq_status resize_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const resize_state *s = node->op_state;
  /* An empty output has nothing to compute, however long its other axes
   * (their coordinate tables would be built for nothing). */
  if (wq_value_numel(&out[0]) == 0)
    return WQ_OK;
  if (s->mode == WQ_RESIZE_LINEAR && wq_dtype_size(in[0].dtype) == 1) {
    if (!s->q8_linear || in[0].rank != 4 || out[0].rank != 4)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Resize: linear on codes was not planned");
    return resize_q8_linear_run(node, &in[0], &out[0], err);
  }
  if (wq_layout_channels_last(in[0].layout, in[0].rank))
    return resize_nhwc_run(node, in, out, err);
  resize_plan p;
  WQ_TRY(resize_plan_build(node, in, &p, err));
  if (!p.known || p.roi_missing)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Resize: scales/sizes/roi data is missing at run time");
  if (s->mode == WQ_RESIZE_NEAREST)
    return run_nearest(node, &p, &in[0], &out[0], err);
  return run_interpolate(node, &p, &in[0], &out[0], err);
}

/* Runs ONNX Resize on an int32 [1, 1, (H,) W] tensor holding each pixel's
 * index: output pixel (oh, ow) then holds its source pixel. */
static wq_status resize_nhwc_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  resize_state *s = node->op_state;
  s->nhwc_planned = false;
  wq_value x = wq_tensor_value(&g->tensors[node->inputs[0]]);
  if (!wq_value_shape_known(&x) || x.rank < 3 || x.rank > 4)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Resize: channels-last X must have a static shape of rank 3 or 4");
  const int r = x.rank;
  const int64_t in_h = r == 4 ? x.dims[2] : 1, in_w = x.dims[r - 1];
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
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "Resize: input %d must be a constant", k);
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
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
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
  wq_status st = resize_infer(node, in, &out, err);
  int64_t total = st == WQ_OK && wq_value_shape_known(&out) ? wq_value_numel(&out) : -1;
  const int64_t out_h = r == 4 ? out.dims[2] : 1, out_w = out.dims[r - 1];
  if (st == WQ_OK && (total < 0 || total != out_h * out_w))
    st = wq_fail(err, WQ_ERR_SHAPE, node->name, "Resize: the resized pixel grid is not static");
  int32_t *map = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(total > 0 ? total : 1)) : NULL;
  if (st == WQ_OK && !map)
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
  out.data = map;
  if (st == WQ_OK)
    st = resize_run(node, in, &out, err);
  free(index);
  free(s->src_h);
  free(s->src_w);
  s->src_h = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(out_h > 0 ? out_h : 1)) : NULL;
  s->src_w = st == WQ_OK ? malloc(sizeof(int32_t) * (size_t)(out_w > 0 ? out_w : 1)) : NULL;
  if (st == WQ_OK && (!s->src_h || !s->src_w))
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
  /* Nearest resizing is separable: the first column and row give the
   * source row and column of every output pixel. */
  for (int64_t o = 0; st == WQ_OK && o < out_h + out_w; o++) {
    int32_t src = map[o < out_h ? o * out_w : o - out_h];
    if (src < 0 || src >= pixels)
      st = wq_fail(err, WQ_ERR_SHAPE, node->name, "Resize: source pixel %d of %lld", (int)src,
                   (long long)pixels);
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
  s->nhwc_planned = true;
  return WQ_OK;
}

/* onnxruntime's bilinear source indices and weights along one axis,
 * computed in float32 as it does (so codes equal its float Resize between
 * DequantizeLinear and QuantizeLinear). */
static void ort_linear_axis(wq_resize_coord_mode coord, float scale, int64_t in_len,
                            int64_t out_len, int32_t *i1, int32_t *i2, float *d1, float *d2) {
  const float last = (float)(in_len - 1);
  for (int64_t o = 0; o < out_len; o++) {
    const float xo = (float)o;
    float v = xo;
    if (scale != 1.0f && coord == WQ_RESIZE_ALIGN_CORNERS)
      v = out_len == 1 ? 0.0f : xo * last / (float)(out_len - 1);
    else if (scale != 1.0f) /* half_pixel, pytorch_half_pixel; asymmetric adds 0s */
      v = coord == WQ_RESIZE_PYTORCH_HALF_PIXEL && out_len == 1 ? 0.0f
          : coord == WQ_RESIZE_ASYMMETRIC                       ? xo / scale
                                                                : (xo + 0.5f) / scale - 0.5f;
    v = v > last ? last : v;
    v = v < 0.0f ? 0.0f : v;
    int32_t a = (int32_t)v;
    a = a > in_len - 1 ? (int32_t)(in_len - 1) : a;
    const int32_t b = a + 1 > in_len - 1 ? (int32_t)(in_len - 1) : a + 1;
    i1[o] = a;
    i2[o] = b;
    d1[o] = a == b ? 0.5f : fabsf(v - (float)a);
    d2[o] = a == b ? 0.5f : fabsf(v - (float)b);
  }
}

/* The constant scales (float) or sizes (int64) of a rank-4 resize. */
static const wq_tensor *resize_factors(const wq_graph *g, const wq_node *n) {
  for (int k = n->opset < 11 ? 1 : 2; k < n->n_inputs && k < 4; k++) {
    const wq_tensor *t = n->inputs[k] >= 0 ? &g->tensors[n->inputs[k]] : NULL;
    if (t && t->is_constant && t->data && t->rank == 1 && t->dims[0] == 4)
      return t;
  }
  return NULL;
}

/* Linear on codes: the parameters of X and Y (the lowering gave them
 * theirs) and the scales; shapes may stay symbolic until the run. */
static wq_status resize_q8_linear_plan(wq_node *node, const wq_graph *g, wq_error *err) {
  resize_state *s = node->op_state;
  const wq_tensor *xt = &g->tensors[node->inputs[0]], *yt = &g->tensors[node->outputs[0]];
  const wq_tensor *f = resize_factors(g, node);
  const wq_qparams *xq = xt->qparams, *yq = yt->qparams;
  s->q8_linear = f && xq && yq && xq->scale && yq->scale && xq->count == 1 && yq->count == 1 &&
                 yt->dtype == xt->dtype && xt->rank == 4;
  if (!s->q8_linear)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Resize: linear on codes needs per-tensor 8-bit X, Y of rank 4");
  s->lin_nhwc = wq_layout_channels_last(xt->layout, 4);
  s->x_scale = xq->scale[0];
  s->y_scale = yq->scale[0];
  s->x_zero_point = xq->zero_point[0];
  s->y_zero_point = yq->zero_point[0];
  s->lin_sizes = f->dtype != WQ_DT_FLOAT;
  if (!s->lin_sizes)
    memcpy(s->lin_scale, (const float *)f->data + 2, sizeof s->lin_scale);
  return WQ_OK;
}

/* onnxruntime's tables for the run's shapes; the codes dequantized, its
 * four-term sum ((c11*X11 + c21*X21) + c12*X12) + c22*X22 in float32 per
 * output row (c11 = dx2*dy2, c21 = dx1*dy2, c12 = dx2*dy1, c22 = dx1*dy1),
 * quantized. Channels-first data is N*C images of one channel. */
static wq_status resize_q8_linear_run(const wq_node *node, const wq_value *x, wq_value *y,
                                      wq_error *err) {
  const resize_state *s = node->op_state;
  const int64_t C = s->lin_nhwc ? x->dims[1] : 1;
  const int64_t images = x->dims[0] * (s->lin_nhwc ? 1 : x->dims[1]);
  const int64_t ih = x->dims[2], iw = x->dims[3], oh = y->dims[2], ow = y->dims[3];
  const int64_t n_in = images * ih * iw * C, row_len = ow * C, n_tab = 2 * (oh + ow);
  /* Tables (y1, y2, x1, x2 then dy1, dy2, dx1, dx2), X in float, one output row. */
  int32_t *ix = malloc(sizeof(int32_t) * (size_t)n_tab +
                       sizeof(float) * (size_t)(n_tab + n_in + row_len + 1));
  if (!ix)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Resize: out of memory");
  float *w = (float *)(ix + n_tab), *xf = w + n_tab, *row = xf + n_in;
  for (int d = 0; d < 2; d++) {
    const int64_t in = x->dims[2 + d], out = y->dims[2 + d], at = d ? 2 * oh : 0;
    /* as onnxruntime: sizes give out / in in float32 */
    ort_linear_axis(s->coord, s->lin_sizes ? (float)out / (float)in : s->lin_scale[d], in, out,
                    ix + at, ix + at + out, w + at, w + at + out);
  }
  const int32_t *y1 = ix, *y2 = ix + oh, *x1 = ix + 2 * oh, *x2 = x1 + ow;
  const float *dy1 = w, *dy2 = w + oh, *dx1 = w + 2 * oh, *dx2 = dx1 + ow;
  wq_dequantize_q8_f32(x->data, n_in, s->x_scale, s->x_zero_point, x->dtype, xf);
  const int32_t qmin = x->dtype == WQ_DT_UINT8 ? 0 : -128;
  uint8_t *out = y->data;
  for (int64_t b = 0; b < images; b++)
    for (int64_t oy = 0; oy < oh; oy++) {
      const float *r1 = xf + (b * ih + y1[oy]) * iw * C, *r2 = xf + (b * ih + y2[oy]) * iw * C;
      for (int64_t ox = 0; ox < ow; ox++) {
        const float c11 = dx2[ox] * dy2[oy], c21 = dx1[ox] * dy2[oy], c12 = dx2[ox] * dy1[oy],
                    c22 = dx1[ox] * dy1[oy];
        const float *p11 = r1 + x1[ox] * C, *p21 = r1 + x2[ox] * C, *p12 = r2 + x1[ox] * C,
                    *p22 = r2 + x2[ox] * C;
        for (int64_t c = 0; c < C; c++)
          row[ox * C + c] = c11 * p11[c] + c21 * p21[c] + c12 * p12[c] + c22 * p22[c];
      }
      wq_quantize_f32_q8(row, row_len, s->y_scale, s->y_zero_point, x->dtype, qmin, qmin + 255,
                         out + (b * oh + oy) * row_len);
    }
  free(ix);
  return WQ_OK;
}

/* A channels-last X (the layout pass's choice) is planned here, and linear
 * mode on codes. */
static wq_status resize_plan_hook(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                                  wq_error *err) {
  (void)kernel;
  const wq_tensor *x = &g->tensors[node->inputs[0]];
  const resize_state *s = node->op_state;
  if (s->mode == WQ_RESIZE_LINEAR && wq_dtype_size(x->dtype) == 1)
    return resize_q8_linear_plan(node, g, err);
  if (!wq_layout_channels_last(x->layout, x->rank))
    return WQ_OK;
  return resize_nhwc_plan(node, g, err);
}

/* The constant scales/sizes leave N and C of a rank-4 X as they are. */
static bool resizes_hw_only(const wq_graph *g, const wq_node *n) {
  const wq_tensor *x = &g->tensors[n->inputs[0]], *t = resize_factors(g, n);
  if (x->rank != 4 || !t)
    return false;
  if (t->dtype == WQ_DT_FLOAT)
    return ((const float *)t->data)[0] == 1.0f && ((const float *)t->data)[1] == 1.0f;
  return t->dtype == WQ_DT_INT64 && ((const int64_t *)t->data)[0] == x->dims[0] &&
         ((const int64_t *)t->data)[1] == x->dims[1];
}

/* On int8 codes: nearest mode (copies elements), and linear mode over H and
 * W with the coordinate transforms whose float arithmetic the kernel
 * repeats; not with tf_crop_and_resize (writes an extrapolation value). */
static void resize_int8_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a) {
  resize_state parsed;
  wq_error err;
  memset(&parsed, 0, sizeof parsed);
  if (resize_parse(n, &parsed, &err) != WQ_OK) {
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR, "%s", err.message);
    return;
  }
  const resize_state *s = &parsed;
  if (s->coord == WQ_RESIZE_TF_CROP_AND_RESIZE)
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR, "Resize tf_crop_and_resize extrapolates");
  else if (s->mode == WQ_RESIZE_CUBIC)
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR, "Resize mode 'cubic' stays float");
  else if (s->mode == WQ_RESIZE_LINEAR &&
           (s->antialias || s->n_axes || s->keep_aspect || !resizes_hw_only(g, n) ||
            s->coord == WQ_RESIZE_HALF_PIXEL_SYMMETRIC ||
            s->coord == WQ_RESIZE_TF_HALF_PIXEL_FOR_NN))
    wq_int8_no(a, WQ_REASON_UNSUPPORTED_ATTR,
               "Resize linear on codes: H and W of rank 4 by constant scales/sizes, no "
               "antialias/axes/aspect policy, coordinates of onnxruntime's 2-D kernel");
}

const wq_op wq_op_resize = {
    .int8 = WQ_INT8_MOVE,
    .layout = WQ_LCAP_FOLLOW,
    .int8_check = resize_int8_check,
    .quant_role = WQ_QROLE_SHARED,

    .op_type = "Resize",
    .domain = "",
    .min_opset = 10,
    .min_inputs = 1,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .prepare = resize_prepare,
    .free_state = resize_free,
    .infer = resize_infer,
    .run = resize_run,
    .plan = resize_plan_hook,
};
