/* Unit tests for the tensor family (data movement and shape plumbing).
 * Expected values are derived by hand from the ONNX operator spec. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "wq_test.h"

/* ------------------------------------------------------------ harness */

typedef struct {
  wq_node node;
  wq_attr attrs[8];
  int ios[16];
} test_node;

static void node_init(test_node *t, const char *op_type, int opset, int n_in, int n_out) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < 16; i++)
    t->ios[i] = i;
  t->node.name = (char *)"n0";
  t->node.op_type = (char *)op_type;
  t->node.domain = (char *)"";
  t->node.opset = opset;
  t->node.inputs = t->ios;
  t->node.n_inputs = n_in;
  t->node.outputs = t->ios;
  t->node.n_outputs = n_out;
  t->node.attrs = t->attrs;
}

static wq_attr *add_attr(test_node *t, const char *name, wq_attr_type type) {
  wq_attr *a = &t->attrs[t->node.n_attrs++];
  a->name = (char *)name;
  a->type = type;
  return a;
}

static void attr_int(test_node *t, const char *name, int64_t v) {
  add_attr(t, name, WQ_ATTR_INT)->i = v;
}

static void attr_float(test_node *t, const char *name, float v) {
  add_attr(t, name, WQ_ATTR_FLOAT)->f = v;
}

static void attr_ints(test_node *t, const char *name, const int64_t *v, size_t n) {
  wq_attr *a = add_attr(t, name, WQ_ATTR_INTS);
  a->ints = (int64_t *)v;
  a->count = n;
}

static void attr_string(test_node *t, const char *name, const char *s) {
  wq_attr *a = add_attr(t, name, WQ_ATTR_STRING);
  a->s = (char *)s;
  a->s_len = strlen(s);
}

static void attr_tensor(test_node *t, const char *name, wq_tensor *tensor) {
  add_attr(t, name, WQ_ATTR_TENSOR)->t = tensor;
}

static wq_value val(wq_dtype dtype, int rank, const int64_t *dims, const void *data) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = dtype;
  v.rank = rank;
  for (int i = 0; i < rank; i++)
    v.dims[i] = dims[i];
  v.data = (void *)data;
  return v;
}

static wq_value absent(void) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.rank = -1;
  return v;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define I32(...) ((const int32_t[]){__VA_ARGS__})
#define F32(...) ((const float[]){__VA_ARGS__})

/* Infers, allocates outputs and runs. Outputs must be freed with
 * free_outputs even on failure. */
static wq_status run_node(test_node *t, const wq_value *in, wq_value *out, wq_error *err) {
  const wq_op *op = wq_op_find("", t->node.op_type);
  if (!op)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "no op %s", t->node.op_type);
  for (int i = 0; i < t->node.n_outputs; i++)
    memset(&out[i], 0, sizeof out[i]);
  WQ_TRY(op->infer(&t->node, in, out, err));
  for (int i = 0; i < t->node.n_outputs; i++) {
    if (wq_value_numel(&out[i]) < 0)
      return wq_fail(err, WQ_ERR_SHAPE, NULL, "output %d shape unknown after infer", i);
    size_t n = wq_value_nbytes(&out[i]);
    out[i].data = malloc(n ? n : 1);
  }
  return op->run(&t->node, in, out, err);
}

static wq_status infer_node(test_node *t, const wq_value *in, wq_value *out, wq_error *err) {
  const wq_op *op = wq_op_find("", t->node.op_type);
  for (int i = 0; i < t->node.n_outputs; i++)
    memset(&out[i], 0, sizeof out[i]);
  return op->infer(&t->node, in, out, err);
}

static void free_outputs(wq_value *out, int n) {
  for (int i = 0; i < n; i++) {
    free(out[i].data);
    out[i].data = NULL;
  }
}

static int shape_is(const wq_value *v, int rank, const int64_t *dims) {
  if (v->rank != rank)
    return 0;
  for (int i = 0; i < rank; i++)
    if (v->dims[i] != dims[i])
      return 0;
  return 1;
}

static int f32_is(const wq_value *v, const float *want, int n) {
  if (v->dtype != WQ_DT_FLOAT || wq_value_numel(v) != n)
    return 0;
  for (int i = 0; i < n; i++)
    if (((const float *)v->data)[i] != want[i]) {
      fprintf(stderr, "  element %d: %g vs %g\n", i, ((const float *)v->data)[i], want[i]);
      return 0;
    }
  return 1;
}

static int int_is(const wq_value *v, const int64_t *want, int n) {
  if (wq_value_numel(v) != n)
    return 0;
  for (int i = 0; i < n; i++)
    if (wq_value_get_int(v, i) != want[i]) {
      fprintf(stderr, "  element %d: %lld vs %lld\n", i, (long long)wq_value_get_int(v, i),
              (long long)want[i]);
      return 0;
    }
  return 1;
}

static const float iota12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* --------------------------------------------------------------- Split */

