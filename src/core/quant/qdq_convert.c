/* Convert: the annotated float graph becomes a QDQ graph.
 *
 *   activation t   producer -> t -> QuantizeLinear -> t_quantized ->
 *                  DequantizeLinear -> t_dequantized -> readers
 *                  (a graph output keeps its name on the DequantizeLinear's
 *                  output; the producer writes t_float)
 *   weight W       W_quantized (int8, per output channel) -> DequantizeLinear
 *                  (axis) -> the linear
 *   bias B         B_quantized (int32, scale s_in * s_w[c], zero point 0)
 *                  -> DequantizeLinear -> the linear (or its bias Add)
 *   constant C     C_quantized (its cluster's spec) -> DequantizeLinear
 *
 * Per-channel DequantizeLinear needs opset 13: an older model is moved to
 * opset 13 when none of its ops changed meaning on the way; otherwise
 * weights are quantized per tensor (opset 10 has Quantize/DequantizeLinear;
 * below 10 the model cannot hold them and conversion fails). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../kernels/ref/quant_ref.h"
#include "../onnx/onnx_export.h"
#include "observer.h"
#include "qdq_convert.h"

typedef struct {
  wq_graph *g;
  const wq_annotation *a;
  const wq_qdq_params *p;
  const wq_quant_config *cfg;
  const wq_quantizer *q;
  bool per_channel; /* the opset allows DequantizeLinear's axis (13) */
  bool blocked;     /* ... and its block_size (21) */
  int n_orig_tensors;
  int *replace;                    /* per original tensor: what readers read instead (-1: itself) */
  int *cluster_scale, *cluster_zp; /* per cluster root: scale / zero point constants */
  int *lin_x, *lin_w;              /* per original node: its inputs 0 and 1 before the rewrite */
  wq_node *nodes;                  /* the new node list */
  bool *from_graph;                /* nodes[i] is a shallow copy of an original node */
  int n_nodes, cap_nodes;
} convert_ctx;

void wq_weight_grid_init(wq_weight_grid *grid, const wq_tensor *w, int axis, int64_t block) {
  grid->axis = axis;
  grid->block = axis >= 0 ? block : 0;
  /* Per tensor: rank 0; per channel: 1-D [C]; blocked: the weight's rank. */
  grid->rank = axis < 0 ? 0 : block > 0 ? w->rank : 1;
  grid->count = 1;
  for (int d = 0; d < grid->rank; d++) {
    int64_t n =
        block > 0 ? (d == axis ? (w->dims[d] + block - 1) / block : w->dims[d]) : w->dims[axis];
    grid->dims[d] = n;
    grid->count *= n;
  }
}

/* The parameter index of the element at `coord`. */
static int64_t param_index(const wq_weight_grid *grid, const wq_tensor *w, const int64_t *coord) {
  if (grid->axis < 0)
    return 0;
  if (grid->block == 0)
    return coord[grid->axis];
  int64_t idx = 0;
  for (int d = 0; d < w->rank; d++)
    idx = idx * grid->dims[d] + (d == grid->axis ? coord[d] / grid->block : coord[d]);
  return idx;
}

static void next_coord(const wq_tensor *w, int64_t *coord) {
  for (int d = w->rank - 1; d >= 0; d--) {
    if (++coord[d] < w->dims[d])
      return;
    coord[d] = 0;
  }
}

void wq_weight_grid_dequantize(const wq_tensor *w, const wq_weight_grid *grid, const float *scales,
                               const int32_t *zero_points, float *values) {
  int64_t total = (int64_t)(w->nbytes / sizeof(float));
  int64_t coord[WQ_MAX_RANK] = {0};
  for (int64_t k = 0; k < total; k++, next_coord(w, coord)) {
    int64_t p = param_index(grid, w, coord);
    values[k] = (values[k] - (float)zero_points[p]) * scales[p];
  }
}

bool wq_qdq_quantize_weight(const wq_tensor *w, const wq_weight_grid *grid,
                            const wq_quant_spec *spec, float min_range, void *codes, float *scales,
                            int32_t *zero_points) {
  const float *x = w->data;
  int64_t total = (int64_t)(w->nbytes / sizeof(float));
  float *lo = calloc((size_t)grid->count + 1, sizeof *lo);
  float *hi = calloc((size_t)grid->count + 1, sizeof *hi);
  if (!lo || !hi) {
    free(lo);
    free(hi);
    return false;
  }
  int64_t coord[WQ_MAX_RANK] = {0};
  for (int64_t k = 0; k < total; k++, next_coord(w, coord)) {
    int64_t p = param_index(grid, w, coord);
    lo[p] = x[k] < lo[p] ? x[k] : lo[p];
    hi[p] = x[k] > hi[p] ? x[k] : hi[p];
  }
  for (int64_t p = 0; p < grid->count; p++)
    wq_range_to_qparams(lo[p], hi[p], spec->qmin, spec->qmax, spec->symmetric, min_range,
                        &scales[p], &zero_points[p]);
  memset(coord, 0, sizeof coord);
  for (int64_t k = 0; k < total; k++, next_coord(w, coord)) {
    int64_t p = param_index(grid, w, coord);
    wq_ref_q_store(codes, spec->dtype, k,
                   wq_ref_quantize_value(x[k], scales[p], zero_points[p], spec->qmin, spec->qmax));
  }
  free(lo);
  free(hi);
  return true;
}

