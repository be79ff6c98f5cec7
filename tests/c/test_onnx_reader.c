/* The ONNX reader: protobuf wire primitives, graph building on hand-encoded
 * models, every shared model and conformance case (with exact facts from
 * their SOURCE.md), every test_data_set tensor, and robustness against
 * truncation, random bytes and byte flips (run under ASan). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/wasmq.h"
#include "dir_list.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_tensor.h"
#include "onnx/pb_reader.h"
#include "wq_test.h"

/* ---- helpers ---------------------------------------------------------------- */

static wq_model_ir *import_ok(const unsigned char *bytes, size_t n, const char *what) {
  wq_model_ir *m = NULL;
  wq_error err;
  wq_status st = wq_onnx_import(bytes, n, &m, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s %s [%s]", what, wq_status_name(st), err.message, err.node);
  return st == WQ_OK ? m : NULL;
}

static int count_ops(const wq_graph *g, const char *op) {
  int c = 0;
  for (int i = 0; i < g->n_nodes; i++)
    c += strcmp(g->nodes[i].op_type, op) == 0;
  return c;
}

static int count_constants(const wq_graph *g) {
  int c = 0;
  for (int i = 0; i < g->n_tensors; i++)
    c += g->tensors[i].is_constant;
  return c;
}

static const wq_tensor *find_tensor(const wq_graph *g, const char *name) {
  int i = wq_graph_find_tensor(g, name);
  return i >= 0 ? &g->tensors[i] : NULL;
}

static bool dims_are(const wq_tensor *t, int rank, const int64_t *dims) {
  if (t->rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i])
      return false;
  return true;
}

/* Every node input is produced by an earlier node, or is not produced. */
static bool topologically_ordered(const wq_graph *g) {
  int *producer = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *producer);
  for (int i = 0; i < g->n_tensors; i++)
    producer[i] = -1;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] >= 0)
        producer[g->nodes[i].outputs[k]] = i;
  bool ok = true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++) {
      int t = g->nodes[i].inputs[k];
      if (t >= 0 && producer[t] >= i)
        ok = false;
    }
  free(producer);
  return ok;
}

/* Seeded generator local to each test (no global state). */
typedef struct {
  uint64_t s;
} rng;
static uint32_t rng_next(rng *r) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(r->s >> 33);
}

/* ---- a minimal protobuf writer for hand-built models ----------------------- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} buf;

static void b_put(buf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n)
      cap *= 2;
    b->p = realloc(b->p, cap);
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void b_varint(buf *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v)
      tmp[n] |= 0x80;
    n++;
  } while (v);
  b_put(b, tmp, n);
}
static void b_tag(buf *b, int field, int wire) {
  b_varint(b, (uint64_t)field << 3 | (unsigned)wire);
}
static void f_int(buf *b, int field, int64_t v) {
  b_tag(b, field, 0);
  b_varint(b, (uint64_t)v);
}
static void f_bytes(buf *b, int field, const void *p, size_t n) {
  b_tag(b, field, 2);
  b_varint(b, n);
  b_put(b, p, n);
}
static void f_str(buf *b, int field, const char *s) { f_bytes(b, field, s, strlen(s)); }
static void f_msg(buf *b, int field, buf *sub) {
  f_bytes(b, field, sub->p, sub->n);
  free(sub->p);
  memset(sub, 0, sizeof *sub);
}
static void f_float(buf *b, int field, float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
  b_tag(b, field, 5);
  b_put(b, le, 4);
}
static void f_packed(buf *b, int field, const int64_t *v, int n) {
  buf sub = {0};
  for (int i = 0; i < n; i++)
    b_varint(&sub, (uint64_t)v[i]);
  b_tag(b, field, 2);
  b_varint(b, sub.n);
  b_put(b, sub.p, sub.n);
  free(sub.p);
}

/* ValueInfoProto with a tensor type; rank -1 = no shape; a dim of -1 is
 * written as dim_param "d<i>". */
static void value_info(buf *out, int field, const char *name, int elem, int rank,
                       const int64_t *dims) {
  buf vi = {0}, type = {0}, tt = {0}, shape = {0};
  f_str(&vi, 1, name);
  f_int(&tt, 1, elem);
  if (rank >= 0) {
    for (int i = 0; i < rank; i++) {
      buf dim = {0};
      if (dims[i] >= 0) {
        f_int(&dim, 1, dims[i]);
      } else {
        char p[16];
        snprintf(p, sizeof p, "d%d", i);
        f_str(&dim, 2, p);
      }
      f_msg(&shape, 1, &dim);
    }
    f_msg(&tt, 2, &shape);
  }
  f_msg(&type, 1, &tt);
  f_msg(&vi, 2, &type);
  f_msg(out, field, &vi);
}

/* NodeProto; inputs/outputs NULL-terminated; name may be NULL. */
static void node(buf *out, const char *op, const char *const *ins, const char *const *outs,
                 const char *name, const char *domain, buf *attrs) {
  buf n = {0};
  for (int i = 0; ins && ins[i]; i++)
    f_str(&n, 1, ins[i]);
  for (int i = 0; outs && outs[i]; i++)
    f_str(&n, 2, outs[i]);
  if (name)
    f_str(&n, 3, name);
  f_str(&n, 4, op);
  if (attrs) {
    b_put(&n, attrs->p, attrs->n);
    free(attrs->p);
    memset(attrs, 0, sizeof *attrs);
  }
  if (domain)
    f_str(&n, 7, domain);
  f_msg(out, 1, &n);
}

static void finish_model(buf *model, buf *graph, const char *domain2, int version2) {
  f_int(model, 1, 8);
  f_str(model, 2, "unit-test");
  f_msg(model, 7, graph);
  buf op = {0};
  f_str(&op, 1, "");
  f_int(&op, 2, 17);
  f_msg(model, 8, &op);
  if (domain2) {
    f_str(&op, 1, domain2);
    f_int(&op, 2, version2);
    f_msg(model, 8, &op);
  }
}

/* ---- protobuf reader unit tests ------------------------------------------ */

