/* nn family (Conv, ConvTranspose, Gemm, MatMul, pools, Resize): kernels
 * checked against naive loops on random shapes, op-level shape inference and
 * error messages, and the ONNX conformance cases run node by node through
 * the registry (import -> resolve -> infer -> run). Float results must be
 * within 1e-6 + 1e-3 * |expected| (some expected outputs are rounded to 4
 * digits); integer results exact. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/conv_f32.h"
#include "kernels/ref/ref_gemm_f32.h"
#include "kernels/ref/ref_pool.h"
#include "kernels/ref/ref_resize.h"
#include "onnx/onnx_import.h"
#include "ops/op.h"
#include "runtime/executor.h"
#include "wq_test.h"

/* ---- deterministic random data ---- */

static uint32_t rng_state = 12345u;
static uint32_t rng_next(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8;
}
static int64_t rng_int(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_next() % (uint32_t)(hi - lo + 1));
}
static float rng_float(void) { return (float)(rng_next() % 2001) / 1000.0f - 1.0f; }
static float *rand_floats(int64_t n) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++)
    p[i] = rng_float();
  return p;
}

static double max_rel_err(const float *got, const float *want, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]) / (0.05 + fabs((double)want[i]));
    if (e > worst || e != e)
      worst = e != e ? 1e9 : e;
  }
  return worst;
}

/* ---- GEMM ---- */

static void test_gemm_random(void) {
  for (int trial = 0; trial < 40; trial++) {
    int64_t m = rng_int(1, 70), n = rng_int(1, 600), k = rng_int(0, 300);
    if (trial == 0) {
      m = 129;
      n = 1030;
      k = 513; /* crosses every cache block boundary */
    }
    int ta = rng_int(0, 1), tb = rng_int(0, 1);
    float alpha = trial % 3 ? 1.0f : 0.5f,
          beta = trial % 4 == 0 ? 0.0f : (trial % 4 == 1 ? 1.0f : -2.0f);
    float *a = rand_floats(m * k), *b = rand_floats(k * n), *c = rand_floats(m * n);
    float *want = malloc(sizeof(float) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0.0;
        for (int64_t p = 0; p < k; p++)
          s += (double)(ta ? a[p * m + i] : a[i * k + p]) *
               (double)(tb ? b[j * k + p] : b[p * n + j]);
        want[i * n + j] = (float)(alpha * s + (beta == 0.0f ? 0.0 : beta * c[i * n + j]));
      }
    if (beta == 0.0f)
      for (int64_t i = 0; i < m * n; i++)
        c[i] = NAN; /* beta == 0 must not read C */
    wq_status st = wq_ref_sgemm(m, n, k, alpha, a, ta ? 1 : k, ta ? m : 1, b, tb ? 1 : n,
                                tb ? k : 1, beta, c, n);
    CHECK(st == WQ_OK);
    double err = max_rel_err(c, want, m * n);
    CHECK_MSG(err < 1e-3, "gemm m=%lld n=%lld k=%lld ta=%d tb=%d: rel err %g", (long long)m,
              (long long)n, (long long)k, ta, tb, err);
    free(a);
    free(b);
    free(c);
    free(want);
  }
}

/* ---- conv geometry ---- */

static void test_geometry(void) {
  wq_conv_geometry g = {.n_spatial = 1, .in = {7}, .kernel = {3}, .stride = {2}, .dilation = {1}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_SAME_UPPER, false) == -1);
  CHECK(g.out[0] == 4 && g.pad_begin[0] == 1 && g.pad_end[0] == 1);
  g = (wq_conv_geometry){.n_spatial = 1, .in = {6}, .kernel = {3}, .stride = {2}, .dilation = {1}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_SAME_UPPER, false) == -1);
  CHECK(g.out[0] == 3 && g.pad_begin[0] == 0 && g.pad_end[0] == 1);
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_SAME_LOWER, false) == -1);
  CHECK(g.out[0] == 3 && g.pad_begin[0] == 1 && g.pad_end[0] == 0);
  g = (wq_conv_geometry){.n_spatial = 1,
                         .in = {5},
                         .kernel = {2},
                         .stride = {2},
                         .dilation = {1},
                         .pad_begin = {1},
                         .pad_end = {1}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_NOTSET, true) == -1);
  /* ceil((5+2-2)/2)+1 = 4, and window 3 starts at 6-1 = 5 >= in: kept? (3*2=6 >= 5+1) -> dropped */
  CHECK(g.out[0] == 3);
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_VALID, false) == -1);
  CHECK(g.out[0] == 2 && g.pad_begin[0] == 0);
  g = (wq_conv_geometry){.n_spatial = 1, .in = {2}, .kernel = {3}, .stride = {1}, .dilation = {2}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_NOTSET, false) == 0); /* kernel too big */
}

