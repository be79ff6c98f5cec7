/* The protobuf writer and the ONNX exporter: wire encodings checked byte by
 * byte and decoded back with pb_reader; every shared model (float and int8)
 * and every ONNX node-test case exported, re-imported and run against the
 * original (outputs equal bit for bit, same nodes, and a second export gives
 * the same bytes); attributes of every type, symbolic dims, out-of-order
 * nodes and the refusals (subgraphs, wasmq-internal ops). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/wasmq.h"
#include "dir_list.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx/pb_reader.h"
#include "onnx/pb_writer.h"
#include "seeded_run.h"
#include "wq_test.h"

/* ---- helpers ------------------------------------------------------------- */

/* A file under ../shared (NULL when missing; caller frees). */
static uint8_t *read_shared(const char *rel, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  uint8_t *bytes = wq_test_read_file(path, n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  return bytes;
}

/* Whether an internal "wasmq.*" name occurs anywhere in the bytes. */
static bool has_internal_name(const uint8_t *b, size_t n) {
  for (size_t i = 0; b && i + 6 <= n; i++)
    if (memcmp(b + i, "wasmq.", 6) == 0)
      return true;
  return false;
}

static const wq_load_options export_opts = {.no_lowering = 1, .no_float_fusion = 1};

/* Bytes the writer produced (finish must succeed); caller frees. */
static uint8_t *finish_ok(wq_pb_writer *w, size_t *n) {
  uint8_t *out = NULL;
  wq_error err;
  wq_status st = wq_pb_writer_finish(w, &out, n, &err);
  CHECK_MSG(st == WQ_OK && out, "finish: %s", err.message);
  return out;
}

/* ---- encoder ----------------------------------------------------------- */

static void test_varints(void) {
  const struct {
    int64_t v;
    size_t n;
    uint8_t bytes[10];
  } cases[] = {
      {0, 1, {0x00}},
      {1, 1, {0x01}},
      {127, 1, {0x7f}},
      {128, 2, {0x80, 0x01}},
      {300, 2, {0xac, 0x02}},
      {16383, 2, {0xff, 0x7f}},
      {16384, 3, {0x80, 0x80, 0x01}},
      {INT64_MAX, 9, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
      {-1, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {-2, 10, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {INT64_MIN, 10, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wq_pb_writer w;
    wq_pb_writer_init(&w);
    CHECK(wq_pb_write_int64(&w, 1, cases[i].v) == WQ_OK);
    size_t n;
    uint8_t *b = finish_ok(&w, &n);
    CHECK(wq_pb_varint_size((uint64_t)cases[i].v) == cases[i].n);
    CHECK_MSG(b && n == 1 + cases[i].n && b[0] == 0x08 &&
                  memcmp(b + 1, cases[i].bytes, cases[i].n) == 0,
              "varint %lld: %zu bytes", (long long)cases[i].v, n);
    wq_pb_reader r;
    wq_pb_init(&r, b, n, "Test");
    wq_pb_field f;
    int64_t back = 0;
    wq_error err;
    CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 1 && f.wire == WQ_PB_VARINT);
    CHECK(wq_pb_get_int64(&r, &f, "v", &back, &err) == WQ_OK && back == cases[i].v);
    CHECK(wq_pb_at_end(&r));
    free(b);
  }
  /* int32 negatives are sign-extended: 10 bytes, and read back as int32. */
  wq_pb_writer w;
  wq_pb_writer_init(&w);
  CHECK(wq_pb_write_int32(&w, 2, -5) == WQ_OK);
  CHECK(wq_pb_write_int32(&w, 3, INT32_MIN) == WQ_OK);
  size_t n;
  uint8_t *b = finish_ok(&w, &n);
  CHECK(n == 22 && b[0] == 0x10 && b[1] == 0xfb && b[10] == 0x01 && b[11] == 0x18);
  wq_pb_reader r;
  wq_pb_init(&r, b, n, "Test");
  wq_pb_field f;
  wq_error err;
  int32_t v32 = 0;
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 2);
  CHECK(wq_pb_get_int32(&r, &f, "a", &v32, &err) == WQ_OK && v32 == -5);
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 3);
  CHECK(wq_pb_get_int32(&r, &f, "b", &v32, &err) == WQ_OK && v32 == INT32_MIN);
  free(b);
  /* Large field numbers take multi-byte tags. */
  wq_pb_writer_init(&w);
  CHECK(wq_pb_write_int64(&w, 0x1fffffff, 7) == WQ_OK);
  b = finish_ok(&w, &n);
  wq_pb_init(&r, b, n, "Test");
  CHECK(n == 6 && wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 0x1fffffff);
  free(b);
}

static void test_fixed_and_bytes(void) {
  wq_pb_writer w;
  wq_pb_writer_init(&w);
  CHECK(wq_pb_write_float(&w, 2, -1.5f) == WQ_OK);
  CHECK(wq_pb_write_fixed64(&w, 3, 0x0102030405060708ull) == WQ_OK);
  CHECK(wq_pb_write_string(&w, 4, "onnx") == WQ_OK);
  CHECK(wq_pb_write_bytes(&w, 5, "a\0b", 3) == WQ_OK);
  CHECK(wq_pb_write_string(&w, 6, NULL) == WQ_OK);
  const int64_t ints[] = {3, -1, 1 << 20};
  const float floats[] = {0.25f, -0.0f};
  CHECK(wq_pb_write_repeated_int64(&w, 7, ints, 3) == WQ_OK);
  CHECK(wq_pb_write_repeated_float(&w, 8, floats, 2) == WQ_OK);
  size_t n;
  uint8_t *b = finish_ok(&w, &n);
  /* float -1.5 = 0xbfc00000, little-endian after tag 0x15. */
  const uint8_t head[] = {0x15, 0x00, 0x00, 0xc0, 0xbf, 0x19, 8,    7, 6,   5, 4,   3,    2, 1,
                          0x22, 4,    'o',  'n',  'n',  'x',  0x2a, 3, 'a', 0, 'b', 0x32, 0};
  CHECK(b && n > sizeof head && memcmp(b, head, sizeof head) == 0);
  wq_pb_reader r;
  wq_pb_init(&r, b, n, "Test");
  wq_pb_field f;
  wq_error err;
  float fv = 0;
  uint64_t u64 = 0;
  const uint8_t *p;
  size_t len;
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_float(&r, &f, "f", &fv, &err) == WQ_OK && fv == -1.5f);
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.wire == WQ_PB_FIXED64);
  CHECK(wq_pb_read_fixed64(&r, &u64, &err) == WQ_OK && u64 == 0x0102030405060708ull);
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_bytes(&r, &f, "s", &p, &len, &err) == WQ_OK && len == 4 && !memcmp(p, "onnx", 4));
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_bytes(&r, &f, "b", &p, &len, &err) == WQ_OK && len == 3 && p[1] == 0);
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_bytes(&r, &f, "e", &p, &len, &err) == WQ_OK && len == 0);
  wq_pb_array ia, fa;
  wq_pb_array_init(&ia, sizeof(int64_t));
  wq_pb_array_init(&fa, sizeof(float));
  while (!wq_pb_at_end(&r)) {
    CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
    if (f.number == 7)
      CHECK(wq_pb_get_repeated_int64(&r, &f, "ints", &ia, &err) == WQ_OK);
    else
      CHECK(wq_pb_get_repeated_float(&r, &f, "floats", &fa, &err) == WQ_OK);
  }
  CHECK(ia.count == 3 && ((int64_t *)ia.data)[1] == -1 && ((int64_t *)ia.data)[2] == 1 << 20);
  CHECK(fa.count == 2 && ((float *)fa.data)[0] == 0.25f);
  wq_pb_array_free(&ia);
  wq_pb_array_free(&fa);
  free(b);
}