void wq_ann_weight_grid(const wq_ann_tensor *at, const wq_tensor *w, bool per_channel, bool blocked,
                        wq_weight_grid *grid) {
  if (at->spec->granularity == WQ_QGRAN_PER_GROUP && blocked)
    wq_weight_grid_init(grid, w, at->k_axis, at->spec->group_size);
  else if (at->spec->granularity != WQ_QGRAN_PER_TENSOR && per_channel)
    wq_weight_grid_init(grid, w, at->weight_axis, 0);
  else
    wq_weight_grid_init(grid, w, -1, 0);
}

/* ---- graph building --------------------------------------------------------- */

static int add_tensor(convert_ctx *c, const char *base, const char *suffix) {
  return wq_graph_add_unique_tensor(c->g, base, suffix);
}

/* A constant owning `data` (freed here on failure). */
static int add_constant(convert_ctx *c, const char *base, const char *suffix, wq_dtype dtype,
                        int rank, const int64_t *dims, void *data) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  return wq_graph_add_constant(c->g, base, suffix, dtype, rank, dims, data,
                               (size_t)n * wq_dtype_size(dtype));
}

static int add_scalar_scale(convert_ctx *c, const char *base, float scale) {
  float *v = malloc(sizeof *v);
  if (!v)
    return -1;
  *v = scale;
  return add_constant(c, base, "_scale", WQ_DT_FLOAT, 0, NULL, v);
}

static int add_scalar_zero_point(convert_ctx *c, const char *base, wq_dtype dtype, int32_t zp) {
  void *v = calloc(1, 4);
  if (!v)
    return -1;
  wq_ref_q_store(v, dtype, 0, zp);
  return add_constant(c, base, "_zero_point", dtype, 0, NULL, v);
}

static bool grow_nodes(convert_ctx *c) {
  if (c->n_nodes < c->cap_nodes)
    return true;
  int cap = c->cap_nodes ? 2 * c->cap_nodes : 64;
  wq_node *grown = realloc(c->nodes, (size_t)cap * sizeof *grown);
  if (grown)
    c->nodes = grown;
  bool *flags = grown ? realloc(c->from_graph, (size_t)cap * sizeof *flags) : NULL;
  if (flags)
    c->from_graph = flags;
  if (!grown || !flags)
    return false;
  c->cap_nodes = cap;
  return true;
}

/* Appends a node with one output; axis >= 0 adds an `axis` attribute and
 * block > 0 a `block_size` (blocked DequantizeLinear). */