static void test_pb_primitives(void) {
  wq_error err;
  wq_pb_reader r;
  uint64_t v;
  const uint8_t v300[] = {0xac, 0x02};
  wq_pb_init(&r, v300, sizeof v300, "Test");
  CHECK(wq_pb_read_varint(&r, &v, &err) == WQ_OK && v == 300 && wq_pb_at_end(&r));

  const uint8_t vmax[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  wq_pb_init(&r, vmax, sizeof vmax, "Test");
  CHECK(wq_pb_read_varint(&r, &v, &err) == WQ_OK && v == UINT64_MAX);

  const uint8_t v11[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00};
  wq_pb_init(&r, v11, sizeof v11, "Test");
  CHECK(wq_pb_read_varint(&r, &v, &err) == WQ_ERR_PARSE);
  CHECK(strstr(err.message, "longer than 10 bytes") != NULL);

  const uint8_t vtrunc[] = {0x80, 0x80};
  wq_pb_init(&r, vtrunc, sizeof vtrunc, "Test");
  CHECK(wq_pb_read_varint(&r, &v, &err) == WQ_ERR_PARSE);
  CHECK(strstr(err.message, "Test: data ends inside a varint") != NULL);

  const uint8_t fx[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  uint32_t u32;
  wq_pb_init(&r, fx, 8, "Test");
  CHECK(wq_pb_read_fixed32(&r, &u32, &err) == WQ_OK && u32 == 0x04030201u);
  CHECK(wq_pb_read_fixed64(&r, &v, &err) == WQ_ERR_PARSE); /* 4 bytes left */
  wq_pb_init(&r, fx, 8, "Test");
  CHECK(wq_pb_read_fixed64(&r, &v, &err) == WQ_OK && v == 0x0807060504030201ull);

  /* Group wire types and field number 0 are rejected. */
  const uint8_t group[] = {0x0b};
  wq_pb_field f;
  wq_pb_init(&r, group, 1, "Test");
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_ERR_PARSE && strstr(err.message, "group"));
  const uint8_t zero[] = {0x00};
  wq_pb_init(&r, zero, 1, "Test");
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_ERR_PARSE);

  /* A length running past the end of the message. */
  const uint8_t longlen[] = {0x0a, 0x05, 'a', 'b'};
  const uint8_t *p;
  size_t n;
  wq_pb_init(&r, longlen, sizeof longlen, "Test");
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK && f.number == 1 && f.wire == WQ_PB_LEN);
  CHECK(wq_pb_get_bytes(&r, &f, "name", &p, &n, &err) == WQ_ERR_PARSE);
  CHECK(strstr(err.message, "Test.name: length 5 runs past the end") != NULL);

  /* Wire-type mismatch names the message and field. */
  const uint8_t mismatch[] = {0x08, 0x05};
  wq_pb_init(&r, mismatch, sizeof mismatch, "NodeProto");
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_bytes(&r, &f, "input", &p, &n, &err) == WQ_ERR_PARSE);
  CHECK(strstr(err.message, "NodeProto.input") != NULL);

  /* Unknown fields of every wire type are skipped. */
  buf b = {0};
  f_int(&b, 100, 7);
  f_str(&b, 101, "skip me");
  f_float(&b, 102, 1.5f);
  b_tag(&b, 103, 1);
  b_put(&b, fx, 8);
  f_int(&b, 1, 42);
  wq_pb_init(&r, b.p, b.n, "Test");
  int64_t got = 0;
  while (!wq_pb_at_end(&r)) {
    CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
    if (f.number == 1)
      CHECK(wq_pb_get_int64(&r, &f, "x", &got, &err) == WQ_OK);
    else
      CHECK(wq_pb_skip(&r, &f, &err) == WQ_OK);
  }
  CHECK(got == 42);
  free(b.p);
}

static void test_pb_repeated(void) {
  wq_error err;
  /* The same ints packed in one run, then unpacked one by one, then mixed. */
  const int64_t vals[] = {1, -2, 300, INT64_MAX};
  buf b = {0};
  f_packed(&b, 1, vals, 2);
  f_int(&b, 1, vals[2]);
  f_int(&b, 1, vals[3]);
  wq_pb_reader r;
  wq_pb_init(&r, b.p, b.n, "Test");
  wq_pb_array a;
  wq_pb_array_init(&a, sizeof(int64_t));
  while (!wq_pb_at_end(&r)) {
    wq_pb_field f;
    CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
    CHECK(wq_pb_get_repeated_int64(&r, &f, "ints", &a, &err) == WQ_OK);
  }
  CHECK(a.count == 4);
  for (size_t i = 0; i < a.count && i < 4; i++)
    CHECK(((int64_t *)a.data)[i] == vals[i]);
  wq_pb_array_free(&a);
  free(b.p);

  /* int32: -1 encoded as a 10-byte varint truncates to -1. */
  buf c = {0};
  f_int(&c, 5, -1);
  wq_pb_init(&r, c.p, c.n, "Test");
  wq_pb_array_init(&a, sizeof(int32_t));
  wq_pb_field f;
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_repeated_int32(&r, &f, "int32_data", &a, &err) == WQ_OK);
  CHECK(a.count == 1 && ((int32_t *)a.data)[0] == -1);
  wq_pb_array_free(&a);
  free(c.p);

  /* floats: packed (wire 2) and single (wire 5). */
  buf d = {0};
  const uint8_t packed[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* 1, -2 */
  f_bytes(&d, 7, packed, sizeof packed);
  f_float(&d, 7, 0.25f);
  wq_pb_init(&r, d.p, d.n, "Test");
  wq_pb_array_init(&a, sizeof(float));
  while (!wq_pb_at_end(&r)) {
    CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
    CHECK(wq_pb_get_repeated_float(&r, &f, "floats", &a, &err) == WQ_OK);
  }
  CHECK(a.count == 3);
  if (a.count == 3) {
    const float *fl = a.data;
    CHECK(fl[0] == 1.0f && fl[1] == -2.0f && fl[2] == 0.25f);
  }
  wq_pb_array_free(&a);
  free(d.p);

  /* A packed float run whose length is not a multiple of 4. */
  buf e = {0};
  f_bytes(&e, 7, packed, 7);
  wq_pb_init(&r, e.p, e.n, "AttributeProto");
  wq_pb_array_init(&a, sizeof(float));
  CHECK(wq_pb_next_field(&r, &f, &err) == WQ_OK);
  CHECK(wq_pb_get_repeated_float(&r, &f, "floats", &a, &err) == WQ_ERR_PARSE);
  CHECK(strstr(err.message, "AttributeProto.floats") != NULL);
  wq_pb_array_free(&a);
  free(e.p);
}

static void test_pb_depth(void) {
  /* WQ_PB_MAX_DEPTH + 5 nested messages in field 1. */
  buf inner = {0};
  f_int(&inner, 2, 1);
  for (int i = 0; i < WQ_PB_MAX_DEPTH + 5; i++) {
    buf outer = {0};
    f_msg(&outer, 1, &inner);
    inner = outer;
  }
  wq_pb_reader r;
  wq_pb_init(&r, inner.p, inner.n, "Nest");
  wq_error err;
  wq_status st = WQ_OK;
  int levels = 0;
  while (st == WQ_OK) {
    wq_pb_field f;
    st = wq_pb_next_field(&r, &f, &err);
    if (st != WQ_OK || f.number != 1)
      break;
    wq_pb_reader sub;
    st = wq_pb_get_message(&r, &f, "child", "Nest", &sub, &err);
    if (st == WQ_OK) {
      r = sub;
      levels++;
    }
  }
  CHECK(st == WQ_ERR_PARSE && levels == WQ_PB_MAX_DEPTH);
  CHECK(strstr(err.message, "nested deeper than") != NULL);
  free(inner.p);
}

/* ---- graph building on hand-encoded models -------------------------------- */