/* Nested messages whose lengths take 1, 2 and 3 bytes (the payload moves
 * forward when the reserved byte is not enough), three levels deep, and an
 * empty one: outer{42, mid{200 bytes}, deep{deeper{20000 bytes}}, empty{}}. */
static void test_nested(void) {
  static uint8_t big[20000];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (uint8_t)(i * 7);
  wq_pb_writer w;
  wq_pb_writer_init(&w);
  CHECK(wq_pb_begin(&w, 1) == WQ_OK); /* outer */
  CHECK(wq_pb_write_int64(&w, 1, 42) == WQ_OK);
  CHECK(wq_pb_begin(&w, 2) == WQ_OK); /* mid */
  CHECK(wq_pb_write_bytes(&w, 1, big, 200) == WQ_OK);
  CHECK(wq_pb_end(&w) == WQ_OK);
  CHECK(wq_pb_begin(&w, 3) == WQ_OK); /* deep */
  CHECK(wq_pb_begin(&w, 1) == WQ_OK); /* deeper */
  CHECK(wq_pb_write_bytes(&w, 1, big, sizeof big) == WQ_OK);
  CHECK(wq_pb_end(&w) == WQ_OK);
  CHECK(wq_pb_end(&w) == WQ_OK);
  CHECK(wq_pb_begin(&w, 4) == WQ_OK); /* empty */
  CHECK(wq_pb_end(&w) == WQ_OK);
  CHECK(wq_pb_end(&w) == WQ_OK);
  CHECK(wq_pb_write_int64(&w, 9, -7) == WQ_OK); /* after the outer message */
  size_t n;
  uint8_t *b = finish_ok(&w, &n);
  /* Payload sizes: each field is tag + length + payload. */
  const size_t mid = 1 + 2 + 200, deeper = 1 + 3 + sizeof big, deep = 1 + 3 + deeper;
  const size_t outer = 2 + (1 + 2 + mid) + (1 + 3 + deep) + 2;
  CHECK(wq_pb_varint_size(mid) == 2 && wq_pb_varint_size(deeper) == 3);
  CHECK_MSG(n == 1 + 3 + outer + 11, "%zu bytes", n);
  wq_pb_reader r, o, m, d, dd, e;
  wq_pb_field f;
  wq_error err;
  wq_pb_init(&r, b, n, "Top");
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 1);
  CHECK(wq_pb_get_message(&r, &f, "outer", "Outer", &o, &err) == WQ_OK);
  CHECK((size_t)(o.end - o.pos) == outer);
  int64_t v = 0;
  CHECK(wq_pb_next_field(&o, &f, &err) == WQ_OK &&
        wq_pb_get_int64(&o, &f, "v", &v, &err) == WQ_OK && v == 42);
  CHECK(wq_pb_next_field(&o, &f, &err) == WQ_OK && f.number == 2);
  CHECK(wq_pb_get_message(&o, &f, "mid", "Mid", &m, &err) == WQ_OK);
  CHECK((size_t)(m.end - m.pos) == mid);
  const uint8_t *p;
  size_t len;
  CHECK(wq_pb_next_field(&m, &f, &err) == WQ_OK &&
        wq_pb_get_bytes(&m, &f, "b", &p, &len, &err) == WQ_OK && len == 200 &&
        memcmp(p, big, 200) == 0);
  CHECK(wq_pb_at_end(&m));
  CHECK(wq_pb_next_field(&o, &f, &err) == WQ_OK && f.number == 3);
  CHECK(wq_pb_get_message(&o, &f, "deep", "Deep", &d, &err) == WQ_OK);
  CHECK((size_t)(d.end - d.pos) == deep);
  CHECK(wq_pb_next_field(&d, &f, &err) == WQ_OK && f.number == 1);
  CHECK(wq_pb_get_message(&d, &f, "deeper", "Deeper", &dd, &err) == WQ_OK);
  CHECK((size_t)(dd.end - dd.pos) == deeper);
  CHECK(wq_pb_next_field(&dd, &f, &err) == WQ_OK &&
        wq_pb_get_bytes(&dd, &f, "b", &p, &len, &err) == WQ_OK && len == sizeof big &&
        memcmp(p, big, sizeof big) == 0);
  CHECK(wq_pb_at_end(&dd) && wq_pb_at_end(&d));
  CHECK(wq_pb_next_field(&o, &f, &err) == WQ_OK && f.number == 4);
  CHECK(wq_pb_get_message(&o, &f, "empty", "Empty", &e, &err) == WQ_OK && wq_pb_at_end(&e));
  CHECK(wq_pb_at_end(&o));
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 9 &&
        wq_pb_get_int64(&r, &f, "v", &v, &err) == WQ_OK && v == -7);
  CHECK(wq_pb_at_end(&r));
  free(b);
}