/* ---- Conv / ConvTranspose against naive loops ---- */

static void naive_conv(const wq_conv_geometry *g, int64_t nb, int64_t c, int64_t m, int64_t group,
                       const float *x, const float *w, const float *bias, float *y) {
  int ns = g->n_spatial;
  int64_t cg = c / group, mg = m / group, in_size = wq_conv_geometry_in_size(g);
  int64_t out_size = wq_conv_geometry_out_size(g), ksize = wq_conv_geometry_kernel_size(g);
  for (int64_t n = 0; n < nb; n++)
    for (int64_t oc = 0; oc < m; oc++)
      for (int64_t o = 0; o < out_size; o++) {
        int64_t opos[6], rem = o;
        for (int d = ns - 1; d >= 0; d--) {
          opos[d] = rem % g->out[d];
          rem /= g->out[d];
        }
        double s = bias ? bias[oc] : 0.0;
        int64_t gi = oc / mg;
        for (int64_t ic = 0; ic < cg; ic++)
          for (int64_t kf = 0; kf < ksize; kf++) {
            int64_t kpos[6], r2 = kf, off = 0;
            int inside = 1;
            for (int d = ns - 1; d >= 0; d--) {
              kpos[d] = r2 % g->kernel[d];
              r2 /= g->kernel[d];
            }
            for (int d = 0; d < ns; d++) {
              int64_t i = opos[d] * g->stride[d] - g->pad_begin[d] + kpos[d] * g->dilation[d];
              if (i < 0 || i >= g->in[d])
                inside = 0;
              off = off * g->in[d] + i;
            }
            if (inside)
              s += (double)x[(n * c + gi * cg + ic) * in_size + off] *
                   w[(oc * cg + ic) * ksize + kf];
          }
        y[(n * m + oc) * out_size + o] = (float)s;
      }
}

static void random_geometry(wq_conv_geometry *g, int ns, int small) {
  g->n_spatial = ns;
  for (int d = 0; d < ns; d++) {
    g->kernel[d] = rng_int(1, 3);
    g->stride[d] = rng_int(1, 3);
    g->dilation[d] = rng_int(1, 2);
    g->pad_begin[d] = rng_int(0, 2);
    g->pad_end[d] = rng_int(0, 2);
    g->in[d] = rng_int(small ? 3 : 5, small ? 6 : 20) +
               wq_conv_effective_kernel(g->kernel[d], g->dilation[d]);
  }
}

static void test_conv_random(void) {
  for (int trial = 0; trial < 60; trial++) {
    int ns = trial % 3 + 1;
    wq_conv_geometry g;
    random_geometry(&g, ns, ns == 3);
    wq_auto_pad ap = (wq_auto_pad)(trial % 4);
    CHECK(wq_conv_geometry_resolve(&g, ap, false) == -1);
    int64_t group = trial % 5 == 0 ? 1 : rng_int(1, 3);
    int64_t cg = trial % 4 == 1 ? 1 : rng_int(1, 4), mg = rng_int(1, 3);
    int64_t c = cg * group, m = mg * group, nb = rng_int(1, 2);
    int64_t in_size = wq_conv_geometry_in_size(&g), out_size = wq_conv_geometry_out_size(&g);
    int64_t ksize = wq_conv_geometry_kernel_size(&g);
    float *x = rand_floats(nb * c * in_size), *w = rand_floats(m * cg * ksize);
    float *b = trial % 2 ? rand_floats(m) : NULL;
    float *y = malloc(sizeof(float) * (size_t)(nb * m * out_size));
    float *want = malloc(sizeof(float) * (size_t)(nb * m * out_size));
    naive_conv(&g, nb, c, m, group, x, w, b, want);
    CHECK(wq_conv_f32(&g, nb, c, m, group, x, w, b, false, y) == WQ_OK);
    double err = max_rel_err(y, want, nb * m * out_size);
    CHECK_MSG(err < 1e-3, "conv trial %d ns=%d group=%lld cg=%lld: rel err %g", trial, ns,
              (long long)group, (long long)cg, err);
    /* A fused Relu equals Relu applied afterwards, bit for bit. */
    float *fused = malloc(sizeof(float) * (size_t)(nb * m * out_size));
    CHECK(fused && wq_conv_f32(&g, nb, c, m, group, x, w, b, true, fused) == WQ_OK);
    int differ = 0;
    for (int64_t i = 0; fused && i < nb * m * out_size; i++) {
      float relu = y[i] < 0.0f ? 0.0f : y[i];
      differ += memcmp(&relu, &fused[i], sizeof relu) != 0;
    }
    CHECK_MSG(differ == 0, "conv trial %d: %d outputs of the fused Relu differ", trial, differ);
    free(fused);
    free(x);
    free(w);
    free(b);
    free(y);
    free(want);
  }
}