static void test_sorting_naming_and_domains(void) {
  buf g = {0};
  /* File order: consumer first. c = Relu(b); b = Mul(a, a) in ai.onnx;
   * a = Fancy(x) in com.example; an independent Neg(x) keeps its place
   * relative to the others. Second Relu has no name. */
  const char *in_c[] = {"b", NULL}, *out_c[] = {"c", NULL};
  const char *in_b[] = {"a", "a", NULL}, *out_b[] = {"b", NULL};
  const char *in_a[] = {"x", NULL}, *out_a[] = {"a", "", NULL};
  const char *in_n[] = {"x", NULL}, *out_n[] = {"n", NULL};
  const char *in_o[] = {"", "x", NULL}, *out_o[] = {"o", NULL};
  node(&g, "Relu", in_c, out_c, "relu_c", NULL, NULL);
  node(&g, "Mul", in_b, out_b, "mul_b", "ai.onnx", NULL);
  node(&g, "Fancy", in_a, out_a, "fancy_a", "com.example", NULL);
  node(&g, "Neg", in_n, out_n, NULL, NULL, NULL);
  node(&g, "Relu", in_o, out_o, "", NULL, NULL);
  f_str(&g, 2, "main");
  const int64_t dx[] = {-1, 4};
  value_info(&g, 11, "x", WQ_DT_FLOAT, 2, dx);
  value_info(&g, 12, "c", WQ_DT_FLOAT, 2, dx);
  value_info(&g, 12, "n", WQ_DT_FLOAT, -1, NULL);
  value_info(&g, 12, "o", WQ_DT_FLOAT, -1, NULL);
  const int64_t db[] = {7, 4};
  value_info(&g, 13, "b", WQ_DT_FLOAT, 2, db);
  value_info(&g, 13, "unused_name", WQ_DT_INT8, 2, db);
  buf model = {0};
  finish_model(&model, &g, "com.example", 3);
  wq_model_ir *m = import_ok(model.p, model.n, "sorting model");
  if (m) {
    const wq_graph *gr = m->graph;
    CHECK(gr->n_nodes == 5);
    const char *want[] = {"fancy_a", "mul_b", "relu_c", "Neg_3", "Relu_4"};
    for (int i = 0; i < 5 && i < gr->n_nodes; i++)
      CHECK_MSG(strcmp(gr->nodes[i].name, want[i]) == 0, "node %d is %s, want %s", i,
                gr->nodes[i].name, want[i]);
    CHECK(topologically_ordered(gr));
    CHECK(strcmp(gr->name, "main") == 0);
    const wq_node *fancy = &gr->nodes[0];
    CHECK(strcmp(fancy->domain, "com.example") == 0 && fancy->opset == 3);
    CHECK(fancy->n_outputs == 2 && fancy->outputs[1] == -1);
    const wq_node *mul = &gr->nodes[1];
    CHECK(strcmp(mul->domain, "") == 0 && mul->opset == 17);
    CHECK(mul->n_inputs == 2 && mul->inputs[0] == mul->inputs[1]);
    const wq_node *relu4 = &gr->nodes[4];
    CHECK(relu4->n_inputs == 2 && relu4->inputs[0] == -1 && relu4->inputs[1] >= 0);
    /* Inputs: declared shape with a symbolic dim. */
    CHECK(gr->n_inputs == 1);
    const wq_tensor *x = &gr->tensors[gr->inputs[0]];
    CHECK(strcmp(x->name, "x") == 0 && x->is_input && x->dtype == WQ_DT_FLOAT);
    const int64_t want_x[] = {-1, 4};
    CHECK(dims_are(x, 2, want_x) && x->dim_params[0] && strcmp(x->dim_params[0], "d0") == 0);
    CHECK(x->dim_params[1] == NULL);
    CHECK(gr->n_outputs == 3 && gr->tensors[gr->outputs[0]].is_output);
    /* value_info hint on b, ignored for an unused name (no tensor made). */
    const wq_tensor *b = find_tensor(gr, "b");
    CHECK(b && b->dtype == WQ_DT_FLOAT && dims_are(b, 2, db));
    CHECK(find_tensor(gr, "unused_name") == NULL);
    /* One tensor per distinct name: x a b c n o. */
    CHECK(gr->n_tensors == 6);
    CHECK(m->n_opsets == 2 && m->ir_version == 8 && strcmp(m->producer_name, "unit-test") == 0);
    wq_model_ir_free(m);
  }
  free(model.p);
}

/* Initializer TensorProtos in every typed-field form. */
static void test_tensor_forms(void) {
  buf g = {0};
  const int64_t d3[] = {3};
  /* fp16 via int32_data (bit patterns of 1.0, -2.0, 0.5). */
  {
    buf t = {0};
    f_packed(&t, 1, d3, 1);
    f_int(&t, 2, WQ_DT_FLOAT16);
    const int64_t h[] = {0x3c00, 0xc000, 0x3800};
    f_packed(&t, 5, h, 3);
    f_str(&t, 8, "half");
    f_msg(&g, 5, &t);
  }
  /* int4 [5] via int32_data, two per entry: 1,-2 | 3,-4 | 7. */
  {
    buf t = {0};
    const int64_t d5[] = {5};
    f_packed(&t, 1, d5, 1);
    f_int(&t, 2, WQ_DT_INT4);
    const int64_t packed[] = {0xe1, 0xc3, 0x07};
    f_packed(&t, 5, packed, 3);
    f_str(&t, 8, "nibbles");
    f_msg(&g, 5, &t);
  }
  /* uint2 [6] in raw_data: 2 bytes. */
  {
    buf t = {0};
    const int64_t d6[] = {2, 3};
    f_packed(&t, 1, d6, 2);
    f_int(&t, 2, WQ_DT_UINT2);
    f_str(&t, 8, "crumbs");
    const uint8_t raw[] = {0xe4, 0x0b};
    f_bytes(&t, 9, raw, 2);
    f_msg(&g, 5, &t);
  }
  /* bool via unpacked int32_data, uint32 via uint64_data, int64 unpacked,
   * double via double_data, an int8 scalar (rank 0). */
  {
    buf t = {0};
    f_packed(&t, 1, d3, 1);
    f_int(&t, 2, WQ_DT_BOOL);
    f_int(&t, 5, 1);
    f_int(&t, 5, 0);
    f_int(&t, 5, 5);
    f_str(&t, 8, "flags");
    f_msg(&g, 5, &t);
  }
  {
    buf t = {0};
    const int64_t d2[] = {2};
    f_packed(&t, 1, d2, 1);
    f_int(&t, 2, WQ_DT_UINT32);
    const int64_t u[] = {4000000000ll, 7};
    f_packed(&t, 11, u, 2);
    f_str(&t, 8, "big");
    f_msg(&g, 5, &t);
  }
  {
    buf t = {0};
    const int64_t d2[] = {2};
    f_packed(&t, 1, d2, 1);
    f_int(&t, 2, WQ_DT_INT64);
    f_int(&t, 7, -5);
    f_int(&t, 7, INT64_MIN);
    f_str(&t, 8, "longs");
    f_msg(&g, 5, &t);
  }
  {
    buf t = {0};
    f_int(&t, 2, WQ_DT_DOUBLE);
    const uint8_t one_and_half[] = {0, 0, 0, 0, 0, 0, 0xf8, 0x3f};
    f_bytes(&t, 10, one_and_half, 8);
    f_str(&t, 8, "dbl");
    f_msg(&g, 5, &t);
  }
  {
    buf t = {0};
    f_int(&t, 2, WQ_DT_INT8);
    f_int(&t, 5, -7);
    f_str(&t, 8, "scalar");
    f_msg(&g, 5, &t);
  }
  /* "dbl" is also listed as a graph input: it stays a constant. */
  value_info(&g, 11, "dbl", WQ_DT_DOUBLE, 0, NULL);
  const int64_t d1[] = {1};
  value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d1);
  const char *ins[] = {"x",   "half",  "nibbles", "crumbs", "flags",
                       "big", "longs", "dbl",     "scalar", NULL};
  const char *outs[] = {"y", NULL};
  node(&g, "Consume", ins, outs, "consume", "com.example", NULL);
  value_info(&g, 12, "y", WQ_DT_FLOAT, 1, d1);
  buf model = {0};
  finish_model(&model, &g, "com.example", 1);
  wq_model_ir *m = import_ok(model.p, model.n, "tensor forms");
  if (m) {
    const wq_graph *gr = m->graph;
    CHECK(gr->n_inputs == 1 && strcmp(gr->tensors[gr->inputs[0]].name, "x") == 0);
    CHECK(count_constants(gr) == 8);
    const wq_tensor *t = find_tensor(gr, "half");
    CHECK(t && t->dtype == WQ_DT_FLOAT16 && t->nbytes == 6);
    if (t) {
      const uint16_t *h = t->data;
      CHECK(h[0] == 0x3c00 && h[1] == 0xc000 && h[2] == 0x3800);
    }
    t = find_tensor(gr, "nibbles");
    CHECK(t && t->dtype == WQ_DT_INT4 && t->nbytes == 3 && t->rank == 1 && t->dims[0] == 5);
    if (t) {
      const uint8_t *p = t->data;
      CHECK(p[0] == 0xe1 && p[1] == 0xc3 && p[2] == 0x07);
    }
    t = find_tensor(gr, "crumbs");
    CHECK(t && t->dtype == WQ_DT_UINT2 && t->nbytes == 2 && ((uint8_t *)t->data)[0] == 0xe4);
    t = find_tensor(gr, "flags");
    CHECK(t && t->nbytes == 3);
    if (t) {
      const uint8_t *p = t->data;
      CHECK(p[0] == 1 && p[1] == 0 && p[2] == 1);
    }
    t = find_tensor(gr, "big");
    CHECK(t && t->nbytes == 8);
    if (t) {
      const uint32_t *p = t->data;
      CHECK(p[0] == 4000000000u && p[1] == 7);
    }
    t = find_tensor(gr, "longs");
    CHECK(t && t->nbytes == 16);
    if (t) {
      const int64_t *p = t->data;
      CHECK(p[0] == -5 && p[1] == INT64_MIN);
    }
    t = find_tensor(gr, "dbl");
    CHECK(t && t->is_constant && !t->is_input && t->rank == 0 && t->nbytes == 8);
    if (t)
      CHECK(*(const double *)t->data == 1.5);
    t = find_tensor(gr, "scalar");
    CHECK(t && t->rank == 0 && t->nbytes == 1 && *(const int8_t *)t->data == -7);
    wq_model_ir_free(m);
  }
  free(model.p);
}

