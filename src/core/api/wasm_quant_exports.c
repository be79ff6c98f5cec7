/* The quantizer's wasm entry points (src/core/quant/quantizer.h), linked
 * only into the quant variant of the wasm core (build.sh --quant): the
 * shipped runtime .wasm never carries the quantizer. Same conventions as
 * wasm_exports.h: a caller-owned wqx_ctx records failures, inputs are
 * staged one by one (views of caller memory) before each observe. */
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../quant/dynamic.h"
#include "../quant/quantizer.h"
#include "wasm_exports_internal.h"

typedef struct wqx_quantizer {
  wq_quantizer *q;
  wqx_staging staging;
  uint8_t *onnx; /* of the last finish, owned */
  size_t onnx_len;
} wqx_quantizer;

#if defined(__EMSCRIPTEN__)
/* Search progress goes to the JS side as it happens (finish is one
 * synchronous call): Module.wqxQuantProgress(line) when the caller set it. */
EM_JS(void, wqx_js_quant_progress, (const char *line), {
  if (Module['wqxQuantProgress'])
    Module['wqxQuantProgress'](UTF8ToString(line));
});
static void progress_line(void *ctx, const char *line) {
  (void)ctx;
  wqx_js_quant_progress(line);
}
#else
static void progress_line(void *ctx, const char *line) {
  (void)ctx;
  (void)line;
}
#endif

/* The model bytes are copied by the core; `config` is JSON (n_config
 * bytes, 0 for the defaults); input-shape overrides as wqx_load takes them
 * (symbolic dims bound for calibration, kept in the written model). Returns
 * NULL on failure (see ctx). */
WQX_EXPORT wqx_quantizer *wqx_quantizer_new(wqx_ctx *ctx, const uint8_t *bytes, int32_t n_bytes,
                                            const char *config, int32_t n_config, int32_t n_shapes,
                                            const char *const *shape_names,
                                            const int32_t *shape_ranks, const int32_t *shape_dims) {
  if (!ctx)
    return NULL;
  wq_error_clear(&ctx->err);
  if (!bytes || n_bytes < 0 || n_config < 0 || (n_config > 0 && !config)) {
    wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "quantize: invalid arguments");
    return NULL;
  }
  wqx_input_shapes shapes;
  if (wqx_input_shapes_read(&shapes, n_shapes, shape_names, shape_ranks, shape_dims, "quantize",
                            &ctx->err) != WQ_OK)
    return NULL;
  wqx_quantizer *qx = calloc(1, sizeof *qx);
  if (!qx) {
    wqx_input_shapes_free(&shapes);
    wq_fail(&ctx->err, WQ_ERR_OUT_OF_MEMORY, NULL, "quantize: out of memory");
    return NULL;
  }
  wq_status st = wq_quantizer_new_shaped(bytes, (size_t)n_bytes, config, (size_t)n_config,
                                         shapes.shapes, shapes.n, &qx->q, &ctx->err);
  wqx_input_shapes_free(&shapes);
  if (st != WQ_OK) {
    free(qx);
    return NULL;
  }
  wq_quantizer_on_progress(qx->q, progress_line, NULL);
  const wq_model *m = wq_quantizer_float_model(qx->q);
  if (wqx_staging_init(&qx->staging, wq_model_input_count(m), &ctx->err) != WQ_OK) {
    wq_quantizer_free(qx->q);
    free(qx);
    return NULL;
  }
  return qx;
}

WQX_EXPORT void wqx_quantizer_free(wqx_quantizer *qx) {
  if (!qx)
    return;
  wq_quantizer_free(qx->q);
  wqx_staging_free(&qx->staging);
  free(qx->onnx);
  free(qx);
}

static const wq_tensor *quant_input(const wqx_quantizer *qx, int32_t i) {
  return qx ? wqx_model_input_tensor(wq_quantizer_float_model(qx->q), i) : NULL;
}

WQX_EXPORT int32_t wqx_quantizer_input_count(const wqx_quantizer *qx) {
  return qx ? wq_model_input_count(wq_quantizer_float_model(qx->q)) : 0;
}

WQX_EXPORT const char *wqx_quantizer_input_name(const wqx_quantizer *qx, int32_t i) {
  return wqx_tensor_name(quant_input(qx, i));
}

WQX_EXPORT int32_t wqx_quantizer_input_dtype(const wqx_quantizer *qx, int32_t i) {
  return wqx_tensor_dtype(quant_input(qx, i));
}

WQX_EXPORT int32_t wqx_quantizer_input_rank(const wqx_quantizer *qx, int32_t i) {
  return wqx_tensor_rank(quant_input(qx, i));
}

WQX_EXPORT int32_t wqx_quantizer_input_dim(const wqx_quantizer *qx, int32_t i, int32_t d) {
  return wqx_tensor_dim(quant_input(qx, i), d);
}

WQX_EXPORT const char *wqx_quantizer_input_dim_param(const wqx_quantizer *qx, int32_t i,
                                                     int32_t d) {
  return wqx_tensor_dim_param(quant_input(qx, i), d);
}

WQX_EXPORT int32_t wqx_quantizer_set_input(wqx_ctx *ctx, wqx_quantizer *qx, int32_t i,
                                           int32_t dtype, int32_t rank, const int32_t *dims,
                                           void *data, int32_t nbytes) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!qx)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "set_input: no quantizer");
  return wqx_staging_set(&qx->staging, wq_quantizer_float_model(qx->q), i, dtype, rank, dims, data,
                         nbytes, &ctx->err);
}

