/* Unit tests of the elementwise family: each builds values directly and
 * calls the registered op's prepare / infer / run, checking exact integer
 * results and float results within stated tolerances. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "wq_test.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MAX_IO 5

static wq_value val(wq_dtype dt, int rank, const int64_t *dims, const void *data) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = dt;
  v.rank = rank;
  for (int i = 0; i < rank; i++)
    v.dims[i] = dims[i];
  v.data = (void *)data;
  return v;
}

static wq_value omitted(void) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = WQ_DT_UNDEFINED;
  return v;
}

static wq_attr attr_int(const char *name, int64_t v) {
  wq_attr a;
  memset(&a, 0, sizeof a);
  a.name = (char *)name;
  a.type = WQ_ATTR_INT;
  a.i = v;
  return a;
}

static wq_attr attr_float(const char *name, float v) {
  wq_attr a;
  memset(&a, 0, sizeof a);
  a.name = (char *)name;
  a.type = WQ_ATTR_FLOAT;
  a.f = v;
  return a;
}

static wq_attr attr_ints(const char *name, const int64_t *v, size_t n) {
  wq_attr a;
  memset(&a, 0, sizeof a);
  a.name = (char *)name;
  a.type = WQ_ATTR_INTS;
  a.ints = (int64_t *)v;
  a.count = n;
  return a;
}

/* Runs one node: prepare, infer, allocate outputs, run. On success the
 * caller frees out[i].data. n_out counts outputs that exist (all present). */
static wq_status run_op(const char *op_type, int opset, wq_attr *attrs, int n_attrs,
                        const wq_value *in, int n_in, wq_value *out, int n_out, wq_error *err) {
  const wq_op *op = wq_op_find("", op_type);
  if (!op)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "no op %s", op_type);
  int inputs[MAX_IO], outputs[MAX_IO];
  for (int i = 0; i < MAX_IO; i++) {
    inputs[i] = i < n_in && wq_value_present(&in[i]) ? i : -1;
    outputs[i] = i;
  }
  wq_node node;
  memset(&node, 0, sizeof node);
  node.name = "n0";
  node.op_type = (char *)op_type;
  node.domain = "";
  node.opset = opset;
  node.inputs = inputs;
  node.n_inputs = n_in;
  node.outputs = outputs;
  node.n_outputs = n_out;
  node.attrs = attrs;
  node.n_attrs = n_attrs;
  node.op = op;
  wq_error_clear(err);
  if (op->prepare)
    WQ_TRY(op->prepare(&node, err));
  for (int i = 0; i < n_out; i++)
    memset(&out[i], 0, sizeof out[i]);
  WQ_TRY(op->infer(&node, in, out, err));
  for (int i = 0; i < n_out; i++) {
    if (out[i].rank < 0)
      return wq_fail(err, WQ_ERR_SHAPE, NULL, "output %d shape unknown", i);
    size_t bytes = wq_value_nbytes(&out[i]);
    out[i].data = malloc(bytes ? bytes : 1);
  }
  wq_status st = op->run(&node, in, out, err);
  if (st != WQ_OK)
    for (int i = 0; i < n_out; i++) {
      free(out[i].data);
      out[i].data = NULL;
    }
  return st;
}

/* Infer only (to test validation messages). */
static wq_status infer_op(const char *op_type, int opset, wq_attr *attrs, int n_attrs,
                          const wq_value *in, int n_in, wq_value *out, wq_error *err) {
  const wq_op *op = wq_op_find("", op_type);
  int inputs[MAX_IO] = {0, 1, 2, 3, 4}, outputs[1] = {0};
  wq_node node;
  memset(&node, 0, sizeof node);
  node.name = "n0";
  node.op_type = (char *)op_type;
  node.domain = "";
  node.opset = opset;
  node.inputs = inputs;
  node.n_inputs = n_in;
  node.outputs = outputs;
  node.n_outputs = 1;
  node.attrs = attrs;
  node.n_attrs = n_attrs;
  wq_error_clear(err);
  if (op->prepare)
    WQ_TRY(op->prepare(&node, err));
  return op->infer(&node, in, out, err);
}