static wq_status emit(convert_ctx *c, const char *op_type, const char *name, const int *inputs,
                      int n_inputs, int output, int64_t axis, int64_t block, wq_error *err) {
  if (!grow_nodes(c))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  c->from_graph[c->n_nodes] = false;
  wq_node *n = &c->nodes[c->n_nodes];
  memset(n, 0, sizeof *n);
  int n_attrs = axis < 0 ? 0 : block > 0 ? 2 : 1;
  n->name = wq_strdup(name);
  n->op_type = wq_strdup(op_type);
  n->domain = wq_strdup("");
  n->inputs = malloc((size_t)n_inputs * sizeof *n->inputs);
  n->outputs = malloc(sizeof *n->outputs);
  n->attrs = n_attrs ? calloc((size_t)n_attrs, sizeof *n->attrs) : NULL;
  bool ok = n->name && n->op_type && n->domain && n->inputs && n->outputs && (!n_attrs || n->attrs);
  if (ok && n_attrs >= 1)
    ok = (n->attrs[0].name = wq_strdup("axis")) != NULL;
  if (ok && n_attrs == 2)
    ok = (n->attrs[1].name = wq_strdup("block_size")) != NULL;
  n->n_attrs = n_attrs;
  if (!ok) {
    wq_node_clear(n);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  }
  memcpy(n->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  n->n_inputs = n_inputs;
  n->outputs[0] = output;
  n->n_outputs = 1;
  if (n_attrs >= 1) {
    n->attrs[0].type = WQ_ATTR_INT;
    n->attrs[0].i = axis;
  }
  if (n_attrs == 2) {
    n->attrs[1].type = WQ_ATTR_INT;
    n->attrs[1].i = block;
  }
  c->n_nodes++;
  return WQ_OK;
}

/* The new list shares the original node's contents until the swap. */
static wq_status copy_node(convert_ctx *c, const wq_node *n, wq_error *err) {
  if (!grow_nodes(c))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  c->from_graph[c->n_nodes] = true;
  c->nodes[c->n_nodes++] = *n;
  return WQ_OK;
}

static wq_status oom(wq_error *err) {
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory building the QDQ graph");
}

/* The scale and zero point constants of t's cluster (made once). */
static wq_status cluster_constants(convert_ctx *c, int t, int *scale, int *zp, wq_error *err) {
  int root = c->a->tensors[t].cluster;
  if (c->cluster_scale[root] < 0) {
    const wq_qdq_params *p = &c->p[t];
    const char *base = c->g->tensors[root].name;
    int s = add_scalar_scale(c, base, p->scale);
    int z = s < 0 ? -1 : add_scalar_zero_point(c, base, p->dtype, p->zero_point);
    if (z < 0)
      return oom(err);
    c->cluster_scale[root] = s;
    c->cluster_zp[root] = z;
  }
  *scale = c->cluster_scale[root];
  *zp = c->cluster_zp[root];
  return WQ_OK;
}

/* Q -> DQ on activation t right after its producer (or at the start for a
 * graph input). */
/* The parameters of a graph input or output carried as uint8/int8 (the
 * config's "io"): the tensor's own range over the dtype's full codes. */
static wq_status io_constants(convert_ctx *c, int t, int *scale, int *zp, wq_error *err) {
  wq_dtype io = c->cfg->io_dtype;
  int32_t qmin = io == WQ_DT_UINT8 ? 0 : -128, qmax = io == WQ_DT_UINT8 ? 255 : 127;
  float s;
  int32_t z;
  wq_range_to_qparams(c->p[t].lo, c->p[t].hi, qmin, qmax, false, c->cfg->min_range, &s, &z);
  char base[420];
  wq_format(base, sizeof base, "%s_io", c->g->tensors[t].name);
  *scale = add_scalar_scale(c, base, s);
  *zp = *scale < 0 ? -1 : add_scalar_zero_point(c, base, io, z);
  return *zp < 0 ? oom(err) : WQ_OK;
}

static wq_status emit_pair(convert_ctx *c, const char *base, int source, int scale, int zp,
                           int result, wq_error *err) {
  int codes = add_tensor(c, base, "_quantized");
  if (codes < 0)
    return oom(err);
  c->g->tensors[codes].dtype = c->g->tensors[zp].dtype;
  char name[480];
  wq_format(name, sizeof name, "%s_QuantizeLinear", base);
  int q_in[3] = {source, scale, zp};
  WQ_TRY(emit(c, "QuantizeLinear", name, q_in, 3, codes, -1, 0, err));
  wq_format(name, sizeof name, "%s_DequantizeLinear", base);
  int dq_in[3] = {codes, scale, zp};
  return emit(c, "DequantizeLinear", name, dq_in, 3, result, -1, 0, err);
}

/* Q -> DQ on activation t right after its producer (or at the start for a
 * graph input). With an int8/uint8 IO boundary, a graph input arrives as
 * codes (DequantizeLinear first) and a graph output leaves as codes (a
 * final QuantizeLinear). */
static wq_status quantize_activation(convert_ctx *c, int t, int producer_at, wq_error *err) {
  wq_node *producer = producer_at >= 0 ? &c->nodes[producer_at] : NULL;
  wq_graph *g = c->g;
  bool io = c->cfg->io_dtype != WQ_DT_FLOAT;
  bool io_input = io && !producer && g->tensors[t].is_input;
  bool io_output = io && producer && g->tensors[t].is_output;
  int scale, zp;
  WQ_TRY(cluster_constants(c, t, &scale, &zp, err));
  char base[400], name[480];
  wq_format(base, sizeof base, "%s", g->tensors[t].name);
  int source = t, result;
  if (g->tensors[t].is_output && producer) {
    /* The graph output keeps its name (on the dequantized value, or on the
     * codes of an int8/uint8 output). */
    source = add_tensor(c, base, "_float");
    if (source < 0)
      return oom(err);
    g->tensors[source].dtype = WQ_DT_FLOAT;
    for (int k = 0; k < producer->n_outputs; k++)
      if (producer->outputs[k] == t)
        producer->outputs[k] = source;
  }
  if (io_input) {
    int io_scale, io_zp;
    WQ_TRY(io_constants(c, t, &io_scale, &io_zp, err));
    source = add_tensor(c, base, "_float");
    if (source < 0)
      return oom(err);
    g->tensors[source].dtype = WQ_DT_FLOAT;
    g->tensors[t].dtype = c->cfg->io_dtype;
    wq_format(name, sizeof name, "%s_io_DequantizeLinear", base);
    int dq_in[3] = {t, io_scale, io_zp};
    WQ_TRY(emit(c, "DequantizeLinear", name, dq_in, 3, source, -1, 0, err));
  }
  if (g->tensors[t].is_output && producer && !io_output) {
    result = t;
  } else {
    result = add_tensor(c, base, "_dequantized");
    if (result < 0)
      return oom(err);
    g->tensors[result].dtype = WQ_DT_FLOAT;
    c->replace[t] = result;
  }
  WQ_TRY(emit_pair(c, base, source, scale, zp, result, err));
  if (io_output) {
    int io_scale, io_zp;
    WQ_TRY(io_constants(c, t, &io_scale, &io_zp, err));
    g->tensors[t].dtype = c->cfg->io_dtype;
    wq_format(name, sizeof name, "%s_io_QuantizeLinear", base);
    int q_in[3] = {result, io_scale, io_zp};
    WQ_TRY(emit(c, "QuantizeLinear", name, q_in, 3, t, -1, 0, err));
  }
  return WQ_OK;
}

/* Constants for codes (dtype, the data's dims), scales and zero points
 * (the grid's dims) and the DequantizeLinear reading them into a new float
 * tensor *out. Takes every buffer, also on failure. */
static wq_status emit_dequantized(convert_ctx *c, const char *base, wq_dtype dtype, int rank,
                                  const int64_t *dims, void *codes, const wq_weight_grid *grid,
                                  float *scales, void *zero_points, int *out, wq_error *err) {
  int q = add_constant(c, base, "_quantized", dtype, rank, dims, codes);
  int s = q < 0 ? -1 : add_constant(c, base, "_scale", WQ_DT_FLOAT, grid->rank, grid->dims, scales);
  int z =
      s < 0 ? -1 : add_constant(c, base, "_zero_point", dtype, grid->rank, grid->dims, zero_points);
  if (z < 0) {
    if (q < 0)
      free(scales), free(zero_points);
    else if (s < 0)
      free(zero_points);
    return oom(err);
  }
  *out = add_tensor(c, base, "_dequantized");
  if (*out < 0)
    return oom(err);
  c->g->tensors[*out].dtype = WQ_DT_FLOAT;
  char name[480];
  wq_format(name, sizeof name, "%s_DequantizeLinear", base);
  int in[3] = {q, s, z};
  return emit(c, "DequantizeLinear", name, in, 3, *out, grid->axis, grid->block, err);
}

/* An int8 constant + DequantizeLinear in place of float constant t. */
static wq_status quantize_constant(convert_ctx *c, int t, wq_error *err) {
  if (c->replace[t] >= 0)
    return WQ_OK;
  wq_graph *g = c->g;
  const wq_ann_tensor *at = &c->a->tensors[t];
  char base[400];
  wq_format(base, sizeof base, "%s", g->tensors[t].name);
  const wq_tensor *src = &g->tensors[t];
  int64_t n = (int64_t)(src->nbytes / sizeof(float));
  int rank = src->rank;
  int64_t dims[WQ_MAX_RANK];
  memcpy(dims, src->dims, sizeof dims);
  bool weight = at->kind == WQ_ANN_T_WEIGHT;
  const wq_quant_spec *spec = at->spec;
  wq_weight_grid grid;
  if (weight)
    wq_ann_weight_grid(at, src, c->per_channel, c->blocked, &grid);
  else
    wq_weight_grid_init(&grid, src, -1, 0);
  int64_t count = grid.count;
  void *codes = calloc((size_t)n + 1, wq_dtype_size(spec->dtype));
  float *scales = malloc((size_t)count * sizeof *scales);
  int32_t *zps = malloc((size_t)count * sizeof *zps);
  void *zp_codes = calloc((size_t)count, wq_dtype_size(spec->dtype));
  bool ok = codes && scales && zps && zp_codes;
  if (ok && weight) {
    ok = wq_qdq_quantize_weight(src, &grid, spec, c->cfg->min_range, codes, scales, zps);
  } else if (ok) {
    /* An activation-spec constant takes its cluster's parameters. */
    scales[0] = c->p[t].scale;
    zps[0] = c->p[t].zero_point;
    const float *x = src->data;
    for (int64_t k = 0; k < n; k++)
      wq_ref_q_store(codes, spec->dtype, k,
                     wq_ref_quantize_value(x[k], scales[0], zps[0], spec->qmin, spec->qmax));
  }
  if (!ok) {
    free(codes), free(scales), free(zps), free(zp_codes);
    return oom(err);
  }
  for (int64_t ch = 0; ch < count; ch++)
    wq_ref_q_store(zp_codes, spec->dtype, ch, zps[ch]);
  free(zps);
  int out;
  WQ_TRY(emit_dequantized(c, base, spec->dtype, rank, dims, codes, &grid, scales, zp_codes, &out,
                          err));
  c->replace[t] = out;
  return WQ_OK;
}

/* The int32 bias of linear node `li` at s_in * s_w[c]: read by node `reader`
 * (the linear, or its bias Add) at input `k`. */
static wq_status quantize_bias(convert_ctx *c, int li, wq_node *reader, int k, wq_error *err) {
  wq_graph *g = c->g;
  int b = c->a->nodes[li].bias;
  int w = c->lin_w[li];
  int x = c->lin_x[li];
  const wq_tensor *bt = &g->tensors[b];
  const wq_tensor *wt = &g->tensors[w];
  const wq_ann_tensor *aw = &c->a->tensors[w];
  wq_weight_grid grid;
  wq_ann_weight_grid(aw, wt, c->per_channel, c->blocked, &grid);
  int axis = grid.axis;
  int64_t channels = wt->dims[aw->weight_axis];
  int64_t wch = grid.count;
  /* The weight's scales, as quantize_constant computes them. */
  int64_t wn = (int64_t)(wt->nbytes / sizeof(float));
  void *codes = calloc((size_t)wn + 1, wq_dtype_size(aw->spec->dtype));
  float *ws = malloc((size_t)wch * sizeof *ws);
  int32_t *wz = malloc((size_t)wch * sizeof *wz);
  int32_t *bq = malloc((size_t)channels * sizeof *bq);
  float *bs = malloc((size_t)wch * sizeof *bs);
  int32_t *bz = calloc((size_t)wch, sizeof *bz);
  if (!codes || !ws || !wz || !bq || !bs || !bz ||
      !wq_qdq_quantize_weight(wt, &grid, aw->spec, c->cfg->min_range, codes, ws, wz)) {
    free(codes), free(ws), free(wz), free(bq), free(bs), free(bz);
    return oom(err);
  }
  free(codes);
  float s_in = c->p[x].scale;
  const float *bv = bt->data;
  /* Bias correction: the linear's mean quantization error per channel. */
  const float *shift = wq_quantizer_bias_shift(c->q, li);
  for (int64_t ch = 0; ch < wch; ch++)
    bs[ch] = s_in * ws[ch];
  for (int64_t ch = 0; ch < channels; ch++) {
    double bias = (double)bv[ch] - (shift ? (double)shift[ch] : 0.0);
    double v = nearbyint(bias / (double)bs[axis >= 0 ? ch : 0]);
    bq[ch] = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
  }
  free(ws);
  free(wz);
  char base[400];
  wq_format(base, sizeof base, "%s", bt->name);
  /* The bias follows the weight's grid along its single (channel) axis. */
  int64_t dims[1] = {channels};
  wq_weight_grid bias_grid = {.axis = axis >= 0 ? 0 : -1, .rank = axis >= 0, .count = wch};
  bias_grid.dims[0] = wch;
  int out;
  WQ_TRY(emit_dequantized(c, base, WQ_DT_INT32, 1, dims, bq, &bias_grid, bs, bz, &out, err));
  reader->inputs[k] = out;
  return WQ_OK;
}

/* ---- opset ------------------------------------------------------------------ */

/* Ops whose meaning changed between opset 10 and 21 (attributes that
 * became inputs, new axis rules), with the version of the change: a node of
 * such an op written for an older opset blocks moving the model past it. */
static int changed_at(const char *op_type) {
  static const struct {
    const char *op;
    int version;
  } changed[] = {{"Clip", 11},
                 {"Pad", 11},
                 {"Resize", 11},
                 {"Split", 13},
                 {"Squeeze", 13},
                 {"Unsqueeze", 13},
                 {"Softmax", 13},
                 {"LogSoftmax", 13},
                 {"Hardmax", 13},
                 {"ReduceSum", 13},
                 {"TopK", 10},
                 {"Slice", 10},
                 {"Upsample", 1000},
                 {"Dropout", 12},
                 {"Scatter", 1000},
                 {"BatchNormalization", 15},
                 {"ConstantOfShape", 9},
                 {"ReduceMean", 18},
                 {"ReduceMax", 18},
                 {"ReduceMin", 18},
                 {"ReduceProd", 18},
                 {"ReduceL1", 18},
                 {"ReduceL2", 18},
                 {"ReduceLogSum", 18},
                 {"ReduceLogSumExp", 18},
                 {"ReduceSumSquare", 18}};
  for (size_t k = 0; k < sizeof changed / sizeof changed[0]; k++)
    if (strcmp(changed[k].op, op_type) == 0)
      return changed[k].version;
  return 0;
}

/* ---- opset upgrades ---------------------------------------------------- */

/* Whether upgrade_node can carry node n over (checked for every node
 * before any is changed). */
static bool upgradable(const wq_graph *g, const wq_node *n) {
  const char *op = n->op_type;
  if (strcmp(op, "Clip") == 0)
    return true;
  if (strncmp(op, "Softmax", 7) == 0 || strcmp(op, "LogSoftmax") == 0 ||
      strcmp(op, "Hardmax") == 0) {
    const wq_tensor *x = &g->tensors[n->inputs[0]];
    const wq_attr *ax = wq_node_attr(n, "axis");
    int64_t axis = ax ? ax->i : 1;
    return x->rank >= 1 && (axis < 0 ? axis + x->rank : axis) == x->rank - 1;
  }
  if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0 ||
      (strncmp(op, "Reduce", 6) == 0 && strcmp(op, "ReduceSum") != 0))
    return n->n_inputs == 1;
  if (strcmp(op, "Slice") == 0)
    return n->n_inputs == 1 && wq_node_attr(n, "starts") && wq_node_attr(n, "ends");
  return false;
}