static void test_split(void) {
  test_node t;
  wq_error err;
  wq_value out[4];

  /* opset 13: 'split' input [2, 4] on [1..6]. */
  node_init(&t, "Split", 13, 2, 2);
  wq_value in[2] = {val(WQ_DT_FLOAT, 1, DIMS(6), F32(1, 2, 3, 4, 5, 6)),
                    val(WQ_DT_INT64, 1, DIMS(2), I64(2, 4))};
  CHECK(run_node(&t, in, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 1, DIMS(2)) && f32_is(&out[0], F32(1, 2), 2));
  CHECK(shape_is(&out[1], 1, DIMS(4)) && f32_is(&out[1], F32(3, 4, 5, 6), 4));
  free_outputs(out, 2);

  /* opset 11: 'split' attribute on axis 1 of a [2,6] int32 tensor. */
  node_init(&t, "Split", 11, 1, 2);
  attr_int(&t, "axis", 1);
  attr_ints(&t, "split", I64(2, 4), 2);
  wq_value in2 = val(WQ_DT_INT32, 2, DIMS(2, 6), I32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  CHECK(run_node(&t, &in2, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(2, 2)) && int_is(&out[0], I64(1, 2, 7, 8), 4));
  CHECK(shape_is(&out[1], 2, DIMS(2, 4)) && int_is(&out[1], I64(3, 4, 5, 6, 9, 10, 11, 12), 8));
  free_outputs(out, 2);

  /* opset 18 num_outputs=4 on 7 elements: chunks of ceil(7/4)=2, last 1. */
  node_init(&t, "Split", 18, 1, 4);
  attr_int(&t, "num_outputs", 4);
  wq_value in3 = val(WQ_DT_FLOAT, 1, DIMS(7), F32(1, 2, 3, 4, 5, 6, 7));
  CHECK(run_node(&t, &in3, out, &err) == WQ_OK);
  CHECK(f32_is(&out[0], F32(1, 2), 2) && f32_is(&out[1], F32(3, 4), 2));
  CHECK(f32_is(&out[2], F32(5, 6), 2) && f32_is(&out[3], F32(7), 1));
  free_outputs(out, 4);

  /* Equal split with negative axis: [2,6] into 3 along -1. */
  node_init(&t, "Split", 13, 1, 3);
  attr_int(&t, "axis", -1);
  wq_value in4 = val(WQ_DT_FLOAT, 2, DIMS(2, 6), iota12);
  CHECK(run_node(&t, &in4, out, &err) == WQ_OK);
  CHECK(shape_is(&out[1], 2, DIMS(2, 2)) && f32_is(&out[1], F32(2, 3, 8, 9), 4));
  free_outputs(out, 3);

  /* Uneven equal split before opset 18 is an error. */
  node_init(&t, "Split", 13, 1, 4);
  CHECK(infer_node(&t, &in4, out, &err) == WQ_ERR_SHAPE);

  /* Sizes that do not sum to the axis length. */
  node_init(&t, "Split", 13, 2, 2);
  wq_value bad[2] = {in[0], val(WQ_DT_INT64, 1, DIMS(2), I64(2, 3))};
  CHECK(infer_node(&t, bad, out, &err) == WQ_ERR_SHAPE);

  /* Unknown 'split' data: rank known, split axis unknown. */
  wq_value unk[2] = {in4, val(WQ_DT_INT64, 1, DIMS(2), NULL)};
  node_init(&t, "Split", 13, 2, 2);
  attr_int(&t, "axis", 1);
  CHECK(infer_node(&t, unk, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(2, -1)) && out[0].dtype == WQ_DT_FLOAT);
}

/* --------------------------------------------------------------- Slice */

static void slice_case(int opset, wq_value data, const int64_t *starts, const int64_t *ends,
                       const int64_t *axes, const int64_t *steps, int n, wq_value *out,
                       wq_status *st) {
  test_node t;
  wq_error err;
  node_init(&t, "Slice", opset, 5, 1);
  wq_value in[5] = {data, val(WQ_DT_INT64, 1, DIMS(n), starts), val(WQ_DT_INT64, 1, DIMS(n), ends),
                    axes ? val(WQ_DT_INT64, 1, DIMS(n), axes) : absent(),
                    steps ? val(WQ_DT_INT64, 1, DIMS(n), steps) : absent()};
  *st = run_node(&t, in, out, &err);
}

static void test_slice(void) {
  wq_value out[1];
  wq_status st;
  const float d8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  wq_value x24 = val(WQ_DT_FLOAT, 2, DIMS(2, 4), d8);

  /* Spec example 1: axes [0,1], starts [1,0], ends [2,3], steps [1,2]. */
  slice_case(13, x24, I64(1, 0), I64(2, 3), I64(0, 1), I64(1, 2), 2, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 2, DIMS(1, 2)) && f32_is(&out[0], F32(5, 7), 2));
  free_outputs(out, 1);

  /* Spec example 2: starts [0,1], ends [-1,1000] -> [[2,3,4]]. */
  slice_case(13, x24, I64(0, 1), I64(-1, 1000), NULL, NULL, 2, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 2, DIMS(1, 3)) && f32_is(&out[0], F32(2, 3, 4), 3));
  free_outputs(out, 1);

  const int32_t r10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  wq_value x10 = val(WQ_DT_INT32, 1, DIMS(10), r10);

  /* Reverse everything: start INT64_MAX clamps to 9, end INT64_MIN to -1. */
  slice_case(13, x10, I64(INT64_MAX), I64(INT64_MIN), NULL, I64(-1), 1, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 1, DIMS(10)) &&
        int_is(&out[0], I64(9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 10));
  free_outputs(out, 1);

  /* Negative start counts from the back; huge end clamps to dim. */
  slice_case(13, x10, I64(-3), I64(INT64_MAX), I64(0), NULL, 1, out, &st);
  CHECK(st == WQ_OK && int_is(&out[0], I64(7, 8, 9), 3));
  free_outputs(out, 1);

  /* Step -3 from 8 down to (excluding) 1: 8, 5, 2. */
  slice_case(13, x10, I64(8), I64(1), NULL, I64(-3), 1, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 1, DIMS(3)) && int_is(&out[0], I64(8, 5, 2), 3));
  free_outputs(out, 1);

  /* Start past end with a positive step gives an empty axis. */
  slice_case(13, x10, I64(7), I64(3), NULL, NULL, 1, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 1, DIMS(0)));
  free_outputs(out, 1);

  /* Start beyond the end with a huge negative step: one element (the last). */
  slice_case(13, x10, I64(100), I64(-100), NULL, I64(INT64_MIN), 1, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 1, DIMS(1)) && int_is(&out[0], I64(9), 1));
  free_outputs(out, 1);

  /* 2-D negative step on axis -1: columns 3 and 1 of a [3,4]. */
  wq_value x34 = val(WQ_DT_FLOAT, 2, DIMS(3, 4), iota12);
  slice_case(13, x34, I64(-1), I64(-1000), I64(-1), I64(-2), 1, out, &st);
  CHECK(st == WQ_OK && shape_is(&out[0], 2, DIMS(3, 2)) &&
        f32_is(&out[0], F32(3, 1, 7, 5, 11, 9), 6));
  free_outputs(out, 1);

  /* Step 0 and repeated axes are errors. */
  slice_case(13, x10, I64(0), I64(5), NULL, I64(0), 1, out, &st);
  CHECK(st == WQ_ERR_SHAPE);
  free_outputs(out, 1);
  slice_case(13, x34, I64(0, 0), I64(1, 1), I64(1, -1), NULL, 2, out, &st);
  CHECK(st == WQ_ERR_SHAPE);
  free_outputs(out, 1);

  /* Opset 9: attributes; starts [0,1], ends [1,3] -> [[2,3]]. */
  test_node t;
  wq_error err;
  node_init(&t, "Slice", 9, 1, 1);
  attr_ints(&t, "starts", I64(0, 1), 2);
  attr_ints(&t, "ends", I64(1, 3), 2);
  CHECK(run_node(&t, &x24, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(1, 2)) && f32_is(&out[0], F32(2, 3), 2));
  free_outputs(out, 1);

  /* int32 parameters work the same. */
  node_init(&t, "Slice", 13, 3, 1);
  wq_value in3[3] = {x10, val(WQ_DT_INT32, 1, DIMS(1), I32(2)),
                     val(WQ_DT_INT32, 1, DIMS(1), I32(INT32_MAX))};
  CHECK(run_node(&t, in3, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 1, DIMS(8)) && int_is(&out[0], I64(2, 3, 4, 5, 6, 7, 8, 9), 8));
  free_outputs(out, 1);

  /* Unknown starts: rank stays, dims unknown. */
  wq_value unk[3] = {x34, val(WQ_DT_INT64, 1, DIMS(1), NULL), val(WQ_DT_INT64, 1, DIMS(1), NULL)};
  CHECK(infer_node(&t, unk, out, &err) == WQ_OK && out[0].rank == 2 && out[0].dims[0] == -1);
}