/* Attributes of every kind, including a subgraph that reads an outer tensor
 * produced by a node listed after the If: the If must be sorted after it. */
static void test_attributes_and_subgraphs(void) {
  buf attrs = {0};
  {
    buf a = {0};
    f_str(&a, 1, "alpha");
    f_float(&a, 2, 0.5f);
    f_int(&a, 20, 1);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "axes");
    const int64_t ax[] = {0, -1};
    f_packed(&a, 8, ax, 2); /* packed */
    f_int(&a, 8, 3);        /* plus one unpacked */
    f_int(&a, 20, 7);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "mode");
    f_str(&a, 4, "nearest");
    f_int(&a, 20, 3);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "names");
    f_str(&a, 9, "p");
    f_str(&a, 9, "qq");
    f_int(&a, 20, 8);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "scales");
    f_float(&a, 7, 1.0f);
    f_float(&a, 7, 2.0f);
    f_int(&a, 20, 6);
    f_msg(&attrs, 5, &a);
    buf t = {0};
    f_int(&t, 2, WQ_DT_FLOAT);
    f_float(&t, 4, 3.25f);
    f_msg(&a, 5, &t);
    f_str(&a, 1, "value");
    f_int(&a, 20, 4);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "legacy_int"); /* no type field (IR v1 style) */
    f_int(&a, 3, 9);
    f_msg(&attrs, 5, &a);
  }
  buf then_g = {0}, else_g = {0};
  {
    const char *in[] = {"w", NULL}, *out[] = {"t", NULL};
    node(&then_g, "Relu", in, out, "inner_relu", NULL, NULL);
    value_info(&then_g, 12, "t", WQ_DT_FLOAT, -1, NULL);
    const char *in2[] = {"x", NULL}, *out2[] = {"e", NULL};
    node(&else_g, "Neg", in2, out2, "inner_neg", NULL, NULL);
    value_info(&else_g, 12, "e", WQ_DT_FLOAT, -1, NULL);
    buf a = {0};
    f_str(&a, 1, "then_branch");
    f_msg(&a, 6, &then_g);
    f_int(&a, 20, 5);
    f_msg(&attrs, 5, &a);
    f_str(&a, 1, "else_branch");
    f_msg(&a, 6, &else_g);
    f_int(&a, 20, 5);
    f_msg(&attrs, 5, &a);
  }
  buf g = {0};
  const char *if_in[] = {"cond", NULL}, *if_out[] = {"y", NULL};
  node(&g, "If", if_in, if_out, "the_if", NULL, &attrs);
  const char *w_in[] = {"x", NULL}, *w_out[] = {"w", NULL};
  node(&g, "Abs", w_in, w_out, "make_w", NULL, NULL);
  const int64_t d2[] = {2};
  value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d2);
  value_info(&g, 11, "cond", WQ_DT_BOOL, 0, NULL);
  value_info(&g, 12, "y", WQ_DT_FLOAT, -1, NULL);
  buf model = {0};
  finish_model(&model, &g, NULL, 0);
  wq_model_ir *m = import_ok(model.p, model.n, "attributes model");
  if (m) {
    const wq_graph *gr = m->graph;
    CHECK(gr->n_nodes == 2);
    CHECK(strcmp(gr->nodes[0].name, "make_w") == 0 && strcmp(gr->nodes[1].name, "the_if") == 0);
    const wq_node *n = &gr->nodes[1];
    float f;
    int64_t i;
    const char *s;
    const int64_t *ints;
    const float *floats;
    size_t count;
    wq_error err;
    CHECK(wq_attr_float(n, "alpha", 0, &f, &err) == WQ_OK && f == 0.5f);
    CHECK(wq_attr_ints(n, "axes", &ints, &count, &err) == WQ_OK && count == 3);
    if (count == 3)
      CHECK(ints[0] == 0 && ints[1] == -1 && ints[2] == 3);
    CHECK(wq_attr_string(n, "mode", "", &s, &err) == WQ_OK && strcmp(s, "nearest") == 0);
    CHECK(wq_attr_floats(n, "scales", &floats, &count, &err) == WQ_OK && count == 2);
    CHECK(wq_attr_int(n, "legacy_int", 0, &i, &err) == WQ_OK && i == 9);
    const wq_attr *names = wq_node_attr(n, "names");
    CHECK(names && names->type == WQ_ATTR_STRINGS && names->count == 2 &&
          strcmp(names->strings[1], "qq") == 0);
    const wq_attr *value = wq_node_attr(n, "value");
    CHECK(value && value->type == WQ_ATTR_TENSOR && value->t && value->t->rank == 0 &&
          *(const float *)value->t->data == 3.25f);
    const wq_attr *then_a = wq_node_attr(n, "then_branch");
    CHECK(then_a && then_a->type == WQ_ATTR_GRAPH && then_a->g && then_a->g->n_nodes == 1);
    if (then_a && then_a->g) {
      const wq_graph *sub = then_a->g;
      CHECK(strcmp(sub->nodes[0].name, "inner_relu") == 0 && sub->nodes[0].opset == 17);
      /* The outer-scope value w is bound to the If's input 1 (ir/subgraph.h). */
      const wq_tensor *w = find_tensor(sub, "w");
      CHECK(w && !w->is_constant && !w->is_input);
      CHECK(sub->n_outputs == 1 && sub->n_inputs == 1 && w && sub->inputs[0] == w - sub->tensors);
      CHECK(n->n_inputs == 3 && strcmp(gr->tensors[n->inputs[1]].name, "w") == 0 &&
            strcmp(gr->tensors[n->inputs[2]].name, "x") == 0); /* x: the else branch's */
    }
    wq_model_ir_free(m);
  }
  free(model.p);
}

