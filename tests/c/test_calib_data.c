/* Calibration data for `wasmq quantize --calib`: mnist-8's own
 * test_data_set folders, .npy folders written here (one sample, several
 * samples in natural order, symbolic dims), random:N against the JS
 * generator's values, and every bad-input case with its message. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/wasmq.h"
#include "cli/calib_data.h"
#include "cli/npy.h"
#include "cli/random_fill.h"
#include "wq_test.h"

/* snprintf into an array that must not truncate (checked, which also keeps
 * gcc's truncation warning quiet). */
#define FMT(buf, ...) CHECK(snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf)

/* ---- a hand-made graph whose only content is its declared inputs ---- */

typedef struct {
  const char *name;
  wq_dtype dtype;
  int rank;
  int64_t dims[4]; /* -1: symbolic, named by `param` */
  const char *param;
} input_decl;

static wq_graph *graph_with_inputs(const input_decl *decls, int n) {
  wq_graph *g = wq_graph_new();
  g->inputs = calloc((size_t)n + 1, sizeof *g->inputs);
  for (int i = 0; i < n; i++) {
    int t = wq_graph_add_tensor(g, decls[i].name);
    wq_tensor *tensor = &g->tensors[t];
    tensor->dtype = decls[i].dtype;
    tensor->rank = decls[i].rank;
    tensor->is_input = true;
    for (int d = 0; d < decls[i].rank; d++) {
      tensor->dims[d] = decls[i].dims[d];
      if (decls[i].dims[d] < 0)
        tensor->dim_params[d] = strdup(decls[i].param);
    }
    g->inputs[g->n_inputs++] = t;
  }
  return g;
}

static const input_decl mnist_input = {"Input3", WQ_DT_FLOAT, 4, {1, 1, 28, 28}, NULL};

/* ---- temp folders ---- */

static char tmp_root[256];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* tmp_root/rel, made fresh (and its parents). */
static const char *fresh_dir(const char *rel, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", tmp_root, rel);
  remove_tree(buf);
  char partial[512];
  for (const char *p = buf; (p = strchr(p + 1, '/'));) {
    FMT(partial, "%.*s", (int)(p - buf), buf);
    mkdir(partial, 0777);
  }
  mkdir(buf, 0777);
  return buf;
}

static void write_bytes(const char *dir, const char *file, const void *bytes, size_t n) {
  char path[512];
  FMT(path, "%s/%s", dir, file);
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (f) {
    fwrite(bytes, 1, n, f);
    fclose(f);
  }
}

static void write_npy(const char *dir, const char *file, wq_dtype dt, int rank, const int64_t *dims,
                      const void *data) {
  char path[512];
  FMT(path, "%s/%s", dir, file);
  wq_value v = {.dtype = dt, .rank = rank, .data = (void *)data};
  memcpy(v.dims, dims, (size_t)rank * sizeof *dims);
  wq_error err;
  CHECK_MSG(wq_npy_write(path, &v, &err) == WQ_OK, "%s", err.message);
}

/* A float TensorProto: dims, data_type=1, name (if any), raw_data. */
static size_t tensor_proto(uint8_t *out, const char *name, int rank, const int64_t *dims,
                           const float *data) {
  size_t n = 0;
  int64_t count = 1;
  for (int d = 0; d < rank; d++) {
    out[n++] = 0x08; /* field 1 (dims), varint; the dims here are < 128 */
    out[n++] = (uint8_t)dims[d];
    count *= dims[d];
  }
  out[n++] = 0x10; /* field 2 (data_type) = FLOAT */
  out[n++] = 1;
  if (name) {
    out[n++] = 0x42; /* field 8 (name), bytes */
    out[n++] = (uint8_t)strlen(name);
    memcpy(out + n, name, strlen(name));
    n += strlen(name);
  }
  out[n++] = 0x4A; /* field 9 (raw_data), bytes */
  out[n++] = (uint8_t)(count * 4);
  memcpy(out + n, data, (size_t)count * 4);
  return n + (size_t)count * 4;
}

/* ---- helpers over the reader ---- */

static wq_calib_data *open_ok(const char *spec, const wq_graph *g) {
  wq_calib_data *c = NULL;
  wq_error err;
  wq_status st = wq_calib_open(spec, g, &c, &err);
  CHECK_MSG(st == WQ_OK, "open %s: %s", spec, err.message);
  return c;
}

