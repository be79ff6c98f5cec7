/* Dynamic int8 (onnxruntime's quantize_dynamic forms) lowered onto
 * QGemmToFloat with a float x: hand-built graphs of the three forms (DynamicQuantizeLinear
 * -> MatMulInteger -> Cast -> Mul -> Add -> Relu, MatMulIntegerToFloat,
 * DynamicQuantizeMatMul) with int8/uint8 weights, per-tensor and
 * per-column parameters, zero and non-zero weight zero points and odd
 * shapes. Each must lower to one QGemmToFloat and give, bit for bit, what
 * this file computes by ONNX's definitions and what the graph gives run op
 * by op (no lowering). */
#include <math.h>
#include <string.h>

#include "api/wasmq.h"
#include "ir/graph.h"
#include "onnx/onnx_export.h"
#include "wq_test.h"

enum { FORM_INTEGER, FORM_TO_FLOAT, FORM_FUSED };

typedef struct {
  int form;
  wq_dtype w_dtype;
  bool per_column, w_zp, bias, relu;
  int rank;
  int64_t x_dims[3];
  int64_t N;
} dyn_case;

static int tensor(wq_graph *g, const char *name, wq_dtype dt, int rank, const int64_t *dims,
                  const void *data, size_t nbytes) {
  int t = wq_graph_add_tensor(g, name);
  wq_tensor *tt = &g->tensors[t];
  tt->dtype = dt;
  tt->rank = rank;
  for (int d = 0; d < rank; d++)
    tt->dims[d] = dims[d];
  if (data) {
    tt->data = malloc(nbytes ? nbytes : 1);
    memcpy(tt->data, data, nbytes);
    tt->nbytes = nbytes;
    tt->is_constant = true;
  }
  return t;
}

static void node(wq_graph *g, const char *name, const char *domain, const char *op, const int *in,
                 int n_in, const int *out, int n_out, int64_t to) {
  wq_node *n = wq_graph_add_node(g);
  n->name = wq_strdup(name);
  n->op_type = wq_strdup(op);
  n->domain = wq_strdup(domain);
  n->inputs = malloc(sizeof(int) * (size_t)n_in);
  memcpy(n->inputs, in, sizeof(int) * (size_t)n_in);
  n->n_inputs = n_in;
  n->outputs = malloc(sizeof(int) * (size_t)n_out);
  memcpy(n->outputs, out, sizeof(int) * (size_t)n_out);
  n->n_outputs = n_out;
  n->attrs = calloc(1, sizeof(wq_attr));
  if (to) {
    n->attrs[0].name = wq_strdup("to");
    n->attrs[0].type = WQ_ATTR_INT;
    n->attrs[0].i = to;
    n->n_attrs = 1;
  }
}

