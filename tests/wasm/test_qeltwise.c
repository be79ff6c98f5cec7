/* SIMD int8 elementwise / data-movement kernels (kernels/qeltwise.h) and
 * the NHWC average pool vs their scalar references, bit for bit: QAdd/QMul
 * runs and broadcasts (also against the lowering's wq_int8_binary_ref),
 * the 256-entry lookup with every table the lowering builds, concat rows,
 * resize-nearest, depth-to-space. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_test.h"
#include "kernels/nhwc.h"
#include "kernels/qeltwise.h"
#include "kernels/ref/int8_eltwise_ref.h"
#include "kernels/ref/quant_ref.h"
#include "kernels/ref/ref_qeltwise.h"
#include "kernels/simd/nhwc_simd.h"
#include "kernels/simd/qeltwise_simd.h"

static wq_dtype random_q8(wq_ktest *t) { return wq_ktest_int(t, 0, 1) ? WQ_DT_UINT8 : WQ_DT_INT8; }
static int32_t q8_lo(wq_dtype d) { return d == WQ_DT_UINT8 ? 0 : -128; }
static int32_t q8_hi(wq_dtype d) { return d == WQ_DT_UINT8 ? 255 : 127; }

/* A zero point at qmin, qmax, the middle or anywhere. */
static int32_t random_zero_point(wq_ktest *t, wq_dtype d) {
  switch (wq_ktest_int(t, 0, 3)) {
  case 0: return q8_lo(d);
  case 1: return q8_hi(d);
  case 2: return (q8_lo(d) + q8_hi(d) + 1) / 2;
  default: return wq_ktest_int(t, q8_lo(d), q8_hi(d));
  }
}

static float random_scale(wq_ktest *t) {
  switch (wq_ktest_int(t, 0, 3)) {
  case 0: return 1.0f / (float)(1 << wq_ktest_int(t, 0, 10)); /* exact powers: many ties */
  case 1: return wq_ktest_float(t, 1e-5f, 1e-3f);
  default: return wq_ktest_float(t, 1e-3f, 0.2f);
  }
}

static void random_bytes(wq_ktest *t, uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    p[i] = (uint8_t)wq_ktest_u32(t);
}

static wq_qbinary_params random_binary(wq_ktest *t) {
  wq_qbinary_params p = {.mul = wq_ktest_int(t, 0, 1),
                         .a_dtype = random_q8(t),
                         .b_dtype = random_q8(t),
                         .y_dtype = random_q8(t)};
  p.a_scale = random_scale(t);
  p.b_scale = wq_ktest_int(t, 0, 3) == 0 ? p.a_scale : random_scale(t);
  p.a_zero_point = random_zero_point(t, p.a_dtype);
  p.b_zero_point = random_zero_point(t, p.b_dtype);
  p.y_zero_point = random_zero_point(t, p.y_dtype);
  /* y's scale near the result's range, so codes spread and some saturate */
  float range = p.mul ? 256.0f * p.a_scale * 256.0f * p.b_scale : 256.0f * (p.a_scale + p.b_scale);
  p.y_scale = range / 256.0f * wq_ktest_float(t, 0.3f, 2.0f);
  if (wq_ktest_int(t, 0, 5) == 0)
    p.y_scale = random_scale(t);
  p.y_min = q8_lo(p.y_dtype);
  p.y_max = q8_hi(p.y_dtype);
  if (wq_ktest_int(t, 0, 3) == 0) { /* a fused relu / clip */
    p.y_min = wq_ktest_int(t, p.y_min, p.y_zero_point);
    p.y_max = wq_ktest_int(t, p.y_zero_point, p.y_max);
  }
  return p;
}

static void describe_binary(const wq_qbinary_params *p, char *what, size_t cap, const char *extra) {
  snprintf(what, cap, "%s %s a=%s(%g,%d) b=%s(%g,%d) y=%s(%g,%d)[%d,%d] %s",
           p->mul ? "QMul" : "QAdd", extra, wq_dtype_name(p->a_dtype), p->a_scale,
           (int)p->a_zero_point, wq_dtype_name(p->b_dtype), p->b_scale, (int)p->b_zero_point,
           wq_dtype_name(p->y_dtype), p->y_scale, (int)p->y_zero_point, (int)p->y_min,
           (int)p->y_max, "");
}

