/* wq_model: import → resolve ops → bind input shapes → fold constants, then
 * run through the executor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../onnx/onnx_import.h"
#include "../ops/int8_common.h"
#include "../ops/op.h"
#include "../passes/fold_control.h"
#include "../passes/fuse_float.h"
#include "../passes/layout_int8.h"
#include "../passes/lower.h"
#include "../passes/partition.h"
#include "../passes/pass_manager.h"
#include "../runtime/executor.h"
#include "model_internal.h"

static void free_results(wq_model *m) {
  if (!m->results || !m->result_owned)
    return;
  for (int i = 0; i < m->ir->graph->n_outputs; i++) {
    if (m->result_owned[i])
      free(m->results[i].data);
    m->results[i].data = NULL;
    m->result_owned[i] = false;
  }
}

static void free_captured(wq_model *m) {
  if (!m->captured)
    return;
  for (int t = 0; t < m->ir->graph->n_tensors; t++)
    free(m->captured[t].data);
  free(m->captured);
  m->captured = NULL;
}

void wq_model_free(wq_model *m) {
  if (!m)
    return;
  if (m->ir) {
    free_captured(m);
    free_results(m);
    if (m->values && m->owned)
      wq_exec_values_release(m->ir->graph->n_tensors, m->values, m->owned);
  }
  free(m->results);
  free(m->result_owned);
  free(m->values);
  free(m->owned);
  wq_exec_plan_free(&m->plan);
  wq_pool_free(m->pool);
  free(m->scratch);
  for (int i = 0; i < m->n_histogram; i++)
    free(m->histogram[i].op_type);
  free(m->histogram);
  wq_model_ir_free(m->ir);
  free(m);
}

/* Weights live in initializers or, in Paddle and some PyTorch exports, in
 * Constant nodes: both count as parameters. */
static void count_parameter(wq_model *m, const wq_tensor *t) {
  wq_value v = wq_tensor_value(t);
  int64_t n = wq_value_numel(&v);
  if (n > 0)
    m->param_count += n;
  m->param_bytes += t->nbytes;
  m->n_param_tensors++;
}

static wq_status record_file_stats(wq_model *m, wq_error *err) {
  const wq_graph *g = m->ir->graph;
  m->nodes_in_file = g->n_nodes;
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].is_constant)
      count_parameter(m, &g->tensors[t]);
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_attr *value =
        strcmp(g->nodes[i].op_type, "Constant") == 0 ? wq_node_attr(&g->nodes[i], "value") : NULL;
    if (value && value->type == WQ_ATTR_TENSOR && value->t)
      count_parameter(m, value->t);
  }
  m->histogram = calloc((size_t)g->n_nodes + 1, sizeof *m->histogram);
  if (!m->histogram)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < g->n_nodes; i++) {
    int j = 0;
    while (j < m->n_histogram && strcmp(m->histogram[j].op_type, g->nodes[i].op_type) != 0)
      j++;
    if (j == m->n_histogram) {
      m->histogram[j].op_type = wq_strdup(g->nodes[i].op_type);
      if (!m->histogram[j].op_type)
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
      m->n_histogram++;
    }
    m->histogram[j].count++;
  }
  return WQ_OK;
}

/* Every tensor a node touches must have a dtype the runtime executes. */
static wq_status check_dtypes(const wq_graph *g, wq_error *err) {
  for (int i = 0; i < g->n_inputs; i++) {
    const wq_tensor *t = &g->tensors[g->inputs[i]];
    if (t->dtype != WQ_DT_UNDEFINED && !wq_dtype_supported(t->dtype))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "graph input '%s': dtype %s is not supported",
                     t->name, wq_dtype_name(t->dtype));
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
      if (n->inputs[k] < 0)
        continue;
      const wq_tensor *t = &g->tensors[n->inputs[k]];
      if (t->dtype != WQ_DT_UNDEFINED && !wq_dtype_supported(t->dtype))
        return wq_fail(err, WQ_ERR_UNSUPPORTED, n->name,
                       "%s: input '%s' has dtype %s, which is not supported", n->op_type, t->name,
                       wq_dtype_name(t->dtype));
    }
  }
  return WQ_OK;
}