/* Overrides the config's keepFloat / targetSnrDb (wq_quantizer_keep_float). */
WQX_EXPORT void wqx_quantizer_keep_float(wqx_quantizer *qx, int32_t n, double target_snr_db) {
  if (qx)
    wq_quantizer_keep_float(qx->q, n, (float)target_snr_db);
}

/* Also a target cosine and a time budget for the search (wq_quantizer_search). */
WQX_EXPORT void wqx_quantizer_search(wqx_quantizer *qx, double target_cosine, double max_time) {
  if (qx)
    wq_quantizer_search(qx->q, (float)target_cosine, (float)max_time);
}

/* Milliseconds the quantization may take from from_ms on the engine's clock
 * (performance.now(); wq_quantizer_time_limit; 0: no limit). */
WQX_EXPORT void wqx_quantizer_time_limit(wqx_quantizer *qx, double ms, double from_ms) {
  if (qx)
    wq_quantizer_time_limit(qx->q, wqx_clock_ms, ms, from_ms);
}

/* A warning carried into the report (wq_quantizer_note). */
WQX_EXPORT int32_t wqx_quantizer_note(wqx_ctx *ctx, wqx_quantizer *qx, const char *warning) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!qx || !warning)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "note: no quantizer or text");
  return wq_quantizer_note(qx->q, warning, &ctx->err);
}

/* One calibration sample: the staged inputs (all must be staged). */
WQX_EXPORT int32_t wqx_quantizer_observe(wqx_ctx *ctx, wqx_quantizer *qx) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!qx)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "observe: no quantizer");
  if (qx->onnx) {
    wqx_staging_clear(&qx->staging);
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL,
                   "observe: the model was already written (finish); start a new quantizer to "
                   "calibrate on more samples");
  }
  WQ_TRY(wqx_staging_check(&qx->staging, wq_quantizer_float_model(qx->q), "observe", &ctx->err));
  wq_status st = wq_quantizer_observe(qx->q, qx->staging.values, qx->staging.n, &ctx->err);
  wqx_staging_clear(&qx->staging);
  return st;
}

/* Samples observed so far (a double: exact below 2^53). */
WQX_EXPORT double wqx_quantizer_samples(const wqx_quantizer *qx) {
  return qx ? (double)wq_quantizer_samples(qx->q) : 0.0;
}

/* Builds the QDQ model; its bytes are then wqx_quantizer_onnx /
 * wqx_quantizer_onnx_len (valid until the next finish or free). */
WQX_EXPORT int32_t wqx_quantizer_finish(wqx_ctx *ctx, wqx_quantizer *qx) {
  if (!ctx)
    return WQ_ERR_INVALID_ARG;
  wq_error_clear(&ctx->err);
  if (!qx)
    return wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "finish: no quantizer");
  uint8_t *onnx = NULL;
  size_t len = 0;
  WQ_TRY(wq_quantizer_finish(qx->q, &onnx, &len, &ctx->err));
  if (len > INT32_MAX) {
    free(onnx);
    return wq_fail(&ctx->err, WQ_ERR_UNSUPPORTED, NULL,
                   "finish: the quantized model is %zu bytes, more than wasm32 can hand out", len);
  }
  free(qx->onnx);
  qx->onnx = onnx;
  qx->onnx_len = len;
  return WQ_OK;
}

WQX_EXPORT const uint8_t *wqx_quantizer_onnx(const wqx_quantizer *qx) {
  return qx ? qx->onnx : NULL;
}

WQX_EXPORT int32_t wqx_quantizer_onnx_len(const wqx_quantizer *qx) {
  return qx ? (int32_t)qx->onnx_len : 0;
}

/* The last finish's report (JSON; free with wqx_free; NULL before one). */
WQX_EXPORT char *wqx_quantizer_report_json(const wqx_quantizer *qx) {
  return qx ? wq_quantizer_report_json(qx->q) : NULL;
}

WQX_EXPORT const char *wqx_quantizer_summary(const wqx_quantizer *qx) {
  return qx ? wq_quantizer_summary(qx->q) : "";
}

/* Dynamic quantization (quant/dynamic.h) in one call: flags bit 0 per
 * tensor, bit 1 uint8 weights. Returns the model's bytes (free with
 * wqx_free), their count in *len and the one-line summary in summary (a
 * caller's buffer of cap bytes); NULL on failure (see ctx). */
WQX_EXPORT uint8_t *wqx_quantize_dynamic(wqx_ctx *ctx, const uint8_t *bytes, int32_t n_bytes,
                                         int32_t flags, int32_t *len, char *summary, int32_t cap) {
  if (!ctx)
    return NULL;
  wq_error_clear(&ctx->err);
  const wq_dynamic_options o = {.per_tensor = flags & 1, .uint8_weights = (flags & 2) != 0};
  wq_dynamic_stats stats;
  uint8_t *onnx = NULL;
  size_t n = 0;
  if (!bytes || n_bytes < 0 || !len || !summary || cap < 1) {
    wq_fail(&ctx->err, WQ_ERR_INVALID_ARG, NULL, "quantize: invalid arguments");
    return NULL;
  }
  if (wq_quantize_dynamic(bytes, (size_t)n_bytes, &o, &onnx, &n, &stats, &ctx->err) != WQ_OK)
    return NULL;
  *len = (int32_t)n;
  wq_format(summary, (size_t)cap, "%s", stats.summary);
  return onnx;
}