static void test_add_float_broadcast(void) {
  wq_error err;
  /* Same shape. */
  {
    const int64_t d[] = {2, 2};
    const float a[] = {1, 2, 3, 4}, b[] = {10, 20, 30, 40};
    wq_value in[2] = {val(WQ_DT_FLOAT, 2, d, a), val(WQ_DT_FLOAT, 2, d, b)}, out[1];
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 2);
    CHECK(y[0] == 11 && y[1] == 22 && y[2] == 33 && y[3] == 44);
    free(out[0].data);
  }
  /* Scalar operand on the left: 10 - x. */
  {
    const int64_t d[] = {3};
    const float a[] = {10}, b[] = {1, 2, 3};
    wq_value in[2] = {val(WQ_DT_FLOAT, 0, NULL, a), val(WQ_DT_FLOAT, 1, d, b)}, out[1];
    CHECK(run_op("Sub", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK(out[0].rank == 1 && y[0] == 9 && y[1] == 8 && y[2] == 7);
    free(out[0].data);
  }
  /* General case [2,1,3] * [4,1] -> [2,4,3], checked against direct indexing. */
  {
    const int64_t da[] = {2, 1, 3}, db[] = {4, 1};
    float a[6], b[4];
    for (int i = 0; i < 6; i++)
      a[i] = (float)(i + 1);
    for (int i = 0; i < 4; i++)
      b[i] = (float)(10 * (i + 1));
    wq_value in[2] = {val(WQ_DT_FLOAT, 3, da, a), val(WQ_DT_FLOAT, 2, db, b)}, out[1];
    CHECK(run_op("Mul", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    CHECK(out[0].rank == 3 && out[0].dims[0] == 2 && out[0].dims[1] == 4 && out[0].dims[2] == 3);
    const float *y = out[0].data;
    int bad = 0;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++)
        for (int k = 0; k < 3; k++)
          bad += y[(i * 4 + j) * 3 + k] != a[i * 3 + k] * b[j];
    CHECK(bad == 0);
    free(out[0].data);
  }
  /* Channel broadcast [2,3,2,2] + [3,1,1] (the BN-style bias add). */
  {
    const int64_t da[] = {2, 3, 2, 2}, db[] = {3, 1, 1};
    float a[24], b[3] = {100, 200, 300};
    for (int i = 0; i < 24; i++)
      a[i] = (float)i;
    wq_value in[2] = {val(WQ_DT_FLOAT, 4, da, a), val(WQ_DT_FLOAT, 3, db, b)}, out[1];
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    int bad = 0;
    for (int i = 0; i < 24; i++)
      bad += y[i] != a[i] + b[(i / 4) % 3];
    CHECK(bad == 0);
    free(out[0].data);
  }
  /* Empty output: [0,3] + [3]. */
  {
    const int64_t da[] = {0, 3}, db[] = {3};
    const float b[] = {1, 2, 3};
    wq_value in[2] = {val(WQ_DT_FLOAT, 2, da, b), val(WQ_DT_FLOAT, 1, db, b)}, out[1];
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 0 && out[0].dims[1] == 3);
    free(out[0].data);
  }
}

/* Random shapes with random broadcast dims (and rank padding) against direct
 * multi-index evaluation; exercises every collapse pattern of the iterator. */
static void test_broadcast_random(void) {
  wq_error err;
  uint32_t seed = 12345;
  int bad_cases = 0;
  for (int iter = 0; iter < 300; iter++) {
    seed = seed * 1664525u + 1013904223u;
    int rank = (int)(seed >> 28) % 5;
    int64_t out_dims[4], da[4], db[4];
    int ra = rank, rb = rank;
    for (int i = 0; i < rank; i++) {
      seed = seed * 1664525u + 1013904223u;
      out_dims[i] = 1 + (int64_t)((seed >> 20) % 4);
      int mode = (int)((seed >> 10) % 4); /* 0: both full, 1: a is 1, 2: b is 1, 3: both */
      da[i] = (mode == 1 || mode == 3) ? 1 : out_dims[i];
      db[i] = (mode == 2 || mode == 3) ? 1 : out_dims[i];
      if (mode == 3)
        out_dims[i] = 1;
    }
    seed = seed * 1664525u + 1013904223u;
    int drop = rank > 0 ? (int)((seed >> 16) % (unsigned)(rank + 1)) : 0;
    /* b loses `drop` leading dims (numpy pads them back), when they are 1. */
    int can_drop = 0;
    while (can_drop < drop && db[can_drop] == 1)
      can_drop++;
    rb = rank - can_drop;
    int32_t a[256], b[256];
    for (int i = 0; i < 256; i++) {
      a[i] = i * 7 + 1;
      b[i] = i * 1000;
    }
    wq_value in[2] = {val(WQ_DT_INT32, ra, da, a), val(WQ_DT_INT32, rb, db + can_drop, b)};
    wq_value out[1];
    if (run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) != WQ_OK) {
      bad_cases++;
      continue;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
      n *= out_dims[i];
    const int32_t *y = out[0].data;
    for (int64_t k = 0; k < n; k++) {
      int64_t rem = k, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int d = rank - 1; d >= 0; d--) {
        int64_t idx = rem % out_dims[d];
        rem /= out_dims[d];
        ia += (da[d] == 1 ? 0 : idx) * sa;
        ib += (db[d] == 1 ? 0 : idx) * sb;
        sa *= da[d];
        sb *= db[d];
      }
      if (y[k] != a[ia] + b[ib]) {
        bad_cases++;
        break;
      }
    }
    free(out[0].data);
  }
  CHECK(bad_cases == 0);
}