static void test_writer_failures(void) {
  wq_pb_writer w;
  size_t n = 99;
  uint8_t *b = (uint8_t *)&n;
  wq_error err;
  /* An empty message is a valid (non-NULL) empty buffer. */
  wq_pb_writer_init(&w);
  b = finish_ok(&w, &n);
  CHECK(b && n == 0);
  free(b);
  /* end without begin: sticky, later writes refused, finish reports it. */
  wq_pb_writer_init(&w);
  CHECK(wq_pb_end(&w) == WQ_ERR_INVALID_ARG);
  CHECK(wq_pb_write_int64(&w, 1, 1) == WQ_ERR_INVALID_ARG);
  CHECK(wq_pb_writer_finish(&w, &b, &n, &err) == WQ_ERR_INVALID_ARG && b == NULL && n == 0);
  CHECK(strstr(err.message, "without an open message") != NULL);
  /* begin without end. */
  wq_pb_writer_init(&w);
  CHECK(wq_pb_begin(&w, 1) == WQ_OK);
  CHECK(wq_pb_writer_finish(&w, &b, &n, &err) == WQ_ERR_INVALID_ARG && b == NULL);
  CHECK(strstr(err.message, "not closed") != NULL);
  /* field 0 and nesting past the reader's limit. */
  wq_pb_writer_init(&w);
  CHECK(wq_pb_write_int64(&w, 0, 1) == WQ_ERR_INVALID_ARG);
  wq_pb_writer_free(&w);
  wq_pb_writer_init(&w);
  for (int i = 0; i < WQ_PB_MAX_DEPTH; i++)
    CHECK(wq_pb_begin(&w, 1) == WQ_OK);
  CHECK(wq_pb_begin(&w, 1) == WQ_ERR_UNSUPPORTED);
  CHECK(wq_pb_writer_finish(&w, &b, &n, &err) == WQ_ERR_UNSUPPORTED && b == NULL);
}

/* ---- export round trips -------------------------------------------------- */

static bool same_value(const wq_value *a, const wq_value *b) {
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return false;
  size_t n = wq_value_nbytes(a);
  return n == wq_value_nbytes(b) && (n == 0 || memcmp(a->data, b->data, n) == 0);
}

static bool same_nodes(const wq_graph *a, const wq_graph *b) {
  if (a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
    return false;
  for (int i = 0; i < a->n_nodes; i++)
    if (strcmp(a->nodes[i].op_type, b->nodes[i].op_type) != 0 ||
        strcmp(a->nodes[i].name, b->nodes[i].name) != 0 ||
        strcmp(a->nodes[i].domain, b->nodes[i].domain) != 0)
      return false;
  return true;
}

/* Seeded inputs like seeded_run.h's, except that symbolic spatial dims
 * (position 2 on) are 64 so that models with a dynamic image size run;
 * other symbolic dims are 1. Returns the input count (data malloc'ed). */
static int seeded_inputs(const wq_model *m, uint32_t seed, wq_value *in) {
  int n = wq_model_input_count(m);
  uint32_t s = seed;
  for (int i = 0; i < n && i < WQ_SEEDED_MAX_INPUTS; i++) {
    const wq_tensor *t = wq_model_input(m, i);
    memset(&in[i], 0, sizeof in[i]);
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++) {
      /* [batch, samples] audio: samples enough for an STFT front end. */
      in[i].dims[d] = t->dims[d] >= 0          ? t->dims[d]
                      : d >= 2                 ? 64
                      : t->rank == 2 && d == 1 ? 1536
                                               : 1;
      numel *= in[i].dims[d];
    }
    in[i].data = calloc((size_t)(numel ? numel : 1), wq_dtype_size(t->dtype));
    wq_seeded_fill(&in[i], numel, &s);
  }
  return n;
}

typedef struct {
  int exported, ran, nodes;
  size_t bytes_in, bytes_out;
} trip_stats;

/* Loads `bytes` for export, exports, loads the export, checks nodes and
 * a second export, and runs both on `inputs` (NULL: seeded inputs). */