static void expect_open_error(const char *spec, const wq_graph *g, wq_status code,
                              const char *message) {
  wq_calib_data *c = (wq_calib_data *)1;
  wq_error err;
  wq_error_clear(&err);
  wq_status st = wq_calib_open(spec, g, &c, &err);
  CHECK_MSG(st == code, "open %s: status %d, want %d (%s)", spec, (int)st, (int)code, err.message);
  CHECK(c == NULL);
  CHECK_MSG(strcmp(err.message, message) == 0, "\n  got:  %s\n  want: %s", err.message, message);
}

/* Opens `spec` fine, then expects its first sample to fail. */
static void expect_next_error(const char *spec, const wq_graph *g, wq_status code,
                              const char *message) {
  wq_calib_data *c = open_ok(spec, g);
  if (!c)
    return;
  const wq_value *v;
  bool got = true;
  wq_error err;
  wq_error_clear(&err);
  wq_status st = wq_calib_next(c, &v, &got, &err);
  CHECK_MSG(st == code, "next %s: status %d, want %d (%s)", spec, (int)st, (int)code, err.message);
  CHECK(!got && v == NULL);
  CHECK_MSG(strcmp(err.message, message) == 0, "\n  got:  %s\n  want: %s", err.message, message);
  wq_calib_close(c);
}

static void test_mnist_test_data(void) {
  char dir[512];
  FMT(dir, "%s/models/mnist-8", wq_test_shared_dir());
  wq_graph *g = graph_with_inputs(&mnist_input, 1);
  wq_calib_data *c = open_ok(dir, g);
  CHECK(wq_calib_count(c) == 3);
  for (int s = 0; c && s < 3; s++) {
    const wq_value *v;
    bool got;
    wq_error err;
    CHECK_MSG(wq_calib_next(c, &v, &got, &err) == WQ_OK, "%s", err.message);
    CHECK(got);
    char want_name[32];
    FMT(want_name, "test_data_set_%d", s);
    CHECK_MSG(strcmp(wq_calib_sample_name(c), want_name) == 0, "%s", wq_calib_sample_name(c));
    /* The same values as decoding the file directly. */
    char path[600];
    FMT(path, "%s/%s/input_0.pb", dir, want_name);
    size_t n;
    uint8_t *bytes = wq_test_read_file(path, &n);
    wq_value direct;
    CHECK(bytes && wq_tensor_decode(bytes, n, &direct, NULL, 0, &err) == WQ_OK);
    CHECK(got && v[0].dtype == WQ_DT_FLOAT && v[0].rank == 4 && v[0].dims[3] == 28);
    CHECK(got && memcmp(v[0].data, direct.data, 784 * sizeof(float)) == 0);
    free(direct.data);
    free(bytes);
  }
  const wq_value *v;
  bool got = true;
  wq_error err;
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && !got && v == NULL);
  wq_calib_close(c);

  /* Trailing slashes are fine; a one-dim change of the model is not. */
  char slashed[600];
  FMT(slashed, "%s//", dir);
  wq_calib_close(open_ok(slashed, g));
  wq_graph_free(g);
  input_decl narrower = mnist_input;
  narrower.dims[3] = 27;
  g = graph_with_inputs(&narrower, 1);
  char message[1024];
  FMT(message,
      "%s/test_data_set_0/input_0.pb: shape [1,1,28,28], but the model's input 'Input3' is "
      "[1,1,28,27]",
      dir);
  expect_next_error(dir, g, WQ_ERR_SHAPE, message);
  wq_graph_free(g);
  /* uint8 declared, float stored. */
  input_decl as_uint8 = mnist_input;
  as_uint8.dtype = WQ_DT_UINT8;
  g = graph_with_inputs(&as_uint8, 1);
  FMT(message,
      "%s/test_data_set_0/input_0.pb: dtype float32, but the model's input 'Input3' is uint8", dir);
  expect_next_error(dir, g, WQ_ERR_SHAPE, message);
  wq_graph_free(g);
  /* A model with a second input: every set lacks input_1.pb. */
  input_decl two[2] = {mnist_input, {"extra", WQ_DT_FLOAT, 1, {3}, NULL}};
  g = graph_with_inputs(two, 2);
  FMT(message,
      "calibration sample %s/test_data_set_0 has no data for input 'extra' (no "
      "%s/test_data_set_0/input_1.pb)",
      dir, dir);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);
  wq_graph_free(g);
  g = graph_with_inputs(NULL, 0);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, "the model has no inputs to calibrate with");
  wq_graph_free(g);
}

/* The samples feed the real model: opened on the loaded model's own graph,
 * each mnist-8 sample gives the digit its output_0.pb says. */