/* ConvTranspose is the adjoint of Conv: <conv(x), y> == <x, convT(y)>. */
static void test_conv_transpose_adjoint(void) {
  for (int trial = 0; trial < 30; trial++) {
    int ns = trial % 3 + 1;
    wq_conv_geometry g;
    random_geometry(&g, ns, ns == 3);
    CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_NOTSET, false) == -1);
    int64_t group = rng_int(1, 2), cg = rng_int(1, 3), mg = rng_int(1, 3);
    int64_t c = cg * group, m = mg * group;
    int64_t in_size = wq_conv_geometry_in_size(&g), out_size = wq_conv_geometry_out_size(&g);
    int64_t ksize = wq_conv_geometry_kernel_size(&g);
    float *x = rand_floats(c * in_size), *w = rand_floats(m * cg * ksize);
    float *y = rand_floats(m * out_size);
    float *cx = malloc(sizeof(float) * (size_t)(m * out_size));
    float *ty = malloc(sizeof(float) * (size_t)(c * in_size));
    CHECK(wq_conv_f32(&g, 1, c, m, group, x, w, NULL, false, cx) == WQ_OK);
    /* Transposed geometry: input = conv output, output = conv input. W [M, C/g, k] read as
     * ConvTranspose's [C_in = M, M_out/g = C/g, k]. */
    wq_conv_geometry t = g;
    for (int d = 0; d < ns; d++) {
      t.in[d] = g.out[d];
      t.out[d] = g.in[d];
    }
    CHECK(wq_conv_transpose_f32(&t, 1, m, c, group, y, w, NULL, ty) == WQ_OK);
    double lhs = 0.0, rhs = 0.0;
    for (int64_t i = 0; i < m * out_size; i++)
      lhs += (double)cx[i] * y[i];
    for (int64_t i = 0; i < c * in_size; i++)
      rhs += (double)x[i] * ty[i];
    CHECK_MSG(fabs(lhs - rhs) <= 1e-3 * (1.0 + fabs(lhs)),
              "trial %d: <conv x, y> %g vs <x, convT y> %g", trial, lhs, rhs);
    free(x);
    free(w);
    free(y);
    free(cx);
    free(ty);
  }
}

/* A geometry whose im2col scratch (kdim x chunk floats) is past every
 * limit: 2^26 input channels x a 1x2 kernel = 2^27 rows, 64-column chunks,
 * 32 GiB. The size is checked before any work (it used to go to malloc
 * unchecked, wrapping in 32-bit size_t): a clean error, x/w/y untouched. */
static void test_conv_huge_scratch(void) {
  wq_conv_geometry g = {
      .n_spatial = 2, .in = {1, 65}, .kernel = {1, 2}, .stride = {1, 1}, .dilation = {1, 1}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_NOTSET, false) == -1);
  CHECK(g.out[0] == 1 && g.out[1] == 64);
  float x = 0.0f, w = 0.0f, y = 0.0f;
  int64_t channels = (int64_t)1 << 26;
  CHECK(wq_conv_f32(&g, 1, channels, 1, 1, &x, &w, NULL, false, &y) == WQ_ERR_OUT_OF_MEMORY);
  CHECK(x == 0.0f && w == 0.0f && y == 0.0f);
}