static void test_binary_rows(wq_ktest *t) {
  char what[300], shape[64];
  for (int c = 0; c < 150; c++) {
    wq_qbinary_params p = random_binary(t);
    const int64_t n = wq_ktest_int(t, 1, 300);
    const int a_step = wq_ktest_int(t, 0, 3) != 0, b_step = wq_ktest_int(t, 0, 3) != 0;
    uint8_t *a = malloc((size_t)n), *b = malloc((size_t)n), *yr = malloc((size_t)n),
            *ys = malloc((size_t)n);
    random_bytes(t, a, n);
    random_bytes(t, b, n);
    wq_ref_qbinary_row(&p, n, a, a_step, b, b_step, yr);
    wq_simd_qbinary_row(&p, n, a, a_step, b, b_step, ys);
    snprintf(shape, sizeof shape, "row n=%lld steps %d,%d", (long long)n, a_step, b_step);
    describe_binary(&p, what, sizeof what, shape);
    wq_ktest_case(t, memcmp(yr, ys, (size_t)n) == 0, what);
    /* In place (y is a's buffer, as the arena may place it). */
    if (a_step) {
      memcpy(ys, a, (size_t)n);
      wq_simd_qbinary_row(&p, n, ys, a_step, b, b_step, ys);
      snprintf(shape, sizeof shape, "row n=%lld steps %d,%d in place", (long long)n, a_step,
               b_step);
      describe_binary(&p, what, sizeof what, shape);
      wq_ktest_case(t, memcmp(yr, ys, (size_t)n) == 0, what);
    }
    free(a), free(b), free(yr), free(ys);
  }
}

/* Moves v's codes (its dims, row-major in `declared`) into its layout
 * (to_layout) or back. */
static void relayout(const wq_value *v, const uint8_t *from, uint8_t *to, bool to_layout) {
  int64_t strides[WQ_MAX_RANK], at[WQ_MAX_RANK] = {0}, placed = 0;
  wq_value_strides(v, strides);
  const int64_t n = wq_value_numel(v);
  for (int64_t i = 0; i < n; i++) {
    if (to_layout)
      to[placed] = from[i];
    else
      to[i] = from[placed];
    for (int d = v->rank - 1; d >= 0; d--) {
      placed += strides[d];
      if (++at[d] < v->dims[d])
        break;
      placed -= strides[d] * v->dims[d];
      at[d] = 0;
    }
  }
}

/* Gives an operand of rank >= 3 a random layout record and its codes in
 * that layout (a new buffer replacing v->data, freed by the caller). */
static void random_layout(wq_ktest *t, wq_value *v) {
  if (v->rank < 3 || wq_ktest_int(t, 0, 1) == 0)
    return;
  v->layout.order = WQ_ORDER_CHANNELS_LAST;
  const int64_t n = wq_value_numel(v);
  uint8_t *moved = malloc((size_t)n + 1);
  relayout(v, v->data, moved, true);
  memcpy(v->data, moved, (size_t)n);
  free(moved);
}

/* Broadcast shapes (equal, per-channel on NHWC, scalar, lower rank, mixed)
 * through wq_qbinary vs the lowering's table-driven reference; half the
 * cases with a, b and y each in a random layout (declared or
 * channels-last), which wq_qbinary reads through their records. */