/* Hand-built invalid models beyond the corpus. */
static void expect_fail(buf *graph, wq_status want, const char *substring, const char *node_name) {
  buf model = {0};
  finish_model(&model, graph, NULL, 0);
  wq_model_ir *m = (wq_model_ir *)&model; /* poisoned: must come back NULL */
  wq_error err;
  wq_status st = wq_onnx_import(model.p, model.n, &m, &err);
  CHECK_MSG(st == want, "want %s, got %s: %s", wq_status_name(want), wq_status_name(st),
            err.message);
  CHECK(m == NULL);
  CHECK_MSG(strstr(err.message, substring) != NULL, "message '%s' lacks '%s'", err.message,
            substring);
  if (node_name)
    CHECK_MSG(strcmp(err.node, node_name) == 0, "err.node '%s', want '%s'", err.node, node_name);
  free(model.p);
}

static void test_invalid_graphs(void) {
  const int64_t d2[] = {2};
  const char *x[] = {"x", NULL}, *y[] = {"y", NULL};
  {
    buf g = {0}; /* self loop */
    const char *in[] = {"x", "z", NULL}, *out[] = {"z", NULL};
    node(&g, "Add", in, out, "loop", NULL, NULL);
    value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d2);
    value_info(&g, 12, "z", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_INVALID_MODEL, "cycle through node 'loop'", "loop");
  }
  {
    buf g = {0}; /* a node writing a graph input */
    node(&g, "Relu", y, x, "clobber", NULL, NULL);
    value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d2);
    value_info(&g, 11, "y", WQ_DT_FLOAT, 1, d2);
    value_info(&g, 12, "x", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_INVALID_MODEL, "is a graph input", "clobber");
  }
  {
    buf g = {0}; /* ref_attr_name */
    buf a = {0}, attrs = {0};
    f_str(&a, 1, "alpha");
    f_str(&a, 21, "outer_alpha");
    f_int(&a, 20, 1);
    f_msg(&attrs, 5, &a);
    node(&g, "Elu", x, y, "elu", NULL, &attrs);
    value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d2);
    value_info(&g, 12, "y", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_UNSUPPORTED, "ref_attr_name", "elu");
  }
  {
    buf g = {0}; /* an attribute tensor with a bad length names node and attribute */
    buf a = {0}, attrs = {0}, t = {0};
    f_packed(&t, 1, d2, 1);
    f_int(&t, 2, WQ_DT_FLOAT);
    f_float(&t, 4, 1.0f);
    f_str(&a, 1, "value");
    f_msg(&a, 5, &t);
    f_int(&a, 20, 4);
    f_msg(&attrs, 5, &a);
    node(&g, "Constant", NULL, y, "const", NULL, &attrs);
    value_info(&g, 12, "y", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_INVALID_MODEL,
                "attribute 'value': unnamed attribute tensor: float_data "
                "has 1 values but shape [2] of float needs 2",
                "const");
  }
  {
    buf g = {0}; /* a float tensor storing int64_data */
    buf t = {0};
    f_packed(&t, 1, d2, 1);
    f_int(&t, 2, WQ_DT_FLOAT);
    f_packed(&t, 7, d2, 1);
    f_str(&t, 8, "mixed");
    f_msg(&g, 5, &t);
    value_info(&g, 12, "mixed", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_INVALID_MODEL, "stores values in int64_data", NULL);
  }
  {
    buf g = {0}; /* duplicate initializer */
    for (int i = 0; i < 2; i++) {
      buf t = {0};
      f_int(&t, 2, WQ_DT_FLOAT);
      f_float(&t, 4, 1.0f);
      f_str(&t, 8, "dup");
      f_msg(&g, 5, &t);
    }
    value_info(&g, 12, "dup", WQ_DT_FLOAT, 0, NULL);
    expect_fail(&g, WQ_ERR_INVALID_MODEL, "initializer 'dup' is defined twice", NULL);
  }
  {
    buf g = {0}; /* a subgraph reading a name defined nowhere */
    buf sub = {0}, a = {0}, attrs = {0};
    const char *in[] = {"ghost", NULL}, *out[] = {"t", NULL};
    node(&sub, "Relu", in, out, "inner", NULL, NULL);
    value_info(&sub, 12, "t", WQ_DT_FLOAT, -1, NULL);
    f_str(&a, 1, "body");
    f_msg(&a, 6, &sub);
    f_int(&a, 20, 5);
    f_msg(&attrs, 5, &a);
    node(&g, "Wrap", x, y, "wrap", "", &attrs);
    value_info(&g, 11, "x", WQ_DT_FLOAT, 1, d2);
    value_info(&g, 12, "y", WQ_DT_FLOAT, 1, d2);
    expect_fail(&g, WQ_ERR_INVALID_MODEL, "reads tensor 'ghost'", "inner");
  }
}

static void test_tensor_decode_api(void) {
  wq_error err;
  wq_value v;
  char name[64];
  buf t = {0};
  const int64_t d[] = {2, 2};
  f_packed(&t, 1, d, 2);
  f_int(&t, 2, WQ_DT_INT32);
  const int64_t vals[] = {1, -1, 70000, 0};
  f_packed(&t, 5, vals, 4);
  f_str(&t, 8, "ints");
  CHECK(wq_tensor_decode(t.p, t.n, &v, name, sizeof name, &err) == WQ_OK);
  CHECK(strcmp(name, "ints") == 0 && v.dtype == WQ_DT_INT32 && v.rank == 2 && v.dims[1] == 2);
  CHECK(((int32_t *)v.data)[2] == 70000 && ((int32_t *)v.data)[1] == -1);
  free(v.data);
  free(t.p);

  buf h = {0};
  f_packed(&h, 1, d, 1);
  f_int(&h, 2, WQ_DT_BFLOAT16);
  f_bytes(&h, 9, "abcd", 4);
  CHECK(wq_tensor_decode(h.p, h.n, &v, NULL, 0, &err) == WQ_ERR_UNSUPPORTED);
  CHECK(strstr(err.message, "dtype bfloat16 is not supported") != NULL && v.data == NULL);
  free(h.p);

  const uint8_t junk[] = {0x0a, 0xff};
  CHECK(wq_tensor_decode(junk, sizeof junk, &v, name, sizeof name, &err) == WQ_ERR_PARSE);
  CHECK(v.data == NULL);
}

/* ---- shared models and conformance cases --------------------------------- */

typedef struct {
  int models;
  int tensors_decoded;
  int tensors_unsupported;
} shared_stats;

/* Decodes every {input,output}_K.pb of the data-set directories named
 * set_prefix* and checks each against the graph's K-th input or output. */