static wq_status bind_input_shapes(wq_graph *g, const wq_load_options *opts, wq_error *err) {
  if (!opts)
    return WQ_OK;
  for (int s = 0; s < opts->n_input_shapes; s++) {
    const wq_input_shape *shape = &opts->input_shapes[s];
    int t = -1;
    for (int i = 0; i < g->n_inputs; i++)
      if (shape->name && strcmp(g->tensors[g->inputs[i]].name, shape->name) == 0)
        t = g->inputs[i];
    if (t < 0)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "input shape given for '%s', which is not a graph input",
                     shape->name ? shape->name : "(null)");
    WQ_TRY(wq_shape_check(shape->dims, shape->rank, NULL, shape->name, err));
    wq_tensor *tensor = &g->tensors[t];
    if (tensor->rank >= 0 && tensor->rank != shape->rank)
      return wq_fail(err, WQ_ERR_SHAPE, NULL, "input '%s' has rank %d, the given shape has rank %d",
                     tensor->name, tensor->rank, shape->rank);
    for (int d = 0; d < shape->rank; d++)
      if (tensor->rank >= 0 && tensor->dims[d] >= 0 && tensor->dims[d] != shape->dims[d])
        return wq_fail(err, WQ_ERR_SHAPE, NULL,
                       "input '%s' dim %d is %lld, the given shape says %lld", tensor->name, d,
                       (long long)tensor->dims[d], (long long)shape->dims[d]);
    tensor->rank = shape->rank;
    for (int d = 0; d < shape->rank; d++) {
      tensor->dims[d] = shape->dims[d];
      free(tensor->dim_params[d]);
      tensor->dim_params[d] = NULL;
    }
  }
  return WQ_OK;
}

/* Lets each op prepare for execution on the final graph (qparams, packed
 * weights, lookup tables). */
static wq_status plan_nodes(wq_graph *g, int *planned, wq_error *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    wq_node *node = &g->nodes[i];
    if (!node->op->plan)
      continue;
    wq_op_kernel k = {NULL, NULL};
    wq_status st = node->op->plan(node, g, &k, err);
    node->rec.kernel = k.name;
    node->rec.kernel_isa = k.isa;
    if (st != WQ_OK) {
      wq_error_set_node(err, node->name);
      return st;
    }
    (*planned)++;
  }
  return WQ_OK;
}

/* ---- the load pipeline --------------------------------------------------- */

/* What the passes share: the caller's options and, between the capture
 * before folding and lowering, the DequantizeLinear records. */
typedef struct {
  const wq_load_options *opts;
  wq_lower_capture *capture;
  bool validate; /* IR checks after each pass (debug builds, validate_ir) */
} load_ctx;

/* The partition mode the options ask for: `partition`, else the older
 * no_lowering (fp) and lower_strict (int) flags. */
static wq_partition_mode load_mode(const wq_load_options *opts) {
  if (!opts)
    return WQ_PARTITION_INT_FP;
  if (opts->partition != WQ_PARTITION_DEFAULT)
    return opts->partition;
  if (opts->no_lowering)
    return WQ_PARTITION_FP;
  return opts->lower_strict ? WQ_PARTITION_INT : WQ_PARTITION_INT_FP;
}

static bool opt_lowering(const void *ctx) {
  const load_ctx *c = ctx;
  return load_mode(c->opts) != WQ_PARTITION_FP;
}

static bool opt_rewrite(const void *ctx) {
  const load_ctx *c = ctx;
  return c->opts && c->opts->rewrite;
}

static bool opt_float_fusion(const void *ctx) {
  const load_ctx *c = ctx;
  return !(c->opts && c->opts->no_float_fusion);
}