/* ---- pooling ---- */

static void test_pool_small(void) {
  /* 1x1x3x4 input, 2x2 window stride 2, ceil mode, pads 0. */
  const float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  wq_conv_geometry g = {
      .n_spatial = 2, .in = {3, 4}, .kernel = {2, 2}, .stride = {2, 2}, .dilation = {1, 1}};
  CHECK(wq_conv_geometry_resolve(&g, WQ_AUTO_PAD_NOTSET, true) == -1);
  CHECK(g.out[0] == 2 && g.out[1] == 2);
  float y[4];
  int64_t idx[4];
  wq_ref_maxpool_f32(&g, 1, x, y, idx, false);
  CHECK(y[0] == 6 && y[1] == 8 && y[2] == 10 && y[3] == 12);
  CHECK(idx[0] == 5 && idx[1] == 7 && idx[2] == 9 && idx[3] == 11);
  wq_ref_maxpool_f32(&g, 1, x, y, idx, true); /* column-major: h + w * H */
  CHECK(idx[0] == 1 + 1 * 3 && idx[3] == 2 + 3 * 3);
  wq_ref_avgpool_f32(&g, 1, false, x, y);
  CHECK_NEAR(y[0], 3.5, 1e-6);
  CHECK_NEAR(y[2], 9.5, 1e-6); /* bottom-left window holds only 9, 10 */
  const int8_t xi[12] = {-5, 3, -7, 0, 1, -1, 2, -128, 127, 4, 5, 6};
  int8_t yi[4];
  wq_ref_maxpool_i8(&g, 1, xi, yi, NULL, false);
  CHECK(yi[0] == 3 && yi[1] == 2 && yi[2] == 127 && yi[3] == 6);
  float gy[1];
  wq_ref_global_avgpool_f32(1, 12, x, gy);
  CHECK_NEAR(gy[0], 6.5, 1e-6);
}

/* ---- Resize kernels ---- */

static void test_resize_small(void) {
  /* 1-D linear, half_pixel, 2 -> 4: x_ori = -0.25, 0.25, 0.75, 1.25. */
  wq_resize_axis ax = {WQ_RESIZE_HALF_PIXEL, 2.0, 2, 4, 0.0, 1.0};
  int nt = wq_resize_tap_count(WQ_RESIZE_LINEAR, false, 2.0);
  CHECK(nt == 2);
  int64_t index[8];
  float weight[8];
  uint8_t outside[4];
  wq_resize_axis_taps(&ax, WQ_RESIZE_LINEAR, false, -0.75, false, nt, index, weight, outside);
  const float x[2] = {1.0f, 3.0f};
  float y[4];
  int64_t dims[1] = {2};
  wq_ref_resize_axis_f32(1, dims, 0, 4, nt, index, weight, outside, 0.0f, x, y);
  CHECK_NEAR(y[0], 1.0, 1e-6);
  CHECK_NEAR(y[1], 1.5, 1e-6);
  CHECK_NEAR(y[2], 2.5, 1e-6);
  CHECK_NEAR(y[3], 3.0, 1e-6);
  /* nearest rounding modes at x_ori = 1.5 */
  wq_resize_axis ax4 = {WQ_RESIZE_ASYMMETRIC, 1.0, 4, 4, 0.0, 1.0};
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_ROUND_PREFER_FLOOR, 1.5) == 1);
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_ROUND_PREFER_CEIL, 1.5) == 2);
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_FLOOR, 1.7) == 1);
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_CEIL, 1.2) == 2);
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_CEIL, 7.2) == 3);
  CHECK(wq_resize_nearest_index(&ax4, WQ_RESIZE_FLOOR, -0.7) == 0);
  /* align_corners 3 -> 5: x_ori = 0, .5, 1, 1.5, 2 */
  wq_resize_axis ac = {WQ_RESIZE_ALIGN_CORNERS, 5.0 / 3.0, 3, 5, 0.0, 1.0};
  CHECK_NEAR(wq_resize_source_coord(&ac, 3), 1.5, 1e-12);
  /* tf_crop_and_resize extrapolates outside the input */
  wq_resize_axis tf = {WQ_RESIZE_TF_CROP_AND_RESIZE, 1.0, 4, 4, 0.4, 1.6};
  CHECK(wq_resize_outside(&tf, wq_resize_source_coord(&tf, 3)));
  CHECK(!wq_resize_outside(&tf, wq_resize_source_coord(&tf, 0)));
}