/* Removes attribute `name` from the node; true when it was there. */
static bool take_attr(wq_node *n, const char *name, wq_attr *out) {
  for (int k = 0; k < n->n_attrs; k++)
    if (strcmp(n->attrs[k].name, name) == 0) {
      *out = n->attrs[k];
      memmove(&n->attrs[k], &n->attrs[k + 1], (size_t)(n->n_attrs - k - 1) * sizeof *n->attrs);
      n->n_attrs--;
      return true;
    }
  return false;
}

/* Appends input t (-1: omitted) to the node. */
static bool append_input(wq_node *n, int t) {
  int *grown = realloc(n->inputs, ((size_t)n->n_inputs + 1) * sizeof *grown);
  if (!grown)
    return false;
  n->inputs = grown;
  n->inputs[n->n_inputs++] = t;
  return true;
}

static int float_scalar(convert_ctx *c, const char *base, const char *suffix, float v) {
  float *d = malloc(sizeof *d);
  if (!d)
    return -1;
  *d = v;
  return add_constant(c, base, suffix, WQ_DT_FLOAT, 0, NULL, d);
}

static int int64_list(convert_ctx *c, const char *base, const char *suffix, const int64_t *v,
                      size_t count) {
  int64_t *d = malloc((count + 1) * sizeof *d);
  if (!d)
    return -1;
  memcpy(d, v, count * sizeof *d);
  int64_t dims[1] = {(int64_t)count};
  return add_constant(c, base, suffix, WQ_DT_INT64, 1, dims, d);
}