static void test_binary_broadcast(wq_ktest *t) {
  char what[300], shape[200];
  for (int c = 0; c < 240; c++) {
    wq_qbinary_params p = random_binary(t);
    wq_value y = {.dtype = p.y_dtype, .rank = wq_ktest_int(t, 1, 4)};
    for (int d = 0; d < y.rank; d++)
      y.dims[d] = d == y.rank - 1 ? wq_ktest_int(t, 1, 67) : wq_ktest_int(t, 1, 9);
    wq_value a = {.dtype = p.a_dtype, .rank = y.rank}, b = {.dtype = p.b_dtype, .rank = y.rank};
    const int pattern = wq_ktest_int(t, 0, 4);
    for (int d = 0; d < y.rank; d++) {
      a.dims[d] = y.dims[d];
      switch (pattern) {
      case 0: b.dims[d] = y.dims[d]; break;                             /* equal shapes */
      case 1: b.dims[d] = d == y.rank - 1 ? y.dims[d] : 1; break;       /* per channel, NHWC */
      case 2: b.dims[d] = 1; break;                                     /* scalar */
      case 3: b.dims[d] = wq_ktest_int(t, 0, 1) ? y.dims[d] : 1; break; /* mixed */
      default:
        b.dims[d] = wq_ktest_int(t, 0, 1) ? y.dims[d] : 1;
        a.dims[d] = b.dims[d] == 1 ? y.dims[d] : (wq_ktest_int(t, 0, 1) ? y.dims[d] : 1);
      }
    }
    if (wq_ktest_int(t, 0, 3) == 0) { /* drop b's leading ones: a lower rank */
      int lead = 0;
      while (lead < b.rank - 1 && b.dims[lead] == 1)
        lead++;
      memmove(b.dims, b.dims + lead, sizeof(int64_t) * (size_t)(b.rank - lead));
      b.rank -= lead;
    }
    if (wq_ktest_int(t, 0, 1)) { /* swap operands */
      wq_value tmp = a;
      a = b;
      b = tmp;
      wq_dtype td = p.a_dtype;
      p.a_dtype = p.b_dtype;
      p.b_dtype = td;
      float ts = p.a_scale;
      p.a_scale = p.b_scale;
      p.b_scale = ts;
      int32_t tz = p.a_zero_point;
      p.a_zero_point = p.b_zero_point;
      p.b_zero_point = tz;
    }
    const int64_t na = wq_value_numel(&a), nb = wq_value_numel(&b), ny = wq_value_numel(&y);
    uint8_t *ad = malloc((size_t)na), *bd = malloc((size_t)nb), *yr = malloc((size_t)ny),
            *ys = malloc((size_t)ny);
    random_bytes(t, ad, na);
    random_bytes(t, bd, nb);
    a.data = ad;
    b.data = bd;
    float a_real[256], b_real[256];
    wq_int8_dequant_table(p.a_dtype, p.a_scale, p.a_zero_point, a_real);
    wq_int8_dequant_table(p.b_dtype, p.b_scale, p.b_zero_point, b_real);
    wq_int8_binary_params rp = {.kind = p.mul ? WQ_INT8_MUL : WQ_INT8_ADD,
                                .a_real = a_real,
                                .b_real = b_real,
                                .y_scale = p.y_scale,
                                .y_zero_point = p.y_zero_point,
                                .y_min = p.y_min,
                                .y_max = p.y_max,
                                .y_dtype = p.y_dtype};
    y.data = yr;
    wq_int8_binary_ref(&rp, &a, &b, &y);
    const bool layouts = c % 2 == 1;
    if (layouts) {
      random_layout(t, &a);
      random_layout(t, &b);
      if (y.rank >= 3 && wq_ktest_int(t, 0, 1))
        y.layout.order = WQ_ORDER_CHANNELS_LAST;
    }
    uint8_t *yl = malloc((size_t)ny + 1);
    y.data = yl;
    wq_qbinary(&p, &a, &b, &y);
    relayout(&y, yl, ys, false);
    free(yl);
    int len = snprintf(shape, sizeof shape, "broadcast%s y%s[", layouts ? " layouts" : "",
                       wq_layout_name(y.layout, y.rank));
    for (int d = 0; d < y.rank; d++)
      len += snprintf(shape + len, sizeof shape - (size_t)len, "%lld,", (long long)y.dims[d]);
    len += snprintf(shape + len, sizeof shape - (size_t)len, "] a%s[",
                    wq_layout_name(a.layout, a.rank));
    for (int d = 0; d < a.rank; d++)
      len += snprintf(shape + len, sizeof shape - (size_t)len, "%lld,", (long long)a.dims[d]);
    len += snprintf(shape + len, sizeof shape - (size_t)len, "] b%s[",
                    wq_layout_name(b.layout, b.rank));
    for (int d = 0; d < b.rank; d++)
      len += snprintf(shape + len, sizeof shape - (size_t)len, "%lld,", (long long)b.dims[d]);
    snprintf(shape + len, sizeof shape - (size_t)len, "]");
    describe_binary(&p, what, sizeof what, shape);
    wq_ktest_case(t, memcmp(yr, ys, (size_t)ny) == 0, what);
    free(ad), free(bd), free(yr), free(ys);
  }
}