static wq_status pass_resolve(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  wq_pass_stat_set(rec, "nodes", g->n_nodes);
  return wq_graph_resolve_ops(g, err);
}

static wq_status pass_check_dtypes(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  (void)rec;
  return check_dtypes(g, err);
}

static wq_status pass_bind_shapes(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  const load_ctx *c = ctx;
  wq_pass_stat_set(rec, "bound", c->opts ? c->opts->n_input_shapes : 0);
  return bind_input_shapes(g, c->opts, err);
}

/* Lowering to int8 ops needs to know which folded constants were int8
 * weights behind a DequantizeLinear: captured before folding. */
static wq_status pass_capture(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  load_ctx *c = ctx;
  WQ_TRY(wq_lower_capture_new(g, &c->capture, err));
  wq_pass_stat_set(rec, "dequantize_nodes", wq_lower_capture_count(c->capture));
  return WQ_OK;
}

static wq_status pass_fold(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  const load_ctx *c = ctx;
  wq_fold_control_stats stats;
  wq_status st = wq_pass_fold_control(g, !(c->opts && c->opts->no_constant_folding), &stats, err);
  wq_pass_stat_set(rec, "folded", stats.fold.nodes_folded);
  wq_pass_stat_set(rec, "shapes_inferred", stats.fold.shapes_inferred);
  wq_pass_stat_set(rec, "shape_reads_rewired", stats.fold.shape_reads_rewired);
  if (stats.ifs_inlined)
    wq_pass_stat_set(rec, "ifs_inlined", stats.ifs_inlined);
  return st;
}

static wq_status pass_rewrite(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  const load_ctx *c = ctx;
  wq_status st = c->opts->rewrite(c->opts->rewrite_ctx, g, err);
  wq_pass_stat_set(rec, "nodes", g->n_nodes);
  return st;
}

static wq_status pass_lower(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  const load_ctx *c = ctx;
  wq_lower_stats stats = {0, 0, 0};
  /* int mode fails here, before anything is rewritten, on what the
   * lowering would leave float; checking builds also verify afterwards that
   * the lowering did to every node what its check answered. */
  const bool strict = load_mode(c->opts) == WQ_PARTITION_INT;
  const int n_nodes = g->n_nodes;
  wq_lower_answer *answers = NULL;
  if (strict || c->validate) {
    wq_status st = wq_lower_check(g, c->capture, strict, c->validate ? &answers : NULL, err);
    if (st != WQ_OK) {
      wq_lower_answers_free(answers, n_nodes);
      return st;
    }
  }
  wq_status st = wq_pass_lower(g, c->capture, &stats, err);
  if (st == WQ_OK && answers)
    st = wq_lower_answers_verify(g, answers, n_nodes, err);
  wq_lower_answers_free(answers, n_nodes);
  wq_pass_stat_set(rec, "lowered", stats.nodes_lowered);
  wq_pass_stat_set(rec, "absorbed", stats.nodes_absorbed);
  wq_pass_stat_set(rec, "kept_float", stats.nodes_kept_float);
  return st;
}

static wq_status pass_partition(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  const load_ctx *c = ctx;
  wq_partition_stats stats;
  memset(&stats, 0, sizeof stats);
  wq_status st = wq_pass_partition(g, load_mode(c->opts), &stats, err);
  wq_pass_stat_set(rec, "int8", stats.int8);
  wq_pass_stat_set(rec, "boundary", stats.boundary);
  wq_pass_stat_set(rec, "float", stats.floats);
  wq_pass_stat_set(rec, "float_on_path", stats.on_path);
  return st;
}

/* Int8 regions run channels-last, with explicit transitions. */
static wq_status pass_layout(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  wq_layout_stats stats = {0, 0, 0, 0, 0};
  wq_status st = wq_pass_layout_int8(g, &stats, err);
  wq_pass_stat_set(rec, "nodes_nhwc", stats.nodes_nhwc);
  wq_pass_stat_set(rec, "transitions", stats.transitions);
  wq_pass_stat_set(rec, "transition_bytes", stats.transition_bytes);
  /* The planner's answer: its minimum, over this many free labels, exact
   * (two labels: a minimum cut). */
  wq_pass_stat_set(rec, "planned_bytes", stats.planned_bytes);
  wq_pass_stat_set(rec, "free_labels", stats.free_labels);
  wq_pass_stat_set(rec, "exact", 1);
  return st;
}