/* ---- ops through the registry: shape inference and errors ---- */

static wq_value make_value(wq_dtype dt, int rank, const int64_t *dims, void *data) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = dt;
  v.rank = rank;
  for (int i = 0; i < rank; i++)
    v.dims[i] = dims[i];
  v.data = data;
  return v;
}

static wq_node make_node(const char *op_type, int opset, int n_in, int n_out, wq_attr *attrs,
                         int n_attrs) {
  static int ins[8] = {0, 1, 2, 3, 4, 5, 6, 7}, outs[4] = {8, 9, 10, 11};
  wq_node n;
  memset(&n, 0, sizeof n);
  n.name = (char *)"node0";
  n.op_type = (char *)op_type;
  n.domain = (char *)"";
  n.opset = opset;
  n.inputs = ins;
  n.n_inputs = n_in;
  n.outputs = outs;
  n.n_outputs = n_out;
  n.attrs = attrs;
  n.n_attrs = n_attrs;
  n.op = wq_op_find("", op_type);
  return n;
}

static void test_conv_op_errors(void) {
  int64_t group = 2;
  wq_attr attrs[1] = {{.name = (char *)"group", .type = WQ_ATTR_INT, .i = 2}};
  (void)group;
  wq_node node = make_node("Conv", 13, 2, 1, attrs, 1);
  CHECK(node.op != NULL);
  wq_error err;
  wq_error_clear(&err);
  CHECK(node.op->prepare(&node, &err) == WQ_OK);
  int64_t xd[4] = {1, 6, 8, 8}, wd[4] = {4, 2, 3, 3};
  wq_value in[2] = {make_value(WQ_DT_FLOAT, 4, xd, NULL), make_value(WQ_DT_FLOAT, 4, wd, NULL)};
  wq_value out[1];
  /* C = 6 but W.shape[1] * group = 4 */
  CHECK(node.op->infer(&node, in, out, &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "6 channels") != NULL);
  xd[1] = 4;
  in[0] = make_value(WQ_DT_FLOAT, 4, xd, NULL);
  CHECK(node.op->infer(&node, in, out, &err) == WQ_OK);
  CHECK(out[0].rank == 4 && out[0].dims[1] == 4 && out[0].dims[2] == 6 && out[0].dims[3] == 6);
  wd[0] = 5; /* 5 output channels, group 2 */
  in[1] = make_value(WQ_DT_FLOAT, 4, wd, NULL);
  wq_error_clear(&err);
  CHECK(node.op->infer(&node, in, out, &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "multiple of group") != NULL);
  /* unknown batch and spatial dims stay unknown */
  wd[0] = 4;
  int64_t xu[4] = {-1, 4, -1, 10};
  in[0] = make_value(WQ_DT_FLOAT, 4, xu, NULL);
  in[1] = make_value(WQ_DT_FLOAT, 4, wd, NULL);
  CHECK(node.op->infer(&node, in, out, &err) == WQ_OK);
  CHECK(out[0].dims[0] == -1 && out[0].dims[2] == -1 && out[0].dims[3] == 8);
  node.op->free_state(node.op_state);
}