/* --------------------------------------------------- Squeeze/Unsqueeze */

static void test_squeeze_unsqueeze(void) {
  test_node t;
  wq_error err;
  wq_value out[1];
  const float d6[6] = {1, 2, 3, 4, 5, 6};
  wq_value x = val(WQ_DT_FLOAT, 4, DIMS(1, 3, 1, 2), d6);

  node_init(&t, "Squeeze", 13, 2, 1);
  wq_value in[2] = {x, val(WQ_DT_INT64, 1, DIMS(1), I64(-2))};
  CHECK(run_node(&t, in, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 3, DIMS(1, 3, 2)) && f32_is(&out[0], d6, 6));
  free_outputs(out, 1);

  node_init(&t, "Squeeze", 13, 1, 1); /* no axes: every size-1 dim */
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(3, 2)));
  free_outputs(out, 1);

  node_init(&t, "Squeeze", 11, 1, 1); /* attribute form */
  attr_ints(&t, "axes", I64(0), 1);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && shape_is(&out[0], 3, DIMS(3, 1, 2)));
  free_outputs(out, 1);

  node_init(&t, "Squeeze", 13, 2, 1); /* axis 1 has size 3 */
  wq_value bad[2] = {x, val(WQ_DT_INT64, 1, DIMS(1), I64(1))};
  CHECK(infer_node(&t, bad, out, &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "size 3") != NULL);
  wq_value oob[2] = {x, val(WQ_DT_INT64, 1, DIMS(1), I64(4))};
  CHECK(infer_node(&t, oob, out, &err) == WQ_ERR_SHAPE);

  wq_value y = val(WQ_DT_UINT8, 2, DIMS(3, 2), (const uint8_t[]){1, 2, 3, 4, 5, 6});
  node_init(&t, "Unsqueeze", 13, 2, 1); /* axes index the output: [0, -1] -> 0, 3 */
  wq_value uin[2] = {y, val(WQ_DT_INT64, 1, DIMS(2), I64(0, -1))};
  CHECK(run_node(&t, uin, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 4, DIMS(1, 3, 2, 1)) && int_is(&out[0], I64(1, 2, 3, 4, 5, 6), 6));
  free_outputs(out, 1);

  node_init(&t, "Unsqueeze", 11, 1, 1);
  attr_ints(&t, "axes", I64(1, 3), 2);
  CHECK(run_node(&t, &y, out, &err) == WQ_OK && shape_is(&out[0], 4, DIMS(3, 1, 2, 1)));
  free_outputs(out, 1);

  node_init(&t, "Unsqueeze", 13, 2, 1);
  wq_value dup[2] = {y, val(WQ_DT_INT64, 1, DIMS(2), I64(1, -3))}; /* both are axis 1 */
  CHECK(infer_node(&t, dup, out, &err) == WQ_ERR_SHAPE);
  wq_value unk[2] = {y, val(WQ_DT_INT64, 1, DIMS(2), NULL)};
  CHECK(infer_node(&t, unk, out, &err) == WQ_OK && out[0].rank == 4 && out[0].dims[0] == -1);
}

/* -------------------------------------------------------------- Gather */