/* Rewrites a node written for an older opset into the form `target` reads
 * with the same meaning: Clip's min/max, Squeeze/Unsqueeze's and Reduce*'s
 * axes and Slice's starts/ends/axes move from attributes to constant
 * inputs; Softmax-family nodes whose axis is the last one keep it. false
 * (nothing changed) when the node cannot be carried over. */
static bool upgrade_node(convert_ctx *c, wq_node *n, int from, int target, bool *oom_hit) {
  int v = changed_at(n->op_type);
  if ((n->domain && n->domain[0]) || !v || from >= v || v > target)
    return true;
  const char *op = n->op_type;
  wq_attr a;
  if (strcmp(op, "Clip") == 0) {
    float lo = -INFINITY, hi = INFINITY;
    if (take_attr(n, "min", &a)) {
      lo = a.f;
      wq_attr_clear(&a);
    }
    if (take_attr(n, "max", &a)) {
      hi = a.f;
      wq_attr_clear(&a);
    }
    int tl = float_scalar(c, n->name, "_min", lo);
    int th = tl < 0 ? -1 : float_scalar(c, n->name, "_max", hi);
    *oom_hit = th < 0 || !append_input(n, tl) || !append_input(n, th);
    return !*oom_hit;
  }
  if (strncmp(op, "Softmax", 7) == 0 || strcmp(op, "LogSoftmax") == 0 ||
      strcmp(op, "Hardmax") == 0) {
    /* Before 13 the input was coerced to 2-D at `axis` (default 1): the
     * same as 13's single axis only when that axis is the last one. */
    const wq_tensor *x = &c->g->tensors[n->inputs[0]];
    const wq_attr *ax = wq_node_attr(n, "axis");
    int64_t axis = ax ? ax->i : 1;
    if (x->rank < 1 || (axis < 0 ? axis + x->rank : axis) != x->rank - 1)
      return false;
    return true;
  }
  const char *list = strcmp(op, "Slice") == 0 ? "starts" : "axes";
  if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0 || strncmp(op, "Reduce", 6) == 0) {
    if (n->n_inputs != 1)
      return false;
    if (!take_attr(n, "axes", &a))
      return true; /* no axes: the same default */
    int t = int64_list(c, n->name, "_axes", a.ints, a.count);
    wq_attr_clear(&a);
    *oom_hit = t < 0 || !append_input(n, t);
    return !*oom_hit;
  }
  if (strcmp(op, "Slice") == 0 && n->n_inputs == 1) {
    wq_attr starts, ends, axes;
    if (!take_attr(n, list, &starts))
      return false;
    if (!take_attr(n, "ends", &ends)) {
      wq_attr_clear(&starts);
      return false;
    }
    bool has_axes = take_attr(n, "axes", &axes);
    int ts = int64_list(c, n->name, "_starts", starts.ints, starts.count);
    int te = ts < 0 ? -1 : int64_list(c, n->name, "_ends", ends.ints, ends.count);
    int ta = te < 0 || !has_axes ? -1 : int64_list(c, n->name, "_axes", axes.ints, axes.count);
    *oom_hit = te < 0 || (has_axes && ta < 0) || !append_input(n, ts) || !append_input(n, te) ||
               (has_axes && !append_input(n, ta));
    wq_attr_clear(&starts);
    wq_attr_clear(&ends);
    if (has_axes)
      wq_attr_clear(&axes);
    return !*oom_hit;
  }
  return false;
}

