/* Every linked NHWC int8 convolution variant (kernels/config.h), every
 * algorithm, vs the scalar reference variant, bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/config.h"
#include "kernels/qconv.h"

static wq_dtype random_q8(wq_ktest *t) { return wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8; }
static int32_t q8_lo(wq_dtype d) { return d == WQ_DT_UINT8 ? 0 : -128; }
static int32_t q8_hi(wq_dtype d) { return d == WQ_DT_UINT8 ? 255 : 127; }

/* A run with exactly the scratch the plan declared, allocating nothing. */
static int run_watched(const wq_qconv_plan *p, const void *x, void *y, wq_error *err) {
  void *block = wq_ktest_run_begin(wq_qconv_scratch_bytes(p));
  const int ran = wq_qconv_run(p, x, y, err) == WQ_OK;
  return wq_ktest_run_end(block) == 0 && ran;
}

/* Runs d on the reference variant into y_ref, then on every other linked
 * variant into y_var (filled with 0xCD first), comparing all `bytes`.
 * Returns 1 when all match; *failed names a variant that did not, *algo
 * the algorithm the plans chose. */
static int variants_match(const wq_qconv_desc *d, const void *x, void *y_ref, void *y_var,
                          size_t bytes, const char **failed, const char **algo, wq_error *err) {
  const wq_qconv_config *const *variants;
  const int n_variants = wq_qconv_variants(&variants);
  wq_qconv_plan pr, pv;
  *failed = "ref";
  *algo = "?";
  int ok = wq_qconv_plan_init(&pr, variants[0], d, "test", err) == WQ_OK &&
           run_watched(&pr, x, y_ref, err);
  if (ok)
    *algo = wq_qconv_algo_name(pr.algo);
  wq_qconv_plan_free(&pr);
  for (int v = 1; ok && v < n_variants; v++) {
    *failed = variants[v]->name;
    memset(y_var, 0xCD, bytes);
    ok = wq_qconv_plan_init(&pv, variants[v], d, "test", err) == WQ_OK &&
         run_watched(&pv, x, y_var, err) && memcmp(y_ref, y_var, bytes) == 0;
    wq_qconv_plan_free(&pv);
  }
  if (ok)
    *failed = "";
  return ok;
}

/* SHAPE_DEPTHWISE_NET: the depthwise shapes networks use (3x3 mostly, also
 * 5x5, 1xk, kx1 and 2x2; stride 1 or 2; rarely dilated), which take the
 * specialised 3-tap stride-1 path and both tap pairings; widths up to 20
 * cover every remainder of the 4-pixel blocks. SHAPE_DEPTHWISE_3X3: 3x3
 * undilated at stride 1 or 2 (the 3-tap paths), widths up to 24. */
typedef enum {
  SHAPE_POINTWISE,
  SHAPE_GROUP1,
  SHAPE_DEPTHWISE,
  SHAPE_GROUPED,
  SHAPE_DEPTHWISE_NET,
  SHAPE_DEPTHWISE_3X3
} shape_kind;

/* Random geometry of the given kind; false when the output would be empty. */
static int random_geometry(wq_ktest *t, shape_kind kind, wq_qconv_desc *d) {
  wq_conv_geometry *g = &d->geo;
  memset(g, 0, sizeof *g);
  g->n_spatial = wq_ktest_int(t, 0, 4) == 0 ? 1 : 2;
  if (kind == SHAPE_DEPTHWISE_3X3) { /* the 3-tap paths at stride 1 and 2 */
    g->n_spatial = 2;
    const int64_t stride = wq_ktest_int(t, 1, 2);
    for (int i = 0; i < 2; i++) {
      g->in[i] = wq_ktest_int(t, 1, 24);
      g->kernel[i] = 3;
      g->stride[i] = stride;
      g->dilation[i] = 1;
      g->pad_begin[i] = wq_ktest_int(t, 0, 3) ? 1 : wq_ktest_int(t, 0, 2);
      g->pad_end[i] = wq_ktest_int(t, 0, 3) ? 1 : wq_ktest_int(t, 0, 2);
    }
    return wq_conv_geometry_resolve(g, WQ_AUTO_PAD_NOTSET, false) < 0;
  }
  if (kind == SHAPE_DEPTHWISE_NET) {
    static const int kernels[][2] = {{3, 3}, {3, 3}, {3, 3}, {5, 5},
                                     {1, 3}, {3, 1}, {2, 2}, {1, 5}};
    const int *k = kernels[wq_ktest_int(t, 0, 7)];
    const int64_t stride = wq_ktest_int(t, 1, 2);
    const int64_t dilation = wq_ktest_int(t, 0, 5) == 0 ? 2 : 1;
    for (int i = 0; i < g->n_spatial; i++) {
      g->in[i] = wq_ktest_int(t, 1, 20);
      g->kernel[i] = k[i + 2 - g->n_spatial];
      g->stride[i] = stride;
      g->dilation[i] = dilation;
      g->pad_begin[i] =
          wq_ktest_int(t, 0, 3) ? (g->kernel[i] - 1) * dilation / 2 : wq_ktest_int(t, 0, 2);
      g->pad_end[i] = wq_ktest_int(t, 0, 3) ? g->pad_begin[i] : wq_ktest_int(t, 0, 2);
    }
    return wq_conv_geometry_resolve(g, WQ_AUTO_PAD_NOTSET, false) < 0;
  }
  for (int i = 0; i < g->n_spatial; i++) {
    g->in[i] = wq_ktest_int(t, 1, 13);
    if (kind == SHAPE_POINTWISE) {
      g->kernel[i] = g->stride[i] = g->dilation[i] = 1;
      continue;
    }
    g->kernel[i] = wq_ktest_int(t, 1, 5);
    g->stride[i] = wq_ktest_int(t, 1, 3);
    g->dilation[i] = wq_ktest_int(t, 0, 3) == 0 ? wq_ktest_int(t, 2, 3) : 1;
    g->pad_begin[i] = wq_ktest_int(t, 0, 2);
    g->pad_end[i] = wq_ktest_int(t, 0, 2);
  }
  return wq_conv_geometry_resolve(g, WQ_AUTO_PAD_NOTSET, false) < 0;
}

