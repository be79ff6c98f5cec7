#include "wasm_exports.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/format.h"
#include "model_internal.h"
#include "wasm_exports_internal.h"

/* A loaded model plus the inputs staged for its next run. */
struct wqx_model {
  wq_model *model;
  wqx_staging staging;
};

WQX_EXPORT void *wqx_malloc(int32_t nbytes) {
  return nbytes < 0 ? NULL : malloc(nbytes > 0 ? (size_t)nbytes : 1);
}

WQX_EXPORT void wqx_free(void *p) { free(p); }

WQX_EXPORT void wqx_test_trap(int32_t kind) {
  if (kind == 1)
    abort();
  if (kind == 2) {
    /* Past the end of any wasm32 memory the module can have grown to. */
    volatile const unsigned char *far = (const unsigned char *)(uintptr_t)0xfffffff0u;
    (void)far[0]; /* a volatile read: performed, and it traps */
  }
  __builtin_trap();
}

WQX_EXPORT wqx_ctx *wqx_ctx_new(void) {
  wqx_ctx *ctx = calloc(1, sizeof *ctx);
  if (ctx)
    wq_error_clear(&ctx->err);
  return ctx;
}

WQX_EXPORT void wqx_ctx_free(wqx_ctx *ctx) { free(ctx); }

WQX_EXPORT void wqx_ctx_clear(wqx_ctx *ctx) {
  if (!ctx)
    return;
  wq_error_clear(&ctx->err);
  ctx->report[0] = '\0';
}

WQX_EXPORT int32_t wqx_error_code(const wqx_ctx *ctx) { return ctx ? (int32_t)ctx->err.code : 0; }

WQX_EXPORT const char *wqx_error_name(const wqx_ctx *ctx) {
  return wq_status_name(ctx ? ctx->err.code : WQ_OK);
}

WQX_EXPORT const char *wqx_error_node(const wqx_ctx *ctx) { return ctx ? ctx->err.node : ""; }

WQX_EXPORT const char *wqx_error_message(const wqx_ctx *ctx) { return ctx ? ctx->err.message : ""; }

void wqx_input_shapes_free(wqx_input_shapes *s) {
  free(s->shapes);
  free(s->dims);
  s->shapes = NULL;
  s->dims = NULL;
  s->n = 0;
}

wq_status wqx_input_shapes_read(wqx_input_shapes *s, int32_t n_shapes, const char *const *names,
                                const int32_t *ranks, const int32_t *dims, const char *what,
                                wq_error *err) {
  s->shapes = NULL;
  s->dims = NULL;
  s->n = 0;
  if (n_shapes < 0 || (n_shapes > 0 && (!names || !ranks)))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "%s: invalid input shapes", what);
  size_t total_dims = 0;
  for (int32_t k = 0; k < n_shapes; k++) {
    if (!names[k] || ranks[k] < 0 || ranks[k] > WQ_MAX_RANK)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "%s: input shape %d has rank %d (expected 0..%d)", what, (int)k, (int)ranks[k],
                     WQ_MAX_RANK);
    total_dims += (size_t)ranks[k];
  }
  if (n_shapes == 0)
    return WQ_OK;
  if (total_dims > 0 && !dims)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "%s: input shape dims missing", what);
  s->shapes = calloc((size_t)n_shapes, sizeof *s->shapes);
  s->dims = calloc(total_dims > 0 ? total_dims : 1, sizeof *s->dims);
  if (!s->shapes || !s->dims) {
    wqx_input_shapes_free(s);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "%s: out of memory", what);
  }
  s->n = n_shapes;
  size_t at = 0;
  for (int32_t k = 0; k < n_shapes; k++) {
    s->shapes[k].name = names[k];
    s->shapes[k].rank = ranks[k];
    s->shapes[k].dims = s->dims + at;
    for (int32_t d = 0; d < ranks[k]; d++, at++)
      s->dims[at] = dims[at];
  }
  return WQ_OK;
}

/* wqx_load flag beside wasm_exports.h's: the JS loader executed the
 * relaxed-SIMD probe and it passed (src/js/relaxed_probe.mjs), so relaxed
 * kernels may run (kernels/config.c). */