static void test_matmul_gemm_ops(void) {
  wq_error err;
  wq_error_clear(&err);
  /* MatMul [2,1,3,4] x [5,4,2] -> [2,5,3,2]; 1-D x 1-D -> scalar */
  wq_node mm = make_node("MatMul", 13, 2, 1, NULL, 0);
  int64_t ad[4] = {2, 1, 3, 4}, bd[3] = {5, 4, 2};
  float *a = rand_floats(24), *b = rand_floats(40);
  wq_value in[2] = {make_value(WQ_DT_FLOAT, 4, ad, a), make_value(WQ_DT_FLOAT, 3, bd, b)};
  wq_value out[1];
  CHECK(mm.op->infer(&mm, in, out, &err) == WQ_OK);
  CHECK(out[0].rank == 4 && out[0].dims[0] == 2 && out[0].dims[1] == 5 && out[0].dims[2] == 3 &&
        out[0].dims[3] == 2);
  float y[60];
  out[0].data = y;
  CHECK(mm.op->run(&mm, in, out, &err) == WQ_OK);
  int bad = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 5; j++)
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++) {
          double s = 0;
          for (int k = 0; k < 4; k++)
            s += (double)a[i * 12 + r * 4 + k] * b[j * 8 + k * 2 + c];
          if (fabs(s - y[((i * 5 + j) * 3 + r) * 2 + c]) > 1e-5)
            bad++;
        }
  CHECK(bad == 0);
  int64_t v4[1] = {4}, v3[1] = {3};
  in[0] = make_value(WQ_DT_FLOAT, 1, v4, a);
  in[1] = make_value(WQ_DT_FLOAT, 1, v4, b);
  CHECK(mm.op->infer(&mm, in, out, &err) == WQ_OK && out[0].rank == 0);
  in[1] = make_value(WQ_DT_FLOAT, 1, v3, b);
  CHECK(mm.op->infer(&mm, in, out, &err) == WQ_ERR_SHAPE);
  free(a);
  free(b);
  /* Gemm C broadcast [M,1] */
  wq_attr ga[2] = {{.name = (char *)"transB", .type = WQ_ATTR_INT, .i = 1},
                   {.name = (char *)"beta", .type = WQ_ATTR_FLOAT, .f = 2.0f}};
  wq_node gm = make_node("Gemm", 13, 3, 1, ga, 2);
  float ga_[6] = {1, 2, 3, 4, 5, 6}, gb[6] = {1, 0, 1, 0, 1, 0}, gc[2] = {10, 20}, gy[4];
  int64_t a23[2] = {2, 3}, c21[2] = {2, 1};
  wq_value gin[3] = {make_value(WQ_DT_FLOAT, 2, a23, ga_), make_value(WQ_DT_FLOAT, 2, a23, gb),
                     make_value(WQ_DT_FLOAT, 2, c21, gc)};
  CHECK(gm.op->infer(&gm, gin, out, &err) == WQ_OK);
  CHECK(out[0].dims[0] == 2 && out[0].dims[1] == 2);
  out[0].data = gy;
  CHECK(gm.op->run(&gm, gin, out, &err) == WQ_OK);
  /* A*B^T = [[4,2],[10,5]] + 2*[[10],[20]] */
  CHECK(gy[0] == 24 && gy[1] == 22 && gy[2] == 50 && gy[3] == 45);
  int64_t c3[1] = {3};
  gin[2] = make_value(WQ_DT_FLOAT, 1, c3, gc);
  CHECK(gm.op->infer(&gm, gin, out, &err) == WQ_ERR_SHAPE);
}