static uint32_t next(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* The case's weights and parameters (the graph and the reference share them). */
typedef struct {
  int64_t K, N;
  uint8_t w[64 * 64];
  float w_scale[64], bias[64];
  int32_t w_zp[64];
} dyn_weights;

static void make_weights(const dyn_case *c, dyn_weights *w) {
  uint32_t s = 7u + (uint32_t)c->form * 31u + (uint32_t)c->w_dtype;
  w->K = c->x_dims[c->rank - 1];
  w->N = c->N;
  for (int64_t i = 0; i < w->K * w->N; i++)
    w->w[i] = (uint8_t)next(&s);
  for (int64_t n = 0; n < w->N; n++) {
    w->w_scale[n] = 0.002f + 0.0005f * (float)(c->per_column ? n : 0);
    w->w_zp[n] = !c->w_zp                   ? 0
                 : c->w_dtype == WQ_DT_INT8 ? (int)(c->per_column ? n % 5 : 3) - 2
                                            : 121 + (int)(c->per_column ? n % 7 : 2);
    w->bias[n] = 0.125f * (float)(n - 3);
  }
}

static uint8_t *build(const dyn_case *c, const dyn_weights *w, size_t *len) {
  wq_model_ir *ir = calloc(1, sizeof *ir);
  ir->ir_version = 8;
  ir->producer_name = wq_strdup("test");
  ir->producer_version = wq_strdup("");
  ir->opsets = calloc(2, sizeof *ir->opsets);
  ir->opsets[0].domain = wq_strdup("");
  ir->opsets[0].version = 13;
  ir->opsets[1].domain = wq_strdup("com.microsoft");
  ir->opsets[1].version = 1;
  ir->n_opsets = 2;
  wq_graph *g = ir->graph = wq_graph_new();
  g->name = wq_strdup("dynamic");
  g->inputs = malloc(sizeof(int));
  g->outputs = malloc(sizeof(int));
  const int64_t K = w->K, N = w->N, wd[2] = {K, N}, nd[1] = {N};
  const int pr = c->per_column ? 1 : 0;
  int8_t zp8[64];
  for (int64_t n = 0; n < N; n++)
    zp8[n] = (int8_t)w->w_zp[n];
  int x = tensor(g, "x", WQ_DT_FLOAT, c->rank, c->x_dims, NULL, 0);
  if (c->x_dims[0] < 0)
    g->tensors[x].dim_params[0] = wq_strdup("batch");
  g->tensors[x].is_input = true;
  g->inputs[g->n_inputs++] = x;
  int wt = tensor(g, "w", c->w_dtype, 2, wd, w->w, (size_t)(K * N));
  int ws =
      tensor(g, "w_scale", WQ_DT_FLOAT, pr, nd, w->w_scale, sizeof(float) * (size_t)(pr ? N : 1));
  int wz = tensor(g, "w_zp", c->w_dtype, pr, nd, zp8, (size_t)(pr ? N : 1));
  int b = tensor(g, "bias", WQ_DT_FLOAT, 1, nd, w->bias, sizeof(float) * (size_t)N);
  int y = tensor(g, "y", WQ_DT_FLOAT, -1, nd, NULL, 0);
  g->tensors[y].is_output = true;
  g->outputs[g->n_outputs++] = y;
  if (c->form == FORM_FUSED) {
    node(g, "dqmm", "com.microsoft", "DynamicQuantizeMatMul", (int[]){x, wt, ws, wz, b},
         c->bias ? 5 : 4, &y, 1, 0);
  } else {
    int xq = tensor(g, "xq", WQ_DT_UINT8, -1, nd, NULL, 0);
    int xs = tensor(g, "x_scale", WQ_DT_FLOAT, -1, nd, NULL, 0);
    int xz = tensor(g, "x_zp", WQ_DT_UINT8, -1, nd, NULL, 0);
    node(g, "dql", "", "DynamicQuantizeLinear", &x, 1, (int[]){xq, xs, xz}, 3, 0);
    if (c->form == FORM_TO_FLOAT) {
      node(g, "mmf", "com.microsoft", "MatMulIntegerToFloat", (int[]){xq, wt, xs, ws, xz, wz, b},
           c->bias ? 7 : 6, &y, 1, 0);
    } else {
      int acc = tensor(g, "acc", WQ_DT_INT32, -1, nd, NULL, 0);
      int accf = tensor(g, "accf", WQ_DT_FLOAT, -1, nd, NULL, 0);
      int s = tensor(g, "s", WQ_DT_FLOAT, -1, nd, NULL, 0);
      int mm = tensor(g, "mm", WQ_DT_FLOAT, -1, nd, NULL, 0);
      int mb = tensor(g, "mb", WQ_DT_FLOAT, -1, nd, NULL, 0);
      node(g, "mmi", "", "MatMulInteger", (int[]){xq, wt, xz, wz}, 4, &acc, 1, 0);
      node(g, "cast", "", "Cast", &acc, 1, &accf, 1, WQ_DT_FLOAT);
      node(g, "scales", "", "Mul", (int[]){xs, ws}, 2, &s, 1, 0);
      node(g, "rescale", "", "Mul", (int[]){accf, s}, 2, c->bias || c->relu ? &mm : &y, 1, 0);
      if (c->bias)
        node(g, "bias_add", "", "Add", (int[]){b, mm}, 2, c->relu ? &mb : &y, 1, 0);
      if (c->relu)
        node(g, "relu", "", "Relu", c->bias ? &mb : &mm, 1, &y, 1, 0);
    }
  }
  uint8_t *bytes = NULL;
  wq_error err;
  wq_error_clear(&err);
  CHECK_MSG(wq_onnx_export(ir, &bytes, len, &err) == WQ_OK, "%s", err.message);
  wq_model_ir_free(ir);
  return bytes;
}

/* ONNX's definitions, element by element: DynamicQuantizeLinear, the exact
 * integer product, then (float)acc * (x_scale * w_scale[n]) [+ bias] [Relu]. */
static void reference(const dyn_case *c, const dyn_weights *w, const float *x, int64_t rows,
                      float *y) {
  const int64_t K = w->K, N = w->N;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < rows * K; i++) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const int32_t zp = (int32_t)nearbyintf(fminf(255.0f, fmaxf(0.0f, 0.0f - lo / scale)));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t n = 0; n < N; n++) {
      int32_t acc = 0;
      for (int64_t k = 0; k < K; k++) {
        float q = nearbyintf(x[r * K + k] / scale) + (float)zp;
        int32_t a = q < 0.0f ? 0 : q > 255.0f ? 255 : (int32_t)q;
        uint8_t raw = w->w[k * N + n];
        int32_t b = c->w_dtype == WQ_DT_INT8 ? (int8_t)raw : raw;
        acc += (a - zp) * (b - w->w_zp[c->per_column ? n : 0]);
      }
      float v = (float)acc * (scale * w->w_scale[c->per_column ? n : 0]);
      if (c->bias)
        v = v + w->bias[n];
      if (c->relu && c->form == FORM_INTEGER)
        v = v < 0.0f ? 0.0f : v;
      y[r * N + n] = v;
    }
}