#define WQX_LOAD_ENGINE_RELAXED (1 << 4)
#define RELAXED_PROBED_ISAS                                                                        \
  (WQ_ISA_BIT(WQ_ISA_REF) | WQ_ISA_BIT(WQ_ISA_SIMD128) | WQ_ISA_BIT(WQ_ISA_RELAXED))

WQX_EXPORT wqx_model *wqx_load(wqx_ctx *ctx, const uint8_t *bytes, int32_t n_bytes,
                               int32_t n_shapes, const char *const *shape_names,
                               const int32_t *shape_ranks, const int32_t *shape_dims, int32_t flags,
                               double max_memory_bytes) {
  if (!ctx)
    return NULL;
  wq_error_clear(&ctx->err);
  if (!bytes || n_bytes < 0) {
    wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "load: invalid arguments");
    return NULL;
  }
  wqx_input_shapes shapes;
  if (wqx_input_shapes_read(&shapes, n_shapes, shape_names, shape_ranks, shape_dims, "load",
                            &ctx->err) != WQ_OK)
    return NULL;
  wq_load_options opts = {
      .input_shapes = shapes.shapes,
      .n_input_shapes = shapes.n,
      .no_lowering = (flags & WQX_LOAD_NO_LOWERING) != 0,
      .lower_strict = (flags & WQX_LOAD_STRICT_INT8) != 0,
      .partition =
          (wq_partition_mode)((flags & WQX_LOAD_PARTITION_MASK) >> WQX_LOAD_PARTITION_SHIFT),
      .engine_isas = (flags & WQX_LOAD_ENGINE_RELAXED) ? RELAXED_PROBED_ISAS : 0,
      .max_memory_bytes = !(max_memory_bytes >= 1.0)             ? 0
                          : max_memory_bytes >= (double)SIZE_MAX ? SIZE_MAX
                                                                 : (size_t)max_memory_bytes};
  wq_model *loaded = NULL;
  wq_status st = wq_model_load(bytes, (size_t)n_bytes, &opts, &loaded, &ctx->err);
  wqx_input_shapes_free(&shapes);
  if (st != WQ_OK)
    return NULL;

  wqx_model *model = calloc(1, sizeof *model);
  if (!model) {
    wq_model_free(loaded);
    wq_fail(&ctx->err, WQ_ERR_OUT_OF_MEMORY, NULL, "load: out of memory");
    return NULL;
  }
  model->model = loaded;
  if (wqx_staging_init(&model->staging, wq_model_input_count(loaded), &ctx->err) != WQ_OK) {
    wq_model_free(loaded);
    free(model);
    return NULL;
  }
  return model;
}

WQX_EXPORT void wqx_model_free(wqx_model *model) {
  if (!model)
    return;
  wq_model_free(model->model);
  wqx_staging_free(&model->staging);
  free(model);
}

WQX_EXPORT int32_t wqx_input_count(const wqx_model *model) {
  return model ? wq_model_input_count(model->model) : 0;
}

WQX_EXPORT int32_t wqx_output_count(const wqx_model *model) {
  return model ? wq_model_output_count(model->model) : 0;
}

const wq_tensor *wqx_model_input_tensor(const wq_model *m, int32_t i) {
  if (!m || i < 0 || i >= wq_model_input_count(m))
    return NULL;
  return wq_model_input(m, i);
}

static const wq_tensor *input_tensor(const wqx_model *model, int32_t i) {
  return model ? wqx_model_input_tensor(model->model, i) : NULL;
}

static const wq_tensor *output_tensor(const wqx_model *model, int32_t i) {
  if (!model || i < 0 || i >= wq_model_output_count(model->model))
    return NULL;
  return wq_model_output(model->model, i);
}

WQX_EXPORT const char *wqx_input_name(const wqx_model *model, int32_t i) {
  return wqx_tensor_name(input_tensor(model, i));
}

WQX_EXPORT int32_t wqx_input_dtype(const wqx_model *model, int32_t i) {
  return wqx_tensor_dtype(input_tensor(model, i));
}

WQX_EXPORT int32_t wqx_input_rank(const wqx_model *model, int32_t i) {
  return wqx_tensor_rank(input_tensor(model, i));
}

WQX_EXPORT int32_t wqx_input_dim(const wqx_model *model, int32_t i, int32_t d) {
  return wqx_tensor_dim(input_tensor(model, i), d);
}