typedef enum { FN_RELU, FN_CLIP, FN_SIGMOID, FN_HARDSWISH, FN_TANH, FN_REQUANT, FN_RANDOM } lut_fn;
static const char *const FN_NAMES[] = {"relu", "clip",    "sigmoid", "hardswish",
                                       "tanh", "requant", "random"};

/* The table the lowering builds: quantize_y(f(dequantize_x(q))). */
static void build_table(wq_ktest *t, lut_fn fn, wq_dtype x_dtype, wq_dtype y_dtype,
                        uint8_t *table) {
  float real[256];
  wq_int8_dequant_table(x_dtype, random_scale(t), random_zero_point(t, x_dtype), real);
  const float y_scale = random_scale(t) * 4.0f;
  const int32_t y_zp = random_zero_point(t, y_dtype);
  for (int i = 0; i < 256; i++) {
    float v = real[i];
    switch (fn) {
    case FN_RELU: v = v > 0 ? v : 0; break;
    case FN_CLIP: v = v < -1 ? -1 : (v > 1 ? 1 : v); break;
    case FN_SIGMOID: v = 1.0f / (1.0f + expf(-v)); break;
    case FN_HARDSWISH: {
      float r = v + 3.0f;
      r = r < 0 ? 0 : (r > 6 ? 6 : r);
      v = v * r / 6.0f;
      break;
    }
    case FN_TANH: v = tanhf(v); break;
    default: break;
    }
    int32_t q = wq_ref_quantize_value(v, y_scale, y_zp, q8_lo(y_dtype), q8_hi(y_dtype));
    table[i] = (uint8_t)q;
    if (fn == FN_RANDOM)
      table[i] = (uint8_t)wq_ktest_u32(t);
  }
}

static void test_lookup(wq_ktest *t) {
  char what[200];
  for (int c = 0; c < 70; c++) {
    const lut_fn fn = (lut_fn)(c % 7);
    const wq_dtype xd = random_q8(t);
    uint8_t table[256];
    build_table(t, fn, xd, random_q8(t), table);
    const int64_t n = wq_ktest_int(t, 0, 400);
    uint8_t *x = malloc((size_t)n + 1), *yr = malloc((size_t)n + 1), *ys = malloc((size_t)n + 1);
    random_bytes(t, x, n);
    wq_ref_lookup_q8(table, xd == WQ_DT_INT8, n, x, yr);
    wq_simd_lookup_q8(table, xd == WQ_DT_INT8, n, x, ys);
    int ok = memcmp(yr, ys, (size_t)n) == 0;
    for (int64_t i = 0; i < n && ok; i++) /* and the lowering's reference */
      ok = yr[i] == table[wq_int8_table_index(xd, x, i)];
    snprintf(what, sizeof what, "lookup %s n=%lld x=%s", FN_NAMES[fn], (long long)n,
             wq_dtype_name(xd));
    wq_ktest_case(t, ok, what);
    free(x), free(yr), free(ys);
  }
}

static void test_copy_rows(wq_ktest *t) {
  char what[200];
  for (int c = 0; c < 60; c++) {
    const int64_t rows = wq_ktest_int(t, 1, 40), len = wq_ktest_int(t, 0, 67);
    const int64_t xs = len + wq_ktest_int(t, 0, 5), ys = len + wq_ktest_int(t, 0, 70);
    const bool use_table = wq_ktest_int(t, 0, 1), x_signed = wq_ktest_int(t, 0, 1);
    uint8_t table[256];
    random_bytes(t, table, 256);
    const size_t xb = (size_t)(rows * xs), yb = (size_t)(rows * ys);
    uint8_t *x = malloc(xb), *yr = malloc(yb), *ysd = malloc(yb);
    random_bytes(t, x, (int64_t)xb);
    memset(yr, 0x5A, yb);
    memset(ysd, 0x5A, yb); /* bytes between rows must stay untouched */
    wq_ref_copy_rows_q8(rows, len, xs, ys, use_table ? table : NULL, x_signed, x, yr);
    wq_simd_copy_rows_q8(rows, len, xs, ys, use_table ? table : NULL, x_signed, x, ysd);
    snprintf(what, sizeof what, "concat rows=%lld len=%lld strides %lld,%lld %s", (long long)rows,
             (long long)len, (long long)xs, (long long)ys, use_table ? "requantized" : "copied");
    wq_ktest_case(t, memcmp(yr, ysd, yb) == 0, what);
    free(x), free(yr), free(ysd);
  }
}