static void test_gather(void) {
  test_node t;
  wq_error err;
  wq_value out[1];

  /* Spec example 1: axis 0, data [[1,2],[3,4],[5,6]], indices [[0,1],[1,2]]. */
  node_init(&t, "Gather", 13, 2, 1);
  wq_value in[2] = {val(WQ_DT_FLOAT, 2, DIMS(3, 2), F32(1, 2, 3, 4, 5, 6)),
                    val(WQ_DT_INT64, 2, DIMS(2, 2), I64(0, 1, 1, 2))};
  CHECK(run_node(&t, in, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 3, DIMS(2, 2, 2)) && f32_is(&out[0], F32(1, 2, 3, 4, 3, 4, 5, 6), 8));
  free_outputs(out, 1);

  /* Spec example 2: axis 1, int32 indices [[0,2]] -> [[[1,3]],[[4,6]],[[7,9]]]. */
  node_init(&t, "Gather", 13, 2, 1);
  attr_int(&t, "axis", 1);
  wq_value in2[2] = {val(WQ_DT_INT64, 2, DIMS(3, 3), I64(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                     val(WQ_DT_INT32, 2, DIMS(1, 2), I32(0, 2))};
  CHECK(run_node(&t, in2, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 3, DIMS(3, 1, 2)) && int_is(&out[0], I64(1, 3, 4, 6, 7, 9), 6));
  free_outputs(out, 1);

  /* Negative scalar index on axis -1 of uint8 data: output rank r-1. */
  node_init(&t, "Gather", 13, 2, 1);
  attr_int(&t, "axis", -1);
  wq_value in3[2] = {val(WQ_DT_UINT8, 2, DIMS(2, 3), (const uint8_t[]){10, 11, 12, 20, 21, 22}),
                     val(WQ_DT_INT64, 0, NULL, I64(-1))};
  CHECK(run_node(&t, in3, out, &err) == WQ_OK);
  CHECK(out[0].dtype == WQ_DT_UINT8 && shape_is(&out[0], 1, DIMS(2)) &&
        int_is(&out[0], I64(12, 22), 2));
  free_outputs(out, 1);

  /* Out-of-range index: an error naming it, both at load and at run. */
  node_init(&t, "Gather", 13, 2, 1);
  wq_value bad[2] = {in[0], val(WQ_DT_INT64, 1, DIMS(2), I64(1, 3))};
  CHECK(infer_node(&t, bad, out, &err) == WQ_ERR_SHAPE && strstr(err.message, "index 3"));
  wq_value neg[2] = {in[0], val(WQ_DT_INT32, 1, DIMS(1), I32(-4))};
  CHECK(run_node(&t, neg, out, &err) == WQ_ERR_SHAPE && strstr(err.message, "index -4"));
  free_outputs(out, 1);
  /* Same check in run alone (indices unknown at load). */
  const wq_op *op = wq_op_find("", "Gather");
  wq_value late[2] = {in[0], val(WQ_DT_INT64, 1, DIMS(2), NULL)};
  CHECK(op->infer(&t.node, late, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(2, 2)));
  float buf[4];
  out[0].data = buf;
  CHECK(op->run(&t.node, bad, out, &err) == WQ_ERR_SHAPE);
}

/* ----------------------------------------------------- ConstantOfShape */

static void test_constant_of_shape(void) {
  test_node t;
  wq_error err;
  wq_value out[1];
  int32_t seven = 7;
  wq_tensor value;
  memset(&value, 0, sizeof value);
  value.dtype = WQ_DT_INT32;
  value.rank = 1;
  value.dims[0] = 1;
  value.data = &seven;
  value.nbytes = 4;

  node_init(&t, "ConstantOfShape", 9, 1, 1);
  attr_tensor(&t, "value", &value);
  wq_value shape = val(WQ_DT_INT64, 1, DIMS(2), I64(2, 3));
  CHECK(run_node(&t, &shape, out, &err) == WQ_OK);
  CHECK(out[0].dtype == WQ_DT_INT32 && shape_is(&out[0], 2, DIMS(2, 3)) &&
        int_is(&out[0], I64(7, 7, 7, 7, 7, 7), 6));
  free_outputs(out, 1);

  node_init(&t, "ConstantOfShape", 9, 1, 1); /* default: float32 zeros */
  wq_value shape1 = val(WQ_DT_INT64, 1, DIMS(1), I64(3));
  CHECK(run_node(&t, &shape1, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 1, DIMS(3)) && f32_is(&out[0], F32(0, 0, 0), 3));
  free_outputs(out, 1);

  wq_value empty = val(WQ_DT_INT64, 1, DIMS(0), I64(0)); /* shape [] -> scalar */
  CHECK(run_node(&t, &empty, out, &err) == WQ_OK && out[0].rank == 0 && f32_is(&out[0], F32(0), 1));
  free_outputs(out, 1);

  wq_value negative = val(WQ_DT_INT64, 1, DIMS(2), I64(2, -1));
  CHECK(infer_node(&t, &negative, out, &err) == WQ_ERR_SHAPE);
  wq_value huge = val(WQ_DT_INT64, 1, DIMS(2), I64(INT64_MAX, 4));
  CHECK(infer_node(&t, &huge, out, &err) == WQ_ERR_SHAPE);
  wq_value unknown = val(WQ_DT_INT64, 1, DIMS(2), NULL);
  CHECK(infer_node(&t, &unknown, out, &err) == WQ_OK && out[0].rank == 2 && out[0].dims[1] == -1 &&
        out[0].dtype == WQ_DT_FLOAT);
}

/* --------------------------------------------------------------- Shape */

static void test_shape(void) {
  test_node t;
  wq_error err;
  wq_value out[1];
  /* No data: Shape must only need the input's shape. */
  wq_value x = val(WQ_DT_FLOAT, 4, DIMS(2, 3, 4, 5), NULL);

  node_init(&t, "Shape", 13, 1, 1);
  CHECK(wq_op_find("", "Shape")->flags & WQ_OP_FLAG_SHAPE_ONLY);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK);
  CHECK(out[0].dtype == WQ_DT_INT64 && int_is(&out[0], I64(2, 3, 4, 5), 4));
  free_outputs(out, 1);

  node_init(&t, "Shape", 15, 1, 1);
  attr_int(&t, "start", 1);
  attr_int(&t, "end", -1);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && int_is(&out[0], I64(3, 4), 2));
  free_outputs(out, 1);

  node_init(&t, "Shape", 15, 1, 1); /* both bounds clamp */
  attr_int(&t, "start", -10);
  attr_int(&t, "end", 10);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && int_is(&out[0], I64(2, 3, 4, 5), 4));
  free_outputs(out, 1);

  node_init(&t, "Shape", 15, 1, 1); /* start after end: empty */
  attr_int(&t, "start", 3);
  attr_int(&t, "end", 1);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && shape_is(&out[0], 1, DIMS(0)));
  free_outputs(out, 1);

  node_init(&t, "Shape", 15, 1, 1);
  attr_int(&t, "start", -1);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && int_is(&out[0], I64(5), 1));
  free_outputs(out, 1);
}

/* ----------------------------------------------------------------- Pad */