static wq_status pass_fuse_float(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  (void)err;
  int fused = 0;
  wq_pass_fuse_float(g, &fused);
  wq_pass_stat_set(rec, "fused", fused);
  return WQ_OK;
}

static wq_status pass_plan(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err) {
  (void)ctx;
  int planned = 0;
  wq_status st = plan_nodes(g, &planned, err);
  wq_pass_stat_set(rec, "planned", planned);
  return st;
}

/* The load pipeline, in order (WQ_MODEL_PASSES entries). */
static const wq_pass load_passes[WQ_MODEL_PASSES] = {
    {"resolve_ops", pass_resolve, NULL, true},
    {"check_dtypes", pass_check_dtypes, NULL, false},
    {"bind_input_shapes", pass_bind_shapes, NULL, false},
    {"capture_dequantize", pass_capture, opt_lowering, false},
    {"fold_constants", pass_fold, NULL, false},
    {"rewrite", pass_rewrite, opt_rewrite, false},
    {"lower_int8", pass_lower, opt_lowering, false},
    {"partition", pass_partition, NULL, false},
    {"layout_int8", pass_layout, opt_lowering, false},
    {"fuse_float", pass_fuse_float, opt_float_fusion, false},
    {"plan_nodes", pass_plan, NULL, false},
};

int wq_model_partition_mode(const wq_model *m) { return m->mode; }

/* Sums what the planned nodes' kernels hold and keeps the most scratch one
 * node takes (wq_op.memory): the int8 ops' from the model's scratch block
 * (runtime/parallel.h), the float kernels' allocated while they run. */
static void model_kernel_memory(wq_model *m, const wq_graph *g) {
  m->kernel_bytes = m->scratch_bytes = m->float_scratch_bytes = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    int64_t scratch = 0;
    if (!n->op || !n->op->memory)
      continue;
    m->kernel_bytes += (size_t)n->op->memory(n, g, &scratch);
    /* The int8 backend and the ONNX int8 ops (QLinearConv, ConvInteger)
     * take theirs from the block; float kernels allocate. */
    const bool from_block = (n->op->domain && strcmp(n->op->domain, WQ_INT8_DOMAIN) == 0) ||
                            (n->op->flags & WQ_OP_FLAG_INT8);
    size_t *most = from_block ? &m->scratch_bytes : &m->float_scratch_bytes;
    if (from_block)
      scratch = wq_scratch_round(scratch);
    if ((size_t)scratch > *most)
      *most = (size_t)scratch;
  }
}

/* Replaces the scratch block by one of `threads` slices (none when no
 * kernel declared any); keeps the old one when that fails. */
static wq_status model_scratch_alloc(wq_model *m, int threads, wq_error *err) {
  void *block = NULL;
  const size_t bytes = m->scratch_bytes * (size_t)threads;
  if (bytes && (bytes / (size_t)threads != m->scratch_bytes || bytes > SIZE_MAX - 63 ||
                !(block = aligned_alloc(64, (bytes + 63) / 64 * 64))))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL,
                   "out of memory for %d x %zu bytes of kernel scratch", threads, m->scratch_bytes);
  free(m->scratch);
  m->scratch = block;
  return WQ_OK;
}

/* The bytes the memory limit counts before the arena and outputs, for runs
 * on `threads` threads (each holds a slice of the scratch block and may
 * allocate a float kernel's scratch). */
static size_t model_fixed_bytes(const wq_model *m, int threads) {
  return m->weights_bytes + m->kernel_bytes +
         (m->scratch_bytes + m->float_scratch_bytes) * (size_t)threads;
}

