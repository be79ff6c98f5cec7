/* wq_qparams: every granularity maps onto the one affine form, lookups are
 * explicit block arithmetic, channel_axis is derived from the scale shape,
 * and each validation error names the tensor and what is wrong. Expected
 * indices are worked out by hand in the comments. */
#include <math.h>
#include <string.h>

#include "quant/qparams.h"
#include "wq_test.h"

static wq_value f32(const float *data, int rank, const int64_t *dims) {
  wq_value v = {.dtype = WQ_DT_FLOAT, .rank = rank, .data = (void *)data};
  memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  return v;
}

static wq_value typed(wq_dtype dt, const void *data, int rank, const int64_t *dims) {
  wq_value v = {.dtype = dt, .rank = rank, .data = (void *)data};
  memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  return v;
}

static void test_per_tensor(void) {
  wq_qparams qp;
  wq_error err;
  int64_t dims[2] = {2, 3};
  CHECK(wq_qparams_init_per_tensor(&qp, WQ_DT_INT8, 2, dims, 0.5f, -3, "n", "t", &err) == WQ_OK);
  CHECK(qp.count == 1 && qp.qmin == -128 && qp.qmax == 127);
  CHECK(qp.scale_dims[0] == 1 && qp.scale_dims[1] == 1);
  CHECK(qp.block[0] == 2 && qp.block[1] == 3);
  CHECK(wq_qparams_is_per_tensor(&qp));
  CHECK(wq_qparams_channel_axis(&qp) == 0);
  float s;
  int32_t z;
  wq_qparams_at(&qp, 5, &s, &z);
  CHECK(s == 0.5f && z == -3);
  char buf[128];
  wq_qparams_describe(&qp, buf, sizeof buf);
  CHECK_MSG(strcmp(buf, "int8 per-tensor scale=0.5 zp=-3") == 0, "%s", buf);
  wq_qparams_free(&qp);
  wq_qparams_free(&qp); /* safe twice */

  /* ONNX: a scalar and a 1-element 1-D scale are both per-tensor. */
  float one_scale[1] = {2.0f};
  uint8_t one_zp[1] = {7};
  int64_t d1[1] = {1};
  wq_value sv = f32(one_scale, 1, d1), zv = typed(WQ_DT_UINT8, one_zp, 1, d1);
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_UINT8, 2, dims, &sv, &zv, 1, 0, "n", "t", &err) == WQ_OK);
  CHECK(qp.count == 1 && qp.scale[0] == 2.0f && qp.zero_point[0] == 7 && qp.qmax == 255);
  wq_qparams_free(&qp);
  /* A scalar scale with a [1] zero point is still one per-tensor pair. */
  wq_value scalar_sv = f32(one_scale, 0, d1);
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_UINT8, 2, dims, &scalar_sv, &zv, 1, 0, "n", "t", &err) ==
        WQ_OK);
  CHECK(qp.count == 1 && qp.zero_point[0] == 7);
  wq_qparams_free(&qp);
}

static void test_per_channel(void) {
  wq_qparams qp;
  wq_error err;
  int64_t dims[3] = {2, 3, 4};
  float scale[3] = {1.0f, 2.0f, 4.0f};
  int16_t zp[3] = {-1, 0, 1};
  int64_t d3[1] = {3};
  wq_value sv = f32(scale, 1, d3), zv = typed(WQ_DT_INT16, zp, 1, d3);
  for (int axis = -2; axis <= 1; axis += 3) { /* -2 and 1 name the same dim */
    CHECK(wq_qparams_from_onnx(&qp, WQ_DT_INT16, 3, dims, &sv, &zv, axis, 0, "n", "t", &err) ==
          WQ_OK);
    CHECK(qp.scale_dims[0] == 1 && qp.scale_dims[1] == 3 && qp.scale_dims[2] == 1);
    CHECK(qp.block[1] == 1 && qp.count == 3);
    CHECK(qp.qmin == -32768 && qp.qmax == 32767);
    CHECK(wq_qparams_channel_axis(&qp) == 1);
    CHECK(!wq_qparams_is_per_tensor(&qp));
    /* coords (1,2,3): linear 1*12 + 2*4 + 3 = 23, channel 2. */
    CHECK(wq_qparams_index_of(&qp, 23) == 2);
    /* coords (0,1,0): linear 4, channel 1. */
    CHECK(wq_qparams_index_of(&qp, 4) == 1);
    int64_t coords[3] = {1, 0, 3};
    CHECK(wq_qparams_index_at(&qp, coords) == 0);
    float s;
    int32_t z;
    wq_qparams_at(&qp, 23, &s, &z);
    CHECK(s == 4.0f && z == 1);
    char buf[128];
    wq_qparams_describe(&qp, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "int16 per-channel axis 1 [3]") == 0, "%s", buf);
    wq_qparams_free(&qp);
  }
}