static void check_data_sets(const char *dir, const char *set_prefix, const wq_graph *g,
                            shared_stats *stats) {
  int n_sets;
  char **sets = list_dir(dir, set_prefix, &n_sets);
  for (int s = 0; s < n_sets; s++) {
    char set_dir[1400];
    snprintf(set_dir, sizeof set_dir, "%s/%s", dir, sets[s]);
    int n_files;
    char **files = list_dir(set_dir, "", &n_files);
    for (int f = 0; f < n_files; f++) {
      if (!ends_with(files[f], ".pb"))
        continue;
      char path[1800];
      snprintf(path, sizeof path, "%s/%s", set_dir, files[f]);
      size_t n;
      unsigned char *bytes = wq_test_read_file(path, &n);
      bool is_input = strncmp(files[f], "input_", 6) == 0;
      int k = atoi(files[f] + (is_input ? 6 : 7));
      const wq_tensor *decl = NULL;
      if (is_input && k < g->n_inputs)
        decl = &g->tensors[g->inputs[k]];
      else if (!is_input && k < g->n_outputs)
        decl = &g->tensors[g->outputs[k]];
      CHECK_MSG(decl != NULL, "%s: no graph %s #%d", path, is_input ? "input" : "output", k);

      /* The raw form: size must match the shape for every dtype. */
      wq_pb_reader r;
      wq_pb_init(&r, bytes, n, "TensorProto");
      wq_tensor t;
      wq_error err;
      wq_status st = wq_onnx_read_tensor(&r, "tensor", &t, &err);
      CHECK_MSG(st == WQ_OK, "%s: %s", path, err.message);
      if (st == WQ_OK) {
        int64_t numel = 1;
        for (int i = 0; i < t.rank; i++)
          numel *= t.dims[i];
        CHECK_MSG(t.nbytes == wq_onnx_storage_bytes(t.dtype, numel), "%s: %zu bytes", path,
                  t.nbytes);
        if (decl) {
          CHECK_MSG(t.dtype == decl->dtype, "%s: dtype %s, declared %s", path,
                    wq_dtype_name(t.dtype), wq_dtype_name(decl->dtype));
          if (decl->rank >= 0) {
            CHECK_MSG(t.rank == decl->rank, "%s: rank %d, declared %d", path, t.rank, decl->rank);
            for (int i = 0; i < t.rank && i < decl->rank; i++)
              CHECK_MSG(decl->dims[i] < 0 || decl->dims[i] == t.dims[i],
                        "%s: dim %d is %lld, declared %lld", path, i, (long long)t.dims[i],
                        (long long)decl->dims[i]);
          }
        }
      }

      /* The public API: executable dtypes decode, the rest are skipped. */
      wq_value v;
      char name[128];
      wq_status dst = wq_tensor_decode(bytes, n, &v, name, sizeof name, &err);
      if (st == WQ_OK && wq_dtype_supported(t.dtype)) {
        CHECK_MSG(dst == WQ_OK, "%s: %s", path, err.message);
        CHECK(dst != WQ_OK || (v.rank == t.rank && v.dtype == t.dtype && v.data != NULL &&
                               memcmp(v.data, t.data, t.nbytes) == 0));
        CHECK(strcmp(name, t.name) == 0);
        stats->tensors_decoded++;
      } else if (st == WQ_OK) {
        char want[96];
        snprintf(want, sizeof want, "dtype %s is not supported", wq_dtype_name(t.dtype));
        CHECK_MSG(dst == WQ_ERR_UNSUPPORTED && strstr(err.message, want), "%s: %s", path,
                  err.message);
        stats->tensors_unsupported++;
      }
      if (dst == WQ_OK)
        free(v.data);
      if (st == WQ_OK)
        wq_tensor_clear(&t);
      free(bytes);
    }
    free_list(files, n_files);
  }
  free_list(sets, n_sets);
}

static void test_conformance_cases(const char *shared, shared_stats *stats) {
  char root[1024];
  snprintf(root, sizeof root, "%s/onnx-node-tests", shared);
  int n_cases;
  char **cases = list_dir(root, "test_", &n_cases);
  CHECK_MSG(n_cases >= 190, "only %d conformance cases under %s", n_cases, root);
  int imported = 0;
  for (int c = 0; c < n_cases; c++) {
    char dir[1400], path[1500];
    snprintf(dir, sizeof dir, "%s/%s", root, cases[c]);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    size_t n;
    unsigned char *bytes = wq_test_read_file(path, &n);
    CHECK_MSG(bytes != NULL, "cannot read %s", path);
    wq_model_ir *m = bytes ? import_ok(bytes, n, path) : NULL;
    if (m) {
      imported++;
      CHECK_MSG(topologically_ordered(m->graph), "%s not in order", path);
      check_data_sets(dir, "test_data_set_", m->graph, stats);
      const wq_graph *g = m->graph;
      if (strcmp(cases[c], "test_add") == 0) {
        const int64_t d[] = {3, 4, 5};
        CHECK(g->n_inputs == 2 && g->n_outputs == 1 && g->n_nodes == 1);
        CHECK(strcmp(g->tensors[g->inputs[0]].name, "x") == 0 &&
              strcmp(g->tensors[g->inputs[1]].name, "y") == 0);
        CHECK(strcmp(g->tensors[g->outputs[0]].name, "sum") == 0);
        CHECK(dims_are(&g->tensors[g->inputs[1]], 3, d) &&
              dims_are(&g->tensors[g->outputs[0]], 3, d));
        CHECK(strcmp(g->nodes[0].op_type, "Add") == 0 && g->nodes[0].opset == 14);
      }
      if (strcmp(cases[c], "test_maxpool_with_argmax_2d_precomputed_pads") == 0) {
        const int64_t d[] = {1, 1, 5, 5};
        CHECK(g->n_outputs == 2 && g->tensors[g->outputs[1]].dtype == WQ_DT_INT64);
        CHECK(strcmp(g->tensors[g->outputs[1]].name, "z") == 0);
        CHECK(dims_are(&g->tensors[g->outputs[1]], 4, d));
        const int64_t *pads;
        size_t count;
        wq_error err;
        CHECK(wq_attr_ints(&g->nodes[0], "pads", &pads, &count, &err) == WQ_OK && count == 4 &&
              pads[0] == 2);
      }
      if (strcmp(cases[c], "test_dequantizelinear_int4") == 0) {
        CHECK(g->tensors[g->inputs[0]].dtype == WQ_DT_INT4 && g->nodes[0].opset == 25);
      }
      wq_model_ir_free(m);
    }
    free(bytes);
  }
  printf("conformance: %d/%d models imported\n", imported, n_cases);
  stats->models += imported;
  free_list(cases, n_cases);
}

typedef struct {
  const char *op;
  int count;
} op_count;

static void check_histogram(const wq_graph *g, const op_count *ops, int n, const char *what) {
  int total = 0;
  for (int i = 0; i < n; i++) {
    CHECK_MSG(count_ops(g, ops[i].op) == ops[i].count, "%s: %s x%d, want %d", what, ops[i].op,
              count_ops(g, ops[i].op), ops[i].count);
    total += ops[i].count;
  }
  CHECK_MSG(g->n_nodes == total, "%s: %d nodes, want %d", what, g->n_nodes, total);
}

static wq_model_ir *import_shared(const char *shared, const char *rel) {
  char path[1400];
  snprintf(path, sizeof path, "%s/models/%s", shared, rel);
  size_t n;
  unsigned char *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  wq_model_ir *m = bytes ? import_ok(bytes, n, path) : NULL;
  free(bytes);
  return m;
}