WQX_EXPORT const char *wqx_input_dim_param(const wqx_model *model, int32_t i, int32_t d) {
  return wqx_tensor_dim_param(input_tensor(model, i), d);
}

WQX_EXPORT const char *wqx_output_name(const wqx_model *model, int32_t i) {
  return wqx_tensor_name(output_tensor(model, i));
}

WQX_EXPORT int32_t wqx_output_dtype(const wqx_model *model, int32_t i) {
  return wqx_tensor_dtype(output_tensor(model, i));
}

WQX_EXPORT int32_t wqx_output_rank(const wqx_model *model, int32_t i) {
  return wqx_tensor_rank(output_tensor(model, i));
}

WQX_EXPORT int32_t wqx_output_dim(const wqx_model *model, int32_t i, int32_t d) {
  return wqx_tensor_dim(output_tensor(model, i), d);
}

WQX_EXPORT const char *wqx_output_dim_param(const wqx_model *model, int32_t i, int32_t d) {
  return wqx_tensor_dim_param(output_tensor(model, i), d);
}

wq_status wqx_staging_init(wqx_staging *s, int n, wq_error *err) {
  s->n = n;
  s->values = calloc(n > 0 ? (size_t)n : 1, sizeof *s->values);
  s->set = calloc(n > 0 ? (size_t)n : 1, 1);
  if (!s->values || !s->set) {
    wqx_staging_free(s);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory staging %d inputs", n);
  }
  return WQ_OK;
}

void wqx_staging_free(wqx_staging *s) {
  free(s->values);
  free(s->set);
  s->values = NULL;
  s->set = NULL;
  s->n = 0;
}

wq_status wqx_staging_set(wqx_staging *s, const wq_model *m, int32_t i, int32_t dtype, int32_t rank,
                          const int32_t *dims, void *data, int32_t nbytes, wq_error *err) {
  if (i < 0 || i >= s->n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "set_input: input index %d out of range", (int)i);
  if (rank < 0 || rank > WQ_MAX_RANK || (rank > 0 && !dims))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "set_input: input %d has rank %d", (int)i,
                   (int)rank);
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = (wq_dtype)dtype;
  v.rank = rank;
  for (int32_t d = 0; d < rank; d++)
    v.dims[d] = dims[d];
  const wq_tensor *t = wqx_model_input_tensor(m, i);
  const char *name = t && t->name ? t->name : "input";
  WQ_TRY(wq_shape_check(v.dims, rank, NULL, name, err));
  if (!wq_dtype_supported(dtype))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "set_input: input '%s' has dtype %s", name,
                   wq_dtype_name(dtype));
  /* The only bytes the run may read are the nbytes the caller copied in:
   * a shape asking for more (or fewer) is refused before any read. */
  size_t need = wq_value_nbytes(&v);
  if (nbytes < 0 || need != (size_t)nbytes) {
    char shape[96];
    wq_dims_format(v.dims, rank, shape, sizeof shape);
    return wq_fail(err, WQ_ERR_SHAPE, NULL,
                   "set_input: input '%s' dims %s of %s need %zu bytes, %d were given", name, shape,
                   wq_dtype_name(dtype), need, (int)nbytes);
  }
  if (!data && need > 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "set_input: input '%s' has no data", name);
  v.data = data;
  s->values[i] = v;
  s->set[i] = 1;
  return WQ_OK;
}

wq_status wqx_staging_check(const wqx_staging *s, const wq_model *m, const char *what,
                            wq_error *err) {
  for (int i = 0; i < s->n; i++) {
    if (!s->set[i]) {
      const wq_tensor *t = wqx_model_input_tensor(m, i);
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "%s: input '%s' was not set", what,
                     t && t->name ? t->name : "?");
    }
  }
  return WQ_OK;
}

void wqx_staging_clear(wqx_staging *s) {
  if (s->set)
    memset(s->set, 0, (size_t)s->n);
}

WQX_EXPORT int32_t wqx_set_input(wqx_ctx *ctx, wqx_model *model, int32_t i, int32_t dtype,
                                 int32_t rank, const int32_t *dims, void *data, int32_t nbytes) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!model)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "set_input: no model");
  /* The caller copies the data in after this call (the view is only read
   * by the run): the workers wake meanwhile. */
  if (i == 0)
    wq_pool_wake(model->model->pool);
  return wqx_staging_set(&model->staging, model->model, i, dtype, rank, dims, data, nbytes,
                         &ctx->err);
}