static wq_status finish_load(wq_model *m, const wq_load_options *opts, wq_error *err) {
  wq_graph *g = m->ir->graph;
  WQ_TRY(record_file_stats(m, err));
  if (opts && (opts->partition < WQ_PARTITION_DEFAULT || opts->partition > WQ_PARTITION_FP))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "partition mode %d is not one of int+fp, int, fp",
                   (int)opts->partition);
  m->mode = load_mode(opts);
  WQ_TRY(wq_kernel_set_select(&m->kernels, opts ? opts->engine_isas : 0,
                              opts ? opts->kernels - 1 : -1, err));
  g->kernels = &m->kernels;
  bool validate = WQ_VALIDATE_IR_DEFAULT || (opts && opts->validate_ir);
  load_ctx ctx = {opts, NULL, validate};
  if (validate)
    WQ_TRY(wq_graph_validate(g, false, err));
  wq_status st = wq_pass_run_all(load_passes, WQ_MODEL_PASSES, &ctx, g, validate, m->passes, err);
  wq_lower_capture_free(ctx.capture);
  for (int p = 0; p < WQ_MODEL_PASSES; p++)
    if (strcmp(m->passes[p].name, "fold_constants") == 0 && m->passes[p].n_stats > 0)
      m->nodes_folded = (int)m->passes[p].stats[0].value;
  WQ_TRY(st);
  size_t limit = opts ? opts->max_memory_bytes : 0, weights = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].is_constant)
      weights += g->tensors[t].nbytes;
  model_kernel_memory(m, g);
  m->weights_bytes = weights;
  weights = model_fixed_bytes(m, 1);
  if (limit && weights > limit)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL,
                   "memory limit: the weights take %zu bytes (%zu as loaded, %zu held by the "
                   "kernels, %zu of kernel scratch), more than the limit of %zu bytes "
                   "(maxMemoryBytes)",
                   weights, m->weights_bytes, m->kernel_bytes,
                   m->scratch_bytes + m->float_scratch_bytes, limit);
  WQ_TRY(wq_exec_plan_init_within(&m->plan, g, limit, weights, err));
  WQ_TRY(model_scratch_alloc(m, wq_pool_threads(m->pool), err));
  size_t nt = (size_t)g->n_tensors + 1;
  m->values = calloc(nt, sizeof *m->values);
  m->owned = calloc(nt, sizeof *m->owned);
  m->results = calloc((size_t)g->n_outputs + 1, sizeof *m->results);
  m->result_owned = calloc((size_t)g->n_outputs + 1, sizeof *m->result_owned);
  if (!m->values || !m->owned || !m->results || !m->result_owned)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  for (int t = 0; t < g->n_tensors; t++)
    if (g->tensors[t].is_constant)
      m->values[t] = wq_tensor_value(&g->tensors[t]);
  return WQ_OK;
}

int wq_model_pass_count(const wq_model *m) {
  (void)m;
  return WQ_MODEL_PASSES;
}

const wq_pass_record *wq_model_pass(const wq_model *m, int i) {
  return i >= 0 && i < WQ_MODEL_PASSES ? &m->passes[i] : NULL;
}

wq_status wq_model_load(const uint8_t *bytes, size_t n, const wq_load_options *opts, wq_model **out,
                        wq_error *err) {
  wq_error_clear(err);
  *out = NULL;
  if (!bytes && n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "model bytes are NULL");
  wq_model *m = calloc(1, sizeof *m);
  if (!m)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  wq_status st = wq_onnx_import(bytes, n, &m->ir, err);
  if (st == WQ_OK)
    st = finish_load(m, opts, err);
  if (st != WQ_OK) {
    wq_model_free(m);
    return st;
  }
  *out = m;
  return WQ_OK;
}

const wq_model_ir *wq_model_get_ir(const wq_model *m) { return m->ir; }

