/* The quantized ops through the registry (infer + run) with exact integer
 * results derived by hand from the ONNX spec: round half to even, saturation
 * at both ends, per-axis/blocked/per-row/per-column parameters, zero points
 * at qmin, qmax and in the middle. The derivation is in each comment. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "wq_test.h"

static int node_io[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static wq_node make_node(const char *op_type, int opset, int n_in, int n_out, wq_attr *attrs,
                         int n_attrs) {
  wq_node n = {.name = (char *)"node0",
               .op_type = (char *)op_type,
               .domain = (char *)"",
               .opset = opset,
               .inputs = node_io,
               .n_inputs = n_in,
               .outputs = node_io,
               .n_outputs = n_out,
               .attrs = attrs,
               .n_attrs = n_attrs};
  n.op = wq_op_find("", op_type);
  return n;
}

static wq_attr attr_int(const char *name, int64_t v) {
  return (wq_attr){.name = (char *)name, .type = WQ_ATTR_INT, .i = v};
}

static wq_attr attr_ints(const char *name, int64_t *v, size_t n) {
  return (wq_attr){.name = (char *)name, .type = WQ_ATTR_INTS, .ints = v, .count = n};
}

static wq_attr attr_str(const char *name, const char *s) {
  return (wq_attr){
      .name = (char *)name, .type = WQ_ATTR_STRING, .s = (char *)s, .s_len = strlen(s)};
}

static wq_value val(wq_dtype dt, const void *data, int rank, const int64_t *dims) {
  wq_value v = {.dtype = dt, .rank = rank, .data = (void *)data};
  if (rank > 0)
    memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  return v;
}

static const int64_t D1[1] = {1};
#define SCALAR_F(p) val(WQ_DT_FLOAT, p, 0, D1)

/* infer + allocate + run; out[k].data is malloc'ed (caller frees). */
static wq_status run_node(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  memset(out, 0, sizeof(wq_value) * (size_t)node->n_outputs);
  wq_error_clear(err);
  if (!node->op)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "not registered");
  wq_status st = node->op->infer(node, in, out, err);
  if (st != WQ_OK)
    return st;
  for (int k = 0; k < node->n_outputs; k++) {
    size_t nb = wq_value_nbytes(&out[k]);
    out[k].data = calloc(nb ? nb : 1, 1);
  }
  st = node->op->run(node, in, out, err);
  if (st != WQ_OK)
    for (int k = 0; k < node->n_outputs; k++) {
      free(out[k].data);
      out[k].data = NULL;
    }
  return st;
}

static void free_outputs(wq_value *out, int n) {
  for (int k = 0; k < n; k++) {
    free(out[k].data);
    out[k].data = NULL;
  }
}

static void check_ints(const wq_value *v, const int64_t *want, int64_t n, const char *what) {
  CHECK_MSG(wq_value_numel(v) == n, "%s: %lld elements, want %lld", what,
            (long long)wq_value_numel(v), (long long)n);
  for (int64_t i = 0; i < n && i < wq_value_numel(v); i++)
    CHECK_MSG(wq_value_get_int(v, i) == want[i], "%s[%lld] = %lld, want %lld", what, (long long)i,
              (long long)wq_value_get_int(v, i), (long long)want[i]);
}

/* ---- QuantizeLinear ---------------------------------------------------- */

/* Quantizes x (per-tensor) and compares. */
static void quantize_case(wq_dtype dt, const void *zp, float scale, const float *x, int n,
                          const int64_t *want, const char *what) {
  wq_node node = make_node("QuantizeLinear", 13, 3, 1, NULL, 0);
  int64_t dims[1] = {n};
  wq_value in[3] = {val(WQ_DT_FLOAT, x, 1, dims), SCALAR_F(&scale), val(dt, zp, 0, D1)};
  wq_value out[1];
  wq_error err;
  wq_status st = run_node(&node, in, out, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s", what, err.message);
  if (st != WQ_OK)
    return;
  CHECK(out[0].dtype == dt && out[0].rank == 1 && out[0].dims[0] == n);
  check_ints(&out[0], want, n, what);
  free_outputs(out, 1);
}

static void test_quantize_rounding_and_saturation(void) {
  /* Ties with scale 0.5: x/0.5 = 0.5, 1.5, 2.5, -0.5, -1.5, -2.5 round to
   * even: 0, 2, 2, 0, -2, -2 (roundf would give 1, 2, 3, -1, -2, -3). */
  float ties[6] = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, -1.25f};
  int8_t zp0 = 0;
  int64_t want_ties[6] = {0, 2, 2, 0, -2, -2};
  quantize_case(WQ_DT_INT8, &zp0, 0.5f, ties, 6, want_ties, "int8 ties");

  /* int8, zp 0, scale 1: 127.5 -> 128 (even) -> saturates to 127;
   * -128.5 -> -128 (even) stays; -129 and -1e9 saturate to -128; 1e9 and
   * +inf to 127; -inf to -128. */
  float sat[7] = {127.5f, 128.0f, -128.5f, -129.0f, 1e9f, INFINITY, -INFINITY};
  int64_t want_sat[7] = {127, 127, -128, -128, 127, 127, -128};
  quantize_case(WQ_DT_INT8, &zp0, 1.0f, sat, 7, want_sat, "int8 saturation");

  /* uint8, zp in the middle (128): 0.5->0, 1.5->2, 2.5->2, -0.5->0,
   * -1.5->-2, then +128; 200+128 and -200+128 saturate. */
  uint8_t zp128 = 128;
  float mid[7] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 200.0f, -200.0f};
  int64_t want_mid[7] = {128, 130, 130, 128, 126, 255, 0};
  quantize_case(WQ_DT_UINT8, &zp128, 1.0f, mid, 7, want_mid, "uint8 zp 128");

  /* uint8, zp at qmin (0): -1 saturates to 0; 0.5 -> 0; 255.5 -> 256
   * (even) -> 255; 254.5 -> 254 (even). */
  uint8_t zpmin = 0;
  float lo[4] = {-1.0f, 0.5f, 255.5f, 254.5f};
  int64_t want_lo[4] = {0, 0, 255, 254};
  quantize_case(WQ_DT_UINT8, &zpmin, 1.0f, lo, 4, want_lo, "uint8 zp qmin");

  /* uint8, zp at qmax (255): 0 -> 255; 1 -> 256 saturates; -0.5 -> 0 ->
   * 255; -1.5 -> -2 -> 253; -300 -> 0. */
  uint8_t zpmax = 255;
  float hi[5] = {0.0f, 1.0f, -0.5f, -1.5f, -300.0f};
  int64_t want_hi[5] = {255, 255, 255, 253, 0};
  quantize_case(WQ_DT_UINT8, &zpmax, 1.0f, hi, 5, want_hi, "uint8 zp qmax");

  /* int8, zp at qmin (-128): 0 -> -128; 254.6 -> 255 -> 127; 255.5 -> 256
   * -> 128 saturates to 127; -3 -> -131 saturates to -128. */
  int8_t zpi8min = -128;
  float i8lo[4] = {0.0f, 254.6f, 255.5f, -3.0f};
  int64_t want_i8lo[4] = {-128, 127, 127, -128};
  quantize_case(WQ_DT_INT8, &zpi8min, 1.0f, i8lo, 4, want_i8lo, "int8 zp qmin");

  /* int8, zp at qmax (127): -0.5 -> 0 -> 127; -1.5 -> -2 -> 125; 1 -> 128
   * saturates; -300 saturates to -128. */
  int8_t zpi8max = 127;
  float i8hi[4] = {-0.5f, -1.5f, 1.0f, -300.0f};
  int64_t want_i8hi[4] = {127, 125, 127, -128};
  quantize_case(WQ_DT_INT8, &zpi8max, 1.0f, i8hi, 4, want_i8hi, "int8 zp qmax");

  /* NaN never reaches an undefined conversion: it maps to qmin. */
  float nan_x[1] = {NAN};
  int64_t want_nan[1] = {-128};
  quantize_case(WQ_DT_INT8, &zp0, 1.0f, nan_x, 1, want_nan, "int8 NaN");
}