/* Moves the model to opset 13 (per-channel DequantizeLinear) or 21 (blocked,
 * for per-group weights) where that keeps every node's meaning; sets
 * per_channel / blocked to what the model's opset then allows. */
static wq_status choose_opset(convert_ctx *c, wq_model_ir *ir, bool want_blocked, wq_error *err) {
  wq_opset_import *onnx = NULL;
  for (int k = 0; k < ir->n_opsets; k++)
    if (!ir->opsets[k].domain || !ir->opsets[k].domain[0] ||
        strcmp(ir->opsets[k].domain, "ai.onnx") == 0)
      onnx = &ir->opsets[k];
  if (!onnx)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "the model imports no ai.onnx opset");
  /* A node graph preparation wrote for a newer opset (HardSwish: 14) raises
   * the target too. */
  int target = want_blocked ? 21 : 13;
  for (int i = 0; i < ir->graph->n_nodes; i++)
    if ((!ir->graph->nodes[i].domain || !ir->graph->nodes[i].domain[0]) &&
        ir->graph->nodes[i].opset > target)
      target = ir->graph->nodes[i].opset;
  int from = (int)onnx->version;
  const wq_node *blocker = NULL;
  if (from < target) {
    /* Every node must carry over before any is changed. */
    for (int i = 0; i < ir->graph->n_nodes && !blocker; i++) {
      const wq_node *n = &ir->graph->nodes[i];
      int v = changed_at(n->op_type);
      if ((!n->domain || !n->domain[0]) && v && from < v && v <= target &&
          !upgradable(ir->graph, n))
        blocker = n;
    }
  }
  if (from < target && !blocker) {
    bool oom_hit = false;
    for (int i = 0; i < ir->graph->n_nodes; i++) {
      if (!upgrade_node(c, &ir->graph->nodes[i], from, target, &oom_hit) && oom_hit)
        return oom(err);
      if (!ir->graph->nodes[i].domain || !ir->graph->nodes[i].domain[0])
        ir->graph->nodes[i].opset = target;
    }
    onnx->version = target;
    if (ir->ir_version < (target >= 21 ? 10 : 7))
      ir->ir_version = target >= 21 ? 10 : 7;
  }
  if (want_blocked && onnx->version < 21)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, blocker ? blocker->name : NULL,
                   "per-group weights need opset 21 (blocked DequantizeLinear); the model has "
                   "opset %lld and %s '%s' cannot be carried over",
                   (long long)onnx->version, blocker ? blocker->op_type : "?",
                   blocker ? blocker->name : "?");
  if (onnx->version < 10)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, blocker ? blocker->name : NULL,
                   "the model's opset %lld has no QuantizeLinear, and %s '%s' cannot be carried "
                   "over to opset 13",
                   (long long)onnx->version, blocker ? blocker->op_type : "?",
                   blocker ? blocker->name : "?");
  c->per_channel = onnx->version >= 13;
  c->blocked = onnx->version >= 21;
  return WQ_OK;
}