wq_model_ir *wq_model_release_ir(wq_model *m) {
  /* Results and run buffers index the graph: release them while it is here. */
  wq_model_ir *ir = m->ir;
  if (ir) {
    free_captured(m);
    free_results(m);
    if (m->values && m->owned)
      wq_exec_values_release(ir->graph->n_tensors, m->values, m->owned);
  }
  m->ir = NULL;
  if (ir && ir->graph) /* its kernel selection stays with the model */
    ir->graph->kernels = NULL;
  wq_model_free(m);
  return ir;
}

void wq_model_observe(wq_model *m,
                      wq_status (*fn)(void *ctx, const wq_graph *g, int node,
                                      const wq_value *values, wq_error *err),
                      void *ctx) {
  free_captured(m);
  m->plan.observe = fn;
  m->plan.observe_ctx = fn ? ctx : NULL;
}
int wq_model_input_count(const wq_model *m) { return m->ir->graph->n_inputs; }
int wq_model_output_count(const wq_model *m) { return m->ir->graph->n_outputs; }

const wq_tensor *wq_model_input(const wq_model *m, int i) {
  const wq_graph *g = m->ir->graph;
  return (i >= 0 && i < g->n_inputs) ? &g->tensors[g->inputs[i]] : NULL;
}

const wq_tensor *wq_model_output(const wq_model *m, int i) {
  const wq_graph *g = m->ir->graph;
  return (i >= 0 && i < g->n_outputs) ? &g->tensors[g->outputs[i]] : NULL;
}

int wq_model_input_index(const wq_model *m, const char *name) {
  const wq_graph *g = m->ir->graph;
  for (int i = 0; i < g->n_inputs; i++)
    if (strcmp(g->tensors[g->inputs[i]].name, name) == 0)
      return i;
  return -1;
}

/* Symbolic dims must bind to one value per run across all inputs. */
typedef struct {
  const char *name;
  int64_t value;
} dim_binding;

/* The error for an input whose shape differs from its declaration. */
static wq_status shape_mismatch(const wq_tensor *decl, const wq_value *v, int dim, wq_error *err) {
  char got[128], want[128];
  wq_dims_format(v->dims, v->rank, got, sizeof got);
  wq_dims_format(decl->dims, decl->rank, want, sizeof want);
  if (dim < 0)
    return wq_fail(err, WQ_ERR_SHAPE, NULL, "input '%s' must have shape %s, got %s", decl->name,
                   want, got);
  return wq_fail(err, WQ_ERR_SHAPE, NULL, "input '%s' must have shape %s, got %s (dim %d)",
                 decl->name, want, got, dim);
}

static wq_status check_run_input(const wq_tensor *decl, const wq_value *v, dim_binding *bindings,
                                 int *n_bindings, int max_bindings, wq_error *err) {
  if (decl->dtype != WQ_DT_UNDEFINED && v->dtype != decl->dtype)
    return wq_fail(err, WQ_ERR_SHAPE, NULL, "input '%s' must be %s, got %s", decl->name,
                   wq_dtype_name(decl->dtype), wq_dtype_name(v->dtype));
  if (!wq_dtype_supported(v->dtype))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "input '%s': dtype %s is not supported",
                   decl->name, wq_dtype_name(v->dtype));
  WQ_TRY(wq_shape_check(v->dims, v->rank, NULL, decl->name, err));
  if (decl->rank >= 0 && decl->rank != v->rank)
    return shape_mismatch(decl, v, -1, err);
  for (int d = 0; decl->rank >= 0 && d < v->rank; d++) {
    if (decl->dims[d] >= 0 && decl->dims[d] != v->dims[d])
      return shape_mismatch(decl, v, d, err);
    const char *param = decl->dim_params[d];
    if (decl->dims[d] >= 0 || !param)
      continue;
    int b = 0;
    while (b < *n_bindings && strcmp(bindings[b].name, param) != 0)
      b++;
    if (b < *n_bindings && bindings[b].value != v->dims[d])
      return wq_fail(err, WQ_ERR_SHAPE, NULL,
                     "input '%s' dim %d ('%s') is %lld but another input bound it to %lld",
                     decl->name, d, param, (long long)v->dims[d], (long long)bindings[b].value);
    if (b == *n_bindings && b < max_bindings) {
      bindings[b].name = param;
      bindings[b].value = v->dims[d];
      (*n_bindings)++;
    }
  }
  if (!v->data && wq_value_nbytes(v) > 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "input '%s' has no data", decl->name);
  return WQ_OK;
}