static int count_nodes(const wq_model *m, const char *op) {
  const wq_graph *g = wq_model_get_ir(m)->graph;
  int k = 0;
  for (int i = 0; i < g->n_nodes; i++)
    k += strcmp(g->nodes[i].op_type, op) == 0;
  return k;
}

static void run_case(const dyn_case *c) {
  dyn_weights w;
  make_weights(c, &w);
  size_t len = 0;
  uint8_t *bytes = build(c, &w, &len);
  if (!bytes)
    return;
  wq_error err;
  wq_error_clear(&err);
  wq_model *lowered = NULL, *plain = NULL;
  wq_load_options fp = {.no_lowering = 1};
  wq_status st = wq_model_load(bytes, len, NULL, &lowered, &err);
  CHECK_MSG(st == WQ_OK, "form %d: %s", c->form, err.message);
  st = wq_model_load(bytes, len, &fp, &plain, &err);
  CHECK_MSG(st == WQ_OK, "form %d (no lowering): %s", c->form, err.message);
  free(bytes);
  if (!lowered || !plain) {
    wq_model_free(lowered);
    wq_model_free(plain);
    return;
  }
  CHECK_MSG(count_nodes(lowered, "QGemmToFloat") == 1 &&
                wq_model_get_ir(lowered)->graph->n_nodes == 1,
            "form %d dtype %d: %d nodes after lowering", c->form, (int)c->w_dtype,
            wq_model_get_ir(lowered)->graph->n_nodes);
  int64_t numel = 1;
  for (int d = 0; d < c->rank; d++)
    numel *= c->x_dims[d];
  const int64_t rows = numel / w.K;
  float *x = malloc(sizeof(float) * (size_t)numel),
        *want = malloc(sizeof(float) * (size_t)(rows * w.N));
  for (int seed = 0; seed < 3; seed++) {
    uint32_t s = 99u + (uint32_t)seed;
    /* seed 0: around 0; 1: all positive (zero point 0); 2: all negative (255) */
    for (int64_t i = 0; i < numel; i++)
      x[i] = ((float)(next(&s) & 0xFFFF) / 65536.0f - (seed == 0   ? 0.5f
                                                       : seed == 1 ? -0.1f
                                                                   : 1.1f)) *
             3.0f;
    reference(c, &w, x, rows, want);
    wq_value in = {.dtype = WQ_DT_FLOAT, .rank = c->rank, .data = x};
    memcpy(in.dims, c->x_dims, sizeof(int64_t) * (size_t)c->rank);
    wq_model *models[2] = {lowered, plain};
    for (int k = 0; k < 2; k++) {
      st = wq_model_run(models[k], &in, 1, &err);
      CHECK_MSG(st == WQ_OK, "%s", err.message);
      const wq_value *y = st == WQ_OK ? wq_model_result(models[k], 0) : NULL;
      int bad = 0;
      for (int64_t i = 0; y && i < rows * w.N; i++)
        bad += memcmp(&((const float *)y->data)[i], &want[i], sizeof(float)) != 0;
      CHECK_MSG(y && bad == 0,
                "form %d dtype %d per_column %d zp %d rank %d seed %d %s: %d of %lld differ",
                c->form, (int)c->w_dtype, c->per_column, c->w_zp, c->rank, seed,
                k ? "op by op" : "lowered", bad, (long long)(rows * w.N));
    }
  }
  /* A non-finite input is refused, naming the node. */
  x[0] = INFINITY;
  wq_value in = {.dtype = WQ_DT_FLOAT, .rank = c->rank, .data = x};
  memcpy(in.dims, c->x_dims, sizeof(int64_t) * (size_t)c->rank);
  st = wq_model_run(lowered, &in, 1, &err);
  CHECK_MSG(st != WQ_OK && strstr(err.message, "unusable"), "Inf input: %s", err.message);
  free(x);
  free(want);
  wq_model_free(lowered);
  wq_model_free(plain);
}