/* Seed 002: a weight [K, C] quantized per output channel has scale [K, 1]:
 * K parameters, each looked up by its row, never a [K, K] product. */
static void test_seed002_explicit_blocks(void) {
  wq_qparams qp;
  wq_error err;
  int64_t wdims[2] = {3, 2}, sdims[2] = {3, 1};
  float scale[3] = {1.0f, 2.0f, 3.0f};
  CHECK(wq_qparams_init_arrays(&qp, WQ_DT_INT8, 2, wdims, sdims, NULL, scale, NULL, "n", "w",
                               &err) == WQ_OK);
  CHECK(qp.count == 3);
  CHECK(qp.block[0] == 1 && qp.block[1] == 2);
  CHECK(wq_qparams_channel_axis(&qp) == 0);
  float expect[6] = {1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 6; i++) {
    float s;
    int32_t z;
    wq_qparams_at(&qp, i, &s, &z);
    CHECK_MSG(s == expect[i] && z == 0, "element %d: scale %g", i, (double)s);
  }
  wq_qparams_free(&qp);
  /* The ONNX 1-D form with axis 0 lands on the same [K, 1] layout. */
  int64_t d3[1] = {3};
  wq_value sv = f32(scale, 1, d3);
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, wdims, &sv, NULL, 0, 0, "n", "w", &err) == WQ_OK);
  CHECK(qp.count == 3 && qp.scale_dims[0] == 3 && qp.scale_dims[1] == 1);
  CHECK(wq_qparams_index_of(&qp, 5) == 2);
  wq_qparams_free(&qp);
}

static void test_per_group_and_blockwise(void) {
  wq_qparams qp;
  wq_error err;
  /* Per-group: data [4, 8], scale [4, 2] -> block [1, 4]. */
  int64_t dims[2] = {4, 8}, sdims[2] = {4, 2};
  float scale[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int32_t zp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(wq_qparams_init_arrays(&qp, WQ_DT_UINT8, 2, dims, sdims, NULL, scale, zp, "n", "t", &err) ==
        WQ_OK);
  CHECK(qp.block[0] == 1 && qp.block[1] == 4);
  CHECK(wq_qparams_channel_axis(&qp) == -1); /* two dims > 1: no single channel axis */
  /* coords (2,5): linear 21 -> parameter (2, 5/4 = 1) -> 2*2 + 1 = 5. */
  CHECK(wq_qparams_index_of(&qp, 21) == 5);
  float s;
  int32_t z;
  wq_qparams_at(&qp, 21, &s, &z);
  CHECK(s == 6.0f && z == 5);
  char buf[128];
  wq_qparams_describe(&qp, buf, sizeof buf);
  CHECK_MSG(strcmp(buf, "uint8 blockwise scale [4,2] block [1,4]") == 0, "%s", buf);
  wq_qparams clone;
  CHECK(wq_qparams_clone(&clone, &qp, &err) == WQ_OK);
  wq_qparams_free(&qp);
  CHECK(clone.scale[5] == 6.0f && clone.zero_point[5] == 5 && clone.block[1] == 4);
  wq_qparams_free(&clone);

  /* One dim grouped: data [1, 8], scale [1, 2]: the single non-1 dim is
   * the derived channel axis even though its block is 4. */
  int64_t d18[2] = {1, 8}, s12[2] = {1, 2};
  CHECK(wq_qparams_init_arrays(&qp, WQ_DT_INT8, 2, d18, s12, NULL, scale, NULL, "n", "t", &err) ==
        WQ_OK);
  CHECK(wq_qparams_channel_axis(&qp) == 1 && qp.block[1] == 4);
  wq_qparams_free(&qp);

  /* ONNX blocked (opset 21): data [3, 4], scale [3, 2], axis 1, block 2. */
  int64_t d34[2] = {3, 4}, s32[2] = {3, 2};
  wq_value sv = f32(scale, 2, s32);
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv, NULL, 1, 2, "n", "t", &err) == WQ_OK);
  CHECK(qp.block[0] == 1 && qp.block[1] == 2 && qp.count == 6);
  /* coords (1,3): parameter (1, 1) -> 3. */
  CHECK(wq_qparams_index_of(&qp, 7) == 3);
  CHECK(wq_qparams_channel_axis(&qp) == -1);
  wq_qparams_free(&qp);

  /* ONNX allows a shorter last block: data [3, 5], block 2 -> 3 scales per
   * row; element (0, 4) is in block 2. */
  int64_t d35[2] = {3, 5}, s33[2] = {3, 3};
  float scale9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  wq_value sv9 = f32(scale9, 2, s33);
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d35, &sv9, NULL, -1, 2, "n", "t", &err) == WQ_OK);
  CHECK(wq_qparams_index_of(&qp, 4) == 2);
  CHECK(wq_qparams_index_of(&qp, 14) == 8);
  wq_qparams_free(&qp);
}