WQX_EXPORT int32_t wqx_run(wqx_ctx *ctx, wqx_model *model) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!model)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "run: no model");
  WQ_TRY(wqx_staging_check(&model->staging, model->model, "run", &ctx->err));
  wq_status st = wq_model_run(model->model, model->staging.values, model->staging.n, &ctx->err);
  /* Staged views point into caller memory that is freed after the run. */
  wqx_staging_clear(&model->staging);
  return st;
}

static const wq_value *result_value(const wqx_model *model, int32_t i) {
  if (!model || i < 0 || i >= wq_model_output_count(model->model))
    return NULL;
  return wq_model_result(model->model, i);
}

WQX_EXPORT int32_t wqx_result_dtype(const wqx_model *model, int32_t i) {
  const wq_value *v = result_value(model, i);
  return v ? (int32_t)v->dtype : -1;
}

WQX_EXPORT int32_t wqx_result_rank(const wqx_model *model, int32_t i) {
  const wq_value *v = result_value(model, i);
  return v ? v->rank : -1;
}

WQX_EXPORT int32_t wqx_result_dim(const wqx_model *model, int32_t i, int32_t d) {
  const wq_value *v = result_value(model, i);
  if (!v || d < 0 || d >= v->rank)
    return -1;
  return (int32_t)v->dims[d];
}

WQX_EXPORT void *wqx_result_data(const wqx_model *model, int32_t i) {
  const wq_value *v = result_value(model, i);
  return v ? v->data : NULL;
}

WQX_EXPORT int32_t wqx_result_nbytes(const wqx_model *model, int32_t i) {
  const wq_value *v = result_value(model, i);
  if (!v || !wq_value_shape_known(v))
    return -1;
  return (int32_t)wq_value_nbytes(v);
}

static wq_memory_info memory_of(const wqx_model *model) {
  wq_memory_info mem;
  memset(&mem, 0, sizeof mem);
  if (model)
    wq_model_memory(model->model, &mem);
  return mem;
}

WQX_EXPORT int32_t wqx_arena_planned(const wqx_model *model) { return memory_of(model).planned; }

WQX_EXPORT double wqx_arena_bytes(const wqx_model *model) {
  return (double)memory_of(model).arena_bytes;
}

WQX_EXPORT double wqx_arena_lower_bound(const wqx_model *model) {
  return (double)memory_of(model).lower_bound_bytes;
}

WQX_EXPORT double wqx_arena_unshared_bytes(const wqx_model *model) {
  return (double)memory_of(model).unshared_bytes;
}

WQX_EXPORT int32_t wqx_arena_tensor_count(const wqx_model *model) {
  return memory_of(model).n_tensors;
}

#if defined(__EMSCRIPTEN__)
double wqx_clock_ms(void) { return emscripten_get_now(); }
#else
double wqx_clock_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
#endif

WQX_EXPORT int32_t wqx_set_threads(wqx_ctx *ctx, wqx_model *model, int32_t threads) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!model)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "threads: no model");
  return wq_model_set_threads(model->model, threads, &ctx->err);
}

WQX_EXPORT int32_t wqx_threads(const wqx_model *model) {
  return model ? wq_model_threads(model->model) : 0;
}

WQX_EXPORT int32_t wqx_profile(wqx_ctx *ctx, wqx_model *model, int32_t on) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!model)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "profile: no model");
  return wq_model_profile(model->model, on ? wqx_clock_ms : NULL, &ctx->err);
}

/* Milliseconds each later run may take (0: no limit); see wq_model_time_limit. */
WQX_EXPORT void wqx_time_limit(wqx_model *model, double ms) {
  if (model)
    wq_model_time_limit(model->model, wqx_clock_ms, ms);
}

WQX_EXPORT int32_t wqx_node_count(const wqx_model *model) {
  return model ? wq_model_node_count(model->model) : 0;
}

WQX_EXPORT const char *wqx_node_op(const wqx_model *model, int32_t i) {
  return model ? wq_model_node_op(model->model, i) : "";
}

WQX_EXPORT const char *wqx_node_name(const wqx_model *model, int32_t i) {
  return model ? wq_model_node_name(model->model, i) : "";
}