static void test_quantize_per_axis_and_blocked(void) {
  wq_error err;
  wq_value out[1];
  /* Per-axis (opset 13, axis 0): x [2,3] = {1,2,3, 1,2,3}, scale {1, 2},
   * zp {0, -10}: row 0 -> 1,2,3; row 1: 0.5->0, 1->1, 1.5->2, minus 10. */
  {
    wq_attr attrs[1] = {attr_int("axis", 0)};
    wq_node node = make_node("QuantizeLinear", 13, 3, 1, attrs, 1);
    float x[6] = {1, 2, 3, 1, 2, 3}, scale[2] = {1, 2};
    int8_t zp[2] = {0, -10};
    int64_t xd[2] = {2, 3}, sd[1] = {2};
    wq_value in[3] = {val(WQ_DT_FLOAT, x, 2, xd), val(WQ_DT_FLOAT, scale, 1, sd),
                      val(WQ_DT_INT8, zp, 1, sd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[6] = {1, 2, 3, -10, -9, -8};
    check_ints(&out[0], want, 6, "per-axis");
    free_outputs(out, 1);
  }
  /* Blocked (opset 21, axis 1, block_size 2): x [2,4] = {1..8}, scale
   * [2,2] = {1,2,4,8}, zp uint8 {0,10,20,30}.
   * row 0: 1/1, 2/1 | 3/2=1.5->2, 4/2=2, +10 -> 1, 2, 12, 12
   * row 1: 5/4=1.25->1, 6/4=1.5->2, +20 | 7/8->1, 8/8=1, +30 -> 21, 22, 31, 31 */
  {
    wq_attr attrs[2] = {attr_int("axis", 1), attr_int("block_size", 2)};
    wq_node node = make_node("QuantizeLinear", 21, 3, 1, attrs, 2);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, scale[4] = {1, 2, 4, 8};
    uint8_t zp[4] = {0, 10, 20, 30};
    int64_t xd[2] = {2, 4}, sd[2] = {2, 2};
    wq_value in[3] = {val(WQ_DT_FLOAT, x, 2, xd), val(WQ_DT_FLOAT, scale, 2, sd),
                      val(WQ_DT_UINT8, zp, 2, sd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[8] = {1, 2, 12, 12, 21, 22, 31, 31};
    check_ints(&out[0], want, 8, "blocked");
    free_outputs(out, 1);
  }
  /* output_dtype int16 without a zero point (opset 21): 40000 and -40000
   * saturate, 1.5 -> 2, 2.5 -> 2. */
  {
    wq_attr attrs[1] = {attr_int("output_dtype", WQ_DT_INT16)};
    wq_node node = make_node("QuantizeLinear", 21, 2, 1, attrs, 1);
    float x[4] = {40000, -40000, 1.5f, 2.5f}, scale = 1;
    int64_t xd[1] = {4};
    wq_value in[2] = {val(WQ_DT_FLOAT, x, 1, xd), SCALAR_F(&scale)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].dtype == WQ_DT_INT16);
    int64_t want[4] = {32767, -32768, 2, 2};
    check_ints(&out[0], want, 4, "int16 output_dtype");
    free_outputs(out, 1);
  }
  /* No zero point and no output_dtype: uint8, zp 0; -1 saturates to 0. */
  {
    wq_node node = make_node("QuantizeLinear", 10, 2, 1, NULL, 0);
    float x[3] = {-1, 3.5f, 300}, scale = 1;
    int64_t xd[1] = {3};
    wq_value in[2] = {val(WQ_DT_FLOAT, x, 1, xd), SCALAR_F(&scale)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].dtype == WQ_DT_UINT8);
    int64_t want[3] = {0, 4, 255};
    check_ints(&out[0], want, 3, "default uint8");
    free_outputs(out, 1);
  }
}

/* ---- DequantizeLinear -------------------------------------------------- */

static void test_dequantize(void) {
  wq_error err;
  wq_value out[1];
  /* int8 per-tensor, scale 0.5, zp -1: (-128+1)*0.5, (0+1)*0.5, (127+1)*0.5 */
  {
    wq_node node = make_node("DequantizeLinear", 13, 3, 1, NULL, 0);
    int8_t x[3] = {-128, 0, 127}, zp = -1;
    float scale = 0.5f;
    int64_t xd[1] = {3};
    wq_value in[3] = {val(WQ_DT_INT8, x, 1, xd), SCALAR_F(&scale), val(WQ_DT_INT8, &zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const float *y = out[0].data;
    CHECK(out[0].dtype == WQ_DT_FLOAT);
    CHECK(y[0] == -63.5f && y[1] == 0.5f && y[2] == 64.0f);
    free_outputs(out, 1);
  }
  /* int32 (a bias) without zero point: 100000*0.25, -7*0.25 */
  {
    wq_node node = make_node("DequantizeLinear", 10, 2, 1, NULL, 0);
    int32_t x[2] = {100000, -7};
    float scale = 0.25f;
    int64_t xd[1] = {2};
    wq_value in[2] = {val(WQ_DT_INT32, x, 1, xd), SCALAR_F(&scale)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const float *y = out[0].data;
    CHECK(y[0] == 25000.0f && y[1] == -1.75f);
    free_outputs(out, 1);
  }
  /* uint8 per-axis, default axis 1, x [1,2,2]: channel 0 (scale 2, zp 10):
   * (10-10)*2, (20-10)*2; channel 1 (scale 0.5, zp 0): 30*0.5, 40*0.5 */
  {
    wq_node node = make_node("DequantizeLinear", 13, 3, 1, NULL, 0);
    uint8_t x[4] = {10, 20, 30, 40}, zp[2] = {10, 0};
    float scale[2] = {2, 0.5f};
    int64_t xd[3] = {1, 2, 2}, sd[1] = {2};
    wq_value in[3] = {val(WQ_DT_UINT8, x, 3, xd), val(WQ_DT_FLOAT, scale, 1, sd),
                      val(WQ_DT_UINT8, zp, 1, sd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const float *y = out[0].data;
    CHECK(y[0] == 0.0f && y[1] == 20.0f && y[2] == 15.0f && y[3] == 20.0f);
    free_outputs(out, 1);
  }
  /* A zero scale is rejected at infer, naming the tensor. */
  {
    wq_node node = make_node("DequantizeLinear", 13, 2, 1, NULL, 0);
    int8_t x[1] = {1};
    float scale = 0.0f;
    wq_value in[2] = {val(WQ_DT_INT8, x, 1, D1), SCALAR_F(&scale)};
    wq_status st = run_node(&node, in, out, &err);
    CHECK(st == WQ_ERR_INVALID_MODEL);
    CHECK_MSG(strstr(err.message, "DequantizeLinear: x_scale: scale[0] = 0 is not positive"), "%s",
              err.message);
    CHECK(strcmp(err.node, "node0") == 0);
  }
}

/* ---- QLinearMatMul ----------------------------------------------------- */

/* a [2,2] uint8 {1,2,3,4}, b [2,2] uint8 {2,0,1,3}, y uint8 zp 100, y scale 1. */
static void qlinear_matmul_case(const float *a_scale, const uint8_t *a_zp, int a_n,
                                const float *b_scale, const uint8_t *b_zp, int b_n,
                                const int64_t *want, const char *what) {
  wq_node node = make_node("QLinearMatMul", 10, 8, 1, NULL, 0);
  uint8_t a[4] = {1, 2, 3, 4}, b[4] = {2, 0, 1, 3}, y_zp = 100;
  float y_scale = 1.0f;
  int64_t md[2] = {2, 2}, an[1] = {a_n}, bn[1] = {b_n};
  wq_value in[8] = {
      val(WQ_DT_UINT8, a, 2, md), val(WQ_DT_FLOAT, a_scale, 1, an), val(WQ_DT_UINT8, a_zp, 1, an),
      val(WQ_DT_UINT8, b, 2, md), val(WQ_DT_FLOAT, b_scale, 1, bn), val(WQ_DT_UINT8, b_zp, 1, bn),
      SCALAR_F(&y_scale),         val(WQ_DT_UINT8, &y_zp, 0, D1)};
  wq_value out[1];
  wq_error err;
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s: %s", what, err.message);
  if (!out[0].data)
    return;
  CHECK(out[0].dtype == WQ_DT_UINT8 && out[0].rank == 2);
  check_ints(&out[0], want, 4, what);
  free_outputs(out, 1);
}

static void test_qlinear_matmul(void) {
  /* Per-tensor: A-1 = {0,1,2,3}, B-1 = {1,-1,0,2};
   * acc = [[0*1+1*0, 0*-1+1*2], [2*1+3*0, 2*-1+3*2]] = [[0,2],[2,4]];
   * multiplier 0.5*0.5/1 = 0.25 -> 0, 0.5, 0.5, 1 -> 0, 0, 0, 1 (ties to
   * even) -> +100. */
  float s05 = 0.5f;
  uint8_t z1 = 1;
  int64_t want_pt[4] = {100, 100, 100, 101};
  qlinear_matmul_case(&s05, &z1, 1, &s05, &z1, 1, want_pt, "per-tensor");

  /* Per-column b: scale {0.5, 1}, zp {1, 0}. B' columns: col 0 = {1, 0},
   * col 1 = {0, 3}. acc = [[0, 3], [2, 9]]; multipliers col 0: 0.25,
   * col 1: 0.5 -> 0, 1.5->2, 0.5->0, 4.5->4 -> +100. */
  float bs[2] = {0.5f, 1.0f};
  uint8_t bz[2] = {1, 0};
  int64_t want_col[4] = {100, 102, 100, 104};
  qlinear_matmul_case(&s05, &z1, 1, bs, bz, 2, want_col, "per-column b");

  /* Per-row a: scale {0.5, 1}, zp {1, 0}. A' rows: {0, 1}, {3, 4}; B' =
   * {1,-1,0,2}: acc = [[0, 2], [3, 5]]; multipliers row 0: 0.25, row 1:
   * 0.5 -> 0, 0.5->0, 1.5->2, 2.5->2 -> +100. A [K]-vector broadcast the
   * wrong way (seed 002) would give different rows here. */
  float as[2] = {0.5f, 1.0f};
  uint8_t az[2] = {1, 0};
  int64_t want_row[4] = {100, 100, 102, 102};
  qlinear_matmul_case(as, az, 2, &s05, &z1, 1, want_row, "per-row a");

  /* Both: acc = A' (rows {0,1},{3,4}) x B' (cols {1,0},{0,3}) =
   * [[0, 3], [3, 12]]; multipliers sa[m]*sb[n]: [[0.25, 0.5], [0.5, 1]] ->
   * 0, 1.5->2, 1.5->2, 12 -> +100. */
  int64_t want_both[4] = {100, 102, 102, 112};
  qlinear_matmul_case(as, az, 2, bs, bz, 2, want_both, "per-row a, per-column b");

  /* int8 saturation at both ends, batched with broadcasting:
   * a [2,1,2] = {127,127, -128,-128}, b [2,1] = {127, 127}: acc 32258 ->
   * 127 and -32512 -> -128. */
  {
    wq_node node = make_node("QLinearMatMul", 21, 8, 1, NULL, 0);
    int8_t a[4] = {127, 127, -128, -128}, b[2] = {127, 127}, z = 0;
    float one = 1.0f;
    int64_t ad[3] = {2, 1, 2}, bd[2] = {2, 1};
    wq_value in[8] = {val(WQ_DT_INT8, a, 3, ad),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      val(WQ_DT_INT8, b, 2, bd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1)};
    wq_value out[1];
    wq_error err;
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 3 && out[0].dims[0] == 2 && out[0].dims[1] == 1 && out[0].dims[2] == 1);
    int64_t want[2] = {127, -128};
    check_ints(&out[0], want, 2, "int8 saturation");
    free_outputs(out, 1);
  }
  /* u8 x s8 with no intermediate saturation: a = {255, 255}, b = {127, 127}
   * -> acc 64770 exactly; y_scale 1000 -> 64.77 -> 65. (onnxruntime's
   * AVX2 u8s8 kernel saturates the pair sum at 32767 and gives 33; the spec
   * has no such step.) */
  {
    wq_node node = make_node("QLinearMatMul", 13, 8, 1, NULL, 0);
    uint8_t a[2] = {255, 255}, az = 0;
    int8_t b[2] = {127, 127}, bz = 0;
    uint8_t yz = 0;
    float one = 1.0f, ys = 1000.0f;
    int64_t ad[2] = {1, 2}, bd[2] = {2, 1};
    wq_value in[8] = {val(WQ_DT_UINT8, a, 2, ad),
                      SCALAR_F(&one),
                      val(WQ_DT_UINT8, &az, 0, D1),
                      val(WQ_DT_INT8, b, 2, bd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &bz, 0, D1),
                      SCALAR_F(&ys),
                      val(WQ_DT_UINT8, &yz, 0, D1)};
    wq_value out[1];
    wq_error err;
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[1] = {65};
    check_ints(&out[0], want, 1, "u8s8 exact accumulation");
    free_outputs(out, 1);
  }
  /* A float16 scale is unsupported, with the uniform message. */
  {
    wq_node node = make_node("QLinearMatMul", 21, 8, 1, NULL, 0);
    uint8_t a[4] = {0}, z = 0;
    uint16_t half = 0x3c00;
    float one = 1.0f;
    int64_t md[2] = {2, 2};
    wq_value in[8] = {val(WQ_DT_UINT8, a, 2, md),
                      val(WQ_DT_FLOAT16, &half, 0, D1),
                      val(WQ_DT_UINT8, &z, 0, D1),
                      val(WQ_DT_UINT8, a, 2, md),
                      SCALAR_F(&one),
                      val(WQ_DT_UINT8, &z, 0, D1),
                      SCALAR_F(&one),
                      val(WQ_DT_UINT8, &z, 0, D1)};
    wq_value out[1];
    wq_error err;
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "a_scale dtype float16 is not supported"), "%s", err.message);
  }
}

/* ---- MatMulInteger ----------------------------------------------------- */

static void test_matmul_integer(void) {
  wq_error err;
  wq_value out[1];
  /* A [2,3] = {1,2,3, 4,5,6} with per-row zp {1, 4} -> {0,1,2, 0,1,2};
   * B [3,2] = {1,0, 0,1, 1,1} with per-column zp {0, 1} -> col 0 {1,0,1},
   * col 1 {-1,0,0}. Y = [[2, 0], [2, 0]]. */
  {
    wq_node node = make_node("MatMulInteger", 10, 4, 1, NULL, 0);
    uint8_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, az[2] = {1, 4}, bz[2] = {0, 1};
    int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, zd[1] = {2};
    wq_value in[4] = {val(WQ_DT_UINT8, a, 2, ad), val(WQ_DT_UINT8, b, 2, bd),
                      val(WQ_DT_UINT8, az, 1, zd), val(WQ_DT_UINT8, bz, 1, zd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].dtype == WQ_DT_INT32);
    int64_t want[4] = {2, 0, 2, 0};
    check_ints(&out[0], want, 4, "MatMulInteger per-row/per-column");
    free_outputs(out, 1);
  }
  /* int8, no zero points, 1-D B: A [2,2] = {1,2,3,4}, B [2] = {1,-1} ->
   * {-1, -1}, shape [2]. */
  {
    wq_node node = make_node("MatMulInteger", 10, 2, 1, NULL, 0);
    int8_t a[4] = {1, 2, 3, 4}, b[2] = {1, -1};
    int64_t ad[2] = {2, 2}, bd[1] = {2};
    wq_value in[2] = {val(WQ_DT_INT8, a, 2, ad), val(WQ_DT_INT8, b, 1, bd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 1 && out[0].dims[0] == 2);
    int64_t want[2] = {-1, -1};
    check_ints(&out[0], want, 2, "MatMulInteger 1-D b");
    free_outputs(out, 1);
  }
  /* Broadcast batch: A [2,1,2] = {1,2, 3,4}, B [2,1] = {-128, 127}, zp 0:
   * {-128+254, -384+508} = {126, 124}. */
  {
    wq_node node = make_node("MatMulInteger", 10, 2, 1, NULL, 0);
    int8_t a[4] = {1, 2, 3, 4}, b[2] = {-128, 127};
    int64_t ad[3] = {2, 1, 2}, bd[2] = {2, 1};
    wq_value in[2] = {val(WQ_DT_INT8, a, 3, ad), val(WQ_DT_INT8, b, 2, bd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[2] = {126, 124};
    check_ints(&out[0], want, 2, "MatMulInteger batch");
    free_outputs(out, 1);
  }
  /* Inner dims that differ are a shape error. */
  {
    wq_node node = make_node("MatMulInteger", 10, 2, 1, NULL, 0);
    int8_t a[6] = {0}, b[6] = {0};
    int64_t ad[2] = {2, 3}, bd[2] = {2, 3};
    wq_value in[2] = {val(WQ_DT_INT8, a, 2, ad), val(WQ_DT_INT8, b, 2, bd)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_SHAPE);
    CHECK_MSG(strstr(err.message, "inner dims differ"), "%s", err.message);
  }
}

/* ---- ConvInteger / QLinearConv ----------------------------------------- */

static void test_conv_integer(void) {
  wq_error err;
  wq_value out[1];
  /* x [1,1,3,3] = {2..10}, x_zp 1 -> x' = 1..9; w 2x2 of ones; pads 1:
   * each output sums the in-bounds part of a 2x2 window (padding = zp):
   * row 0: 1, 1+2, 2+3, 3; row 1: 1+4, 1+2+4+5, 2+3+5+6, 3+6; ... */
  {
    int64_t pads[4] = {1, 1, 1, 1};
    wq_attr attrs[1] = {attr_ints("pads", pads, 4)};
    wq_node node = make_node("ConvInteger", 10, 3, 1, attrs, 1);
    uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1}, xz = 1;
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2};
    wq_value in[3] = {val(WQ_DT_UINT8, x, 4, xd), val(WQ_DT_UINT8, w, 4, wd),
                      val(WQ_DT_UINT8, &xz, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 4 && out[0].dims[2] == 4 && out[0].dims[3] == 4);
    int64_t want[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    check_ints(&out[0], want, 16, "ConvInteger pads");
    free_outputs(out, 1);
  }
  /* Per-output-channel w_zero_point: w [2,1,1,1] = {3, 5}, w_zp {1, 5} ->
   * w' = {2, 0}; x [1,1,1,2] = {10, 20} -> ch 0 {20, 40}, ch 1 {0, 0}. */
  {
    wq_node node = make_node("ConvInteger", 10, 4, 1, NULL, 0);
    uint8_t x[2] = {10, 20}, w[2] = {3, 5}, xz = 0, wz[2] = {1, 5};
    int64_t xd[4] = {1, 1, 1, 2}, wd[4] = {2, 1, 1, 1}, zd[1] = {2};
    wq_value in[4] = {val(WQ_DT_UINT8, x, 4, xd), val(WQ_DT_UINT8, w, 4, wd),
                      val(WQ_DT_UINT8, &xz, 0, D1), val(WQ_DT_UINT8, wz, 1, zd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[4] = {20, 40, 0, 0};
    check_ints(&out[0], want, 4, "ConvInteger per-channel w_zp");
    free_outputs(out, 1);
  }
  /* Dilation 2 on 3x3 x' = 1..9 (x_zp omitted), 2x2 ones: 1+3+7+9 = 20. */
  {
    int64_t dil[2] = {2, 2};
    wq_attr attrs[1] = {attr_ints("dilations", dil, 2)};
    wq_node node = make_node("ConvInteger", 10, 2, 1, attrs, 1);
    int8_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1};
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2};
    wq_value in[2] = {val(WQ_DT_INT8, x, 4, xd), val(WQ_DT_INT8, w, 4, wd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[1] = {20};
    check_ints(&out[0], want, 1, "ConvInteger dilation");
    free_outputs(out, 1);
  }
}

/* Runs a group-2, stride-2 QLinearConv with the given auto_pad on
 * x [1,2,3,3]: channel 0 = 1..9, channel 1 = all 1; w [2,1,2,2] ones;
 * all scales 1, zero points 0 (int8). */
static void qlinear_conv_autopad_case(const char *auto_pad, const int64_t *want) {
  int64_t strides[2] = {2, 2};
  wq_attr attrs[3] = {attr_int("group", 2), attr_ints("strides", strides, 2),
                      attr_str("auto_pad", auto_pad)};
  wq_node node = make_node("QLinearConv", 10, 8, 1, attrs, 3);
  int8_t x[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  int8_t w[8] = {1, 1, 1, 1, 1, 1, 1, 1}, z = 0;
  float one = 1.0f;
  int64_t xd[4] = {1, 2, 3, 3}, wd[4] = {2, 1, 2, 2};
  wq_value in[8] = {val(WQ_DT_INT8, x, 4, xd),
                    SCALAR_F(&one),
                    val(WQ_DT_INT8, &z, 0, D1),
                    val(WQ_DT_INT8, w, 4, wd),
                    SCALAR_F(&one),
                    val(WQ_DT_INT8, &z, 0, D1),
                    SCALAR_F(&one),
                    val(WQ_DT_INT8, &z, 0, D1)};
  wq_value out[1];
  wq_error err;
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s: %s", auto_pad, err.message);
  if (!out[0].data)
    return;
  CHECK(out[0].rank == 4 && out[0].dims[1] == 2 && out[0].dims[2] == 2 && out[0].dims[3] == 2);
  check_ints(&out[0], want, 8, auto_pad);
  free_outputs(out, 1);
}

static void test_qlinear_conv(void) {
  wq_error err;
  wq_value out[1];
  /* Per-output-channel weights, int32 bias, uint8 output zp 128 (middle):
   * x [1,1,2,2] = {1,2,3,4}; w [2,1,1,1] = {1, -1}, w_scale {0.5, 1};
   * B = {1, 0}. ch 0: acc = x + 1 = {2,3,4,5}, multiplier 0.5 ->
   * 1, 1.5->2, 2, 2.5->2 -> +128; ch 1: acc = -x, multiplier 1 -> +128. */
  {
    wq_node node = make_node("QLinearConv", 10, 9, 1, NULL, 0);
    uint8_t x[4] = {1, 2, 3, 4}, xz = 0, yz = 128;
    int8_t w[2] = {1, -1}, wz[2] = {0, 0};
    float one = 1.0f, ws[2] = {0.5f, 1.0f};
    int32_t bias[2] = {1, 0};
    int64_t xd[4] = {1, 1, 2, 2}, wd[4] = {2, 1, 1, 1}, cd[1] = {2};
    wq_value in[9] = {val(WQ_DT_UINT8, x, 4, xd),
                      SCALAR_F(&one),
                      val(WQ_DT_UINT8, &xz, 0, D1),
                      val(WQ_DT_INT8, w, 4, wd),
                      val(WQ_DT_FLOAT, ws, 1, cd),
                      val(WQ_DT_INT8, wz, 1, cd),
                      SCALAR_F(&one),
                      val(WQ_DT_UINT8, &yz, 0, D1),
                      val(WQ_DT_INT32, bias, 1, cd)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].dtype == WQ_DT_UINT8);
    int64_t want[8] = {129, 130, 130, 130, 127, 126, 125, 124};
    check_ints(&out[0], want, 8, "QLinearConv per-channel + bias");
    free_outputs(out, 1);
  }
  /* SAME_UPPER, out = ceil(3/2) = 2, total pad 1 at the end:
   * ch 0 windows: 1+2+4+5, 3+6, 7+8, 9; ch 1 (ones): 4, 2, 2, 1. */
  int64_t want_upper[8] = {12, 9, 15, 9, 4, 2, 2, 1};
  qlinear_conv_autopad_case("SAME_UPPER", want_upper);
  /* SAME_LOWER puts the pad first: ch 0: 1, 2+3, 4+7, 5+6+8+9; ch 1: 1, 2, 2, 4. */
  int64_t want_lower[8] = {1, 5, 11, 28, 1, 2, 2, 4};
  qlinear_conv_autopad_case("SAME_LOWER", want_lower);
  /* VALID: one 2x2 window per channel at the origin: 12 and 4. */
  {
    int64_t strides[2] = {2, 2};
    wq_attr attrs[3] = {attr_int("group", 2), attr_ints("strides", strides, 2),
                        attr_str("auto_pad", "VALID")};
    wq_node node = make_node("QLinearConv", 10, 8, 1, attrs, 3);
    int8_t x[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int8_t w[8] = {1, 1, 1, 1, 1, 1, 1, 1}, z = 0;
    float one = 1.0f;
    int64_t xd[4] = {1, 2, 3, 3}, wd[4] = {2, 1, 2, 2};
    wq_value in[8] = {val(WQ_DT_INT8, x, 4, xd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      val(WQ_DT_INT8, w, 4, wd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[2] = {12, 4};
    check_ints(&out[0], want, 2, "VALID");
    free_outputs(out, 1);
  }
  /* int8 saturation and a zp at qmax: w = x = 127 -> acc 16129 -> 127;
   * y_zp 127: acc 0 stays 127, acc -1 -> 126. */
  {
    wq_node node = make_node("QLinearConv", 10, 8, 1, NULL, 0);
    int8_t x[3] = {127, 0, -1}, w[1] = {127}, z = 0, w1[1] = {1}, yz = 127;
    float one = 1.0f;
    int64_t xd[4] = {1, 1, 1, 3}, wd[4] = {1, 1, 1, 1};
    wq_value in[8] = {val(WQ_DT_INT8, x, 4, xd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      val(WQ_DT_INT8, w, 4, wd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want[3] = {127, 0, -127};
    check_ints(&out[0], want, 3, "QLinearConv saturation");
    free_outputs(out, 1);
    in[3] = val(WQ_DT_INT8, w1, 4, wd);
    in[7] = val(WQ_DT_INT8, &yz, 0, D1);
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    int64_t want_zp[3] = {127, 127, 126};
    check_ints(&out[0], want_zp, 3, "QLinearConv zp qmax");
    free_outputs(out, 1);
  }
  /* Channel mismatch is a shape error naming the counts. */
  {
    wq_node node = make_node("QLinearConv", 10, 8, 1, NULL, 0);
    int8_t x[4] = {0}, w[4] = {0}, z = 0;
    float one = 1.0f;
    int64_t xd[4] = {1, 2, 1, 2}, wd[4] = {1, 1, 1, 1};
    wq_value in[8] = {val(WQ_DT_INT8, x, 4, xd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      val(WQ_DT_INT8, w, 4, wd),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1),
                      SCALAR_F(&one),
                      val(WQ_DT_INT8, &z, 0, D1)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_SHAPE);
    CHECK_MSG(strstr(err.message, "x has 2 channels but w expects 1 per group x 1 groups"), "%s",
              err.message);
  }
}

/* ---- DynamicQuantizeLinear --------------------------------------------- */

static void dynamic_case(const float *x, int n, float want_scale, int want_zp, const int64_t *want,
                         const char *what) {
  wq_node node = make_node("DynamicQuantizeLinear", 11, 1, 3, NULL, 0);
  int64_t xd[1] = {n};
  wq_value in[1] = {val(WQ_DT_FLOAT, x, 1, xd)};
  wq_value out[3];
  wq_error err;
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s: %s", what, err.message);
  if (!out[0].data)
    return;
  CHECK(out[0].dtype == WQ_DT_UINT8 && out[1].dtype == WQ_DT_FLOAT && out[1].rank == 0);
  CHECK_MSG(*(float *)out[1].data == want_scale, "%s: scale %g", what,
            (double)*(float *)out[1].data);
  CHECK_MSG(*(uint8_t *)out[2].data == want_zp, "%s: zp %d", what, *(uint8_t *)out[2].data);
  check_ints(&out[0], want, n, what);
  free_outputs(out, 3);
}

static void test_dynamic_quantize(void) {
  /* Range [-127.5, 127.5] -> scale 255/255 = 1; zp = -(-127.5)/1 = 127.5 ->
   * 128 (tie to even); y = rint(x) + 128: -127.5 -> -128 -> 0; 127.5 ->
   * 128 -> 256 saturates; 0.5 -> 0 -> 128; 1.5 -> 2 -> 130. */
  float x1[5] = {-127.5f, 0.0f, 127.5f, 0.5f, 1.5f};
  int64_t want1[5] = {0, 128, 255, 128, 130};
  dynamic_case(x1, 5, 1.0f, 128, want1, "symmetric range");
  /* All negative: the range widens to include 0: [-255, 0] -> scale 1,
   * zp 255; y = x + 255. */
  float x2[2] = {-255.0f, -51.0f};
  int64_t want2[2] = {0, 204};
  dynamic_case(x2, 2, 1.0f, 255, want2, "negative range");
  /* All zero: the empty range gives scale 1, zp 0. */
  float x3[3] = {0, 0, 0};
  int64_t want3[3] = {0, 0, 0};
  dynamic_case(x3, 3, 1.0f, 0, want3, "zero range");
  /* All positive: [0, 255] -> scale 1, zp 0 (the range includes 0). */
  float x4[2] = {255.0f, 2.5f};
  int64_t want4[2] = {255, 2};
  dynamic_case(x4, 2, 1.0f, 0, want4, "positive range");
}

/* ---- unsupported dtypes ------------------------------------------------ */

static void test_unsupported_dtypes(void) {
  wq_error err;
  wq_value out[1];
  float one = 1.0f;
  /* float16 x for QuantizeLinear. */
  {
    wq_node node = make_node("QuantizeLinear", 19, 2, 1, NULL, 0);
    uint16_t x[1] = {0x3c00};
    wq_value in[2] = {val(WQ_DT_FLOAT16, x, 1, D1), SCALAR_F(&one)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "dtype float16 is not supported"), "%s", err.message);
  }
  /* int4 output_dtype. */
  {
    wq_attr attrs[1] = {attr_int("output_dtype", WQ_DT_INT4)};
    wq_node node = make_node("QuantizeLinear", 21, 2, 1, attrs, 1);
    float x[1] = {1};
    wq_value in[2] = {val(WQ_DT_FLOAT, x, 1, D1), SCALAR_F(&one)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "dtype int4 is not supported"), "%s", err.message);
  }
  /* float8 data for DequantizeLinear. */
  {
    wq_node node = make_node("DequantizeLinear", 19, 2, 1, NULL, 0);
    uint8_t x[1] = {0};
    wq_value in[2] = {val(WQ_DT_FLOAT8E4M3FN, x, 1, D1), SCALAR_F(&one)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "dtype float8e4m3fn is not supported"), "%s", err.message);
  }
  /* QuantizeLinear's precision attribute other than float32 (opset 23). */
  {
    wq_attr attrs[1] = {attr_int("precision", WQ_DT_FLOAT16)};
    wq_node node = make_node("QuantizeLinear", 23, 2, 1, attrs, 1);
    float x[1] = {1};
    wq_value in[2] = {val(WQ_DT_FLOAT, x, 1, D1), SCALAR_F(&one)};
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "dtype float16 is not supported"), "%s", err.message);
  }
}

/* onnxruntime's contrib ops (com.microsoft) by their documented formula:
 * dequantize each operand, apply the op in float32, quantize (round half to
 * even, saturate). */
static wq_node make_contrib_node(const char *op_type, int n_in, wq_attr *attrs, int n_attrs) {
  wq_node n = make_node(op_type, 1, n_in, 1, attrs, n_attrs);
  n.domain = (char *)"com.microsoft";
  n.op = wq_op_find("com.microsoft", op_type);
  return n;
}

static void test_contrib_qlinear_add_mul(void) {
  wq_error err;
  wq_value out[1];
  {
    /* uint8 add, B's zero point omitted (0): a_s (a - 128) + b_s b =
     * -59 + 5 = -54, 36 + 25 = 61, -64 + 63.75 = -0.25, 63.5 + 0 = 63.5;
     * / c_s 1 -> -54, 61, -0 (0), 64 (half to even); + 100. */
    static const uint8_t a[4] = {10, 200, 0, 255}, b[4] = {20, 100, 255, 0};
    static const float a_s = 0.5f, b_s = 0.25f, c_s = 1.0f;
    static const uint8_t a_zp = 128, c_zp = 100;
    const int64_t d4[1] = {4};
    wq_node node = make_contrib_node("QLinearAdd", 8, NULL, 0);
    CHECK(node.op != NULL);
    int io[8] = {0, 1, 2, 3, 4, -1, 6, 7};
    node.inputs = io;
    wq_value in[8] = {val(WQ_DT_UINT8, a, 1, d4),
                      SCALAR_F(&a_s),
                      val(WQ_DT_UINT8, &a_zp, 0, D1),
                      val(WQ_DT_UINT8, b, 1, d4),
                      SCALAR_F(&b_s),
                      {.dtype = WQ_DT_UNDEFINED, .rank = -1},
                      SCALAR_F(&c_s),
                      val(WQ_DT_UINT8, &c_zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[4] = {46, 161, 100, 164};
    CHECK(out[0].dtype == WQ_DT_UINT8);
    check_ints(&out[0], want, 4, "QLinearAdd");
    free_outputs(out, 1);
  }
  {
    /* int8 mul with a broadcast scalar B = -2 (scale 1): 0.1 * a * -2 / 0.2 =
     * -a, so -128 -> 128 saturates to 127, 127 -> -127, 3 -> -3. */
    static const int8_t a[3] = {-128, 127, 3}, b = -2, zp = 0;
    static const float a_s = 0.1f, b_s = 1.0f, c_s = 0.2f;
    const int64_t d3[1] = {3};
    wq_node node = make_contrib_node("QLinearMul", 8, NULL, 0);
    wq_value in[8] = {val(WQ_DT_INT8, a, 1, d3),
                      SCALAR_F(&a_s),
                      val(WQ_DT_INT8, &zp, 0, D1),
                      val(WQ_DT_INT8, &b, 0, D1),
                      SCALAR_F(&b_s),
                      val(WQ_DT_INT8, &zp, 0, D1),
                      SCALAR_F(&c_s),
                      val(WQ_DT_INT8, &zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[3] = {127, -127, -3};
    check_ints(&out[0], want, 3, "QLinearMul");
    free_outputs(out, 1);
    /* A zero point of another dtype than the data is a model error. */
    static const uint8_t uzp = 0;
    in[2] = val(WQ_DT_UINT8, &uzp, 0, D1);
    CHECK(run_node(&node, in, out, &err) == WQ_ERR_INVALID_MODEL);
    CHECK_MSG(strstr(err.message, "zero point is uint8 but the data is int8"), "%s", err.message);
  }
}

static void test_contrib_qlinear_global_average_pool(void) {
  /* Channel 0 codes 10, 20, 30, 41 (zp 10, scale 0.5): mean 61 * 0.5 / 4 =
   * 7.625, / 0.25 = 30.5 -> 30 (half to even) + 5 = 35. Channel 1 codes
   * 0, 0, 0, 1: -39 * 0.125 = -4.875, / 0.25 = -19.5 -> -20 + 5 = -15,
   * saturated to 0. Same data channels-first and channels-last. */
  static const uint8_t nchw[8] = {10, 20, 30, 41, 0, 0, 0, 1};
  static const uint8_t nhwc[8] = {10, 0, 20, 0, 30, 0, 41, 1};
  static const float x_s = 0.5f, y_s = 0.25f;
  static const uint8_t x_zp = 10, y_zp = 5;
  const int64_t dims[4] = {1, 2, 2, 2};
  for (int last = 0; last <= 1; last++) {
    wq_error err;
    wq_value out[1];
    wq_attr attrs[1] = {attr_int("channels_last", last)};
    wq_node node = make_contrib_node("QLinearGlobalAveragePool", 5, attrs, 1);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[5] = {val(WQ_DT_UINT8, last ? nhwc : nchw, 4, dims), SCALAR_F(&x_s),
                      val(WQ_DT_UINT8, &x_zp, 0, D1), SCALAR_F(&y_s),
                      val(WQ_DT_UINT8, &y_zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 4 && out[0].dims[0] == 1);
    CHECK(last ? out[0].dims[3] == 2 && out[0].dims[1] == 1
               : out[0].dims[1] == 2 && out[0].dims[3] == 1);
    const int64_t want[2] = {35, 0};
    check_ints(&out[0], want, 2,
               last ? "QLinearGlobalAveragePool channels_last" : "QLinearGlobalAveragePool");
    free_outputs(out, 1);
    node.op->free_state(node.op_state);
  }
}

static void test_contrib_qlinear_lookups(void) {
  wq_error err;
  wq_value out[1];
  {
    /* int8 LeakyRelu, alpha 0.1: codes -128, -10, 2, 7, 127 (zp 2, scale
     * 0.5) are -65, -6, 0, 2.5, 62.5 -> -6.5, -0.6, 0, 2.5, 62.5; / 0.25 ->
     * -26, -2.4, 0, 10, 250 -> -26, -2, 0, 10, 250; + (-3) -> -29, -5, -3, 7,
     * 247 saturated to 127. */
    static const int8_t x[5] = {-128, -10, 2, 7, 127};
    static const float x_s = 0.5f, y_s = 0.25f;
    static const int8_t x_zp = 2, y_zp = -3;
    const int64_t d5[1] = {5};
    wq_attr attrs[1] = {{.name = (char *)"alpha", .type = WQ_ATTR_FLOAT, .f = 0.1f}};
    wq_node node = make_contrib_node("QLinearLeakyRelu", 5, attrs, 1);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[5] = {val(WQ_DT_INT8, x, 1, d5), SCALAR_F(&x_s), val(WQ_DT_INT8, &x_zp, 0, D1),
                      SCALAR_F(&y_s), val(WQ_DT_INT8, &y_zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[5] = {-29, -5, -3, 7, 127};
    check_ints(&out[0], want, 5, "QLinearLeakyRelu");
    free_outputs(out, 1);
    node.op->free_state(node.op_state);
  }
  {
    /* uint8 Sigmoid: codes 0, 112, 128, 144, 255 (zp 128, scale 1/16) are
     * -8, -1, 0, 1, 7.9375 -> 0.000335, 0.268941, 0.5, 0.731059, 0.999643;
     * * 256 (y scale 1/256, zp 0) -> 0.09, 68.85, 128, 187.15, 255.91 ->
     * 0, 69, 128, 187, 256 saturated to 255. */
    static const uint8_t x[5] = {0, 112, 128, 144, 255};
    static const float x_s = 0.0625f, y_s = 1.0f / 256.0f;
    static const uint8_t x_zp = 128;
    const int64_t d5[1] = {5};
    wq_node node = make_contrib_node("QLinearSigmoid", 4, NULL, 0);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[4] = {val(WQ_DT_UINT8, x, 1, d5), SCALAR_F(&x_s), val(WQ_DT_UINT8, &x_zp, 0, D1),
                      SCALAR_F(&y_s)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[5] = {0, 69, 128, 187, 255};
    check_ints(&out[0], want, 5, "QLinearSigmoid");
    free_outputs(out, 1);
    node.op->free_state(node.op_state);
  }
}

static void test_contrib_qlinear_reduce_mean(void) {
  /* int8 [2, 2, 2] (indices a, b, c), axes [0, 2] kept: zp 1, scale 0.5.
   * b = 0: codes 1, 2, 3, 4 -> sum of (q - 1) 6, mean 6 * 0.5 / 4 = 0.75,
   * / 0.25 = 3, + 5 = 8. b = 1: codes 10, -20, 30, 41 -> 57, 7.125, 28.5 ->
   * 28 (half to even), 33. */
  static const int8_t x[8] = {1, 2, 10, -20, 3, 4, 30, 41};
  static const float x_s = 0.5f, y_s = 0.25f;
  static const int8_t x_zp = 1, y_zp = 5;
  const int64_t dims[3] = {2, 2, 2};
  int64_t axes[2] = {0, 2};
  wq_error err;
  wq_value out[1];
  wq_attr attrs[2] = {attr_ints("axes", axes, 2), attr_int("keepdims", 1)};
  wq_node node = make_contrib_node("QLinearReduceMean", 5, attrs, 2);
  CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
  wq_value in[5] = {val(WQ_DT_INT8, x, 3, dims), SCALAR_F(&x_s), val(WQ_DT_INT8, &x_zp, 0, D1),
                    SCALAR_F(&y_s), val(WQ_DT_INT8, &y_zp, 0, D1)};
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
  CHECK(out[0].rank == 3 && out[0].dims[0] == 1 && out[0].dims[1] == 2 && out[0].dims[2] == 1);
  const int64_t want[2] = {8, 33};
  check_ints(&out[0], want, 2, "QLinearReduceMean");
  free_outputs(out, 1);
  node.op->free_state(node.op_state);
}

static void test_contrib_qlinear_average_pool(void) {
  /* uint8 [1, 1, 3, 3], 2x2 windows, stride 1: codes 10 20 30 / 40 50 60 /
   * 70 80 91 (zp 10, scale 0.5) -> window sums of (q - 10) 80, 120, 200,
   * 241 -> means * 0.5 / 4 = 10, 15, 25, 30.125 -> / 1 + 3 = 13, 18, 28,
   * 33. */
  static const uint8_t x[9] = {10, 20, 30, 40, 50, 60, 70, 80, 91};
  static const float x_s = 0.5f, y_s = 1.0f;
  static const uint8_t x_zp = 10, y_zp = 3;
  const int64_t dims[4] = {1, 1, 3, 3};
  int64_t kernel[2] = {2, 2};
  wq_error err;
  wq_value out[1];
  wq_attr attrs[1] = {attr_ints("kernel_shape", kernel, 2)};
  wq_node node = make_contrib_node("QLinearAveragePool", 5, attrs, 1);
  CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
  wq_value in[5] = {val(WQ_DT_UINT8, x, 4, dims), SCALAR_F(&x_s), val(WQ_DT_UINT8, &x_zp, 0, D1),
                    SCALAR_F(&y_s), val(WQ_DT_UINT8, &y_zp, 0, D1)};
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
  CHECK(out[0].rank == 4 && out[0].dims[2] == 2 && out[0].dims[3] == 2);
  const int64_t want[4] = {13, 18, 28, 33};
  check_ints(&out[0], want, 4, "QLinearAveragePool");
  free_outputs(out, 1);
  node.op->free_state(node.op_state);
  /* channels_last = 1 is refused at load with the reason. */
  wq_attr last_attrs[2] = {attr_ints("kernel_shape", kernel, 2), attr_int("channels_last", 1)};
  wq_node last = make_contrib_node("QLinearAveragePool", 5, last_attrs, 2);
  CHECK(last.op->prepare(&last, &err) == WQ_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(err.message, "channels_last=1 is not supported"), "%s", err.message);
}

static void test_contrib_qlinear_concat(void) {
  /* int8, axis 1, Y scale 0.5 zp 0: A [1, 2] = 4, -6 with Y's parameters
   * (copied); B [1, 2] = 10, 5 at scale 0.25 zp 2 -> 2, 0.75 -> / 0.5 = 4,
   * 1.5 -> 4, 2 (half to even). */
  static const int8_t a[2] = {4, -6}, b[2] = {10, 5};
  static const float y_s = 0.5f, a_s = 0.5f, b_s = 0.25f;
  static const int8_t y_zp = 0, a_zp = 0, b_zp = 2;
  const int64_t dims[2] = {1, 2};
  wq_error err;
  wq_value out[1];
  wq_attr attrs[1] = {attr_int("axis", 1)};
  wq_node node = make_contrib_node("QLinearConcat", 8, attrs, 1);
  CHECK(node.op != NULL);
  wq_value in[8] = {SCALAR_F(&y_s), val(WQ_DT_INT8, &y_zp, 0, D1), val(WQ_DT_INT8, a, 2, dims),
                    SCALAR_F(&a_s), val(WQ_DT_INT8, &a_zp, 0, D1), val(WQ_DT_INT8, b, 2, dims),
                    SCALAR_F(&b_s), val(WQ_DT_INT8, &b_zp, 0, D1)};
  CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
  CHECK(out[0].rank == 2 && out[0].dims[1] == 4);
  const int64_t want[4] = {4, -6, 4, 2};
  check_ints(&out[0], want, 4, "QLinearConcat");
  free_outputs(out, 1);
}

static void test_contrib_qgemm(void) {
  /* A uint8 [2, 3] (scale 0.5, zp 128) centered: 2 0 -8 / 0 12 0. B int8
   * transB [2, 3] with per-column scales 0.25, 0.5 and zero points 0, 1,
   * centered: 1 2 3 / -2 -1 3. A B^T = -22 -28 / 24 -12; + C (10, -4) =
   * -12 -32 / 34 -16. Column scales alpha a_s b_s = 0.125, 0.25: float Y
   * -1.5 -8 / 4.25 -4; quantized (y_s 0.5, zp 100): -3 -16 / 8.5 -8 ->
   * 97 84 / 108 (half to even) 92. */
  static const uint8_t a[6] = {130, 128, 120, 128, 140, 128};
  static const int8_t b[6] = {1, 2, 3, -1, 0, 4};
  static const float a_s = 0.5f, b_s[2] = {0.25f, 0.5f}, y_s = 0.5f;
  static const uint8_t a_zp = 128, y_zp = 100;
  static const int8_t b_zp[2] = {0, 1};
  static const int32_t bias[2] = {10, -4};
  const int64_t d23[2] = {2, 3}, d2[1] = {2};
  wq_attr attrs[1] = {attr_int("transB", 1)};
  for (int quantized = 0; quantized <= 1; quantized++) {
    wq_error err;
    wq_value out[1];
    wq_node node = make_contrib_node("QGemm", quantized ? 9 : 7, attrs, 1);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[9] = {val(WQ_DT_UINT8, a, 2, d23),    SCALAR_F(&a_s),
                      val(WQ_DT_UINT8, &a_zp, 0, D1), val(WQ_DT_INT8, b, 2, d23),
                      val(WQ_DT_FLOAT, b_s, 1, d2),   val(WQ_DT_INT8, b_zp, 1, d2),
                      val(WQ_DT_INT32, bias, 1, d2),  SCALAR_F(&y_s),
                      val(WQ_DT_UINT8, &y_zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 2);
    if (quantized) {
      const int64_t want[4] = {97, 84, 108, 92};
      check_ints(&out[0], want, 4, "QGemm quantized");
    } else {
      const float want[4] = {-1.5f, -8.0f, 4.25f, -4.0f};
      CHECK(out[0].dtype == WQ_DT_FLOAT);
      for (int k = 0; k < 4; k++)
        CHECK_MSG(((const float *)out[0].data)[k] == want[k], "QGemm float [%d] = %g", k,
                  (double)((const float *)out[0].data)[k]);
    }
    free_outputs(out, 1);
    node.op->free_state(node.op_state);
  }
}

static void test_contrib_matmul_to_float(void) {
  wq_error err;
  wq_value out[1];
  {
    /* MatMulIntegerToFloat: A uint8 [2, 3] (scale 0.5, zp 128) centered
     * 2 0 -8 / 0 12 0; B int8 [3, 2] per-column scales 0.25, 0.5 and zero
     * points 0, 1, centered columns 1 2 3 and -2 -1 3. A B = -22 -28 / 24
     * -12; * (0.125, 0.25) = -2.75 -7 / 3 -3; + bias (1, -0.5) = -1.75 -7.5
     * / 4 -3.5. */
    static const uint8_t a[6] = {130, 128, 120, 128, 140, 128};
    static const int8_t b[6] = {1, -1, 2, 0, 3, 4};
    static const float a_s = 0.5f, b_s[2] = {0.25f, 0.5f}, bias[2] = {1.0f, -0.5f};
    static const uint8_t a_zp = 128;
    static const int8_t b_zp[2] = {0, 1};
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d2[1] = {2};
    wq_node node = make_contrib_node("MatMulIntegerToFloat", 7, NULL, 0);
    CHECK(node.op != NULL);
    wq_value in[7] = {
        val(WQ_DT_UINT8, a, 2, d23),  val(WQ_DT_INT8, b, 2, d32),     SCALAR_F(&a_s),
        val(WQ_DT_FLOAT, b_s, 1, d2), val(WQ_DT_UINT8, &a_zp, 0, D1), val(WQ_DT_INT8, b_zp, 1, d2),
        val(WQ_DT_FLOAT, bias, 1, d2)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const float want[4] = {-1.75f, -7.5f, 4.0f, -3.5f};
    CHECK(out[0].dtype == WQ_DT_FLOAT && out[0].rank == 2 && out[0].dims[1] == 2);
    for (int k = 0; k < 4; k++)
      CHECK_MSG(((const float *)out[0].data)[k] == want[k], "MatMulIntegerToFloat [%d] = %g", k,
                (double)((const float *)out[0].data)[k]);
    free_outputs(out, 1);
  }
  {
    /* DynamicQuantizeMatMul: A = -1, 3 -> range [-1, 3], scale 4/255, zp
     * round(63.75) = 64, codes 0, 255; B int8 [2, 1] = 10, -20 at 0.5:
     * (0 - 64) 10 + (255 - 64)(-20) = -4460; * (4/255 * 0.5) = -34.98039. */
    static const float a[2] = {-1.0f, 3.0f}, b_s = 0.5f;
    static const int8_t b[2] = {10, -20};
    const int64_t d12[2] = {1, 2}, d21[2] = {2, 1};
    wq_node node = make_contrib_node("DynamicQuantizeMatMul", 3, NULL, 0);
    CHECK(node.op != NULL);
    wq_value in[3] = {val(WQ_DT_FLOAT, a, 2, d12), val(WQ_DT_INT8, b, 2, d21), SCALAR_F(&b_s)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 1 && out[0].dims[1] == 1);
    CHECK_NEAR(((const float *)out[0].data)[0], -4460.0 * 2.0 / 255.0, 1e-4);
    free_outputs(out, 1);
  }
}

static void test_contrib_qlinear_softmax(void) {
  wq_error err;
  wq_value out[1];
  /* x_scale ln 2: codes 0, 1, 2, 3 (zp 0) are 0, ln2, 2 ln2, 3 ln2, so
   * exp(x - max) = 1/8, 1/4, 1/2, 1 and Softmax = 1/15, 2/15, 4/15, 8/15;
   * * 256 (y scale 1/256) = 17.07, 34.13, 68.27, 136.53 -> 17, 34, 68, 137.
   * Equal codes 5 give 1/4 each -> 64. Codes 0, 0, 0, 255: exp(-255 ln2)
   * underflows to 0 -> 0, 0, 0, and 1 * 256 saturates to 255. */
  static const uint8_t x[12] = {0, 1, 2, 3, 5, 5, 5, 5, 0, 0, 0, 255}, zp0 = 0;
  static const float x_s = 0.69314718f, y_s = 1.0f / 256.0f;
  const int64_t d34[2] = {3, 4}, d122[3] = {1, 2, 2};
  {
    wq_attr attrs[1] = {attr_int("opset", 13)};
    wq_node node = make_contrib_node("QLinearSoftmax", 5, attrs, 1);
    CHECK(node.op != NULL);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[5] = {val(WQ_DT_UINT8, x, 2, d34), SCALAR_F(&x_s), val(WQ_DT_UINT8, &zp0, 0, D1),
                      SCALAR_F(&y_s), val(WQ_DT_UINT8, &zp0, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[12] = {17, 34, 68, 137, 64, 64, 64, 64, 0, 0, 0, 255};
    CHECK(out[0].dtype == WQ_DT_UINT8 && out[0].rank == 2);
    check_ints(&out[0], want, 12, "QLinearSoftmax uint8 axis -1");
    free_outputs(out, 1);
  }
  {
    /* int8, x zp -1: codes -1, 0, 1, 2 are the same 0 .. 3 ln2; y zp -128:
     * 17 - 128, 34 - 128, 68 - 128, 137 - 128. */
    static const int8_t xi[4] = {-1, 0, 1, 2}, x_zp = -1, y_zp = -128;
    const int64_t d14[2] = {1, 4};
    wq_attr attrs[2] = {attr_int("opset", 13), attr_int("axis", 1)};
    wq_node node = make_contrib_node("QLinearSoftmax", 5, attrs, 2);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[5] = {val(WQ_DT_INT8, xi, 2, d14), SCALAR_F(&x_s), val(WQ_DT_INT8, &x_zp, 0, D1),
                      SCALAR_F(&y_s), val(WQ_DT_INT8, &y_zp, 0, D1)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want[4] = {-111, -94, -60, 9};
    check_ints(&out[0], want, 4, "QLinearSoftmax int8");
    free_outputs(out, 1);
  }
  for (int legacy = 0; legacy <= 1; legacy++) {
    /* x [1, 2, 2] = codes 0, 1, 2, 3, axis 1. Opset attribute 12 coerces to
     * [1, 4]: the row above, 17, 34, 68, 137. Opset 13 normalises along dim
     * 1 alone: pairs (0, 2) and (1, 3), each exp 1/4 and 1 -> 0.2, 0.8 ->
     * 51.2, 204.8 -> 51, 51, 205, 205. */
    wq_attr attrs[2] = {attr_int("opset", legacy ? 12 : 13), attr_int("axis", 1)};
    wq_node node = make_contrib_node("QLinearSoftmax", 4, attrs, 2);
    CHECK_MSG(node.op->prepare(&node, &err) == WQ_OK, "%s", err.message);
    wq_value in[4] = {val(WQ_DT_UINT8, x, 3, d122), SCALAR_F(&x_s), val(WQ_DT_UINT8, &zp0, 0, D1),
                      SCALAR_F(&y_s)};
    CHECK_MSG(run_node(&node, in, out, &err) == WQ_OK, "%s", err.message);
    const int64_t want_legacy[4] = {17, 34, 68, 137}, want[4] = {51, 51, 205, 205};
    check_ints(&out[0], legacy ? want_legacy : want, 4,
               legacy ? "QLinearSoftmax opset 12 axis 1" : "QLinearSoftmax opset 13 axis 1");
    free_outputs(out, 1);
  }
  {
    /* The opset attribute is required. */
    wq_node node = make_contrib_node("QLinearSoftmax", 4, NULL, 0);
    CHECK(node.op->prepare(&node, &err) == WQ_ERR_INVALID_MODEL);
    CHECK_MSG(strstr(err.message, "attribute opset is missing"), "%s", err.message);
  }
}

int main(void) {
  test_quantize_rounding_and_saturation();
  test_quantize_per_axis_and_blocked();
  test_dequantize();
  test_qlinear_matmul();
  test_matmul_integer();
  test_conv_integer();
  test_qlinear_conv();
  test_dynamic_quantize();
  test_unsupported_dtypes();
  test_contrib_qlinear_add_mul();
  test_contrib_qlinear_global_average_pool();
  test_contrib_qlinear_lookups();
  test_contrib_qlinear_reduce_mean();
  test_contrib_qlinear_average_pool();
  test_contrib_qlinear_concat();
  test_contrib_qgemm();
  test_contrib_matmul_to_float();
  test_contrib_qlinear_softmax();
  WQ_TEST_END();
}