static void test_binary_validation(void) {
  wq_error err;
  const int64_t da[] = {2, 3}, db[] = {4};
  wq_value in[2] = {val(WQ_DT_FLOAT, 2, da, NULL), val(WQ_DT_FLOAT, 1, db, NULL)}, out[1];
  CHECK(infer_op("Add", 14, NULL, 0, in, 2, out, &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "[2,3]") && strstr(err.message, "[4]") &&
                strstr(err.message, "Add"),
            "%s", err.message);
  const int64_t dc[] = {3};
  wq_value mixed[2] = {val(WQ_DT_FLOAT, 2, da, NULL), val(WQ_DT_INT32, 1, dc, NULL)};
  CHECK(infer_op("Mul", 14, NULL, 0, mixed, 2, out, &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "float") && strstr(err.message, "int32") &&
                strstr(err.message, "[2,3]") && strstr(err.message, "[3]"),
            "%s", err.message);
  /* Unknown dims at load: [-1,3] + [3] -> [-1,3]; unknown rank -> -1. */
  const int64_t du[] = {-1, 3};
  wq_value unk[2] = {val(WQ_DT_FLOAT, 2, du, NULL), val(WQ_DT_FLOAT, 1, dc, NULL)};
  CHECK(infer_op("Add", 14, NULL, 0, unk, 2, out, &err) == WQ_OK);
  CHECK(out[0].rank == 2 && out[0].dims[0] == -1 && out[0].dims[1] == 3);
  unk[0].rank = -1;
  CHECK(infer_op("Add", 14, NULL, 0, unk, 2, out, &err) == WQ_OK && out[0].rank == -1);
  /* Equal on bool is fine, Add on bool is not. */
  wq_value bools[2] = {val(WQ_DT_BOOL, 1, dc, NULL), val(WQ_DT_BOOL, 1, dc, NULL)};
  CHECK(infer_op("Equal", 13, NULL, 0, bools, 2, out, &err) == WQ_OK && out[0].dtype == WQ_DT_BOOL);
  CHECK(infer_op("Add", 14, NULL, 0, bools, 2, out, &err) == WQ_ERR_UNSUPPORTED);
}