WQX_EXPORT double wqx_node_ms(const wqx_model *model, int32_t i, int32_t kind) {
  return model ? wq_model_node_ms(model->model, i, kind) : 0.0;
}

WQX_EXPORT int32_t wqx_capture(wqx_ctx *ctx, wqx_model *model, int32_t on) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!model)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "capture: no model");
  return wq_model_capture(model->model, on != 0, &ctx->err);
}

WQX_EXPORT int32_t wqx_tensor_count(const wqx_model *model) {
  return model ? wq_model_tensor_count(model->model) : 0;
}

static const wq_value *captured(const wqx_model *model, int32_t t) {
  return model ? wq_model_captured(model->model, t) : NULL;
}

WQX_EXPORT int32_t wqx_captured_dtype(const wqx_model *model, int32_t t) {
  const wq_value *v = captured(model, t);
  return v ? (int32_t)v->dtype : -1;
}

WQX_EXPORT int32_t wqx_captured_rank(const wqx_model *model, int32_t t) {
  const wq_value *v = captured(model, t);
  return v ? v->rank : -1;
}

WQX_EXPORT int32_t wqx_captured_dim(const wqx_model *model, int32_t t, int32_t d) {
  const wq_value *v = captured(model, t);
  return v && d >= 0 && d < v->rank ? (int32_t)v->dims[d] : -1;
}

WQX_EXPORT void *wqx_captured_data(const wqx_model *model, int32_t t) {
  const wq_value *v = captured(model, t);
  return v ? v->data : NULL;
}

WQX_EXPORT char *wqx_describe(const wqx_model *model) {
  return model ? wq_model_describe(model->model) : NULL;
}

WQX_EXPORT char *wqx_describe_lowered(const wqx_model *model) {
  return model ? wq_model_describe_lowered(model->model) : NULL;
}

WQX_EXPORT char *wqx_graph_json(const wqx_model *model) {
  return model ? wq_model_graph_json(model->model) : NULL;
}

WQX_EXPORT int32_t wqx_dtype_size(int32_t dtype) {
  return wq_dtype_supported(dtype) ? (int32_t)wq_dtype_size(dtype) : 0;
}

WQX_EXPORT const char *wqx_dtype_name(int32_t dtype) { return wq_dtype_name(dtype); }

/* Copies int32 byte counts into a size_t array (NULL on bad counts). */
static size_t *sizes_from_int32(const int32_t *n, int32_t count) {
  size_t *out = calloc(count > 0 ? (size_t)count : 1, sizeof *out);
  if (!out)
    return NULL;
  for (int32_t k = 0; k < count; k++) {
    if (n[k] < 0) {
      free(out);
      return NULL;
    }
    out[k] = (size_t)n[k];
  }
  return out;
}

WQX_EXPORT int32_t wqx_case_check(wqx_ctx *ctx, const uint8_t *model, int32_t model_n,
                                  const uint8_t *const *inputs, const int32_t *input_n,
                                  int32_t n_inputs, const uint8_t *const *outputs,
                                  const int32_t *output_n, int32_t n_outputs) {
  if (!ctx)
    return WQ_CASE_FAIL;
  wq_error_clear(&ctx->err);
  ctx->report[0] = '\0';
  if (!model || model_n < 0 || n_inputs < 0 || n_outputs < 0 ||
      (n_inputs > 0 && (!inputs || !input_n)) || (n_outputs > 0 && (!outputs || !output_n))) {
    wq_format(ctx->report, sizeof ctx->report, "case_check: invalid arguments");
    return WQ_CASE_FAIL;
  }
  size_t *in_sizes = sizes_from_int32(input_n, n_inputs);
  size_t *out_sizes = sizes_from_int32(output_n, n_outputs);
  if (!in_sizes || !out_sizes) {
    free(in_sizes);
    free(out_sizes);
    wq_format(ctx->report, sizeof ctx->report, "case_check: bad sizes or out of memory");
    return WQ_CASE_FAIL;
  }
  wq_case_result r = wq_case_check(model, (size_t)model_n, inputs, in_sizes, n_inputs, outputs,
                                   out_sizes, n_outputs, ctx->report, sizeof ctx->report);
  free(in_sizes);
  free(out_sizes);
  return (int32_t)r;
}

WQX_EXPORT const char *wqx_case_report(const wqx_ctx *ctx) { return ctx ? ctx->report : ""; }