static void test_channel_axis(void) {
  wq_qparams qp;
  wq_error err;
  int64_t dims[4] = {16, 3, 3, 3};
  int64_t forms[4][4] = {{1, 1, 1, 1}, {16, 1, 1, 1}, {1, 3, 1, 1}, {16, 3, 1, 1}};
  int expect[4] = {0, 0, 1, -1};
  for (int f = 0; f < 4; f++) {
    CHECK(wq_qparams_init_arrays(&qp, WQ_DT_INT8, 4, dims, forms[f], NULL, NULL, NULL, "n", "t",
                                 &err) == WQ_OK);
    CHECK_MSG(wq_qparams_channel_axis(&qp) == expect[f], "form %d: %d", f,
              wq_qparams_channel_axis(&qp));
    wq_qparams_free(&qp);
  }
}

/* Builds per-tensor qparams from one scale/zero point and checks the error
 * code and message. */
static void expect_error(wq_status st, const wq_error *err, wq_status code, const char *needle) {
  CHECK_MSG(st == code, "status %s, want %s (%s)", wq_status_name(st), wq_status_name(code),
            err->message);
  CHECK_MSG(strstr(err->message, needle) != NULL, "message '%s' lacks '%s'", err->message, needle);
  CHECK_MSG(strstr(err->message, "conv1.w_scale") != NULL, "message '%s' does not name the tensor",
            err->message);
  CHECK(strcmp(err->node, "conv1") == 0);
}