static void test_integer_arithmetic(void) {
  wq_error err;
  const int64_t d[] = {4};
  {
    const int8_t a[] = {127, -128, 100, -7}, b[] = {1, -1, 100, 2};
    wq_value in[2] = {val(WQ_DT_INT8, 1, d, a), val(WQ_DT_INT8, 1, d, b)}, out[1];
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const int8_t *y = out[0].data;
    CHECK(y[0] == -128 && y[1] == 127 && y[2] == -56 && y[3] == -5);
    free(out[0].data);
    CHECK(run_op("Mul", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == 127 && y[1] == -128 && y[2] == 16 && y[3] == -14); /* 10000 mod 256 = 16 */
    free(out[0].data);
    CHECK(run_op("Div", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == 127 && y[1] == -128 && y[2] == 1 && y[3] == -3); /* -128/-1 wraps, -7/2 -> -3 */
    free(out[0].data);
  }
  {
    const uint16_t a[] = {65535, 0, 300, 7}, b[] = {65535, 1, 0, 2};
    wq_value in[2] = {val(WQ_DT_UINT16, 1, d, a), val(WQ_DT_UINT16, 1, d, b)}, out[1];
    CHECK(run_op("Mul", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const uint16_t *y = out[0].data;
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 14); /* 65535^2 mod 2^16 = 1 */
    free(out[0].data);
    CHECK(run_op("Sub", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == 0 && y[1] == 65535 && y[2] == 300 && y[3] == 5);
    free(out[0].data);
    CHECK(run_op("Div", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 3); /* 300 / 0 -> 0 */
    free(out[0].data);
  }
  {
    const int32_t a[] = {INT32_MIN, INT32_MAX, -9, 9}, b[] = {-1, 0, 4, -4};
    wq_value in[2] = {val(WQ_DT_INT32, 1, d, a), val(WQ_DT_INT32, 1, d, b)}, out[1];
    CHECK(run_op("Div", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const int32_t *y = out[0].data;
    CHECK(y[0] == INT32_MIN && y[1] == 0 && y[2] == -2 && y[3] == -2);
    free(out[0].data);
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == INT32_MAX && y[1] == INT32_MAX && y[2] == -5 && y[3] == 5);
    free(out[0].data);
  }
  {
    const int64_t a[] = {INT64_MIN, INT64_MAX, 3, -3}, b[] = {-1, 2, 3, 0};
    wq_value in[2] = {val(WQ_DT_INT64, 1, d, a), val(WQ_DT_INT64, 1, d, b)}, out[1];
    CHECK(run_op("Div", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const int64_t *y = out[0].data;
    CHECK(y[0] == INT64_MIN && y[1] == INT64_MAX / 2 && y[2] == 1 && y[3] == 0);
    free(out[0].data);
    CHECK(run_op("Mul", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == INT64_MIN && y[1] == -2 && y[2] == 9 && y[3] == 0);
    free(out[0].data);
  }
  {
    const uint64_t a[] = {UINT64_MAX, 5, 10, 0}, b[] = {1};
    const int64_t db[] = {1};
    wq_value in[2] = {val(WQ_DT_UINT64, 1, d, a), val(WQ_DT_UINT64, 1, db, b)}, out[1];
    CHECK(run_op("Add", 14, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const uint64_t *y = out[0].data;
    CHECK(y[0] == 0 && y[1] == 6 && y[2] == 11 && y[3] == 1);
    free(out[0].data);
  }
}

static void test_equal_pow(void) {
  wq_error err;
  {
    const int64_t da[] = {2, 2}, db[] = {2};
    const int32_t a[] = {1, 2, 3, 2}, b[] = {1, 2};
    wq_value in[2] = {val(WQ_DT_INT32, 2, da, a), val(WQ_DT_INT32, 1, db, b)}, out[1];
    CHECK(run_op("Equal", 13, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const uint8_t *y = out[0].data;
    CHECK(out[0].dtype == WQ_DT_BOOL);
    CHECK(y[0] == 1 && y[1] == 1 && y[2] == 0 && y[3] == 1);
    free(out[0].data);
  }
  {
    const int64_t d[] = {3};
    const float a[] = {2, 9, -3}, b[] = {3, 0.5f, 2};
    wq_value in[2] = {val(WQ_DT_FLOAT, 1, d, a), val(WQ_DT_FLOAT, 1, d, b)}, out[1];
    CHECK(run_op("Pow", 15, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK_NEAR(y[0], 8, 1e-6);
    CHECK_NEAR(y[1], 3, 1e-6);
    CHECK_NEAR(y[2], 9, 1e-6);
    free(out[0].data);
    const int64_t e[] = {2};
    wq_value in2[2] = {val(WQ_DT_FLOAT, 1, d, a), val(WQ_DT_INT64, 0, NULL, e)};
    CHECK(run_op("Pow", 15, NULL, 0, in2, 2, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(out[0].dtype == WQ_DT_FLOAT && y[0] == 4 && y[1] == 81 && y[2] == 9);
    free(out[0].data);
  }
  { /* a float exponent 2 (one value) squares: x * x correctly rounded, also
     * for values whose square is inexact, overflows or is NaN */
    const int64_t d[] = {2, 3}, one[] = {1};
    const float a[] = {1.1f, -3.0e20f, -0.0f, 1.0e-3f, NAN, -INFINITY}, two[] = {2.0f};
    wq_value in[2] = {val(WQ_DT_FLOAT, 2, d, a), val(WQ_DT_FLOAT, 1, one, two)}, out[1];
    CHECK(run_op("Pow", 15, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 3);
    for (int k = 0; k < 6; k++) {
      const float want = a[k] * a[k];
      CHECK(isnan(want) ? isnan(y[k]) : memcmp(&y[k], &want, sizeof want) == 0);
    }
    free(out[0].data);
  }
  {
    const int64_t d[] = {4};
    const int32_t a[] = {3, -2, 2, 5}, b[] = {4, 3, -1, 0};
    wq_value in[2] = {val(WQ_DT_INT32, 1, d, a), val(WQ_DT_INT32, 1, d, b)}, out[1];
    CHECK(run_op("Pow", 15, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const int32_t *y = out[0].data;
    CHECK(y[0] == 81 && y[1] == -8 && y[2] == 0 && y[3] == 1);
    free(out[0].data);
  }
}

static void test_unary(void) {
  wq_error err;
  const int64_t d[] = {5};
  const float x[] = {-1000, -2, 0, 1.5f, 1000};
  wq_value in[1] = {val(WQ_DT_FLOAT, 1, d, x)}, out[1];
  CHECK(run_op("Sigmoid", 13, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  const float *y = out[0].data;
  CHECK(y[0] == 0.0f && y[4] == 1.0f);
  CHECK_NEAR(y[1], 1.0 / (1.0 + exp(2.0)), 1e-7);
  CHECK_NEAR(y[2], 0.5, 0);
  CHECK_NEAR(y[3], 1.0 / (1.0 + exp(-1.5)), 1e-7);
  free(out[0].data);

  CHECK(run_op("Relu", 14, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 1.5f && y[4] == 1000);
  free(out[0].data);

  wq_attr alpha = attr_float("alpha", 0.1f);
  CHECK(run_op("LeakyRelu", 16, &alpha, 1, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[1], -0.2, 1e-6);
  CHECK(y[3] == 1.5f);
  free(out[0].data);

  CHECK(run_op("HardSigmoid", 6, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 0 && y[4] == 1);
  CHECK_NEAR(y[1], 0.1, 1e-6);
  CHECK_NEAR(y[3], 0.8, 1e-6);
  free(out[0].data);

  CHECK(run_op("HardSwish", 14, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 0 && y[4] == 1000);
  CHECK_NEAR(y[1], -2 * (1.0 / 6), 1e-6); /* -2 * (-2/6 + 0.5) */
  CHECK_NEAR(y[3], 1.5 * 0.75, 1e-6);
  free(out[0].data);

  CHECK(run_op("Tanh", 13, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == -1 && y[4] == 1);
  CHECK_NEAR(y[3], tanh(1.5), 1e-6);
  free(out[0].data);

  /* Elu, Softplus, Gelu: the ONNX operator documentation's examples on
   * -1, 0, 1 (Elu with alpha 2). */
  const float e[] = {-1, 0, 1};
  const int64_t de[] = {3};
  wq_value ein[1] = {val(WQ_DT_FLOAT, 1, de, e)};
  wq_attr elu_alpha = attr_float("alpha", 2.0f);
  CHECK(run_op("Elu", 6, &elu_alpha, 1, ein, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[0], -1.2642411, 1e-6);
  CHECK(y[1] == 0 && y[2] == 1);
  free(out[0].data);
  CHECK(run_op("Softplus", 1, NULL, 0, ein, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[0], 0.31326166, 1e-6);
  CHECK_NEAR(y[1], 0.69314718, 1e-6);
  CHECK_NEAR(y[2], 1.31326163, 1e-6);
  free(out[0].data);
  CHECK(run_op("Gelu", 20, NULL, 0, ein, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[0], -0.15865529, 1e-6);
  CHECK(y[1] == 0);
  CHECK_NEAR(y[2], 0.84134471, 1e-6);
  free(out[0].data);
  wq_attr tanh_approx = {
      .name = (char *)"approximate", .type = WQ_ATTR_STRING, .s = (char *)"tanh", .s_len = 4};
  CHECK(run_op("Gelu", 20, &tanh_approx, 1, ein, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[0], -0.15880801, 1e-6);
  CHECK_NEAR(y[2], 0.84119199, 1e-6);
  free(out[0].data);

  const float s[] = {0, 4, 2.25f};
  const int64_t ds[] = {3};
  wq_value sin_[1] = {val(WQ_DT_FLOAT, 1, ds, s)};
  CHECK(run_op("Sqrt", 13, NULL, 0, sin_, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 0 && y[1] == 2 && y[2] == 1.5f);
  free(out[0].data);
  CHECK(run_op("Exp", 13, NULL, 0, sin_, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 1);
  CHECK_NEAR(y[1], exp(4.0), 1e-5 * exp(4.0));
  free(out[0].data);

  const int8_t xi[] = {-128, -1, 0, 1, 127};
  wq_value iin[1] = {val(WQ_DT_INT8, 1, d, xi)};
  CHECK(run_op("Relu", 14, NULL, 0, iin, 1, out, 1, &err) == WQ_OK);
  const int8_t *yi = out[0].data;
  CHECK(yi[0] == 0 && yi[1] == 0 && yi[2] == 0 && yi[3] == 1 && yi[4] == 127);
  free(out[0].data);
  CHECK(infer_op("Sigmoid", 13, NULL, 0, iin, 1, out, &err) == WQ_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(err.message, "int8") != NULL, "%s", err.message);

  const int64_t xl[] = {5, -6};
  const int64_t dl[] = {2};
  wq_value lin[1] = {val(WQ_DT_INT64, 1, dl, xl)};
  CHECK(run_op("Identity", 16, NULL, 0, lin, 1, out, 1, &err) == WQ_OK);
  CHECK(((int64_t *)out[0].data)[0] == 5 && ((int64_t *)out[0].data)[1] == -6);
  free(out[0].data);
}

static void test_clip(void) {
  wq_error err;
  const int64_t d[] = {5};
  const float x[] = {-3, -1, 0.5f, 2, NAN};
  wq_value out[1];
  /* Opset 6: attributes. */
  {
    wq_attr attrs[2] = {attr_float("min", -1.5f), attr_float("max", 1.0f)};
    wq_value in[1] = {val(WQ_DT_FLOAT, 1, d, x)};
    CHECK(run_op("Clip", 6, attrs, 2, in, 1, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK(y[0] == -1.5f && y[1] == -1 && y[2] == 0.5f && y[3] == 1 && isnan(y[4]));
    free(out[0].data);
    wq_attr only_max = attr_float("max", 0.0f); /* min defaults to lowest */
    CHECK(run_op("Clip", 6, &only_max, 1, in, 1, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == -3 && y[1] == -1 && y[2] == 0 && y[3] == 0);
    free(out[0].data);
  }
  /* Opset 13: inputs; min > max gives max everywhere. */
  {
    const float lo[] = {2}, hi[] = {1};
    wq_value in[3] = {val(WQ_DT_FLOAT, 1, d, x), val(WQ_DT_FLOAT, 0, NULL, lo),
                      val(WQ_DT_FLOAT, 0, NULL, hi)};
    CHECK(run_op("Clip", 13, NULL, 0, in, 3, out, 1, &err) == WQ_OK);
    const float *y = out[0].data;
    CHECK(y[0] == 1 && y[1] == 1 && y[2] == 1 && y[3] == 1);
    free(out[0].data);
  }
  /* int8 with only max (min omitted as ""). */
  {
    const int8_t xi[] = {-128, -5, 0, 50, 127}, hi[] = {10};
    wq_value in[3] = {val(WQ_DT_INT8, 1, d, xi), omitted(), val(WQ_DT_INT8, 0, NULL, hi)};
    CHECK(run_op("Clip", 13, NULL, 0, in, 3, out, 1, &err) == WQ_OK);
    const int8_t *y = out[0].data;
    CHECK(y[0] == -128 && y[1] == -5 && y[2] == 0 && y[3] == 10 && y[4] == 10);
    free(out[0].data);
    /* Neither bound: copy. */
    CHECK(run_op("Clip", 13, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
    y = out[0].data;
    CHECK(y[0] == -128 && y[4] == 127);
    free(out[0].data);
  }
  /* uint64 and a bound of the wrong dtype. */
  {
    const uint64_t xu[] = {0, 1, 5, UINT64_MAX, 3}, lo[] = {2};
    wq_value in[2] = {val(WQ_DT_UINT64, 1, d, xu), val(WQ_DT_UINT64, 0, NULL, lo)};
    CHECK(run_op("Clip", 13, NULL, 0, in, 2, out, 1, &err) == WQ_OK);
    const uint64_t *y = out[0].data;
    CHECK(y[0] == 2 && y[1] == 2 && y[2] == 5 && y[3] == UINT64_MAX && y[4] == 3);
    free(out[0].data);
    const float flo[] = {1};
    wq_value bad[2] = {val(WQ_DT_UINT64, 1, d, xu), val(WQ_DT_FLOAT, 0, NULL, flo)};
    CHECK(infer_op("Clip", 13, NULL, 0, bad, 2, out, &err) == WQ_ERR_SHAPE);
    const int64_t two[] = {2};
    const uint64_t lo2[] = {1, 2};
    wq_value bad2[2] = {val(WQ_DT_UINT64, 1, d, xu), val(WQ_DT_UINT64, 1, two, lo2)};
    CHECK(infer_op("Clip", 13, NULL, 0, bad2, 2, out, &err) == WQ_ERR_SHAPE);
  }
}

static void test_cast(void) {
  wq_error err;
  wq_value out[1];
  const int64_t d[] = {8};
  const float x[] = {1.9f, -1.9f, 300.0f, -300.0f, NAN, 1e20f, -0.5f, 0.0f};
  wq_value in[1] = {val(WQ_DT_FLOAT, 1, d, x)};
  wq_attr to = attr_int("to", WQ_DT_INT8);
  CHECK(run_op("Cast", 13, &to, 1, in, 1, out, 1, &err) == WQ_OK);
  const int8_t *i8 = out[0].data;
  CHECK(out[0].dtype == WQ_DT_INT8);
  CHECK(i8[0] == 1 && i8[1] == -1 && i8[2] == 127 && i8[3] == -128 && i8[4] == 0 && i8[5] == 127 &&
        i8[6] == 0 && i8[7] == 0);
  free(out[0].data);

  to = attr_int("to", WQ_DT_UINT8);
  CHECK(run_op("Cast", 13, &to, 1, in, 1, out, 1, &err) == WQ_OK);
  const uint8_t *u8 = out[0].data;
  CHECK(u8[0] == 1 && u8[1] == 0 && u8[2] == 255 && u8[3] == 0 && u8[4] == 0 && u8[5] == 255);
  free(out[0].data);

  to = attr_int("to", WQ_DT_INT64);
  CHECK(run_op("Cast", 13, &to, 1, in, 1, out, 1, &err) == WQ_OK);
  const int64_t *i64 = out[0].data;
  CHECK(i64[0] == 1 && i64[2] == 300 && i64[3] == -300 && i64[4] == 0 && i64[5] == INT64_MAX);
  free(out[0].data);

  to = attr_int("to", WQ_DT_BOOL);
  CHECK(run_op("Cast", 13, &to, 1, in, 1, out, 1, &err) == WQ_OK);
  const uint8_t *b = out[0].data;
  CHECK(out[0].dtype == WQ_DT_BOOL);
  CHECK(b[0] == 1 && b[4] == 1 && b[6] == 1 && b[7] == 0);
  free(out[0].data);

  /* Integer narrowing wraps; bool source normalises to 0/1. */
  const int64_t d3[] = {3};
  const int32_t xi[] = {300, -129, 65536};
  wq_value iin[1] = {val(WQ_DT_INT32, 1, d3, xi)};
  to = attr_int("to", WQ_DT_INT8);
  CHECK(run_op("Cast", 13, &to, 1, iin, 1, out, 1, &err) == WQ_OK);
  i8 = out[0].data;
  CHECK(i8[0] == 44 && i8[1] == 127 && i8[2] == 0);
  free(out[0].data);
  to = attr_int("to", WQ_DT_UINT16);
  CHECK(run_op("Cast", 13, &to, 1, iin, 1, out, 1, &err) == WQ_OK);
  const uint16_t *u16 = out[0].data;
  CHECK(u16[0] == 300 && u16[1] == 65407 && u16[2] == 0);
  free(out[0].data);

  const uint8_t xb[] = {0, 1, 2};
  wq_value bin[1] = {val(WQ_DT_BOOL, 1, d3, xb)};
  to = attr_int("to", WQ_DT_FLOAT);
  CHECK(run_op("Cast", 13, &to, 1, bin, 1, out, 1, &err) == WQ_OK);
  const float *f = out[0].data;
  CHECK(f[0] == 0 && f[1] == 1 && f[2] == 1);
  free(out[0].data);

  const uint64_t xu[] = {UINT64_MAX, 1, 0};
  wq_value uin[1] = {val(WQ_DT_UINT64, 1, d3, xu)};
  CHECK(run_op("Cast", 13, &to, 1, uin, 1, out, 1, &err) == WQ_OK);
  f = out[0].data;
  CHECK(f[0] == 18446744073709551616.0f && f[1] == 1 && f[2] == 0);
  free(out[0].data);
  to = attr_int("to", WQ_DT_INT64);
  CHECK(run_op("Cast", 13, &to, 1, uin, 1, out, 1, &err) == WQ_OK);
  CHECK(((int64_t *)out[0].data)[0] == -1);
  free(out[0].data);

  /* Every supported pair runs on a small vector. */
  const wq_dtype types[] = {WQ_DT_FLOAT, WQ_DT_INT8,   WQ_DT_UINT8, WQ_DT_INT16,  WQ_DT_UINT16,
                            WQ_DT_INT32, WQ_DT_UINT32, WQ_DT_INT64, WQ_DT_UINT64, WQ_DT_BOOL};
  uint64_t raw[3] = {0, 0, 0};
  unsigned char *bytes = (unsigned char *)raw;
  bytes[0] = 1; /* first element is 1 in every little-endian integer type */
  int failures = 0;
  for (int s = 0; s < N_OF(types); s++)
    for (int t = 0; t < N_OF(types); t++) {
      wq_value v[1] = {val(types[s], 1, d3, raw)};
      if (types[s] == WQ_DT_FLOAT) {
        float one[3] = {1, 0, 0};
        memcpy(raw, one, sizeof one);
      }
      to = attr_int("to", types[t]);
      if (run_op("Cast", 19, &to, 1, v, 1, out, 1, &err) != WQ_OK) {
        failures++;
        continue;
      }
      failures += wq_value_get_double(&out[0], 0) != 1.0 || wq_value_get_double(&out[0], 1) != 0.0;
      free(out[0].data);
      memset(raw, 0, sizeof raw);
      bytes[0] = 1;
    }
  CHECK(failures == 0);
  to = attr_int("to", WQ_DT_STRING);
  CHECK(infer_op("Cast", 13, &to, 1, in, 1, out, &err) == WQ_ERR_UNSUPPORTED);
}

static void test_softmax(void) {
  wq_error err;
  wq_value out[1];
  const int64_t d[] = {2, 2, 3};
  const float x[] = {1, 2, 3, 4, 5, 6, 1000, 1001, 1002, -1, -1, -1};
  wq_value in[1] = {val(WQ_DT_FLOAT, 3, d, x)};
  /* Opset 13, default axis -1: rows of 3. */
  CHECK(run_op("Softmax", 13, NULL, 0, in, 1, out, 1, &err) == WQ_OK);
  const float *y = out[0].data;
  double e0 = 1.0 / (1.0 + exp(1.0) + exp(2.0));
  CHECK_NEAR(y[0], e0, 1e-6);
  CHECK_NEAR(y[2], exp(2.0) * e0, 1e-6);
  CHECK_NEAR(y[6], e0, 1e-6); /* large numbers stay finite */
  CHECK_NEAR(y[8], exp(2.0) * e0, 1e-6);
  CHECK_NEAR(y[9], 1.0 / 3, 1e-6);
  free(out[0].data);
  /* Opset 13, axis 1: along the middle dim. */
  wq_attr axis = attr_int("axis", 1);
  CHECK(run_op("Softmax", 13, &axis, 1, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK_NEAR(y[0], 1.0 / (1.0 + exp(3.0)), 1e-6);
  CHECK_NEAR(y[3], exp(3.0) / (1.0 + exp(3.0)), 1e-6);
  CHECK_NEAR(y[6] + y[9], 1.0, 1e-6);
  free(out[0].data);
  /* Opset 11, axis 1: rows of 6 (coerced to 2-D [2, 6]). */
  CHECK(run_op("Softmax", 11, &axis, 1, in, 1, out, 1, &err) == WQ_OK);
  y = out[0].data;
  double s = 0;
  for (int i = 0; i < 6; i++)
    s += exp((double)x[i]);
  CHECK_NEAR(y[0], exp(1.0) / s, 1e-6);
  CHECK_NEAR(y[5], exp(6.0) / s, 1e-6);
  free(out[0].data);
  axis = attr_int("axis", 3);
  CHECK(infer_op("Softmax", 13, &axis, 1, in, 1, out, &err) == WQ_ERR_INVALID_MODEL);
}

static void test_batchnorm(void) {
  wq_error err;
  wq_value out[3];
  const int64_t dx[] = {2, 2, 2}, dc[] = {2};
  const float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float scale[] = {1, 2}, bias[] = {0, 1}, mean[] = {1, 2}, var[] = {4, 1};
  wq_value in[5] = {val(WQ_DT_FLOAT, 3, dx, x), val(WQ_DT_FLOAT, 1, dc, scale),
                    val(WQ_DT_FLOAT, 1, dc, bias), val(WQ_DT_FLOAT, 1, dc, mean),
                    val(WQ_DT_FLOAT, 1, dc, var)};
  wq_attr eps = attr_float("epsilon", 0.0f);
  CHECK(run_op("BatchNormalization", 15, &eps, 1, in, 5, out, 1, &err) == WQ_OK);
  const float *y = out[0].data;
  /* channel 0: (x-1)/2; channel 1: (x-2)*2+1 */
  CHECK(y[0] == 0 && y[1] == 0.5f && y[2] == 3 && y[3] == 5 && y[4] == 2 && y[6] == 11);
  free(out[0].data);

  /* Training mode: batch stats per channel. ch0 = {1,2,5,6}: mean 3.5,
   * var 4.25; ch1 = {3,4,7,8}: mean 5.5, var 4.25. */
  wq_attr attrs[3] = {attr_float("epsilon", 0.0f), attr_float("momentum", 0.5f),
                      attr_int("training_mode", 1)};
  CHECK(run_op("BatchNormalization", 15, attrs, 3, in, 5, out, 3, &err) == WQ_OK);
  y = out[0].data;
  const float *rm = out[1].data, *rv = out[2].data;
  CHECK(out[1].rank == 1 && out[1].dims[0] == 2);
  CHECK_NEAR(y[0], (1 - 3.5) / sqrt(4.25), 1e-6);
  CHECK_NEAR(y[2], (3 - 5.5) / sqrt(4.25) * 2 + 1, 1e-6);
  CHECK_NEAR(rm[0], 0.5 * 1 + 0.5 * 3.5, 1e-6);
  CHECK_NEAR(rm[1], 0.5 * 2 + 0.5 * 5.5, 1e-6);
  CHECK_NEAR(rv[0], 0.5 * 4 + 0.5 * 4.25, 1e-6);
  CHECK_NEAR(rv[1], 0.5 * 1 + 0.5 * 4.25, 1e-6);
  for (int i = 0; i < 3; i++)
    free(out[i].data);

  /* Statistics outputs in inference mode are rejected, not invented. */
  CHECK(run_op("BatchNormalization", 9, &eps, 1, in, 5, out, 3, &err) == WQ_ERR_UNSUPPORTED);

  /* Opset 7 spatial = 0: per-element parameters of shape [C, D]. */
  const int64_t dp[] = {2, 2};
  const float s4[] = {1, 1, 2, 2}, b4[] = {0, 1, 0, 1}, m4[] = {0, 0, 1, 1}, v4[] = {1, 1, 1, 1};
  wq_value in7[5] = {val(WQ_DT_FLOAT, 3, dx, x), val(WQ_DT_FLOAT, 2, dp, s4),
                     val(WQ_DT_FLOAT, 2, dp, b4), val(WQ_DT_FLOAT, 2, dp, m4),
                     val(WQ_DT_FLOAT, 2, dp, v4)};
  wq_attr a7[2] = {attr_float("epsilon", 0.0f), attr_int("spatial", 0)};
  CHECK(run_op("BatchNormalization", 7, a7, 2, in7, 5, out, 1, &err) == WQ_OK);
  y = out[0].data;
  CHECK(y[0] == 1 && y[1] == 3 && y[2] == 4 && y[3] == 7 && y[4] == 5 && y[7] == 15);
  free(out[0].data);

  /* Wrong parameter length names the parameter and X's shape. */
  const int64_t d3[] = {3};
  const float three[] = {1, 1, 1};
  in[2] = val(WQ_DT_FLOAT, 1, d3, three);
  CHECK(infer_op("BatchNormalization", 15, NULL, 0, in, 5, out, &err) == WQ_ERR_SHAPE);
  CHECK_MSG(strstr(err.message, "B has shape [3]") && strstr(err.message, "[2,2,2]"), "%s",
            err.message);
}

static void test_reduce_mean(void) {
  wq_error err;
  wq_value out[1];
  const int64_t d[] = {2, 3, 2};
  float x[12];
  for (int i = 0; i < 12; i++)
    x[i] = (float)i;
  wq_value in[2] = {val(WQ_DT_FLOAT, 3, d, x), omitted()};
  /* Opset 13: axes attribute [1], keepdims 1. */
  const int64_t ax1[] = {1};
  wq_attr a = attr_ints("axes", ax1, 1);
  CHECK(run_op("ReduceMean", 13, &a, 1, in, 1, out, 1, &err) == WQ_OK);
  CHECK(out[0].rank == 3 && out[0].dims[0] == 2 && out[0].dims[1] == 1 && out[0].dims[2] == 2);
  const float *y = out[0].data;
  CHECK(y[0] == 2 && y[1] == 3 && y[2] == 8 && y[3] == 9);
  free(out[0].data);
  /* Opset 18: axes input [-1, 0], keepdims 0. */
  const int64_t axes[] = {-1, 0}, dax[] = {2};
  in[1] = val(WQ_DT_INT64, 1, dax, axes);
  wq_attr keep0 = attr_int("keepdims", 0);
  CHECK(run_op("ReduceMean", 18, &keep0, 1, in, 2, out, 1, &err) == WQ_OK);
  CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
  y = out[0].data;
  CHECK(y[0] == 3.5f && y[1] == 5.5f && y[2] == 7.5f); /* mean of {0,1,6,7} etc. */
  free(out[0].data);
  /* No axes: reduce all; with noop_with_empty_axes: identity. */
  CHECK(run_op("ReduceMean", 18, &keep0, 1, in, 1, out, 1, &err) == WQ_OK);
  CHECK(out[0].rank == 0 && ((float *)out[0].data)[0] == 5.5f);
  free(out[0].data);
  wq_attr noop = attr_int("noop_with_empty_axes", 1);
  CHECK(run_op("ReduceMean", 18, &noop, 1, in, 1, out, 1, &err) == WQ_OK);
  CHECK(out[0].rank == 3 && ((float *)out[0].data)[11] == 11);
  free(out[0].data);
  /* Unknown axes at load give an unknown shape. */
  in[1].data = NULL;
  CHECK(infer_op("ReduceMean", 18, NULL, 0, in, 2, out, &err) == WQ_OK && out[0].rank == -1);
  /* Duplicate and out-of-range axes. */
  const int64_t dup[] = {1, -2};
  a = attr_ints("axes", dup, 2);
  CHECK(infer_op("ReduceMean", 13, &a, 1, in, 1, out, &err) == WQ_ERR_INVALID_MODEL);
  const int64_t far[] = {3};
  a = attr_ints("axes", far, 1);
  CHECK(infer_op("ReduceMean", 13, &a, 1, in, 1, out, &err) == WQ_ERR_INVALID_MODEL);
  /* int32 truncates toward zero; last-axis reduction. */
  const int32_t xi[] = {-3, -4, 1, 2};
  const int64_t di[] = {2, 2}, last[] = {-1};
  wq_value iin[1] = {val(WQ_DT_INT32, 2, di, xi)};
  a = attr_ints("axes", last, 1);
  CHECK(run_op("ReduceMean", 13, &a, 1, iin, 1, out, 1, &err) == WQ_OK);
  CHECK(((int32_t *)out[0].data)[0] == -3 && ((int32_t *)out[0].data)[1] == 1);
  free(out[0].data);
}

int main(void) {
  test_add_float_broadcast();
  test_broadcast_random();
  test_binary_validation();
  test_integer_arithmetic();
  test_equal_pow();
  test_unary();
  test_clip();
  test_cast();
  test_softmax();
  test_batchnorm();
  test_reduce_mean();
  WQ_TEST_END();
}