static void test_pad(void) {
  test_node t;
  wq_error err;
  wq_value out[1];
  const float d[6] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
  wq_value x = val(WQ_DT_FLOAT, 2, DIMS(3, 2), d);

  /* Spec examples: pads [0,2,0,0] in reflect and edge modes. */
  node_init(&t, "Pad", 13, 2, 1);
  attr_string(&t, "mode", "reflect");
  wq_value in[2] = {x, val(WQ_DT_INT64, 1, DIMS(4), I64(0, 2, 0, 0))};
  CHECK(run_node(&t, in, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(3, 4)) &&
        f32_is(&out[0], F32(1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f),
               12));
  free_outputs(out, 1);

  node_init(&t, "Pad", 13, 2, 1);
  attr_string(&t, "mode", "edge");
  CHECK(run_node(&t, in, out, &err) == WQ_OK);
  CHECK(f32_is(&out[0], F32(1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f),
               12));
  free_outputs(out, 1);

  /* Spec wrap example: pads [2,1,1,1]. */
  node_init(&t, "Pad", 19, 2, 1);
  attr_string(&t, "mode", "wrap");
  wq_value win[2] = {x, val(WQ_DT_INT64, 1, DIMS(4), I64(2, 1, 1, 1))};
  CHECK(run_node(&t, win, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(6, 4)) &&
        f32_is(&out[0],
               F32(3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f, 3.4f,
                   2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f),
               24));
  free_outputs(out, 1);

  /* Reflect wider than the axis repeats the reflection (period 2*(3-1)). */
  node_init(&t, "Pad", 13, 2, 1);
  attr_string(&t, "mode", "reflect");
  wq_value rin[2] = {val(WQ_DT_INT64, 1, DIMS(3), I64(1, 2, 3)),
                     val(WQ_DT_INT64, 1, DIMS(2), I64(5, 5))};
  CHECK(run_node(&t, rin, out, &err) == WQ_OK);
  CHECK(int_is(&out[0], I64(2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2), 13));
  free_outputs(out, 1);

  /* Wrap wider than the axis. */
  node_init(&t, "Pad", 19, 2, 1);
  attr_string(&t, "mode", "wrap");
  wq_value wwin[2] = {rin[0], val(WQ_DT_INT64, 1, DIMS(2), I64(4, 2))};
  CHECK(run_node(&t, wwin, out, &err) == WQ_OK);
  CHECK(int_is(&out[0], I64(3, 1, 2, 3, 1, 2, 3, 1, 2), 9));
  free_outputs(out, 1);

  /* Constant with a given int32 value and a negative (cropping) pad. */
  node_init(&t, "Pad", 13, 3, 1);
  wq_value cin[3] = {val(WQ_DT_INT32, 1, DIMS(4), I32(1, 2, 3, 4)),
                     val(WQ_DT_INT64, 1, DIMS(2), I64(-1, 2)), val(WQ_DT_INT32, 0, NULL, I32(9))};
  CHECK(run_node(&t, cin, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 1, DIMS(5)) && int_is(&out[0], I64(2, 3, 4, 9, 9), 5));
  free_outputs(out, 1);

  /* Opset 2 attribute form with a float value. */
  node_init(&t, "Pad", 2, 1, 1);
  attr_ints(&t, "pads", I64(1, 0, 0, 1), 4);
  attr_float(&t, "value", 1.5f);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(4, 3)) &&
        f32_is(&out[0], F32(1.5f, 1.5f, 1.5f, 1.0f, 1.2f, 1.5f, 2.3f, 3.4f, 1.5f, 4.5f, 5.7f, 1.5f),
               12));
  free_outputs(out, 1);

  /* Opset 18 axes: pad only the last axis. */
  node_init(&t, "Pad", 18, 4, 1);
  wq_value ain[4] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(1, 0)), absent(),
                     val(WQ_DT_INT64, 1, DIMS(1), I64(-1))};
  CHECK(run_node(&t, ain, out, &err) == WQ_OK);
  CHECK(shape_is(&out[0], 2, DIMS(3, 3)) &&
        f32_is(&out[0], F32(0, 1.0f, 1.2f, 0, 2.3f, 3.4f, 0, 4.5f, 5.7f), 9));
  free_outputs(out, 1);

  /* Errors: wrong pads count, cropping past the axis. */
  node_init(&t, "Pad", 13, 2, 1);
  wq_value e1[2] = {x, val(WQ_DT_INT64, 1, DIMS(3), I64(1, 1, 1))};
  CHECK(infer_node(&t, e1, out, &err) == WQ_ERR_SHAPE);
  wq_value e2[2] = {x, val(WQ_DT_INT64, 1, DIMS(4), I64(-2, 0, -2, 0))};
  CHECK(infer_node(&t, e2, out, &err) == WQ_ERR_SHAPE);
  wq_value unk[2] = {x, val(WQ_DT_INT64, 1, DIMS(4), NULL)};
  CHECK(infer_node(&t, unk, out, &err) == WQ_OK && out[0].rank == 2 && out[0].dims[0] == -1);
}

/* ------------------------------------- Reshape, Flatten, Transpose ... */

static void test_reshape(void) {
  test_node t;
  wq_error err;
  wq_value out[1];
  wq_value x = val(WQ_DT_FLOAT, 3, DIMS(2, 3, 2), iota12);

  node_init(&t, "Reshape", 14, 2, 1);
  wq_value in[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(0, -1))};
  CHECK(run_node(&t, in, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(2, 6)) &&
        f32_is(&out[0], iota12, 12));
  free_outputs(out, 1);

  wq_value two[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(-1, -1))};
  CHECK(infer_node(&t, two, out, &err) == WQ_ERR_SHAPE);
  wq_value mismatch[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(5, 2))};
  CHECK(infer_node(&t, mismatch, out, &err) == WQ_ERR_SHAPE);
  CHECK(strstr(err.message, "[2,3,2]") && strstr(err.message, "[5,2]"));
  wq_value indivisible[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(5, -1))};
  CHECK(infer_node(&t, indivisible, out, &err) == WQ_ERR_SHAPE);

  /* allowzero=1: 0 is a real zero dim; needs a zero-size input. */
  node_init(&t, "Reshape", 14, 2, 1);
  attr_int(&t, "allowzero", 1);
  wq_value z = val(WQ_DT_FLOAT, 2, DIMS(0, 3), NULL);
  wq_value zin[2] = {z, val(WQ_DT_INT64, 1, DIMS(3), I64(3, 0, 1))};
  CHECK(infer_node(&t, zin, out, &err) == WQ_OK && shape_is(&out[0], 3, DIMS(3, 0, 1)));
  wq_value zbad[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(0, 12))};
  CHECK(infer_node(&t, zbad, out, &err) == WQ_ERR_SHAPE);

  /* Unknown shape data: the rank comes from the shape input's length. */
  node_init(&t, "Reshape", 14, 2, 1);
  wq_value unk[2] = {x, val(WQ_DT_INT64, 1, DIMS(4), NULL)};
  CHECK(infer_node(&t, unk, out, &err) == WQ_OK && out[0].rank == 4 && out[0].dims[0] == -1);
  /* Unknown input dim with a 0 copy and -1. */
  wq_value sym = val(WQ_DT_FLOAT, 3, DIMS(-1, 3, 2), NULL);
  wq_value sin[2] = {sym, val(WQ_DT_INT64, 1, DIMS(2), I64(0, -1))};
  CHECK(infer_node(&t, sin, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(-1, -1)));
  wq_value sin2[2] = {sym, val(WQ_DT_INT64, 1, DIMS(3), I64(0, 6, 1))};
  CHECK(infer_node(&t, sin2, out, &err) == WQ_OK && shape_is(&out[0], 3, DIMS(-1, 6, 1)));
}