/* A symbolic batch dim: the model loads and runs op by op (the kernels
 * need static shapes), and lowers once the shape is bound at load. */
static void symbolic_batch(void) {
  dyn_case c = {.form = FORM_INTEGER,
                .w_dtype = WQ_DT_INT8,
                .per_column = true,
                .rank = 2,
                .x_dims = {-1, 37},
                .N = 13,
                .bias = true};
  dyn_weights w;
  make_weights(&c, &w);
  size_t len = 0;
  uint8_t *bytes = build(&c, &w, &len);
  const int64_t dims[2] = {3, 37};
  const wq_input_shape bound = {"x", 2, dims};
  wq_load_options with_shape = {.input_shapes = &bound, .n_input_shapes = 1};
  for (int k = 0; bytes && k < 2; k++) {
    wq_error err;
    wq_error_clear(&err);
    wq_model *m = NULL;
    CHECK_MSG(wq_model_load(bytes, len, k ? &with_shape : NULL, &m, &err) == WQ_OK, "%s",
              err.message);
    CHECK(m && count_nodes(m, "QGemmToFloat") == k &&
          count_nodes(m, "DynamicQuantizeLinear") == 1 - k);
    float x[3 * 37], want[3 * 13];
    for (int i = 0; i < 3 * 37; i++)
      x[i] = (float)(i % 11) * 0.37f - 1.5f;
    reference(&c, &w, x, 3, want);
    wq_value in = {.dtype = WQ_DT_FLOAT, .rank = 2, .dims = {3, 37}, .data = x};
    const wq_value *y = m && wq_model_run(m, &in, 1, &err) == WQ_OK ? wq_model_result(m, 0) : NULL;
    CHECK_MSG(y && memcmp(y->data, want, sizeof want) == 0, "symbolic batch, bound %d: %s", k,
              err.message);
    wq_model_free(m);
  }
  free(bytes);
}

int main(void) {
  symbolic_batch();
  const int forms[] = {FORM_INTEGER, FORM_TO_FLOAT, FORM_FUSED};
  const wq_dtype dtypes[] = {WQ_DT_INT8, WQ_DT_UINT8};
  /* odd shapes: K 37 (no whole SIMD pair blocks), N 13 (a partial column
   * tile), 5 rows (a partial row panel), a 3-D x and a single row (GEMV) */
  const int64_t shapes[][4] = {{2, 5, 37, 0}, {3, 2, 3, 37}, {2, 1, 64, 0}, {1, 19, 0, 0}};
  for (int f = 0; f < 3; f++)
    for (int d = 0; d < 2; d++)
      for (int pc = 0; pc < 2; pc++)
        for (int s = 0; s < 4; s++) {
          dyn_case c = {.form = forms[f],
                        .w_dtype = dtypes[d],
                        .per_column = pc,
                        .w_zp = (s + pc) % 2 == 0,
                        .bias = s != 3,
                        .relu = s != 1,
                        .rank = (int)shapes[s][0],
                        .N = s == 2 ? 40 : 13};
          for (int k = 0; k < c.rank; k++)
            c.x_dims[k] = shapes[s][1 + k];
          run_case(&c);
        }
  WQ_TEST_END();
}