/* Facts from each model's SOURCE.md. */
static void test_model_facts(const char *shared) {
  wq_model_ir *m = import_shared(shared, "mnist-8/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    CHECK(strcmp(m->producer_name, "CNTK") == 0 && m->n_opsets == 1 && m->opsets[0].version == 8);
    CHECK(g->n_inputs == 1 && g->n_outputs == 1 && count_constants(g) == 8);
    const wq_tensor *in = &g->tensors[g->inputs[0]];
    const int64_t din[] = {1, 1, 28, 28}, dout[] = {1, 10};
    CHECK(strcmp(in->name, "Input3") == 0 && in->dtype == WQ_DT_FLOAT && dims_are(in, 4, din));
    const wq_tensor *out = &g->tensors[g->outputs[0]];
    CHECK(strcmp(out->name, "Plus214_Output_0") == 0 && dims_are(out, 2, dout));
    const op_count ops[] = {{"Add", 3},     {"Conv", 2}, {"MatMul", 1},
                            {"MaxPool", 2}, {"Relu", 2}, {"Reshape", 2}};
    check_histogram(g, ops, 6, "mnist-8");
    /* Values read from float_data / int64_data (this exporter's forms). */
    const wq_tensor *bias = find_tensor(g, "Parameter194");
    CHECK(bias && bias->is_constant && bias->nbytes == 40);
    if (bias) {
      CHECK(((const float *)bias->data)[0] == -0.04485602676868439f);
      CHECK(((const float *)bias->data)[9] == -0.05454041436314583f);
    }
    const wq_tensor *shape = find_tensor(g, "Pooling160_Output_0_reshape0_shape");
    CHECK(shape && shape->dtype == WQ_DT_INT64 && shape->nbytes == 16);
    if (shape)
      CHECK(((const int64_t *)shape->data)[0] == 1 && ((const int64_t *)shape->data)[1] == 256);
    const wq_tensor *w = find_tensor(g, "Parameter193");
    const int64_t dw[] = {16, 4, 4, 10};
    CHECK(w && dims_are(w, 4, dw) && w->nbytes == 16 * 4 * 4 * 10 * 4);
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "mnist-8-dynamic-int8/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    CHECK(strcmp(m->producer_name, "onnx.quantize") == 0 && m->opsets[0].version == 10);
    CHECK(count_constants(g) == 20 && g->n_inputs == 1);
    const op_count ops[] = {
        {"Add", 3}, {"Cast", 3},           {"ConvInteger", 2}, {"MatMulInteger", 1}, {"MaxPool", 2},
        {"Mul", 6}, {"QuantizeLinear", 4}, {"Relu", 2},        {"Reshape", 2}};
    check_histogram(g, ops, 9, "mnist-8-dynamic-int8");
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "super-resolution-10/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    CHECK(m->opsets[0].version == 10 && count_constants(g) == 8 && g->n_inputs == 1);
    const wq_tensor *in = &g->tensors[g->inputs[0]];
    const int64_t din[] = {-1, 1, 224, 224};
    CHECK(strcmp(in->name, "input") == 0 && dims_are(in, 4, din));
    CHECK(in->dim_params[0] && strcmp(in->dim_params[0], "batch_size") == 0);
    const wq_tensor *out = &g->tensors[g->outputs[0]];
    const int64_t dout[] = {-1, 1, 672, 672};
    CHECK(strcmp(out->name, "output") == 0 && dims_are(out, 4, dout));
    const op_count ops[] = {
        {"Constant", 2}, {"Conv", 4}, {"Relu", 3}, {"Reshape", 2}, {"Transpose", 1}};
    check_histogram(g, ops, 5, "super-resolution-10");
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "teams-segmentation-msra190729/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    /* Initializers are also listed as graph inputs here: they stay constants. */
    CHECK(m->opsets[0].version == 11 && count_constants(g) == 140 && g->n_inputs == 1);
    const wq_tensor *in = &g->tensors[g->inputs[0]];
    CHECK(strcmp(in->name, "bgrm") == 0 && in->rank == 4 && in->dims[1] == 4);
    CHECK(in->dim_params[2] && strcmp(in->dim_params[2], "height") == 0);
    CHECK(in->dim_params[3] && strcmp(in->dim_params[3], "width") == 0);
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "mask") == 0);
    const op_count ops[] = {{"Add", 10},  {"Concat", 2}, {"Conv", 49},
                            {"Relu", 35}, {"Resize", 3}, {"Sigmoid", 1}};
    check_histogram(g, ops, 6, "teams");
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "ppocr-mobile-v2-cls/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    CHECK(m->opsets[0].version == 9 && count_constants(g) == 0);
    const wq_tensor *in = &g->tensors[g->inputs[0]];
    CHECK(strcmp(in->name, "x") == 0 && in->dims[1] == 3 && in->dims[0] == -1);
    CHECK(in->dim_params[0] && strcmp(in->dim_params[0], "p2o.DynamicDimension.0") == 0);
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "softmax_0.tmp_0") == 0);
    const op_count ops[] = {{"Add", 26},
                            {"BatchNormalization", 35},
                            {"Cast", 3},
                            {"Clip", 18},
                            {"Concat", 1},
                            {"Constant", 250},
                            {"Conv", 53},
                            {"Div", 18},
                            {"GlobalAveragePool", 10},
                            {"HardSigmoid", 9},
                            {"MatMul", 1},
                            {"MaxPool", 1},
                            {"Mul", 27},
                            {"Relu", 15},
                            {"Reshape", 1},
                            {"Shape", 1},
                            {"Slice", 1},
                            {"Softmax", 1}};
    check_histogram(g, ops, 18, "ppocr");
    CHECK(topologically_ordered(g));
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "openwakeword-hello-deepa-mlp/model.onnx");
  if (m) {
    const wq_graph *g = m->graph;
    CHECK(m->opsets[0].version == 13 && count_constants(g) == 10);
    const wq_tensor *in = &g->tensors[g->inputs[0]];
    const int64_t din[] = {1, 25, 96}, dout[] = {1, 1};
    CHECK(strcmp(in->name, "onnx::Flatten_0") == 0 && dims_are(in, 3, din));
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "39") == 0 &&
          dims_are(&g->tensors[g->outputs[0]], 2, dout));
    const op_count ops[] = {{"Add", 4},  {"Constant", 4}, {"Div", 2},  {"Flatten", 1},
                            {"Gemm", 3}, {"Mul", 2},      {"Pow", 2},  {"ReduceMean", 4},
                            {"Relu", 2}, {"Sigmoid", 1},  {"Sqrt", 2}, {"Sub", 2}};
    check_histogram(g, ops, 12, "openwakeword");
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "pytorch-super-resolution-depthtospace/model.onnx");
  if (m) {
    const op_count ops[] = {{"Conv", 4}, {"DepthToSpace", 1}, {"Relu", 3}};
    check_histogram(m->graph, ops, 3, "sr-depthtospace");
    CHECK(m->opsets[0].version == 15 && count_constants(m->graph) == 8);
    wq_model_ir_free(m);
  }

  m = import_shared(shared, "synthetic/matmul_256x256x256_f32.onnx");
  if (m) {
    const wq_tensor *w = find_tensor(m->graph, "W");
    const int64_t dw[] = {256, 256};
    CHECK(w && w->is_constant && dims_are(w, 2, dw) && w->nbytes == 256 * 256 * 4);
    wq_model_ir_free(m);
  }
}