static bool any_grouped(const wq_annotation *a) {
  for (int t = 0; t < a->n_tensors; t++)
    if (a->tensors[t].kind == WQ_ANN_T_WEIGHT &&
        a->tensors[t].spec->granularity == WQ_QGRAN_PER_GROUP)
      return true;
  return false;
}

static bool grouped(const convert_ctx *c, int w) {
  return w >= 0 && c->a->tensors[w].kind == WQ_ANN_T_WEIGHT &&
         c->a->tensors[w].spec->granularity == WQ_QGRAN_PER_GROUP;
}

/* ---- the rewrite ----------------------------------------------------------- */

static wq_status rewrite(convert_ctx *c, wq_error *err) {
  wq_graph *g = c->g;
  const wq_annotation *a = c->a;
  for (int i = 0; i < g->n_inputs; i++) {
    int t = g->inputs[i];
    if (a->tensors[t].kind == WQ_ANN_T_ACTIVATION)
      WQ_TRY(quantize_activation(c, t, -1, err));
  }
  int n_orig = g->n_nodes;
  for (int i = 0; i < n_orig; i++) {
    c->lin_x[i] = g->nodes[i].n_inputs > 0 ? g->nodes[i].inputs[0] : -1;
    c->lin_w[i] = g->nodes[i].n_inputs > 1 ? g->nodes[i].inputs[1] : -1;
  }
  for (int i = 0; i < n_orig; i++) {
    wq_node *n = &g->nodes[i];
    const wq_ann_node *an = &a->nodes[i];
    bool quantized = an->decision == WQ_ANN_QUANTIZED || an->decision == WQ_ANN_ABSORBED;
    for (int k = 0; k < n->n_inputs; k++) {
      int t = n->inputs[k];
      if (t < 0 || t >= c->n_orig_tensors)
        continue;
      const wq_ann_tensor *at = &a->tensors[t];
      /* Quantized constants only where a quantized node reads them. */
      if (quantized && (at->kind == WQ_ANN_T_WEIGHT || at->kind == WQ_ANN_T_CONSTANT) &&
          !(an->role == WQ_QROLE_LINEAR && k == 2))
        WQ_TRY(quantize_constant(c, t, err));
      if (c->replace[t] >= 0 && (at->kind == WQ_ANN_T_ACTIVATION || quantized))
        n->inputs[k] = c->replace[t];
    }
    /* The bias: on the linear itself, or on the Add absorbed into it. */
    /* A per-group weight has no one scale per channel: its bias stays float. */
    if (an->decision == WQ_ANN_QUANTIZED && an->role == WQ_QROLE_LINEAR && an->bias >= 0 &&
        an->bias_node < 0 && !grouped(c, c->lin_w[i]))
      WQ_TRY(quantize_bias(c, i, n, 2, err));
    if (an->decision == WQ_ANN_ABSORBED && an->linear >= 0 && a->nodes[an->linear].bias_node == i &&
        !grouped(c, c->lin_w[an->linear]))
      WQ_TRY(
          quantize_bias(c, an->linear, n, n->inputs[0] == a->nodes[an->linear].bias ? 0 : 1, err));
    int outs[8], n_outs = 0;
    for (int k = 0; k < n->n_outputs && n_outs < 8; k++) {
      int t = n->outputs[k];
      if (t >= 0 && t < c->n_orig_tensors && a->tensors[t].kind == WQ_ANN_T_ACTIVATION)
        outs[n_outs++] = t;
    }
    WQ_TRY(copy_node(c, n, err));
    int at = c->n_nodes - 1;
    for (int k = 0; k < n_outs; k++)
      WQ_TRY(quantize_activation(c, outs[k], at, err));
  }
  /* The new list takes over every original node's contents. */
  free(g->nodes);
  g->nodes = c->nodes;
  g->n_nodes = c->n_nodes;
  g->cap_nodes = c->cap_nodes;
  c->nodes = NULL;
  c->n_nodes = c->cap_nodes = 0;
  free(c->from_graph);
  c->from_graph = NULL;
  return WQ_OK;
}