static void round_trip_with(const wq_load_options *opts, const char *what, const uint8_t *bytes,
                            size_t n, const wq_value *inputs, int n_inputs, trip_stats *stats) {
  wq_model *a = NULL, *b = NULL;
  wq_error err;
  if (wq_model_load(bytes, n, opts, &a, &err) != WQ_OK) {
    CHECK_MSG(0, "%s: load failed: %s", what, err.message);
    return;
  }
  uint8_t *out = NULL, *out2 = NULL;
  size_t out_n = 0, out2_n = 0;
  wq_status st = wq_onnx_export(wq_model_get_ir(a), &out, &out_n, &err);
  CHECK_MSG(st == WQ_OK, "%s: export failed: %s (node '%s')", what, err.message, err.node);
  if (st == WQ_OK) {
    st = wq_model_load(out, out_n, opts, &b, &err);
    CHECK_MSG(st == WQ_OK, "%s: the export does not load: %s (node '%s')", what, err.message,
              err.node);
  }
  if (b) {
    stats->exported++;
    stats->nodes += wq_model_get_ir(a)->graph->n_nodes;
    stats->bytes_in += n;
    stats->bytes_out += out_n;
    CHECK_MSG(same_nodes(wq_model_get_ir(a)->graph, wq_model_get_ir(b)->graph),
              "%s: nodes differ after the round trip (%d vs %d)", what,
              wq_model_get_ir(a)->graph->n_nodes, wq_model_get_ir(b)->graph->n_nodes);
    /* Exporting the re-imported graph gives the same file. */
    st = wq_onnx_export(wq_model_get_ir(b), &out2, &out2_n, &err);
    CHECK_MSG(st == WQ_OK && out2_n == out_n && memcmp(out, out2, out_n) == 0,
              "%s: second export differs (%zu vs %zu bytes)", what, out_n, out2_n);
    wq_value seeded[WQ_SEEDED_MAX_INPUTS];
    int n_seeded = inputs ? 0 : seeded_inputs(a, 7, seeded);
    wq_error err_b;
    wq_status sa = wq_model_run(a, inputs ? inputs : seeded, inputs ? n_inputs : n_seeded, &err);
    wq_status sb = wq_model_run(b, inputs ? inputs : seeded, inputs ? n_inputs : n_seeded, &err_b);
    for (int i = 0; i < n_seeded; i++)
      free(seeded[i].data);
    CHECK_MSG(sa == WQ_OK && sb == WQ_OK, "%s: run failed: original %s, export %s", what,
              sa == WQ_OK ? "ok" : err.message, sb == WQ_OK ? "ok" : err_b.message);
    if (sa == WQ_OK && sb == WQ_OK) {
      stats->ran++;
      for (int i = 0; i < wq_model_output_count(a); i++)
        CHECK_MSG(same_value(wq_model_result(a, i), wq_model_result(b, i)),
                  "%s: output %d differs after the round trip", what, i);
    }
  }
  free(out);
  free(out2);
  wq_model_free(a);
  wq_model_free(b);
}

static void round_trip(const char *what, const uint8_t *bytes, size_t n, const wq_value *inputs,
                       int n_inputs, trip_stats *stats) {
  round_trip_with(&export_opts, what, bytes, n, inputs, n_inputs, stats);
}

/* Without constant folding, Constant nodes stay nodes and their value
 * attributes (TENSOR, and FLOAT/INTS forms) are written as attributes:
 * ppocr-mobile-v2-cls has 250 of them. */
static void test_unfolded_constants(void) {
  const wq_load_options unfolded = {
      .no_lowering = 1, .no_float_fusion = 1, .no_constant_folding = 1};
  size_t n;
  uint8_t *bytes = read_shared("models/ppocr-mobile-v2-cls/model.onnx", &n);
  trip_stats stats = {0};
  if (bytes)
    round_trip_with(&unfolded, "ppocr-mobile-v2-cls unfolded", bytes, n, NULL, 0, &stats);
  CHECK(stats.exported == 1 && stats.ran == 1 && stats.nodes == 471);
  free(bytes);
}

static void test_shared_models(void) {
  const char *dirs[] = {"models", "models-int8"};
  trip_stats stats = {0};
  int files = 0;
  for (int d = 0; d < 2; d++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", wq_test_shared_dir(), dirs[d]);
    int n_sub;
    char **subs = list_dir(dir, "", &n_sub);
    for (int s = 0; s < n_sub; s++) {
      char sub[6144];
      snprintf(sub, sizeof sub, "%s/%s", dir, subs[s]);
      int n_models;
      char **models = list_dir(sub, "", &n_models);
      for (int k = 0; k < n_models; k++) {
        if (!ends_with(models[k], ".onnx"))
          continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", sub, models[k]);
        size_t n;
        uint8_t *bytes = wq_test_read_file(path, &n);
        CHECK_MSG(bytes != NULL, "cannot read %s", path);
        if (bytes) {
          files++;
          round_trip(path, bytes, n, NULL, 0, &stats);
        }
        free(bytes);
      }
      free_list(models, n_models);
    }
    free_list(subs, n_sub);
  }
  /* 17 files at the time of writing (SOURCE.md of each folder lists them). */
  CHECK_MSG(files >= 17, "only %d shared models found", files);
  CHECK(stats.exported == files && stats.ran == files);
  printf("shared models: %d exported, %d ran identically, %d nodes, %zu -> %zu bytes\n",
         stats.exported, stats.ran, stats.nodes, stats.bytes_in, stats.bytes_out);
}

/* Every node-test case that loads: exported, re-imported and run on its
 * own test_data_set_0 inputs. */