/* Every model under models/, recursively, with its data sets. */
static void import_tree(const char *dir, shared_stats *stats) {
  int n;
  char **names = list_dir(dir, "", &n);
  for (int i = 0; i < n; i++) {
    char path[1600];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (is_dir(path)) {
      import_tree(path, stats);
    } else if (ends_with(names[i], ".onnx")) {
      size_t len;
      unsigned char *bytes = wq_test_read_file(path, &len);
      wq_model_ir *m = import_ok(bytes, len, path);
      if (m) {
        stats->models++;
        CHECK_MSG(topologically_ordered(m->graph), "%s not in order", path);
        if (strcmp(names[i], "model.onnx") == 0) {
          check_data_sets(dir, "test_data_set_", m->graph, stats);
          check_data_sets(dir, "float_reference_data_set_", m->graph, stats);
        }
        wq_model_ir_free(m);
      }
      free(bytes);
    }
  }
  free_list(names, n);
}

/* ---- robustness --------------------------------------------------------------- */

/* Import must either succeed or fail with a message and no model. */
static int try_import(const unsigned char *bytes, size_t n) {
  wq_model_ir *m = (wq_model_ir *)(uintptr_t)1;
  wq_error err;
  wq_status st = wq_onnx_import(bytes, n, &m, &err);
  if (st == WQ_OK) {
    CHECK(m != NULL);
    wq_model_ir_free(m);
    return 1;
  }
  CHECK(m == NULL);
  CHECK(err.code == st && err.message[0] != '\0');
  return 0;
}

static void test_prefixes(const char *shared) {
  char path[1400];
  snprintf(path, sizeof path, "%s/models/mnist-8/model.onnx", shared);
  size_t n;
  unsigned char *bytes = wq_test_read_file(path, &n);
  if (!bytes)
    return;
  int ok = 0;
  /* Every prefix; only the whole file is a complete model. */
  for (size_t len = 0; len <= n; len++) {
    unsigned char *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    memcpy(copy, bytes, len);
    ok += try_import(copy, len);
    free(copy);
  }
  CHECK_MSG(ok >= 1, "no prefix of mnist-8 imported");
  printf("mnist-8: %zu prefixes, %d import\n", n + 1, ok);

  /* Every prefix of the GraphProto re-wrapped with a correct length, so the
   * truncation lands inside nodes, attributes and tensors instead. */
  wq_pb_reader r0;
  wq_pb_init(&r0, bytes, n, "ModelProto");
  const uint8_t *graph = NULL, *graph_end = NULL, *graph_tag = NULL;
  while (!wq_pb_at_end(&r0)) {
    wq_pb_field f;
    wq_error err;
    const uint8_t *p, *tag = r0.pos;
    size_t len;
    if (wq_pb_next_field(&r0, &f, &err) != WQ_OK)
      break;
    if (f.number == 7 && wq_pb_get_bytes(&r0, &f, "graph", &p, &len, &err) == WQ_OK) {
      graph_tag = tag;
      graph = p;
      graph_end = p + len;
    } else if (wq_pb_skip(&r0, &f, &err) != WQ_OK) {
      break;
    }
  }
  CHECK(graph != NULL);
  int inner_ok = 0, inner = 0;
  for (const uint8_t *cut = graph; graph && cut <= graph_end; cut++, inner++) {
    buf b = {0};
    b_put(&b, bytes, (size_t)(graph_tag - bytes));
    f_bytes(&b, 7, graph, (size_t)(cut - graph));
    b_put(&b, graph_end, (size_t)(bytes + n - graph_end));
    unsigned char *copy = malloc(b.n); /* exact size: ASan sees overreads */
    memcpy(copy, b.p, b.n);
    inner_ok += try_import(copy, b.n);
    free(copy);
    free(b.p);
  }
  printf("mnist-8: %d graph prefixes, %d import\n", inner, inner_ok);
  free(bytes);

  snprintf(path, sizeof path, "%s/models/teams-segmentation-msra190729/model.onnx", shared);
  bytes = wq_test_read_file(path, &n);
  if (!bytes)
    return;
  rng r = {12345};
  for (int i = 0; i < 300; i++) {
    size_t len = (size_t)(((uint64_t)rng_next(&r) << 16 ^ rng_next(&r)) % n);
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, bytes, len);
    try_import(copy, len);
    free(copy);
  }
  free(bytes);
}

static void test_random_buffers(void) {
  rng r = {20261122};
  int ok = 0;
  for (int i = 0; i < 2000; i++) {
    size_t len = rng_next(&r) % 700;
    unsigned char *b = malloc(len ? len : 1);
    for (size_t k = 0; k < len; k++)
      b[k] = (unsigned char)rng_next(&r);
    /* Half of them start like a model with a graph, to get past the first tag. */
    if (i % 2 && len > 4) {
      b[0] = 0x3a; /* field 7, length-delimited */
      b[1] = (unsigned char)(len - 2 < 127 ? len - 2 : 127);
      b[2] = 0x0a; /* GraphProto.node */
    }
    ok += try_import(b, len);
    free(b);
  }
  printf("random buffers: 2000 tried, %d import\n", ok);
}

static void test_byte_flips(const char *shared) {
  const char *rels[] = {"models/mnist-8/model.onnx",
                        "onnx-node-tests/test_gemm_all_attributes/model.onnx",
                        "onnx-node-tests/test_resize_upsample_scales_nearest/model.onnx",
                        "onnx-node-tests/test_maxpool_2d_pads/model.onnx"};
  const int rounds[] = {800, 400, 400, 400};
  rng r = {777};
  int total = 0, ok = 0;
  for (int f = 0; f < 4; f++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", shared, rels[f]);
    size_t n;
    unsigned char *orig = wq_test_read_file(path, &n);
    CHECK_MSG(orig != NULL, "cannot read %s", path);
    if (!orig)
      continue;
    unsigned char *b = malloc(n);
    for (int i = 0; i < rounds[f]; i++) {
      memcpy(b, orig, n);
      int flips = 1 + (int)(rng_next(&r) % 4);
      for (int k = 0; k < flips; k++) {
        size_t pos = rng_next(&r) % n;
        /* mnist-8 is mostly weights: aim most flips at its first 2 KB of structure. */
        if (f == 0 && k % 2 == 0)
          pos %= 2048;
        b[pos] = (unsigned char)rng_next(&r);
      }
      ok += try_import(b, n);
      total++;
    }
    free(b);
    free(orig);
  }
  printf("byte flips: %d tried, %d import\n", total, ok);
}

int main(void) {
  clock_t t0 = clock();
  test_pb_primitives();
  test_pb_repeated();
  test_pb_depth();
  test_sorting_naming_and_domains();
  test_tensor_forms();
  test_attributes_and_subgraphs();
  test_invalid_graphs();
  test_tensor_decode_api();

  const char *shared = getenv("WQ_SHARED_DIR");
  if (!shared)
    shared = "../shared";
  shared_stats stats = {0, 0, 0};
  test_conformance_cases(shared, &stats);
  char models[1024];
  snprintf(models, sizeof models, "%s/models", shared);
  int before = stats.models;
  import_tree(models, &stats);
  CHECK_MSG(stats.models - before >= 17, "only %d shared models imported", stats.models - before);
  printf("models imported: %d; data tensors decoded: %d, skipped (dtype): %d\n", stats.models,
         stats.tensors_decoded, stats.tensors_unsupported);
  CHECK(stats.tensors_decoded >= 380);
  test_model_facts(shared);

  test_prefixes(shared);
  test_random_buffers();
  test_byte_flips(shared);
  printf("time: %.1f s\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
  WQ_TEST_END();
}