static int run_case(wq_ktest *t, shape_kind kind, char *what, size_t cap) {
  wq_qconv_desc d;
  memset(&d, 0, sizeof d);
  while (!random_geometry(t, kind, &d)) {
  }
  d.batch = wq_ktest_int(t, 1, 2);
  switch (kind) {
  case SHAPE_POINTWISE:
  case SHAPE_GROUP1:
    d.group = 1;
    d.in_channels = wq_ktest_int(t, 1, 67);
    d.out_channels = wq_ktest_int(t, 1, 67);
    break;
  case SHAPE_DEPTHWISE:
  case SHAPE_DEPTHWISE_NET:
  case SHAPE_DEPTHWISE_3X3:
    d.in_channels = d.out_channels = d.group = wq_ktest_int(t, 1, 67);
    break;
  case SHAPE_GROUPED: {
    d.group = wq_ktest_int(t, 2, 6);
    d.in_channels = d.group * wq_ktest_int(t, 1, 11);
    d.out_channels = d.group * wq_ktest_int(t, 1, 11);
    break;
  }
  }
  const int64_t C = d.in_channels, M = d.out_channels, cg = C / d.group;
  const int64_t ksize = d.geo.n_spatial == 2 ? d.geo.kernel[0] * d.geo.kernel[1] : d.geo.kernel[0];
  const int64_t in_pixels = d.batch * wq_conv_geometry_in_size(&d.geo);
  const int64_t out_pixels = d.batch * wq_conv_geometry_out_size(&d.geo);
  d.x_dtype = random_q8(t);
  d.w_dtype = random_q8(t);
  d.y_dtype = random_q8(t);
  /* A quarter of the cases: the float output stage (dynamic quantization's
   * fused Cast -> Mul -> Add -> Relu), bit for bit too. */
  const int float_out = wq_ktest_int(t, 0, 3) == 0;
  const size_t y_size = float_out ? sizeof(float) : 1;
  if (float_out)
    d.y_dtype = WQ_DT_FLOAT;
  d.x_zero_point = wq_ktest_int(t, q8_lo(d.x_dtype), q8_hi(d.x_dtype));
  uint8_t *x = malloc((size_t)(in_pixels * C));
  uint8_t *w = malloc((size_t)(M * cg * ksize));
  int32_t *wzp = malloc(sizeof(int32_t) * (size_t)M), *bias = malloc(sizeof(int32_t) * (size_t)M);
  float *mult = malloc(sizeof(float) * (size_t)M);
  uint8_t *y_ref = malloc((size_t)(out_pixels * M) * y_size),
          *y_simd = malloc((size_t)(out_pixels * M) * y_size);
  for (int64_t i = 0; i < in_pixels * C; i++)
    x[i] = (uint8_t)wq_ktest_u32(t);
  for (int64_t i = 0; i < M * cg * ksize; i++)
    w[i] = (uint8_t)wq_ktest_u32(t);
  int zp_mode = wq_ktest_int(t, 0, 2); /* symmetric, per-tensor, per-channel */
  int per_channel_mult = wq_ktest_int(t, 0, 1);
  float base = 1.0f / (float)(64 * (cg * ksize < 16 ? 16 : cg * ksize));
  for (int64_t m = 0; m < M; m++) {
    wzp[m] = zp_mode ? wq_ktest_int(t, q8_lo(d.w_dtype), q8_hi(d.w_dtype))
                     : (d.w_dtype == WQ_DT_UINT8 ? 128 : 0);
    bias[m] = wq_ktest_int(t, -30000, 30000);
    mult[m] = wq_ktest_int(t, 0, 3) == 0 ? 1.0f / (float)(1 << wq_ktest_int(t, 1, 12))
                                         : base * wq_ktest_float(t, 0.05f, 40.0f);
  }
  /* Now and then multipliers so large that acc * m passes 2^22 (the
   * epilogues' float clamp and saturation paths). */
  if (wq_ktest_int(t, 0, 7) == 0)
    mult[wq_ktest_int(t, 0, (int)M - 1)] = (float)(1 << wq_ktest_int(t, 4, 14));
  d.w = w;
  d.w_zero_point = wzp;
  d.w_zero_point_count = zp_mode == 2 ? M : 1;
  d.bias = wq_ktest_int(t, 0, 3) ? bias : NULL;
  d.multiplier = mult;
  d.multiplier_count = per_channel_mult ? M : 1;
  d.y_zero_point = wq_ktest_int(t, q8_lo(d.y_dtype), q8_hi(d.y_dtype));
  d.y_min = q8_lo(d.y_dtype);
  d.y_max = q8_hi(d.y_dtype);
  if (wq_ktest_int(t, 0, 2) == 0)
    d.y_min = d.y_zero_point;
  if (wq_ktest_int(t, 0, 3) == 0) /* a fused Relu6-like upper clamp */
    d.y_max = wq_ktest_int(t, d.y_min, q8_hi(d.y_dtype));
  float *float_bias = malloc(sizeof(float) * (size_t)M);
  for (int64_t j = 0; j < M; j++)
    float_bias[j] = wq_ktest_float(t, -3.0f, 3.0f);
  d.float_bias = wq_ktest_int(t, 0, 3) ? float_bias : NULL;
  d.float_relu = wq_ktest_int(t, 0, 1);
  d.leaky = wq_ktest_int(t, 0, 2) == 0; /* a fused LeakyRelu (8-bit y) */
  d.leaky_alpha = wq_ktest_float(t, 0.0f, 1.0f);
  memset(y_ref, 0xCD, (size_t)(out_pixels * M) * y_size);
  memset(y_simd, 0xCD, (size_t)(out_pixels * M) * y_size);

  wq_error err;
  wq_error_clear(&err);
  const char *algo, *failed;
  int ok =
      variants_match(&d, x, y_ref, y_simd, (size_t)(out_pixels * M) * y_size, &failed, &algo, &err);
  if (!ok && err.message[0])
    printf("  error: %s\n", err.message);
  const wq_conv_geometry *g = &d.geo;
  int two = g->n_spatial == 2;
  snprintf(what, cap,
           "qconv[%s] %s n=%lld %lldx%lld c=%lld m=%lld g=%lld k=%lldx%lld s=%lldx%lld d=%lldx%lld "
           "pad=%lld,%lld x=%s(zp %d) w=%s(%s) y=%s(zp %d, min %d)",
           failed, algo, (long long)d.batch, (long long)(two ? g->in[0] : 1), (long long)g->in[two],
           (long long)C, (long long)M, (long long)d.group, (long long)(two ? g->kernel[0] : 1),
           (long long)g->kernel[two], (long long)(two ? g->stride[0] : 1),
           (long long)g->stride[two], (long long)(two ? g->dilation[0] : 1),
           (long long)g->dilation[two], (long long)(two ? g->pad_begin[0] : 0),
           (long long)g->pad_begin[two], wq_dtype_name(d.x_dtype), (int)d.x_zero_point,
           wq_dtype_name(d.w_dtype),
           zp_mode == 2 ? "per-channel zp" : (zp_mode ? "per-tensor zp" : "symmetric"),
           wq_dtype_name(d.y_dtype), (int)d.y_zero_point, (int)d.y_min);
  free(x);
  free(w);
  free(wzp);
  free(bias);
  free(mult);
  free(float_bias);
  free(y_ref);
  free(y_simd);
  return ok;
}