wq_status wq_qdq_convert(const wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                         uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  *onnx = NULL;
  *onnx_len = 0;
  wq_model *m = NULL;
  wq_quant_prepare_stats folds;
  WQ_TRY(wq_quantizer_load_float(q, &folds, &m, err));
  wq_model_ir *ir = wq_model_release_ir(m);
  if (!ir)
    return oom(err);
  wq_graph *g = ir->graph;
  convert_ctx c = {.g = g, .a = a, .p = p, .cfg = wq_quantizer_config(q), .q = q};
  wq_status st = WQ_OK;
  if (g->n_tensors != a->n_tensors || g->n_nodes != a->n_nodes)
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                 "the float graph loaded differently the second time");
  if (st == WQ_OK) {
    c.n_orig_tensors = a->n_tensors;
    size_t nt = (size_t)g->n_tensors + 1;
    c.replace = malloc(nt * sizeof *c.replace);
    c.cluster_scale = malloc(nt * sizeof *c.cluster_scale);
    c.cluster_zp = malloc(nt * sizeof *c.cluster_zp);
    c.lin_x = malloc(((size_t)g->n_nodes + 1) * sizeof *c.lin_x);
    c.lin_w = malloc(((size_t)g->n_nodes + 1) * sizeof *c.lin_w);
    if (!c.replace || !c.cluster_scale || !c.cluster_zp || !c.lin_x || !c.lin_w)
      st = oom(err);
    for (int t = 0; st == WQ_OK && t < g->n_tensors; t++)
      c.replace[t] = c.cluster_scale[t] = c.cluster_zp[t] = -1;
  }
  if (st == WQ_OK)
    st = choose_opset(&c, ir, any_grouped(a), err);
  if (st == WQ_OK)
    st = rewrite(&c, err);
  if (st == WQ_OK)
    st = wq_onnx_export(ir, onnx, onnx_len, err);
  /* After a failure: the originals still belong to the graph. */
  for (int i = 0; i < c.n_nodes; i++)
    if (!c.from_graph[i])
      wq_node_clear(&c.nodes[i]);
  free(c.nodes);
  free(c.from_graph);
  free(c.lin_x);
  free(c.lin_w);
  free(c.replace);
  free(c.cluster_scale);
  free(c.cluster_zp);
  wq_model_ir_free(ir);
  return st;
}