static void test_resize_op_infer(void) {
  wq_attr attrs[1] = {{.name = (char *)"mode", .type = WQ_ATTR_STRING, .s = (char *)"linear"}};
  wq_node node = make_node("Resize", 13, 3, 1, attrs, 1);
  wq_error err;
  wq_error_clear(&err);
  CHECK(node.op->prepare(&node, &err) == WQ_OK);
  int64_t xd[4] = {1, 2, 4, 6}, sd[1] = {4}, zero[1] = {0};
  float scales[4] = {1.0f, 1.0f, 2.0f, 0.5f};
  wq_value in[3] = {make_value(WQ_DT_FLOAT, 4, xd, NULL), make_value(WQ_DT_FLOAT, 1, zero, NULL),
                    make_value(WQ_DT_FLOAT, 1, sd, NULL)};
  wq_value out[1];
  CHECK(node.op->infer(&node, in, out, &err) == WQ_OK); /* scales data unknown */
  CHECK(out[0].rank == 4 && out[0].dims[2] == -1);
  in[2].data = scales;
  CHECK(node.op->infer(&node, in, out, &err) == WQ_OK);
  CHECK(out[0].dims[0] == 1 && out[0].dims[1] == 2 && out[0].dims[2] == 8 && out[0].dims[3] == 3);
  int64_t s3[1] = {3};
  in[2] = make_value(WQ_DT_FLOAT, 1, s3, scales);
  CHECK(node.op->infer(&node, in, out, &err) == WQ_ERR_SHAPE);
  node.op->free_state(node.op_state);
  /* 2-D bilinear through the op (two separable passes), asymmetric, x2. */
  wq_attr lin[2] = {{.name = (char *)"mode", .type = WQ_ATTR_STRING, .s = (char *)"linear"},
                    {.name = (char *)"coordinate_transformation_mode",
                     .type = WQ_ATTR_STRING,
                     .s = (char *)"asymmetric"}};
  wq_node n1 = make_node("Resize", 11, 3, 1, lin, 2);
  CHECK(n1.op->prepare(&n1, &err) == WQ_OK);
  float x4[4] = {1, 2, 3, 4}, sc2[4] = {1, 1, 2, 2}, y16[16];
  int64_t x4d[4] = {1, 1, 2, 2};
  wq_value rin[3] = {make_value(WQ_DT_FLOAT, 4, x4d, x4), make_value(WQ_DT_FLOAT, 1, zero, NULL),
                     make_value(WQ_DT_FLOAT, 1, sd, sc2)};
  CHECK(n1.op->infer(&n1, rin, out, &err) == WQ_OK);
  CHECK(out[0].dims[2] == 4 && out[0].dims[3] == 4);
  out[0].data = y16;
  CHECK(n1.op->run(&n1, rin, out, &err) == WQ_OK);
  const float want16[16] = {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4};
  int mismatches = 0;
  for (int i = 0; i < 16; i++)
    mismatches += y16[i] != want16[i];
  CHECK_MSG(mismatches == 0, "bilinear x2: %d of 16 values differ", mismatches);
  n1.op->free_state(n1.op_state);
  wq_attr bad[1] = {{.name = (char *)"coordinate_transformation_mode",
                     .type = WQ_ATTR_STRING,
                     .s = (char *)"sideways"}};
  wq_node n2 = make_node("Resize", 13, 3, 1, bad, 1);
  CHECK(n2.op->prepare(&n2, &err) == WQ_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "sideways") != NULL);
}

/* ---- ONNX conformance cases ---- */