static void test_node_cases(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/onnx-node-tests", wq_test_shared_dir());
  int n_cases;
  char **cases = list_dir(dir, "", &n_cases);
  trip_stats stats = {0};
  int loadable = 0;
  for (int c = 0; c < n_cases; c++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, cases[c]);
    if (!is_file(path))
      continue;
    size_t n;
    uint8_t *bytes = wq_test_read_file(path, &n);
    wq_model *probe = NULL;
    wq_error err;
    if (!bytes || wq_model_load(bytes, n, &export_opts, &probe, &err) != WQ_OK) {
      free(bytes);
      continue; /* a case the runtime does not take (dtype, op) */
    }
    wq_model_free(probe);
    loadable++;
    wq_value in[WQ_SEEDED_MAX_INPUTS];
    memset(in, 0, sizeof in);
    int n_in = 0;
    for (; n_in < WQ_SEEDED_MAX_INPUTS; n_in++) {
      char ip[8192];
      snprintf(ip, sizeof ip, "%s/%s/test_data_set_0/input_%d.pb", dir, cases[c], n_in);
      size_t pn;
      uint8_t *pb = is_file(ip) ? wq_test_read_file(ip, &pn) : NULL;
      if (!pb)
        break;
      wq_status st = wq_tensor_decode(pb, pn, &in[n_in], NULL, 0, &err);
      free(pb);
      if (st != WQ_OK)
        break;
    }
    round_trip(cases[c], bytes, n, in, n_in, &stats);
    for (int i = 0; i < n_in; i++)
      free(in[i].data);
    free(bytes);
  }
  free_list(cases, n_cases);
  CHECK_MSG(loadable >= 150, "only %d node cases load", loadable);
  CHECK(stats.exported == loadable && stats.ran == loadable);
  printf("node cases: %d loadable, %d exported, %d ran identically\n", loadable, stats.exported,
         stats.ran);
}

/* ---- hand-built graphs --------------------------------------------------- */

static int new_tensor(wq_graph *g, const char *name, wq_dtype dt, int rank, const int64_t *dims) {
  int t = wq_graph_add_tensor(g, name);
  g->tensors[t].dtype = dt;
  g->tensors[t].rank = rank;
  for (int d = 0; d < rank; d++)
    g->tensors[t].dims[d] = dims[d];
  return t;
}

static void set_data(wq_tensor *t, const void *data, size_t n) {
  t->data = malloc(n ? n : 1);
  memcpy(t->data, data, n);
  t->nbytes = n;
  t->is_constant = true;
}

static wq_node *new_node(wq_graph *g, const char *name, const char *domain, const char *op,
                         const int *in, int n_in, const int *out, int n_out, int n_attrs) {
  wq_node *n = wq_graph_add_node(g);
  n->name = wq_strdup(name);
  n->op_type = wq_strdup(op);
  n->domain = wq_strdup(domain);
  n->inputs = malloc(sizeof(int) * (size_t)(n_in + 1));
  memcpy(n->inputs, in, sizeof(int) * (size_t)n_in);
  n->n_inputs = n_in;
  n->outputs = malloc(sizeof(int) * (size_t)(n_out + 1));
  memcpy(n->outputs, out, sizeof(int) * (size_t)n_out);
  n->n_outputs = n_out;
  n->attrs = calloc((size_t)n_attrs + 1, sizeof(wq_attr));
  n->n_attrs = n_attrs;
  return n;
}

static wq_model_ir *new_ir(void) {
  wq_model_ir *ir = calloc(1, sizeof *ir);
  ir->ir_version = 3;
  ir->producer_name = wq_strdup("test");
  ir->producer_version = wq_strdup("");
  ir->opsets = calloc(2, sizeof *ir->opsets);
  ir->opsets[0].domain = wq_strdup("");
  ir->opsets[0].version = 13;
  ir->opsets[1].domain = wq_strdup("test.domain");
  ir->opsets[1].version = 1;
  ir->n_opsets = 2;
  ir->graph = wq_graph_new();
  ir->graph->name = wq_strdup("hand");
  ir->graph->inputs = malloc(4 * sizeof(int));
  ir->graph->outputs = malloc(4 * sizeof(int));
  return ir;
}

/* Relu(x) -> Mul(., c) with x [batch, 3]: nodes appended consumer first,
 * attributes of every type on a custom-domain node, an internal
 * "wasmq.note" attribute, an unread constant. */