static void test_mnist_runs(void) {
  char dir[512], path[700];
  FMT(dir, "%s/models/mnist-8", wq_test_shared_dir());
  FMT(path, "%s/model.onnx", dir);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  wq_model *m = NULL;
  wq_error err;
  if (!bytes || wq_model_load(bytes, n, NULL, &m, &err) != WQ_OK) {
    CHECK_MSG(0, "cannot load %s", path);
    free(bytes);
    return;
  }
  free(bytes);
  wq_calib_data *c = open_ok(dir, wq_model_get_ir(m)->graph);
  const wq_value *v;
  bool got;
  int samples = 0;
  while (c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got) {
    CHECK_MSG(wq_model_run(m, v, wq_model_input_count(m), &err) == WQ_OK, "%s", err.message);
    FMT(path, "%s/%s/output_0.pb", dir, wq_calib_sample_name(c));
    bytes = wq_test_read_file(path, &n);
    wq_value want;
    CHECK(bytes && wq_tensor_decode(bytes, n, &want, NULL, 0, &err) == WQ_OK);
    const wq_value *out = wq_model_result(m, 0);
    int best_got = 0, best_want = 0;
    for (int i = 1; i < 10; i++) {
      best_got = ((float *)out->data)[i] > ((float *)out->data)[best_got] ? i : best_got;
      best_want = ((float *)want.data)[i] > ((float *)want.data)[best_want] ? i : best_want;
    }
    CHECK_MSG(best_got == best_want, "%s: digit %d, want %d", path, best_got, best_want);
    free(want.data);
    free(bytes);
    samples++;
  }
  CHECK(samples == 3);
  wq_calib_close(c);
  wq_model_free(m);
}

static void test_made_test_data(void) {
  char dir[512], set[512], message[1024];
  wq_graph *g = graph_with_inputs(&mnist_input, 1);
  /* More input files than the model has inputs. */
  fresh_dir("extra_inputs", dir, sizeof dir);
  FMT(set, "%s/test_data_set_0", dir);
  mkdir(set, 0777);
  float four[4] = {1, 2, 3, 4};
  int64_t d4[1] = {4};
  uint8_t pb[128];
  size_t n = tensor_proto(pb, NULL, 1, d4, four);
  write_bytes(set, "input_0.pb", pb, n);
  write_bytes(set, "input_1.pb", pb, n);
  FMT(message, "calibration sample %s has more inputs than the model's 1 (%s/input_1.pb)", set,
      set);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);
  wq_graph_free(g);

  /* Sets in natural order; input_K.pb named after another input; NaN. */
  input_decl ab[2] = {{"a", WQ_DT_FLOAT, 1, {-1}, "n"}, {"b", WQ_DT_FLOAT, 1, {4}, NULL}};
  g = graph_with_inputs(ab, 2);
  fresh_dir("sets", dir, sizeof dir);
  const char *names[3] = {"test_data_set_10", "test_data_set_2", "test_data_set_02x"};
  for (int s = 0; s < 3; s++) {
    FMT(set, "%s/%s", dir, names[s]);
    mkdir(set, 0777);
    float values[4] = {(float)s, 1, 2, 3};
    n = tensor_proto(pb, "a", 1, d4, values);
    write_bytes(set, "input_0.pb", pb, n);
    n = tensor_proto(pb, "", 1, d4, values);
    write_bytes(set, "input_1.pb", pb, n);
  }
  wq_calib_data *c = open_ok(dir, g);
  const char *order[3] = {"test_data_set_2", "test_data_set_02x", "test_data_set_10"};
  for (int s = 0; c && s < 3; s++) {
    const wq_value *v;
    bool got;
    wq_error err;
    CHECK_MSG(wq_calib_next(c, &v, &got, &err) == WQ_OK && got, "%s", err.message);
    CHECK_MSG(strcmp(wq_calib_sample_name(c), order[s]) == 0, "%s", wq_calib_sample_name(c));
  }
  wq_calib_close(c);
  /* test_data_set_2/input_1.pb now holds the tensor named "a". */
  FMT(set, "%s/test_data_set_2", dir);
  float values[4] = {0, 1, 2, 3};
  n = tensor_proto(pb, "a", 1, d4, values);
  write_bytes(set, "input_1.pb", pb, n);
  FMT(message,
      "%s/input_1.pb holds the tensor 'a', the model's input 0, but input_1.pb is input 1 "
      "('b')",
      set);
  expect_next_error(dir, g, WQ_ERR_INVALID_ARG, message);
  /* ... then a NaN and an infinity in input a. */
  values[2] = NAN;
  n = tensor_proto(pb, "a", 1, d4, values);
  write_bytes(set, "input_0.pb", pb, n);
  n = tensor_proto(pb, NULL, 1, d4, values);
  write_bytes(set, "input_1.pb", pb, n);
  FMT(message, "%s/input_0.pb: element 2 of input 'a' is NaN (calibration data must be finite)",
      set);
  expect_next_error(dir, g, WQ_ERR_INVALID_ARG, message);
  values[2] = 0;
  values[3] = -INFINITY;
  n = tensor_proto(pb, "a", 1, d4, values);
  write_bytes(set, "input_0.pb", pb, n);
  FMT(message,
      "%s/input_0.pb: element 3 of input 'a' is infinite (calibration data must be finite)", set);
  expect_next_error(dir, g, WQ_ERR_INVALID_ARG, message);
  /* A failed sample is skipped by asking again. */
  c = open_ok(dir, g);
  const wq_value *v;
  bool got;
  wq_error err;
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_ERR_INVALID_ARG && !got);
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got);
  CHECK(c && strcmp(wq_calib_sample_name(c), "test_data_set_02x") == 0);
  wq_calib_close(c);
  /* Truncated TensorProto. */
  write_bytes(set, "input_0.pb", pb, n - 3);
  c = open_ok(dir, g);
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_ERR_PARSE);
  FMT(message, "%s/input_0.pb: ", set);
  CHECK_MSG(strncmp(err.message, message, strlen(message)) == 0, "%s", err.message);
  wq_calib_close(c);
  wq_graph_free(g);
}