/* Nearest source index of output o for in -> out (asymmetric, floor). */
static int32_t nearest_of(int64_t o, int64_t in, int64_t out) {
  int64_t s = o * in / out;
  return (int32_t)(s < in ? s : in - 1);
}

static void test_resize(wq_ktest *t) {
  char what[200];
  for (int c = 0; c < 50; c++) {
    wq_resize_nhwc r = {.batch = wq_ktest_int(t, 1, 2),
                        .in_h = wq_ktest_int(t, 1, 9),
                        .in_w = wq_ktest_int(t, 1, 9),
                        .channels = wq_ktest_int(t, 1, 67)};
    const int up = wq_ktest_int(t, 0, 2);
    r.out_h = up == 0 ? wq_ktest_int(t, 1, 12) : r.in_h * (up + 1);
    r.out_w = up == 0 ? wq_ktest_int(t, 1, 12) : r.in_w * (up + 1);
    int32_t *sh = malloc(sizeof(int32_t) * (size_t)r.out_h),
            *sw = malloc(sizeof(int32_t) * (size_t)r.out_w);
    const bool shuffled = wq_ktest_int(t, 0, 3) == 0; /* any valid indices */
    for (int64_t o = 0; o < r.out_h; o++)
      sh[o] = shuffled ? wq_ktest_int(t, 0, (int32_t)r.in_h - 1) : nearest_of(o, r.in_h, r.out_h);
    for (int64_t o = 0; o < r.out_w; o++)
      sw[o] = shuffled ? wq_ktest_int(t, 0, (int32_t)r.in_w - 1) : nearest_of(o, r.in_w, r.out_w);
    r.src_h = sh;
    r.src_w = sw;
    const size_t xb = (size_t)(r.batch * r.in_h * r.in_w * r.channels),
                 yb = (size_t)(r.batch * r.out_h * r.out_w * r.channels);
    uint8_t *x = malloc(xb), *yr = malloc(yb), *ys = malloc(yb);
    random_bytes(t, x, (int64_t)xb);
    wq_ref_resize_nearest_nhwc_q8(&r, x, yr);
    wq_simd_resize_nearest_nhwc_q8(&r, x, ys);
    snprintf(what, sizeof what, "resize nearest %lldx%lld -> %lldx%lld c=%lld n=%lld",
             (long long)r.in_h, (long long)r.in_w, (long long)r.out_h, (long long)r.out_w,
             (long long)r.channels, (long long)r.batch);
    wq_ktest_case(t, memcmp(yr, ys, yb) == 0, what);
    free(sh), free(sw), free(x), free(yr), free(ys);
  }
}

static void test_depth_to_space(wq_ktest *t) {
  char what[200];
  for (int c = 0; c < 40; c++) {
    const int64_t block = wq_ktest_int(t, 1, 4), oc = wq_ktest_int(t, 1, 20);
    const int64_t n = wq_ktest_int(t, 1, 2), h = wq_ktest_int(t, 1, 7), w = wq_ktest_int(t, 1, 7);
    const int64_t ch = oc * block * block;
    const bool crd = wq_ktest_int(t, 0, 1);
    const size_t bytes = (size_t)(n * h * w * ch);
    uint8_t *x = malloc(bytes), *yr = malloc(bytes), *ys = malloc(bytes);
    random_bytes(t, x, (int64_t)bytes);
    wq_ref_depth_to_space_nhwc_q8(n, h, w, ch, block, crd, x, yr);
    wq_simd_depth_to_space_nhwc_q8(n, h, w, ch, block, crd, x, ys);
    snprintf(what, sizeof what, "depth_to_space %s b=%lld %lldx%lldx%lld", crd ? "CRD" : "DCR",
             (long long)block, (long long)h, (long long)w, (long long)ch);
    wq_ktest_case(t, memcmp(yr, ys, bytes) == 0, what);
    free(x), free(yr), free(ys);
  }
}