static void test_hand_graph(void) {
  wq_model_ir *ir = new_ir();
  wq_graph *g = ir->graph;
  const int64_t x_dims[] = {-1, 3}, c_dims[] = {3}, t_dims[] = {2, 2};
  int x = new_tensor(g, "x", WQ_DT_FLOAT, 2, x_dims);
  g->tensors[x].dim_params[0] = wq_strdup("batch");
  g->tensors[x].is_input = true;
  g->inputs[g->n_inputs++] = x;
  int c = new_tensor(g, "c", WQ_DT_FLOAT, 1, c_dims);
  const float cv[] = {1.0f, -2.0f, 0.5f};
  set_data(&g->tensors[c], cv, sizeof cv);
  int unused = new_tensor(g, "unused", WQ_DT_INT64, 1, c_dims);
  const int64_t uv[] = {1, 2, 3};
  set_data(&g->tensors[unused], uv, sizeof uv);
  int r = new_tensor(g, "r", WQ_DT_FLOAT, 2, x_dims);
  int y = new_tensor(g, "y", WQ_DT_FLOAT, 2, x_dims);
  g->tensors[y].is_output = true;
  g->outputs[g->n_outputs++] = y;
  int z = new_tensor(g, "z", WQ_DT_UNDEFINED, -1, NULL);
  g->tensors[z].is_output = true;
  g->outputs[g->n_outputs++] = z;

  /* Packed and narrow dtypes: int4 [3] in 2 bytes, bool, float16. */
  const int64_t three[] = {3}, two[] = {2}, one[] = {1};
  int q4 = new_tensor(g, "q4", WQ_DT_INT4, 1, three);
  const uint8_t q4v[] = {0x21, 0x0f};
  set_data(&g->tensors[q4], q4v, sizeof q4v);
  int flags = new_tensor(g, "flags", WQ_DT_BOOL, 1, two);
  const uint8_t fv[] = {1, 0};
  set_data(&g->tensors[flags], fv, sizeof fv);
  int half = new_tensor(g, "half", WQ_DT_FLOAT16, 1, one);
  const uint16_t hv1 = 0x3c00;
  set_data(&g->tensors[half], &hv1, sizeof hv1);
  int in_mul[] = {r, c}, in_relu[] = {x}, in_custom[] = {y, -1, c, q4, flags, half};
  int out_custom[] = {z, -1};
  new_node(g, "mul", "", "Mul", in_mul, 2, &y, 1, 0);
  new_node(g, "relu", "", "Relu", in_relu, 1, &r, 1, 0);
  wq_node *n = new_node(g, "custom", "test.domain", "Everything", in_custom, 6, out_custom, 2, 10);
  wq_attr *a = n->attrs;
  a[0] = (wq_attr){.name = wq_strdup("f"), .type = WQ_ATTR_FLOAT, .f = -0.125f};
  a[1] = (wq_attr){.name = wq_strdup("i"), .type = WQ_ATTR_INT, .i = -3};
  a[2] = (wq_attr){.name = wq_strdup("s"), .type = WQ_ATTR_STRING, .s = malloc(4), .s_len = 3};
  memcpy(a[2].s, "a\0b", 4);
  a[3] =
      (wq_attr){.name = wq_strdup("t"), .type = WQ_ATTR_TENSOR, .t = calloc(1, sizeof(wq_tensor))};
  a[3].t->name = wq_strdup("");
  a[3].t->dtype = WQ_DT_INT8;
  a[3].t->rank = 2;
  memcpy(a[3].t->dims, t_dims, sizeof t_dims);
  const int8_t tv[] = {-128, -1, 0, 127};
  set_data(a[3].t, tv, sizeof tv);
  const float fl[] = {1.5f, -0.0f};
  a[4] = (wq_attr){
      .name = wq_strdup("floats"), .type = WQ_ATTR_FLOATS, .floats = malloc(sizeof fl), .count = 2};
  memcpy(a[4].floats, fl, sizeof fl);
  const int64_t il[] = {INT64_MIN, 0, 5};
  a[5] = (wq_attr){
      .name = wq_strdup("ints"), .type = WQ_ATTR_INTS, .ints = malloc(sizeof il), .count = 3};
  memcpy(a[5].ints, il, sizeof il);
  a[6] = (wq_attr){.name = wq_strdup("strings"),
                   .type = WQ_ATTR_STRINGS,
                   .strings = calloc(2, sizeof(char *)),
                   .count = 2};
  a[6].strings[0] = wq_strdup("one");
  a[6].strings[1] = wq_strdup("");
  a[7] = (wq_attr){.name = wq_strdup("tensors"),
                   .type = WQ_ATTR_TENSORS,
                   .tensors = calloc(1, sizeof(wq_tensor)),
                   .count = 1};
  a[7].tensors[0].name = wq_strdup("tt");
  a[7].tensors[0].dtype = WQ_DT_UINT16;
  a[7].tensors[0].rank = 0;
  const uint16_t hv = 0xbeef;
  set_data(&a[7].tensors[0], &hv, sizeof hv);
  a[8] = (wq_attr){.name = wq_strdup("wasmq.note"),
                   .type = WQ_ATTR_STRING,
                   .s = wq_strdup("internal"),
                   .s_len = 8};
  a[9] = (wq_attr){.name = wq_strdup("empty_ints"), .type = WQ_ATTR_INTS};

  uint8_t *out = NULL;
  size_t out_n = 0;
  wq_error err;
  wq_status st = wq_onnx_export(ir, &out, &out_n, &err);
  CHECK_MSG(st == WQ_OK, "export: %s", err.message);
  wq_model_ir *back = NULL;
  if (st == WQ_OK) {
    st = wq_onnx_import(out, out_n, &back, &err);
    CHECK_MSG(st == WQ_OK, "import of the export: %s (node '%s')", err.message, err.node);
  }
  if (back) {
    const wq_graph *h = back->graph;
    CHECK(back->ir_version == WQ_ONNX_EXPORT_MIN_IR_VERSION);
    CHECK(strcmp(back->producer_name, "wasmq") == 0);
    CHECK(back->n_opsets == 2 && strcmp(back->opsets[1].domain, "test.domain") == 0 &&
          back->opsets[0].version == 13);
    CHECK(strcmp(h->name, "hand") == 0);
    /* Relu moved before the Mul that reads it; the custom node stays last. */
    CHECK(h->n_nodes == 3 && strcmp(h->nodes[0].name, "relu") == 0 &&
          strcmp(h->nodes[1].name, "mul") == 0 && strcmp(h->nodes[2].name, "custom") == 0);
    /* The symbolic batch dim and the static one. */
    const wq_tensor *hx = &h->tensors[h->inputs[0]];
    CHECK(h->n_inputs == 1 && strcmp(hx->name, "x") == 0 && hx->rank == 2 && hx->dims[0] == -1 &&
          hx->dim_params[0] && strcmp(hx->dim_params[0], "batch") == 0 && hx->dims[1] == 3);
    /* Only the constant that is read became an initializer. */
    CHECK(wq_graph_find_tensor(h, "unused") < 0);
    int hc = wq_graph_find_tensor(h, "c");
    CHECK(hc >= 0 && h->tensors[hc].is_constant && h->tensors[hc].nbytes == sizeof cv &&
          memcmp(h->tensors[hc].data, cv, sizeof cv) == 0);
    /* Outputs: y typed [batch, 3], z untyped. */
    CHECK(h->n_outputs == 2);
    const wq_tensor *hy = &h->tensors[h->outputs[0]];
    CHECK(hy->dtype == WQ_DT_FLOAT && hy->rank == 2 && hy->dims[1] == 3);
    CHECK(h->tensors[h->outputs[1]].dtype == WQ_DT_UNDEFINED);
    const wq_node *hn = &h->nodes[2];
    const int64_t want_bytes[] = {sizeof q4v, sizeof fv, sizeof hv1};
    const void *want_data[] = {q4v, fv, &hv1};
    const char *narrow[] = {"q4", "flags", "half"};
    for (int k = 0; k < 3; k++) {
      int t = wq_graph_find_tensor(h, narrow[k]);
      CHECK_MSG(t >= 0 && h->tensors[t].is_constant &&
                    h->tensors[t].dtype == g->tensors[wq_graph_find_tensor(g, narrow[k])].dtype &&
                    (int64_t)h->tensors[t].nbytes == want_bytes[k] &&
                    memcmp(h->tensors[t].data, want_data[k], (size_t)want_bytes[k]) == 0,
                "constant %s", narrow[k]);
    }
    CHECK(strcmp(hn->domain, "test.domain") == 0 && hn->n_inputs == 6 && hn->inputs[1] == -1 &&
          hn->n_outputs == 2 && hn->outputs[1] == -1);
    CHECK(hn->n_attrs == 9 && wq_node_attr(hn, "wasmq.note") == NULL);
    const wq_attr *b;
    CHECK((b = wq_node_attr(hn, "f")) && b->type == WQ_ATTR_FLOAT && b->f == -0.125f);
    CHECK((b = wq_node_attr(hn, "i")) && b->type == WQ_ATTR_INT && b->i == -3);
    CHECK((b = wq_node_attr(hn, "s")) && b->type == WQ_ATTR_STRING && b->s_len == 3 &&
          memcmp(b->s, "a\0b", 3) == 0);
    CHECK((b = wq_node_attr(hn, "t")) && b->type == WQ_ATTR_TENSOR && b->t->dtype == WQ_DT_INT8 &&
          b->t->rank == 2 && b->t->dims[0] == 2 && b->t->nbytes == 4 &&
          memcmp(b->t->data, tv, 4) == 0);
    CHECK((b = wq_node_attr(hn, "floats")) && b->type == WQ_ATTR_FLOATS && b->count == 2 &&
          b->floats[0] == 1.5f && memcmp(&b->floats[1], &fl[1], 4) == 0);
    CHECK((b = wq_node_attr(hn, "ints")) && b->type == WQ_ATTR_INTS && b->count == 3 &&
          b->ints[0] == INT64_MIN && b->ints[2] == 5);
    CHECK((b = wq_node_attr(hn, "strings")) && b->type == WQ_ATTR_STRINGS && b->count == 2 &&
          strcmp(b->strings[0], "one") == 0 && b->strings[1][0] == '\0');
    CHECK((b = wq_node_attr(hn, "tensors")) && b->type == WQ_ATTR_TENSORS && b->count == 1 &&
          strcmp(b->tensors[0].name, "tt") == 0 && b->tensors[0].rank == 0 &&
          *(uint16_t *)b->tensors[0].data == 0xbeef);
    CHECK((b = wq_node_attr(hn, "empty_ints")) && b->type == WQ_ATTR_INTS && b->count == 0);
  }
  CHECK(!has_internal_name(out, out_n));
  free(out);
  wq_model_ir_free(back);

  /* Refusals, each naming the node. */
  n = &g->nodes[2];
  free(n->domain);
  n->domain = wq_strdup("other.domain");
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_ERR_INVALID_MODEL && out == NULL &&
        strcmp(err.node, "custom") == 0 && strstr(err.message, "other.domain"));
  free(n->domain);
  n->domain = wq_strdup("wasmq");
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_ERR_UNSUPPORTED && out == NULL &&
        strcmp(err.node, "custom") == 0);
  free(n->domain);
  n->domain = wq_strdup("test.domain");
  wq_attr_clear(&n->attrs[9]);
  n->attrs[9] = (wq_attr){.name = wq_strdup("body"), .type = WQ_ATTR_GRAPHS};
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_ERR_UNSUPPORTED && out == NULL &&
        strcmp(err.node, "custom") == 0 && strstr(err.message, "body"));
  n->n_attrs = 9; /* attribute 9 is cleared below with the rest */
  wq_attr_clear(&n->attrs[9]);
  /* A cycle: Relu reads Mul's output. */
  g->nodes[1].inputs[0] = y;
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_ERR_INVALID_MODEL && out == NULL &&
        strstr(err.message, "cycle"));
  g->nodes[1].inputs[0] = x;
  /* A tensor nobody defines. */
  g->tensors[c].is_constant = false;
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_ERR_INVALID_MODEL && out == NULL &&
        strcmp(err.node, "mul") == 0 && strstr(err.message, "'c'"));
  g->tensors[c].is_constant = true;
  CHECK(wq_onnx_export(ir, &out, &out_n, &err) == WQ_OK && out != NULL);
  free(out);
  wq_model_ir_free(ir);
}