static void test_validation_errors(void) {
  wq_qparams qp;
  wq_error err;
  int64_t dims[2] = {4, 6};
  const char *what = "conv1.w_scale";
  struct {
    float scale;
    const char *needle;
  } bad_scales[] = {{NAN, "is not finite"},
                    {INFINITY, "is not finite"},
                    {0.0f, "is not positive"},
                    {-0.5f, "is not positive"},
                    {1e-40f, "is subnormal"}};
  for (size_t i = 0; i < sizeof bad_scales / sizeof bad_scales[0]; i++) {
    wq_error_clear(&err);
    wq_status st = wq_qparams_init_per_tensor(&qp, WQ_DT_INT8, 2, dims, bad_scales[i].scale, 0,
                                              "conv1", what, &err);
    expect_error(st, &err, WQ_ERR_INVALID_MODEL, bad_scales[i].needle);
    CHECK(qp.scale == NULL && qp.zero_point == NULL); /* nothing held on failure */
  }
  /* The smallest normal float is accepted. */
  CHECK(wq_qparams_init_per_tensor(&qp, WQ_DT_INT8, 2, dims, 1.17549435e-38f, 0, "conv1", what,
                                   &err) == WQ_OK);
  wq_qparams_free(&qp);

  /* Zero points outside [qmin, qmax]. */
  wq_status st =
      wq_qparams_init_per_tensor(&qp, WQ_DT_INT8, 2, dims, 1.0f, 128, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_INVALID_MODEL, "zero point[0] = 128 is outside the int8 range");
  st = wq_qparams_init_per_tensor(&qp, WQ_DT_UINT8, 2, dims, 1.0f, -1, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_INVALID_MODEL, "outside the uint8 range [0, 255]");
  /* ...at the edges they are fine. */
  CHECK(wq_qparams_init_per_tensor(&qp, WQ_DT_INT8, 2, dims, 1.0f, -128, "conv1", what, &err) ==
        WQ_OK);
  wq_qparams_free(&qp);
  CHECK(wq_qparams_init_per_tensor(&qp, WQ_DT_UINT16, 2, dims, 1.0f, 65535, "conv1", what, &err) ==
        WQ_OK);
  wq_qparams_free(&qp);

  /* Blocks that do not divide the shape (native form). */
  int64_t s44[2] = {4, 4};
  st = wq_qparams_init_arrays(&qp, WQ_DT_INT8, 2, dims, s44, NULL, NULL, NULL, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_SHAPE, "does not divide data shape [4,6]");

  /* ONNX block_size inconsistent with the scale shape: block 1 along a dim
   * of 4 needs 4 scales, not 2. */
  int64_t d34[2] = {3, 4}, s32[2] = {3, 2};
  float scale6[6] = {1, 1, 1, 1, 1, 1};
  wq_value sv = f32(scale6, 2, s32);
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv, NULL, 1, 1, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_SHAPE, "needs 4 scales");
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv, NULL, 1, -2, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_INVALID_MODEL, "block_size -2 is negative");

  /* Per-axis length mismatch and bad axis. */
  int64_t d4[1] = {4};
  wq_value sv4 = f32(scale6, 1, d4);
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv4, NULL, 0, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_SHAPE, "per-axis scale of 4 elements does not match dim 0");
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv4, NULL, 2, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_INVALID_MODEL, "axis 2 is outside [-2, 1]");
  /* 2-D scale without block_size. */
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv, NULL, 1, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_SHAPE, "must be a scalar or 1-D without block_size");

  /* Zero point shape differs from scale shape. */
  int8_t zp3[3] = {0, 0, 0};
  int64_t d3[1] = {3};
  wq_value sv3 = f32(scale6, 1, d3), zv4 = typed(WQ_DT_INT8, zp3, 1, d4);
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv3, &zv4, 0, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_SHAPE, "zero point shape [4] differs from scale shape [3]");
  /* Zero point of another dtype than the data. */
  uint8_t uzp[3] = {0, 0, 0};
  wq_value uzv = typed(WQ_DT_UINT8, uzp, 1, d3);
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &sv3, &uzv, 0, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_INVALID_MODEL, "zero point dtype uint8 does not match");

  /* Unsupported types: a float16 scale, a non-quantized data type. */
  uint16_t half[1] = {0x3c00};
  wq_value hv = typed(WQ_DT_FLOAT16, half, 0, d3);
  st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, d34, &hv, NULL, 1, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_UNSUPPORTED, "dtype float16 is not supported");
  st = wq_qparams_init_per_tensor(&qp, WQ_DT_INT4, 2, dims, 1.0f, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_UNSUPPORTED, "dtype int4 is not supported");
  st = wq_qparams_init_per_tensor(&qp, WQ_DT_FLOAT, 2, dims, 1.0f, 0, "conv1", what, &err);
  expect_error(st, &err, WQ_ERR_UNSUPPORTED, "dtype float is not supported");

  /* int32 (bias) range. */
  CHECK(wq_qparams_init_per_tensor(&qp, WQ_DT_INT32, 1, dims, 0.001f, 0, "conv1", what, &err) ==
        WQ_OK);
  CHECK(qp.qmin == INT32_MIN && qp.qmax == INT32_MAX);
  wq_qparams_free(&qp);
}

/* Shapes known, values not (a runtime scale input at load time). */
static void test_shape_only(void) {
  wq_qparams qp;
  wq_error err;
  int64_t dims[2] = {-1, 8}, d8[1] = {8};
  wq_value sv = {.dtype = WQ_DT_FLOAT, .rank = 1, .dims = {8}, .data = NULL};
  (void)d8;
  CHECK(wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, dims, &sv, NULL, 1, 0, "n", "t", &err) == WQ_OK);
  CHECK(qp.scale == NULL && qp.count == 8 && wq_qparams_channel_axis(&qp) == 1);
  wq_qparams_free(&qp);
  /* An unknown dim along which scales vary cannot be blocked. */
  wq_value sv2 = {.dtype = WQ_DT_FLOAT, .rank = 1, .dims = {4}, .data = NULL};
  wq_status st = wq_qparams_from_onnx(&qp, WQ_DT_INT8, 2, dims, &sv2, NULL, 0, 0, "n", "t", &err);
  CHECK_MSG(st == WQ_ERR_SHAPE, "%s", err.message);
}

int main(void) {
  test_per_tensor();
  test_per_channel();
  test_seed002_explicit_blocks();
  test_per_group_and_blockwise();
  test_channel_axis();
  test_validation_errors();
  test_shape_only();
  WQ_TEST_END();
}