static void test_misc(void) {
  test_node t;
  wq_error err;
  wq_value out[1];

  /* Flatten with a negative axis. */
  node_init(&t, "Flatten", 13, 1, 1);
  attr_int(&t, "axis", -1);
  wq_value x = val(WQ_DT_FLOAT, 3, DIMS(2, 3, 2), iota12);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(6, 2)));
  free_outputs(out, 1);

  /* Transpose [2,3] int64 with the default (reversed) perm, then a bad perm. */
  node_init(&t, "Transpose", 13, 1, 1);
  wq_value m = val(WQ_DT_INT64, 2, DIMS(2, 3), I64(1, 2, 3, 4, 5, 6));
  CHECK(run_node(&t, &m, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(3, 2)) &&
        int_is(&out[0], I64(1, 4, 2, 5, 3, 6), 6));
  free_outputs(out, 1);
  node_init(&t, "Transpose", 13, 1, 1);
  attr_ints(&t, "perm", I64(0, 0), 2);
  CHECK(infer_node(&t, &m, out, &err) == WQ_ERR_SHAPE);
  /* 3-D perm [1,2,0] on [2,3,2]: out[j][k][i] = x[i][j][k]. */
  node_init(&t, "Transpose", 13, 1, 1);
  attr_ints(&t, "perm", I64(1, 2, 0), 3);
  CHECK(run_node(&t, &x, out, &err) == WQ_OK && shape_is(&out[0], 3, DIMS(3, 2, 2)) &&
        f32_is(&out[0], F32(0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11), 12));
  free_outputs(out, 1);

  /* Concat int64 on axis -1. */
  node_init(&t, "Concat", 13, 2, 1);
  attr_int(&t, "axis", -1);
  wq_value cin[2] = {val(WQ_DT_INT64, 2, DIMS(2, 1), I64(1, 2)),
                     val(WQ_DT_INT64, 2, DIMS(2, 2), I64(3, 4, 5, 6))};
  CHECK(run_node(&t, cin, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(2, 3)) &&
        int_is(&out[0], I64(1, 3, 4, 2, 5, 6), 6));
  free_outputs(out, 1);
  wq_value cbad[2] = {cin[0], val(WQ_DT_INT64, 2, DIMS(3, 2), I64(3, 4, 5, 6, 7, 8))};
  CHECK(infer_node(&t, cbad, out, &err) == WQ_ERR_SHAPE);

  /* DepthToSpace CRD: [1,4,1,1] with b=2 -> [1,1,2,2] in channel order;
   * DCR on [1,8,1,1] (C'=2): output channel 1 reads channels 1,3,5,7. */
  node_init(&t, "DepthToSpace", 13, 1, 1);
  attr_int(&t, "blocksize", 2);
  attr_string(&t, "mode", "CRD");
  wq_value d = val(WQ_DT_FLOAT, 4, DIMS(1, 4, 1, 1), F32(1, 2, 3, 4));
  CHECK(run_node(&t, &d, out, &err) == WQ_OK && shape_is(&out[0], 4, DIMS(1, 1, 2, 2)) &&
        f32_is(&out[0], F32(1, 2, 3, 4), 4));
  free_outputs(out, 1);
  node_init(&t, "DepthToSpace", 13, 1, 1);
  attr_int(&t, "blocksize", 2);
  wq_value d8 = val(WQ_DT_FLOAT, 4, DIMS(1, 8, 1, 1), F32(0, 1, 2, 3, 4, 5, 6, 7));
  CHECK(run_node(&t, &d8, out, &err) == WQ_OK && shape_is(&out[0], 4, DIMS(1, 2, 2, 2)) &&
        f32_is(&out[0], F32(0, 2, 4, 6, 1, 3, 5, 7), 8));
  free_outputs(out, 1);

  /* Constant: value_ints, value_float, and an unsupported string. */
  node_init(&t, "Constant", 13, 0, 1);
  attr_ints(&t, "value_ints", I64(4, -5), 2);
  CHECK(run_node(&t, NULL, out, &err) == WQ_OK && out[0].dtype == WQ_DT_INT64 &&
        shape_is(&out[0], 1, DIMS(2)) && int_is(&out[0], I64(4, -5), 2));
  free_outputs(out, 1);
  node_init(&t, "Constant", 13, 0, 1);
  attr_float(&t, "value_float", 2.5f);
  CHECK(run_node(&t, NULL, out, &err) == WQ_OK && out[0].rank == 0 &&
        f32_is(&out[0], F32(2.5f), 1));
  free_outputs(out, 1);
  node_init(&t, "Constant", 13, 0, 1);
  attr_string(&t, "value_string", "hi");
  CHECK(infer_node(&t, NULL, out, &err) == WQ_ERR_UNSUPPORTED);
  node_init(&t, "Constant", 13, 0, 1);
  int16_t cdata[3] = {-1, 2, 300};
  wq_tensor ct;
  memset(&ct, 0, sizeof ct);
  ct.dtype = WQ_DT_INT16;
  ct.rank = 2;
  ct.dims[0] = 3;
  ct.dims[1] = 1;
  ct.data = cdata;
  ct.nbytes = sizeof cdata;
  attr_tensor(&t, "value", &ct);
  CHECK(run_node(&t, NULL, out, &err) == WQ_OK && shape_is(&out[0], 2, DIMS(3, 1)) &&
        int_is(&out[0], I64(-1, 2, 300), 3));
  free_outputs(out, 1);
}

/* ------------------------------------------- robustness and properties */

/* Every op's infer copes with unknown ranks, unknown dims and missing data
 * (the load-time situation) without crashing. */
static void test_unknown_inputs(void) {
  static const char *const ops[] = {
      "Concat",    "Split",     "Slice", "Gather", "Reshape",      "Flatten",         "Squeeze",
      "Unsqueeze", "Transpose", "Shape", "Pad",    "DepthToSpace", "ConstantOfShape", NULL};
  for (int i = 0; ops[i]; i++) {
    const wq_op *op = wq_op_find("", ops[i]);
    CHECK_MSG(op != NULL, "%s registered", ops[i]);
    if (!op)
      continue;
    for (int variant = 0; variant < 3; variant++) {
      test_node t;
      wq_error err;
      node_init(&t, ops[i], 13, op->max_inputs > 5 ? 2 : op->max_inputs, 2);
      t.node.n_outputs = op->max_outputs > 2 ? 2 : op->max_outputs;
      attr_int(&t, "axis", 0);
      attr_int(&t, "blocksize", 2);
      attr_ints(&t, "axes", I64(0), 1);
      wq_value in[5], out[2];
      for (int k = 0; k < 5; k++) {
        /* variant 0: unknown rank; 1: rank 4 with unknown dims; 2: known
         * dims, no data. Shape-like inputs are int64 in all variants. */
        wq_dtype dt =
            (k == 0 && strcmp(ops[i], "ConstantOfShape") != 0) ? WQ_DT_FLOAT : WQ_DT_INT64;
        in[k] = variant == 0   ? val(dt, -1, NULL, NULL)
                : variant == 1 ? val(dt, k == 0 ? 4 : 1, DIMS(-1, -1, -1, -1), NULL)
                               : val(dt, k == 0 ? 4 : 1, k == 0 ? DIMS(2, 8, 3, 4) : DIMS(1), NULL);
      }
      wq_status st = infer_node(&t, in, out, &err);
      CHECK_MSG(st == WQ_OK || st == WQ_ERR_SHAPE || st == WQ_ERR_INVALID_MODEL,
                "%s variant %d: %s", ops[i], variant, err.message);
    }
  }
}