/* A model loaded with int8 lowering holds wasmq-domain ops: refused, naming
 * one; the same file loaded for export goes through. Float nodes the
 * lowering leaves carry a decision record (its detail sentence), which
 * never reaches the file. */
static void test_lowered_graphs(void) {
  size_t n;
  uint8_t *bytes = read_shared("models/synthetic/smallcnn_qdq.onnx", &n);
  wq_model *m = NULL;
  wq_error err;
  uint8_t *out = NULL;
  size_t out_n;
  if (bytes && wq_model_load(bytes, n, NULL, &m, &err) == WQ_OK) {
    CHECK(wq_onnx_export(wq_model_get_ir(m), &out, &out_n, &err) == WQ_ERR_UNSUPPORTED &&
          out == NULL && err.node[0] && strstr(err.message, "internal domain"));
    wq_model_free(m);
  }
  free(bytes);
  bytes = read_shared("models/mnist-8/model.onnx", &n);
  const wq_load_options lower_only = {.no_float_fusion = 1};
  int notes = 0;
  if (bytes && wq_model_load(bytes, n, &lower_only, &m, &err) == WQ_OK) {
    const wq_graph *g = wq_model_get_ir(m)->graph;
    for (int i = 0; i < g->n_nodes; i++)
      notes += g->nodes[i].rec.detail != NULL;
    CHECK(wq_onnx_export(wq_model_get_ir(m), &out, &out_n, &err) == WQ_OK);
    CHECK(out && !has_internal_name(out, out_n));
    free(out);
    wq_model_free(m);
  }
  CHECK_MSG(notes > 0, "mnist-8 lowered without float notes: the check above proves nothing");
  free(bytes);
}