static wq_status collect_results(wq_model *m, wq_error *err) {
  const wq_graph *g = m->ir->graph;
  for (int i = 0; i < g->n_outputs; i++) {
    int t = g->outputs[i];
    wq_value v = m->values[t];
    if (m->owned[t]) {
      m->owned[t] = false; /* ownership moves to the result */
      m->result_owned[i] = true;
    } else if (m->plan.producer[t] >= 0) {
      /* In the plan's output buffers (or listed twice): valid until the next run. */
    } else {
      /* A constant or an input passed straight through: copy it. */
      size_t nbytes = wq_value_nbytes(&v);
      void *copy = malloc(nbytes ? nbytes : 1);
      if (!copy)
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
      if (nbytes)
        memcpy(copy, v.data, nbytes);
      v.data = copy;
      m->result_owned[i] = true;
    }
    m->results[i] = v;
  }
  return WQ_OK;
}

wq_status wq_model_run(wq_model *m, const wq_value *inputs, int n, wq_error *err) {
  wq_error_clear(err);
  wq_graph *g = m->ir->graph;
  free_results(m);
  if (n != g->n_inputs)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "model takes %d inputs, got %d", g->n_inputs, n);
  dim_binding bindings[32];
  int n_bindings = 0;
  for (int i = 0; i < n; i++)
    WQ_TRY(check_run_input(&g->tensors[g->inputs[i]], &inputs[i], bindings, &n_bindings, 32, err));
  wq_exec_values_release(g->n_tensors, m->values, m->owned);
  /* Constants were filled in at load and no run writes them; every other
   * value is written by its producer before any node reads it, so only its
   * data (a slot of the previous run) is cleared here. */
  for (int t = 0; t < g->n_tensors; t++)
    if (!g->tensors[t].is_constant)
      m->values[t].data = NULL;
  for (int i = 0; i < n; i++)
    m->values[g->inputs[i]] = inputs[i];
  wq_pool *caller_pool = wq_pool_bind(m->pool);
  wq_scratch caller_scratch = wq_scratch_bind((wq_scratch){m->scratch, m->scratch_bytes});
  wq_status st = wq_execute(&m->plan, m->values, m->owned, err);
  wq_scratch_bind(caller_scratch);
  wq_pool_bind(caller_pool);
  if (st == WQ_OK)
    st = collect_results(m, err);
  if (st != WQ_OK)
    free_results(m);
  wq_exec_values_release(g->n_tensors, m->values, m->owned);
  return st;
}

void wq_model_memory(const wq_model *m, wq_memory_info *out) {
  wq_arena_stats s = wq_exec_arena_stats(&m->plan);
  memset(out, 0, sizeof *out);
  out->planned = s.planned;
  out->planned_at_load = s.planned_at_load;
  out->arena_bytes = s.arena_bytes;
  out->lower_bound_bytes = s.lower_bound;
  out->unshared_bytes = s.unshared_bytes;
  out->n_tensors = s.n_tensors;
  out->plans_built = s.plans_built;
}

const wq_value *wq_model_result(const wq_model *m, int i) {
  if (i < 0 || i >= m->ir->graph->n_outputs || !m->results[i].data)
    return NULL;
  return &m->results[i];
}