static void test_avgpool(wq_ktest *t) {
  char what[240];
  for (int c = 0; c < 60; c++) {
    const bool big = wq_ktest_int(t, 0, 5) == 0; /* windows past 128 taps */
    wq_pool2d p = {.batch = wq_ktest_int(t, 1, 2),
                   .channels = wq_ktest_int(t, 1, 67),
                   .in_h = big ? wq_ktest_int(t, 12, 16) : wq_ktest_int(t, 1, 9),
                   .in_w = big ? wq_ktest_int(t, 12, 16) : wq_ktest_int(t, 1, 9),
                   .kernel_h = big ? wq_ktest_int(t, 11, 13) : wq_ktest_int(t, 1, 3),
                   .kernel_w = big ? wq_ktest_int(t, 11, 13) : wq_ktest_int(t, 1, 3),
                   .stride_h = wq_ktest_int(t, 1, 2),
                   .stride_w = wq_ktest_int(t, 1, 2),
                   .dil_h = wq_ktest_int(t, 0, 3) == 0 ? 2 : 1,
                   .dil_w = wq_ktest_int(t, 0, 3) == 0 ? 2 : 1,
                   .pad_top = wq_ktest_int(t, 0, 1),
                   .pad_left = wq_ktest_int(t, 0, 1),
                   .pad_bottom = wq_ktest_int(t, 0, 2),
                   .pad_right = wq_ktest_int(t, 0, 2)};
    p.out_h = (p.in_h + p.pad_top + p.pad_bottom - (p.kernel_h - 1) * p.dil_h - 1) / p.stride_h + 1;
    p.out_w = (p.in_w + p.pad_left + p.pad_right - (p.kernel_w - 1) * p.dil_w - 1) / p.stride_w + 1;
    if (p.out_h < 1 || p.out_w < 1)
      continue;
    wq_int8_pool_quant q = {.x_dtype = random_q8(t), .y_dtype = random_q8(t)};
    q.x_scale = random_scale(t);
    q.y_scale = q.x_scale * wq_ktest_float(t, 0.25f, 4.0f);
    q.x_zero_point = random_zero_point(t, q.x_dtype);
    q.y_zero_point = random_zero_point(t, q.y_dtype);
    q.y_min = q8_lo(q.y_dtype);
    q.y_max = q8_hi(q.y_dtype);
    const bool include_pad = wq_ktest_int(t, 0, 1);
    const size_t xb = (size_t)(p.batch * p.in_h * p.in_w * p.channels),
                 yb = (size_t)(p.batch * p.out_h * p.out_w * p.channels);
    uint8_t *x = malloc(xb), *yr = malloc(yb), *ys = malloc(yb);
    random_bytes(t, x, (int64_t)xb);
    wq_ref_qavgpool_nhwc(&p, include_pad, &q, x, yr);
    wq_simd_qavgpool_nhwc(&p, include_pad, &q, x, ys);
    snprintf(what, sizeof what,
             "average pool %lldx%lld c=%lld k=%lldx%lld s=%lldx%lld d=%lldx%lld%s %s->%s",
             (long long)p.in_h, (long long)p.in_w, (long long)p.channels, (long long)p.kernel_h,
             (long long)p.kernel_w, (long long)p.stride_h, (long long)p.stride_w,
             (long long)p.dil_h, (long long)p.dil_w, include_pad ? " include_pad" : "",
             wq_dtype_name(q.x_dtype), wq_dtype_name(q.y_dtype));
    wq_ktest_case(t, memcmp(yr, ys, yb) == 0, what);
    free(x), free(yr), free(ys);
  }
}

void wq_ktest_qeltwise(wq_ktest *t) {
  test_binary_rows(t);
  test_binary_broadcast(t);
  test_lookup(t);
  test_copy_rows(t);
  test_resize(t);
  test_depth_to_space(t);
  test_avgpool(t);
}