static void test_errors(void) {
  test_node t;
  wq_error err;
  wq_value out[2];
  wq_value x = val(WQ_DT_FLOAT, 2, DIMS(3, 4), iota12);

  node_init(&t, "Reshape", 13, 2, 1); /* shape input must be 1-D */
  wq_value r2[2] = {x, val(WQ_DT_INT64, 2, DIMS(1, 2), I64(4, 3))};
  CHECK(infer_node(&t, r2, out, &err) == WQ_ERR_SHAPE);
  wq_value rneg[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(-2, 6))};
  CHECK(infer_node(&t, rneg, out, &err) == WQ_ERR_SHAPE);
  wq_value rhuge[2] = {x, val(WQ_DT_INT64, 1, DIMS(3), I64(INT64_MAX, INT64_MAX, 0))};
  CHECK(infer_node(&t, rhuge, out, &err) == WQ_ERR_SHAPE);
  wq_value rcopy[2] = {x, val(WQ_DT_INT64, 1, DIMS(3), I64(3, 4, 0))}; /* no dim 2 to copy */
  CHECK(infer_node(&t, rcopy, out, &err) == WQ_ERR_SHAPE);

  node_init(&t, "Slice", 13, 3, 1); /* more starts than dims */
  wq_value s3[3] = {x, val(WQ_DT_INT64, 1, DIMS(3), I64(0, 0, 0)),
                    val(WQ_DT_INT64, 1, DIMS(3), I64(1, 1, 1))};
  CHECK(infer_node(&t, s3, out, &err) == WQ_ERR_SHAPE);
  wq_value slen[3] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(0, 0)),
                      val(WQ_DT_INT64, 1, DIMS(1), I64(1))};
  CHECK(infer_node(&t, slen, out, &err) == WQ_ERR_SHAPE);
  wq_value sfloat[3] = {x, val(WQ_DT_FLOAT, 1, DIMS(1), F32(0)),
                        val(WQ_DT_FLOAT, 1, DIMS(1), F32(1))};
  CHECK(infer_node(&t, sfloat, out, &err) == WQ_ERR_SHAPE);

  node_init(&t, "Gather", 13, 2, 1);
  wq_value gf[2] = {x, val(WQ_DT_FLOAT, 1, DIMS(1), F32(0))};
  CHECK(infer_node(&t, gf, out, &err) == WQ_ERR_SHAPE);
  attr_int(&t, "axis", 2);
  wq_value gi[2] = {x, val(WQ_DT_INT64, 1, DIMS(1), I64(0))};
  CHECK(infer_node(&t, gi, out, &err) == WQ_ERR_SHAPE);

  node_init(&t, "Concat", 13, 2, 1);
  attr_int(&t, "axis", 0);
  wq_value cdt[2] = {x, val(WQ_DT_INT64, 2, DIMS(3, 4), NULL)};
  CHECK(infer_node(&t, cdt, out, &err) == WQ_ERR_SHAPE);
  wq_value crk[2] = {x, val(WQ_DT_FLOAT, 1, DIMS(4), NULL)};
  CHECK(infer_node(&t, crk, out, &err) == WQ_ERR_SHAPE);
  node_init(&t, "Concat", 13, 2, 1); /* axis is required */
  CHECK(infer_node(&t, crk, out, &err) == WQ_ERR_INVALID_MODEL);

  node_init(&t, "Transpose", 13, 1, 1);
  attr_ints(&t, "perm", I64(1, 0, 2), 3);
  CHECK(infer_node(&t, &x, out, &err) == WQ_ERR_SHAPE);
  node_init(&t, "Transpose", 13, 1, 1);
  attr_ints(&t, "perm", I64(1, 2), 2);
  CHECK(infer_node(&t, &x, out, &err) == WQ_ERR_SHAPE);

  node_init(&t, "DepthToSpace", 13, 1, 1);
  attr_int(&t, "blocksize", 2);
  wq_value d6 = val(WQ_DT_FLOAT, 4, DIMS(1, 6, 2, 2), NULL);
  CHECK(infer_node(&t, &d6, out, &err) == WQ_ERR_SHAPE);
  CHECK(infer_node(&t, &x, out, &err) == WQ_ERR_SHAPE);

  node_init(&t, "Constant", 13, 0, 1);
  CHECK(infer_node(&t, NULL, out, &err) == WQ_ERR_INVALID_MODEL);
  attr_int(&t, "value_int", 1);
  attr_float(&t, "value_float", 1);
  CHECK(infer_node(&t, NULL, out, &err) == WQ_ERR_INVALID_MODEL);
  node_init(&t, "Constant", 13, 0, 1);
  add_attr(&t, "sparse_value", WQ_ATTR_TENSOR);
  CHECK(infer_node(&t, NULL, out, &err) == WQ_ERR_UNSUPPORTED);

  node_init(&t, "ConstantOfShape", 9, 1, 1);
  float two[2] = {1, 2};
  wq_tensor v2;
  memset(&v2, 0, sizeof v2);
  v2.dtype = WQ_DT_FLOAT;
  v2.rank = 1;
  v2.dims[0] = 2;
  v2.data = two;
  v2.nbytes = sizeof two;
  attr_tensor(&t, "value", &v2);
  wq_value sh = val(WQ_DT_INT64, 1, DIMS(1), I64(3));
  CHECK(infer_node(&t, &sh, out, &err) == WQ_ERR_INVALID_MODEL);

  node_init(&t, "Pad", 13, 2, 1); /* reflect cannot extend an empty axis */
  attr_string(&t, "mode", "reflect");
  wq_value e0 = val(WQ_DT_FLOAT, 1, DIMS(0), NULL);
  wq_value pe[2] = {e0, val(WQ_DT_INT64, 1, DIMS(2), I64(1, 1))};
  CHECK(infer_node(&t, pe, out, &err) == WQ_ERR_SHAPE);
  node_init(&t, "Pad", 13, 2, 1);
  attr_string(&t, "mode", "mirror");
  CHECK(infer_node(&t, pe, out, &err) == WQ_ERR_UNSUPPORTED);

  node_init(&t, "Split", 13, 2, 2); /* negative split size */
  wq_value sp[2] = {val(WQ_DT_FLOAT, 1, DIMS(4), NULL), val(WQ_DT_INT64, 1, DIMS(2), I64(5, -1))};
  CHECK(infer_node(&t, sp, out, &err) == WQ_ERR_SHAPE);
}