/* The wrap window of the magic-add rounding: a depthwise 3x3 whose
 * interior accumulators are 9 * 255 * -100 = -229500 and multiplier 80 puts
 * acc * m at -1.836e7, between -2.45e7 and -1.5 * 2^23, where the float bits
 * minus the magic would wrap to a large positive int32 without the float
 * clamp: every output must still be y_min, as the reference gives. Edge
 * pixels (4 or 6 taps) sit just outside the window. Both output dtypes. */
static int wrap_window_case(wq_dtype y_dtype) {
  enum { H = 6, W = 9, C = 20 };
  wq_qconv_desc d;
  memset(&d, 0, sizeof d);
  d.batch = 1;
  d.in_channels = d.out_channels = d.group = C;
  d.geo.n_spatial = 2;
  for (int i = 0; i < 2; i++) {
    d.geo.in[i] = i ? W : H;
    d.geo.kernel[i] = 3;
    d.geo.stride[i] = d.geo.dilation[i] = 1;
    d.geo.pad_begin[i] = d.geo.pad_end[i] = 1;
  }
  if (wq_conv_geometry_resolve(&d.geo, WQ_AUTO_PAD_NOTSET, false) >= 0)
    return 0;
  static uint8_t x[H * W * C], y_ref[H * W * C], y_simd[H * W * C];
  static int8_t w[C * 9];
  static float mult[C];
  memset(x, 255, sizeof x);
  memset(w, -100, sizeof w);
  for (int c = 0; c < C; c++)
    mult[c] = 80.0f;
  d.x_dtype = WQ_DT_UINT8;
  d.w_dtype = WQ_DT_INT8;
  d.w = w;
  d.multiplier = mult;
  d.multiplier_count = C;
  d.y_dtype = y_dtype;
  d.y_zero_point = q8_lo(y_dtype) + 3;
  d.y_min = q8_lo(y_dtype);
  d.y_max = q8_hi(y_dtype);
  wq_error err;
  const char *algo, *failed;
  return variants_match(&d, x, y_ref, y_simd, sizeof y_ref, &failed, &algo, &err) &&
         y_ref[(W + 1) * C] == (uint8_t)d.y_min;
}