static bool close_enough(const wq_value *got, const wq_value *want, char *why, size_t cap) {
  if (got->dtype != want->dtype || got->rank != want->rank) {
    snprintf(why, cap, "dtype/rank %s/%d, want %s/%d", wq_dtype_name(got->dtype), got->rank,
             wq_dtype_name(want->dtype), want->rank);
    return false;
  }
  for (int i = 0; i < got->rank; i++)
    if (got->dims[i] != want->dims[i]) {
      snprintf(why, cap, "dim %d is %lld, want %lld", i, (long long)got->dims[i],
               (long long)want->dims[i]);
      return false;
    }
  int64_t n = wq_value_numel(got);
  for (int64_t i = 0; i < n; i++) {
    double g = wq_value_get_double(got, i), w = wq_value_get_double(want, i);
    bool ok = got->dtype == WQ_DT_FLOAT ? fabs(g - w) <= 1e-6 + 1e-3 * fabs(w) : g == w;
    if (!ok) {
      snprintf(why, cap, "element %lld is %.9g, want %.9g", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

/* Returns true on pass; `why` explains a failure. */
static bool run_case(const char *dir, char *why, size_t cap) {
  char path[1200];
  size_t n;
  wq_error err;
  wq_error_clear(&err);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  uint8_t *bytes = wq_test_read_file(path, &n);
  if (!bytes) {
    snprintf(why, cap, "cannot read %.300s", path);
    return false;
  }
  wq_model_ir *ir = NULL;
  wq_status st = wq_onnx_import(bytes, n, &ir, &err);
  free(bytes);
  if (st != WQ_OK) {
    snprintf(why, cap, "import: %.400s", err.message);
    return false;
  }
  wq_graph *g = ir->graph;
  bool pass = true;
  wq_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
  bool *owned = calloc((size_t)g->n_tensors, sizeof *owned);
  st = wq_graph_resolve_ops(g, &err);
  if (st != WQ_OK) {
    snprintf(why, cap, "resolve: %.400s", err.message);
    pass = false;
    goto done;
  }
  for (int t = 0; t < g->n_tensors; t++)
    vals[t] = wq_tensor_value(&g->tensors[t]);
  for (int k = 0; k < g->n_inputs && pass; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
    bytes = wq_test_read_file(path, &n);
    st = bytes ? wq_tensor_decode(bytes, n, &vals[g->inputs[k]], NULL, 0, &err) : WQ_ERR_IO;
    free(bytes);
    if (st != WQ_OK) {
      snprintf(why, cap, "input %d: %.400s", k, err.message);
      pass = false;
    } else {
      owned[g->inputs[k]] = true;
    }
  }
  for (int i = 0; i < g->n_nodes && pass; i++) {
    const wq_node *node = &g->nodes[i];
    wq_value in[16], out[8];
    memset(in, 0, sizeof in);
    for (int k = 0; k < node->n_inputs && k < 16; k++)
      if (node->inputs[k] >= 0)
        in[k] = vals[node->inputs[k]];
    st = wq_run_node(node, in, out, &err);
    if (st != WQ_OK) {
      snprintf(why, cap, "%.40s: %.400s", node->op_type, err.message);
      pass = false;
      break;
    }
    for (int k = 0; k < node->n_outputs; k++) {
      if (node->outputs[k] < 0) {
        free(out[k].data);
        continue;
      }
      vals[node->outputs[k]] = out[k];
      owned[node->outputs[k]] = true;
    }
  }
  for (int k = 0; k < g->n_outputs && pass; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k);
    bytes = wq_test_read_file(path, &n);
    wq_value want;
    st = bytes ? wq_tensor_decode(bytes, n, &want, NULL, 0, &err) : WQ_ERR_IO;
    free(bytes);
    if (st != WQ_OK) {
      snprintf(why, cap, "output %d unreadable", k);
      pass = false;
      break;
    }
    char detail[256];
    if (!close_enough(&vals[g->outputs[k]], &want, detail, sizeof detail)) {
      snprintf(why, cap, "output %d: %.240s", k, detail);
      pass = false;
    }
    free(want.data);
  }
done:
  for (int t = 0; t < g->n_tensors; t++)
    if (owned[t])
      free(vals[t].data);
  free(vals);
  free(owned);
  wq_model_ir_free(ir);
  return pass;
}

#include <dirent.h>

static const char *const case_prefixes[] = {"test_basic_conv",
                                            "test_conv_",
                                            "test_gemm_",
                                            "test_matmul_",
                                            "test_maxpool_",
                                            "test_averagepool_",
                                            "test_globalaveragepool",
                                            "test_globalmaxpool",
                                            "test_resize_",
                                            "test_convtranspose",
                                            NULL};

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_conformance(void) {
  const char *shared = getenv("WQ_SHARED_DIR");
  if (!shared)
    shared = "/work/shared";
  char root[512];
  snprintf(root, sizeof root, "%s/onnx-node-tests", shared);
  DIR *d = opendir(root);
  CHECK_MSG(d != NULL, "cannot open %s", root);
  if (!d)
    return;
  char *names[1024];
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && count < 1024) {
    for (int p = 0; case_prefixes[p]; p++)
      if (strncmp(e->d_name, case_prefixes[p], strlen(case_prefixes[p])) == 0) {
        names[count++] = wq_strdup(e->d_name);
        break;
      }
  }
  closedir(d);
  qsort(names, (size_t)count, sizeof names[0], name_cmp);
  int passed = 0;
  for (int i = 0; i < count; i++) {
    char dir[1024], why[1024] = "";
    snprintf(dir, sizeof dir, "%.500s/%.300s", root, names[i]);
    bool ok = run_case(dir, why, sizeof why);
    CHECK_MSG(ok, "%s: %s", names[i], why);
    passed += ok;
    free(names[i]);
  }
  printf("conformance: %d/%d nn cases pass\n", passed, count);
  CHECK(count >= 70);
}

int main(void) {
  test_geometry();
  test_gemm_random();
  test_conv_random();
  test_conv_transpose_adjoint();
  test_conv_huge_scratch();
  test_pool_small();
  test_resize_small();
  test_conv_op_errors();
  test_matmul_gemm_ops();
  test_resize_op_infer();
  test_conformance();
  WQ_TEST_END();
}