/* Tiny deterministic generator for the property tests. */
static uint32_t rng_next(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static const wq_dtype move_types[4] = {WQ_DT_UINT8, WQ_DT_INT16, WQ_DT_FLOAT, WQ_DT_INT64};

/* transpose(transpose(x, p), inverse(p)) == x and pad-then-slice == x and
 * split-then-concat == x, byte for byte, for every element size. */
static void test_round_trips(void) {
  uint32_t seed = 12345;
  for (int iter = 0; iter < 60; iter++) {
    wq_dtype dt = move_types[iter % 4];
    size_t elem = wq_dtype_size(dt);
    int rank = 1 + (int)(rng_next(&seed) % 5);
    int64_t dims[WQ_MAX_RANK], n = 1;
    for (int d = 0; d < rank; d++) {
      dims[d] = 1 + rng_next(&seed) % 4;
      n *= dims[d];
    }
    unsigned char *data = malloc((size_t)n * elem);
    for (size_t b = 0; b < (size_t)n * elem; b++)
      data[b] = (unsigned char)rng_next(&seed);
    wq_value x = val(dt, rank, dims, data);
    wq_error err;
    test_node t;

    /* Transpose round trip with a random permutation. */
    int64_t perm[WQ_MAX_RANK], inv[WQ_MAX_RANK];
    for (int d = 0; d < rank; d++)
      perm[d] = d;
    for (int d = rank - 1; d > 0; d--) {
      int j = (int)(rng_next(&seed) % (uint32_t)(d + 1));
      int64_t tmp = perm[d];
      perm[d] = perm[j];
      perm[j] = tmp;
    }
    for (int d = 0; d < rank; d++)
      inv[perm[d]] = d;
    wq_value a[1], b[1];
    node_init(&t, "Transpose", 13, 1, 1);
    attr_ints(&t, "perm", perm, (size_t)rank);
    CHECK(run_node(&t, &x, a, &err) == WQ_OK);
    node_init(&t, "Transpose", 13, 1, 1);
    attr_ints(&t, "perm", inv, (size_t)rank);
    CHECK(run_node(&t, a, b, &err) == WQ_OK);
    CHECK(shape_is(&b[0], rank, dims) && memcmp(b[0].data, data, (size_t)n * elem) == 0);
    free_outputs(a, 1);
    free_outputs(b, 1);

    /* Pad (constant, edge, reflect or wrap) then slice the original back. */
    static const char *const modes[4] = {"constant", "edge", "reflect", "wrap"};
    int64_t pads[2 * WQ_MAX_RANK], starts[WQ_MAX_RANK], ends[WQ_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      pads[d] = rng_next(&seed) % 4;
      pads[d + rank] = rng_next(&seed) % 4;
      starts[d] = pads[d];
      ends[d] = pads[d] + dims[d];
    }
    node_init(&t, "Pad", 19, 2, 1);
    attr_string(&t, "mode", modes[iter % 4]);
    wq_value pin[2] = {x, val(WQ_DT_INT64, 1, DIMS(2 * rank), pads)};
    CHECK(run_node(&t, pin, a, &err) == WQ_OK);
    node_init(&t, "Slice", 13, 3, 1);
    wq_value sin[3] = {a[0], val(WQ_DT_INT64, 1, DIMS(rank), starts),
                       val(WQ_DT_INT64, 1, DIMS(rank), ends)};
    CHECK(run_node(&t, sin, b, &err) == WQ_OK);
    CHECK(shape_is(&b[0], rank, dims) && memcmp(b[0].data, data, (size_t)n * elem) == 0);
    free_outputs(a, 1);
    free_outputs(b, 1);

    /* Split along a random axis into two, then Concat. */
    int axis = (int)(rng_next(&seed) % (uint32_t)rank);
    int64_t first = rng_next(&seed) % (uint32_t)(dims[axis] + 1);
    wq_value parts[2], joined[1];
    node_init(&t, "Split", 13, 2, 2);
    attr_int(&t, "axis", axis);
    wq_value spin[2] = {x, val(WQ_DT_INT64, 1, DIMS(2), I64(first, dims[axis] - first))};
    CHECK(run_node(&t, spin, parts, &err) == WQ_OK);
    node_init(&t, "Concat", 13, 2, 1);
    attr_int(&t, "axis", axis - rank);
    CHECK(run_node(&t, parts, joined, &err) == WQ_OK);
    CHECK(shape_is(&joined[0], rank, dims) && memcmp(joined[0].data, data, (size_t)n * elem) == 0);
    free_outputs(parts, 2);
    free_outputs(joined, 1);
    free(data);
  }
}

/* Negative-step Slice for every element size (1, 2, 4, 8 bytes): [0..4]
 * with start -1, end INT64_MIN, step -2 gives 4, 2, 0. */
static void test_slice_all_sizes(void) {
  for (int k = 0; k < 4; k++) {
    wq_dtype dt = move_types[k];
    unsigned char buf[5 * 8];
    for (int i = 0; i < 5; i++) {
      switch (wq_dtype_size(dt)) {
      case 1: ((uint8_t *)buf)[i] = (uint8_t)i; break;
      case 2: ((int16_t *)buf)[i] = (int16_t)i; break;
      case 4: ((float *)buf)[i] = (float)i; break;
      default: ((int64_t *)buf)[i] = i; break;
      }
    }
    wq_value out[1];
    wq_status st;
    slice_case(13, val(dt, 1, DIMS(5), buf), I64(-1), I64(INT64_MIN), NULL, I64(-2), 1, out, &st);
    CHECK_MSG(st == WQ_OK && out[0].dtype == dt && shape_is(&out[0], 1, DIMS(3)) &&
                  wq_value_get_double(&out[0], 0) == 4 && wq_value_get_double(&out[0], 1) == 2 &&
                  wq_value_get_double(&out[0], 2) == 0,
              "dtype %s", wq_dtype_name(dt));
    free_outputs(out, 1);
  }
}

int main(void) {
  test_split();
  test_slice();
  test_squeeze_unsqueeze();
  test_gather();
  test_constant_of_shape();
  test_shape();
  test_pad();
  test_reshape();
  test_misc();
  test_unknown_inputs();
  test_errors();
  test_round_trips();
  test_slice_all_sizes();
  WQ_TEST_END();
}