wq_status wq_model_set_threads(wq_model *m, int threads, wq_error *err) {
  wq_pool *pool = NULL;
  if (threads > 1)
    WQ_TRY(wq_pool_new(threads, &pool, err));
  else if (threads < 1)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "threads must be >= 1 (got %d)", threads);
  wq_status st = model_scratch_alloc(m, wq_pool_threads(pool), err);
  if (st != WQ_OK) {
    wq_pool_free(pool);
    return st;
  }
  wq_pool_free(m->pool);
  m->pool = pool;
  /* Runs now hold one slice of scratch per thread: a run the limit no
   * longer allows fails with WQ_ERR_OUT_OF_MEMORY. */
  m->plan.memory_fixed = model_fixed_bytes(m, wq_pool_threads(pool));
  return WQ_OK;
}

int wq_model_threads(const wq_model *m) { return wq_pool_threads(m->pool); }

void wq_model_time_limit(wq_model *m, double (*now_ms)(void), double ms) {
  m->plan.time_limit_ms = now_ms && ms > 0 ? ms : 0;
  m->plan.limit_now_ms = now_ms;
}

wq_status wq_model_profile(wq_model *m, double (*now_ms)(void), wq_error *err) {
  free(m->plan.node_ms);
  m->plan.node_ms = NULL;
  m->plan.now_ms = NULL;
  if (!now_ms)
    return WQ_OK;
  m->plan.node_ms = calloc(2 * (size_t)m->ir->graph->n_nodes + 1, sizeof *m->plan.node_ms);
  if (!m->plan.node_ms)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for node timings");
  m->plan.now_ms = now_ms;
  return WQ_OK;
}

/* Executor observer: copies the node's outputs (their buffers are reused by
 * later nodes). */
static wq_status capture_outputs(void *ctx, const wq_graph *g, int i, const wq_value *values,
                                 wq_error *err) {
  wq_model *m = ctx;
  const wq_node *node = &g->nodes[i];
  for (int k = 0; k < node->n_outputs; k++) {
    int t = node->outputs[k];
    if (t < 0 || !values[t].data)
      continue;
    size_t bytes = wq_value_nbytes(&values[t]);
    wq_value *c = &m->captured[t];
    free(c->data);
    *c = values[t];
    c->data = malloc(bytes ? bytes : 1);
    if (!c->data)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name,
                     "out of memory capturing '%s' (%zu bytes)", g->tensors[t].name, bytes);
    memcpy(c->data, values[t].data, bytes);
  }
  return WQ_OK;
}

wq_status wq_model_capture(wq_model *m, bool on, wq_error *err) {
  free_captured(m);
  m->plan.observe = NULL;
  m->plan.observe_ctx = NULL;
  if (!on)
    return WQ_OK;
  m->captured = calloc((size_t)m->ir->graph->n_tensors + 1, sizeof *m->captured);
  if (!m->captured)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for capture");
  m->plan.observe = capture_outputs;
  m->plan.observe_ctx = m;
  return WQ_OK;
}

const wq_value *wq_model_captured(const wq_model *m, int t) {
  if (!m->captured || t < 0 || t >= m->ir->graph->n_tensors || !m->captured[t].data)
    return NULL;
  return &m->captured[t];
}

int wq_model_tensor_count(const wq_model *m) { return m->ir->graph->n_tensors; }

double wq_model_node_ms(const wq_model *m, int i, int kind) {
  if (!m->plan.node_ms || i < 0 || i >= m->ir->graph->n_nodes || kind < 0 || kind > 1)
    return 0.0;
  return m->plan.node_ms[2 * i + kind];
}

int wq_model_node_count(const wq_model *m) { return m->ir->graph->n_nodes; }

const char *wq_model_node_op(const wq_model *m, int i) {
  const wq_graph *g = m->ir->graph;
  return i >= 0 && i < g->n_nodes && g->nodes[i].op_type ? g->nodes[i].op_type : "";
}

const char *wq_model_node_name(const wq_model *m, int i) {
  const wq_graph *g = m->ir->graph;
  return i >= 0 && i < g->n_nodes && g->nodes[i].name ? g->nodes[i].name : "";
}

char *wq_model_describe_lowered(const wq_model *m) { return wq_lower_describe(m->ir->graph); }