static void test_npy_folders(void) {
  /* x: float [batch, 3]; "ids/a:b": int64 [2] stored as ids_a_b.npy. */
  input_decl decls[2] = {{"x", WQ_DT_FLOAT, 2, {-1, 3}, "batch"},
                         {"ids/a:b", WQ_DT_INT64, 1, {2}, NULL}};
  wq_graph *g = graph_with_inputs(decls, 2);
  float x1[3] = {1, 2, 3}, x2[6] = {1, 2, 3, 4, 5, 6};
  int64_t ids[2] = {7, 9};
  int64_t d13[2] = {1, 3}, d23[2] = {2, 3}, d2[1] = {2};
  char dir[512], sample[512], message[1024];

  /* One sample: DIR/<input>.npy. */
  fresh_dir("one", dir, sizeof dir);
  write_npy(dir, "x.npy", WQ_DT_FLOAT, 2, d13, x1);
  write_npy(dir, "ids_a_b.npy", WQ_DT_INT64, 1, d2, ids);
  write_bytes(dir, "README.txt", "notes", 5); /* other files are ignored */
  wq_calib_data *c = open_ok(dir, g);
  CHECK(wq_calib_count(c) == 1);
  const wq_value *v;
  bool got;
  wq_error err;
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got);
  if (c && got) {
    CHECK(v[0].dtype == WQ_DT_FLOAT && v[0].rank == 2 && v[0].dims[0] == 1 && v[0].dims[1] == 3);
    CHECK(memcmp(v[0].data, x1, sizeof x1) == 0);
    CHECK(v[1].dtype == WQ_DT_INT64 && v[1].rank == 1 && memcmp(v[1].data, ids, sizeof ids) == 0);
    CHECK(strcmp(wq_calib_sample_name(c), dir) == 0);
  }
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && !got);
  wq_calib_close(c);

  /* A stray .npy. */
  write_npy(dir, "y.npy", WQ_DT_FLOAT, 2, d13, x1);
  FMT(message, "%s/y.npy is named after no input of the model (expected: x.npy, ids_a_b.npy)", dir);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);
  /* Both layouts at once. */
  FMT(sample, "%s/0", dir);
  mkdir(sample, 0777);
  FMT(message,
      "calibration folder %s holds both .npy files (ids_a_b.npy) and sample folders (0): "
      "use one layout",
      dir);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);

  /* Several samples: DIR/<n>/<input>.npy in natural order; the symbolic
   * batch dim takes 1 or 2. */
  fresh_dir("many", dir, sizeof dir);
  const char *names[3] = {"10", "9", "a"};
  for (int s = 0; s < 3; s++) {
    FMT(sample, "%s/%s", dir, names[s]);
    mkdir(sample, 0777);
    write_npy(sample, "x.npy", WQ_DT_FLOAT, 2, s == 1 ? d23 : d13, s == 1 ? x2 : x1);
    write_npy(sample, "ids_a_b.npy", WQ_DT_INT64, 1, d2, ids);
  }
  c = open_ok(dir, g);
  CHECK(wq_calib_count(c) == 3);
  const char *order[3] = {"9", "10", "a"};
  for (int s = 0; c && s < 3; s++) {
    CHECK_MSG(wq_calib_next(c, &v, &got, &err) == WQ_OK && got, "%s", err.message);
    CHECK_MSG(strcmp(wq_calib_sample_name(c), order[s]) == 0, "%s", wq_calib_sample_name(c));
    if (got)
      CHECK(v[0].dims[0] == (s == 0 ? 2 : 1));
  }
  wq_calib_close(c);

  /* One sample lacks an input. */
  FMT(sample, "%s/a/ids_a_b.npy", dir);
  remove(sample);
  FMT(message, "calibration sample %s/a has no data for input 'ids/a:b' (no %s/a/ids_a_b.npy)", dir,
      dir);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);
  FMT(sample, "%s/a", dir);
  remove_tree(sample);

  /* Wrong dtype, wrong fixed dim, wrong rank, a NaN (first sample, "9"). */
  FMT(sample, "%s/9", dir);
  int32_t ids32[2] = {7, 9};
  write_npy(sample, "ids_a_b.npy", WQ_DT_INT32, 1, d2, ids32);
  FMT(message, "%s/ids_a_b.npy: dtype int32, but the model's input 'ids/a:b' is int64", sample);
  expect_next_error(dir, g, WQ_ERR_SHAPE, message);
  write_npy(sample, "ids_a_b.npy", WQ_DT_INT64, 1, d2, ids);
  int64_t d32[2] = {3, 2};
  write_npy(sample, "x.npy", WQ_DT_FLOAT, 2, d32, x2);
  FMT(message, "%s/x.npy: shape [3,2], but the model's input 'x' is [batch,3]", sample);
  expect_next_error(dir, g, WQ_ERR_SHAPE, message);
  int64_t d6[1] = {6};
  write_npy(sample, "x.npy", WQ_DT_FLOAT, 1, d6, x2);
  FMT(message, "%s/x.npy: shape [6], but the model's input 'x' is [batch,3]", sample);
  expect_next_error(dir, g, WQ_ERR_SHAPE, message);
  x2[5] = NAN;
  write_npy(sample, "x.npy", WQ_DT_FLOAT, 2, d23, x2);
  FMT(message, "%s/x.npy: element 5 of input 'x' is NaN (calibration data must be finite)", sample);
  expect_next_error(dir, g, WQ_ERR_INVALID_ARG, message);
  /* Not a .npy at all. */
  write_bytes(sample, "x.npy", "hello", 5);
  FMT(message, "%s/x.npy: not a .npy file (bad magic)", sample);
  expect_next_error(dir, g, WQ_ERR_PARSE, message);

  /* Empty and missing folders. */
  fresh_dir("empty", dir, sizeof dir);
  FMT(message,
      "empty calibration set: %s holds no test_data_set_* folder, no .npy file and no "
      "sample folder",
      dir);
  expect_open_error(dir, g, WQ_ERR_INVALID_ARG, message);
  FMT(dir, "%s/does-not-exist", tmp_root);
  FMT(message, "cannot open calibration folder %s: No such file or directory", dir);
  expect_open_error(dir, g, WQ_ERR_IO, message);
  wq_graph_free(g);
}