/* Nodes appended out of order (as a rewrite may leave them) are written in
 * a topological order: mnist-8's node list reversed exports, re-imports and
 * runs like the original. */
static void test_reordered_nodes(void) {
  size_t n;
  uint8_t *bytes = read_shared("models/mnist-8/model.onnx", &n);
  wq_model *a = NULL, *b = NULL;
  wq_error err;
  if (!bytes || wq_model_load(bytes, n, &export_opts, &a, &err) != WQ_OK) {
    CHECK(0);
    free(bytes);
    return;
  }
  wq_graph *g = ((wq_model_ir *)wq_model_get_ir(a))->graph;
  int ran = 0;
  CHECK(wq_seeded_run(a, 3, 1 << 20, &ran, &err) == WQ_OK && ran);
  wq_value want = *wq_model_result(a, 0);
  want.data = malloc(wq_value_nbytes(&want));
  memcpy(want.data, wq_model_result(a, 0)->data, wq_value_nbytes(&want));
  for (int i = 0, j = g->n_nodes - 1; i < j; i++, j--) {
    wq_node tmp = g->nodes[i];
    g->nodes[i] = g->nodes[j];
    g->nodes[j] = tmp;
  }
  uint8_t *out = NULL;
  size_t out_n;
  CHECK(g->n_nodes > 3 && wq_onnx_export(wq_model_get_ir(a), &out, &out_n, &err) == WQ_OK);
  if (out && wq_model_load(out, out_n, &export_opts, &b, &err) == WQ_OK) {
    CHECK(wq_seeded_run(b, 3, 1 << 20, &ran, &err) == WQ_OK && ran);
    CHECK(same_value(&want, wq_model_result(b, 0)));
    wq_model_free(b);
  } else {
    CHECK_MSG(0, "reordered export: %s", err.message);
  }
  free(out);
  free(want.data);
  wq_model_free(a);
  free(bytes);
}

/* A model with a symbolic batch (super-resolution-10: input and output
 * [batch_size, 1, 224, 224] / [batch_size, 1, 672, 672]) keeps the dim_param through the export. */
static void test_symbolic_batch_model(void) {
  size_t n;
  uint8_t *bytes = read_shared("models/super-resolution-10/model.onnx", &n);
  wq_model *m = NULL;
  wq_error err;
  uint8_t *out = NULL;
  size_t out_n = 0;
  wq_model_ir *back = NULL;
  CHECK(bytes && wq_model_load(bytes, n, &export_opts, &m, &err) == WQ_OK);
  CHECK(m && wq_onnx_export(wq_model_get_ir(m), &out, &out_n, &err) == WQ_OK);
  CHECK(out && wq_onnx_import(out, out_n, &back, &err) == WQ_OK);
  if (back) {
    const wq_graph *g = back->graph;
    const wq_tensor *x = &g->tensors[g->inputs[0]], *y = &g->tensors[g->outputs[0]];
    CHECK(x->rank == 4 && x->dims[0] == -1 && x->dim_params[0] &&
          strcmp(x->dim_params[0], "batch_size") == 0 && x->dims[2] == 224);
    CHECK(y->rank == 4 && y->dims[0] == -1 && y->dim_params[0] &&
          strcmp(y->dim_params[0], "batch_size") == 0 && y->dims[3] == 672);
  }
  wq_model_ir_free(back);
  free(out);
  wq_model_free(m);
  free(bytes);
}

int main(void) {
  test_varints();
  test_fixed_and_bytes();
  test_nested();
  test_writer_failures();
  test_hand_graph();
  test_lowered_graphs();
  test_reordered_nodes();
  test_symbolic_batch_model();
  test_unfolded_constants();
  test_shared_models();
  test_node_cases();
  WQ_TEST_END();
}