/* A depthwise conv whose weights (2 x 2^27 taps) and images are within the
 * element limit but whose 16-channel packed weights (2^32 bytes) and pair-row
 * cache would not be: the pack fails with WQ_ERR_SHAPE naming the node
 * before sizing anything (the int64 products cast to 32-bit size_t used to
 * wrap); the weights (one byte here) are never read. */
static int huge_depthwise_case(void) {
  static int8_t w = 0;
  static float mult = 1.0f;
  wq_qconv_desc d;
  memset(&d, 0, sizeof d);
  d.batch = 1;
  d.in_channels = d.out_channels = d.group = 2;
  d.geo = (wq_conv_geometry){.n_spatial = 2,
                             .in = {1, 1},
                             .out = {1, 1},
                             .kernel = {1, (int64_t)1 << 27},
                             .stride = {1, 1},
                             .dilation = {1, 1}};
  d.x_dtype = d.w_dtype = d.y_dtype = WQ_DT_INT8;
  d.w = &w;
  d.multiplier = &mult;
  d.multiplier_count = 1;
  d.y_min = -128;
  d.y_max = 127;
  wq_qconv_plan p;
  wq_error err;
  int ok = wq_qconv_plan_common(&p, &d, "huge_dw", &err) == WQ_OK && p.algo == WQ_QCONV_DEPTHWISE;
  wq_qconv_plan_free(&p);
  /* Every SIMD variant (the reference keeps the weights as they are). */
  const wq_qconv_config *const *variants;
  const int n_variants = wq_qconv_variants(&variants);
  for (int v = 1; ok && v < n_variants; v++) {
    ok = wq_qconv_plan_init(&p, variants[v], &d, "huge_dw", &err) == WQ_ERR_SHAPE &&
         strstr(err.message, "byte limit") != NULL && strcmp(err.node, "huge_dw") == 0;
    wq_qconv_plan_free(&p);
  }
  return ok && n_variants > 1;
}

void wq_ktest_qconv(wq_ktest *t) {
  char what[400];
  wq_ktest_case(t, huge_depthwise_case(), "qconv depthwise, buffers past the byte limit");
  wq_ktest_case(t, wrap_window_case(WQ_DT_UINT8),
                "qconv depthwise, acc * m in the wrap window, uint8 y");
  wq_ktest_case(t, wrap_window_case(WQ_DT_INT8),
                "qconv depthwise, acc * m in the wrap window, int8 y");
  static const shape_kind kinds[] = {SHAPE_POINTWISE, SHAPE_GROUP1,        SHAPE_DEPTHWISE,
                                     SHAPE_GROUPED,   SHAPE_DEPTHWISE_NET, SHAPE_DEPTHWISE_3X3};
  for (int k = 0; k < 6; k++)
    for (int c = 0; c < (kinds[k] == SHAPE_DEPTHWISE_NET ? 150 : 60); c++) {
      int ok = run_case(t, kinds[k], what, sizeof what);
      wq_ktest_case(t, ok, what);
    }
}