static void test_random(void) {
  /* a: float [n, 3] (symbolic -> 1), b: int64 [2]. */
  input_decl decls[2] = {{"a", WQ_DT_FLOAT, 2, {-1, 3}, "n"}, {"b", WQ_DT_INT64, 1, {2}, NULL}};
  wq_graph *g = graph_with_inputs(decls, 2);
  char message[512];
  wq_calib_data *c = open_ok("random:2:0..1", g);
  CHECK(wq_calib_count(c) == 2);
  const wq_value *v;
  bool got;
  wq_error err;
  /* Sample 0 fills a with seed 0 and b with seed 1; the expected values are
   * those of src/js/random.mjs: randomArray('float32', 3, 0) and
   * randomArray('int64', 2, 1). */
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got);
  if (c && got) {
    CHECK(v[0].rank == 2 && v[0].dims[0] == 1 && v[0].dims[1] == 3);
    const float *a = v[0].data;
    CHECK(a[0] == 0.26642918586730957f && a[1] == 0.00032973289489746094f &&
          a[2] == 0.22327202558517456f);
    const int64_t *b = v[1].data;
    CHECK(b[0] == 7 && b[1] == 3);
    CHECK(strcmp(wq_calib_sample_name(c), "random sample 0") == 0);
  }
  /* Sample 1: a with seed 2, b with seed 3 (as `run --input a=random:2`). */
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got);
  if (c && got) {
    float want[3];
    wq_value w = {.dtype = WQ_DT_FLOAT, .rank = 2, .dims = {1, 3}, .data = want};
    wq_cli_fill_random(&w, 2);
    CHECK(memcmp(v[0].data, want, sizeof want) == 0);
  }
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && !got);
  double lo, hi;
  CHECK(c && wq_calib_random_range(c, &lo, &hi) && lo == 0 && hi == 1);
  wq_calib_close(c);
  /* [-1, 1): each float value maps as -1 + 2 * x in double, rounded once to
   * float; integer inputs are untouched. */
  c = open_ok("random:1:-1..1", g);
  CHECK(c && wq_calib_next(c, &v, &got, &err) == WQ_OK && got);
  if (c && got) {
    const float *a = v[0].data;
    CHECK(a[0] == (float)(-1.0 + 2.0 * (double)0.26642918586730957f));
    CHECK(a[1] == (float)(-1.0 + 2.0 * (double)0.00032973289489746094f));
    CHECK(((const int64_t *)v[1].data)[0] == 7);
  }
  wq_calib_close(c);

  expect_open_error("random:0", g, WQ_ERR_INVALID_ARG, "empty calibration set: random:0");
  expect_open_error("random:", g, WQ_ERR_INVALID_ARG,
                    "--calib random:N:LO..HI expects N in 1..1000000, got random:");
  expect_open_error("random:5x", g, WQ_ERR_INVALID_ARG,
                    "--calib random:N:LO..HI expects N in 1..1000000, got random:5x");
  expect_open_error("random:-3", g, WQ_ERR_INVALID_ARG,
                    "--calib random:N:LO..HI expects N in 1..1000000, got random:-3");
  /* No range: the data's range would be a guess. */
  expect_open_error("random:4", g, WQ_ERR_INVALID_ARG,
                    "--calib random:4 needs the range of the model's float inputs: "
                    "random:4:LO..HI (e.g. random:4:0..1, random:4:-1..1, random:4:0..255); "
                    "real samples (--calib DIR) calibrate far better");
  const char *bad_ranges[] = {"1..1", "2..1", "0..", "..1", "0..x", "0-1", "a..1"};
  for (size_t k = 0; k < sizeof bad_ranges / sizeof *bad_ranges; k++) {
    char spec[64];
    FMT(spec, "random:4:%s", bad_ranges[k]);
    FMT(message, "--calib random:N:LO..HI expects a range such as -1..1 (LO < HI), got '%s'",
        bad_ranges[k]);
    expect_open_error(spec, g, WQ_ERR_INVALID_ARG, message);
  }
  wq_graph_free(g);
  /* A symbolic dim past the batch names --shape. */
  input_decl image = {"x", WQ_DT_FLOAT, 4, {-1, 3, -1, 192}, "N"};
  g = graph_with_inputs(&image, 1);
  free(g->tensors[g->inputs[0]].dim_params[2]);
  g->tensors[g->inputs[0]].dim_params[2] = strdup("H");
  expect_open_error("random:1:0..1", g, WQ_ERR_INVALID_ARG,
                    "input 'x' has the symbolic dim 'H' (dim 2): random data needs it bound, "
                    "e.g. --shape x=1x3x224x224 with the size the model expects, or real "
                    "samples (--calib DIR)");
  wq_graph_free(g);
  input_decl unknown = {"u", WQ_DT_FLOAT, -1, {0}, NULL};
  g = graph_with_inputs(&unknown, 1);
  expect_open_error("random:1:0..1", g, WQ_ERR_INVALID_ARG,
                    "input 'u' (float32) has no declared shape or a dtype random data cannot "
                    "fill: give --calib DIR");
  wq_graph_free(g);
}

int main(void) {
  FMT(tmp_root, "%s/wq_calib_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmp_root)) {
    fprintf(stderr, "cannot make a temp folder\n");
    return 1;
  }
  test_mnist_test_data();
  test_mnist_runs();
  test_made_test_data();
  test_npy_folders();
  test_random();
  remove_tree(tmp_root);
  WQ_TEST_END();
}
