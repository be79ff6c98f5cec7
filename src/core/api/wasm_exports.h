/* JS-friendly wrappers over wasmq.h, exported from the wasm module.
 *
 * Only 32-bit integers, doubles and pointers cross the boundary: emcc 3.1.6
 * without WASM_BIGINT would split int64 parameters in two. Dims are int32
 * here (every dim is below WQ_MAX_ELEMENTS = 2^28, so nothing is lost).
 *
 * Errors: every fallible call takes a caller-owned wqx_ctx and records the
 * failure in it (code, code name, node, message); there is no global state.
 * Strings returned as `const char *` stay valid until the next call that
 * writes the same object; strings returned as `char *` are malloc'ed and the
 * caller frees them with wqx_free. */
#ifndef WQ_API_WASM_EXPORTS_H
#define WQ_API_WASM_EXPORTS_H

#include <stdint.h>

#include "wasmq.h"

typedef struct wqx_ctx wqx_ctx;
typedef struct wqx_model wqx_model;

/* --- memory ------------------------------------------------------------ */
void *wqx_malloc(int32_t nbytes);
void wqx_free(void *p);

/* --- recovery tests ---------------------------------------------------- */
/* Traps the module on purpose (kind 0: unreachable, 1: abort(), 2: an
 * out-of-bounds read), so the package's recovery from a trap can be tested.
 * Only src/js/testing.mjs calls it; the package API never does. */
void wqx_test_trap(int32_t kind);

/* --- error context ----------------------------------------------------- */
wqx_ctx *wqx_ctx_new(void);
void wqx_ctx_free(wqx_ctx *ctx);
void wqx_ctx_clear(wqx_ctx *ctx);
int32_t wqx_error_code(const wqx_ctx *ctx);     /* wq_status of the last failure, 0 if none */
const char *wqx_error_name(const wqx_ctx *ctx); /* "WQ_ERR_SHAPE"... */
const char *wqx_error_node(const wqx_ctx *ctx); /* "" when no node is at fault */
const char *wqx_error_message(const wqx_ctx *ctx);

/* --- model ------------------------------------------------------------- */
/* wqx_load flags (wq_load_options fields). */
enum {
  WQX_LOAD_NO_LOWERING = 1, /* run QDQ/QLinear graphs op by op, float Q/DQ */
  WQX_LOAD_STRICT_INT8 = 2, /* fail naming a quantized node that cannot be lowered */
  /* bits 2-3: the partition mode (wq_partition_mode: 1 int+fp, 2 int, 3 fp; 0 default) */
  WQX_LOAD_PARTITION_SHIFT = 2,
  WQX_LOAD_PARTITION_MASK = 3 << 2,
};

/* Loads an ONNX model. Input-shape overrides: n_shapes entries, entry k names
 * shape_names[k] with rank shape_ranks[k]; the dims of all entries follow
 * each other in shape_dims. max_memory_bytes: wq_load_options's limit (0 or
 * less: none; a double so JS passes any byte count). Returns NULL on failure
 * (see ctx). */
wqx_model *wqx_load(wqx_ctx *ctx, const uint8_t *bytes, int32_t n_bytes, int32_t n_shapes,
                    const char *const *shape_names, const int32_t *shape_ranks,
                    const int32_t *shape_dims, int32_t flags, double max_memory_bytes);
void wqx_model_free(wqx_model *model);

int32_t wqx_input_count(const wqx_model *model);
int32_t wqx_output_count(const wqx_model *model);
/* Declared metadata of input/output i; out-of-range i gives NULL / -1. */
const char *wqx_input_name(const wqx_model *model, int32_t i);
int32_t wqx_input_dtype(const wqx_model *model, int32_t i);
int32_t wqx_input_rank(const wqx_model *model, int32_t i);
int32_t wqx_input_dim(const wqx_model *model, int32_t i, int32_t d); /* -1 when symbolic */
const char *wqx_input_dim_param(const wqx_model *model, int32_t i, int32_t d); /* or NULL */
const char *wqx_output_name(const wqx_model *model, int32_t i);
int32_t wqx_output_dtype(const wqx_model *model, int32_t i);
int32_t wqx_output_rank(const wqx_model *model, int32_t i);
int32_t wqx_output_dim(const wqx_model *model, int32_t i, int32_t d);
const char *wqx_output_dim_param(const wqx_model *model, int32_t i, int32_t d);

/* Stages input i for the next run: the model keeps a view of `data` (not a
 * copy), which must stay alive until wqx_run returns. `nbytes` is how many
 * bytes the caller copied to `data`: unless dims x dtype need exactly that
 * many, the input is refused (WQ_ERR_SHAPE) and nothing is read. Returns 0
 * or a status. */
int32_t wqx_set_input(wqx_ctx *ctx, wqx_model *model, int32_t i, int32_t dtype, int32_t rank,
                      const int32_t *dims, void *data, int32_t nbytes);
/* Runs on the staged inputs (every input must have been staged). */
int32_t wqx_run(wqx_ctx *ctx, wqx_model *model);
/* Result i of the last successful run (valid until the next run or free). */
int32_t wqx_result_dtype(const wqx_model *model, int32_t i);
int32_t wqx_result_rank(const wqx_model *model, int32_t i);
int32_t wqx_result_dim(const wqx_model *model, int32_t i, int32_t d);
void *wqx_result_data(const wqx_model *model, int32_t i);
int32_t wqx_result_nbytes(const wqx_model *model, int32_t i);

/* Arena figures of wq_model_memory (bytes as doubles: exact below 2^53). */
int32_t wqx_arena_planned(const wqx_model *model);
double wqx_arena_bytes(const wqx_model *model);
double wqx_arena_lower_bound(const wqx_model *model);
double wqx_arena_unshared_bytes(const wqx_model *model);
int32_t wqx_arena_tensor_count(const wqx_model *model);

/* wq_model_set_threads; wqx_threads gives the count runs use. */
int32_t wqx_set_threads(wqx_ctx *ctx, wqx_model *model, int32_t threads);
int32_t wqx_threads(const wqx_model *model);

/* Per-node timing (wq_model_profile with the JS clock): on != 0 starts
 * (clearing the counts), 0 stops. Then node i's op type, name and summed
 * milliseconds (kind 0 in all, 1 in its kernel). */
int32_t wqx_profile(wqx_ctx *ctx, wqx_model *model, int32_t on);
/* Milliseconds each later run may take (0: no limit), checked between
 * nodes: a run past it fails with WQ_ERR_TIMEOUT, the model stays usable. */
void wqx_time_limit(wqx_model *model, double ms);
int32_t wqx_node_count(const wqx_model *model);
const char *wqx_node_op(const wqx_model *model, int32_t i);
const char *wqx_node_name(const wqx_model *model, int32_t i);
double wqx_node_ms(const wqx_model *model, int32_t i, int32_t kind);

/* Capture of intermediates (wq_model_capture): on != 0 keeps a copy of
 * every produced tensor of the next runs; then tensor t's dtype, rank, dim
 * d and data (-1 / 0 / NULL when not captured). */
int32_t wqx_capture(wqx_ctx *ctx, wqx_model *model, int32_t on);
int32_t wqx_tensor_count(const wqx_model *model);
int32_t wqx_captured_dtype(const wqx_model *model, int32_t t);
int32_t wqx_captured_rank(const wqx_model *model, int32_t t);
int32_t wqx_captured_dim(const wqx_model *model, int32_t t, int32_t d);
void *wqx_captured_data(const wqx_model *model, int32_t t);

/* wq_model_describe; free with wqx_free. */
char *wqx_describe(const wqx_model *model);
/* wq_model_describe_lowered (one entry per node: int8 op or why it stayed
 * float); free with wqx_free. */
char *wqx_describe_lowered(const wqx_model *model);
char *wqx_graph_json(const wqx_model *model);

/* --- tensors and conformance ------------------------------------------ */
/* Bytes per element of a dtype (0 for unsupported), and its ONNX name. */
int32_t wqx_dtype_size(int32_t dtype);
const char *wqx_dtype_name(int32_t dtype);

/* wq_case_check over serialized model/input/output protobufs. Returns the
 * wq_case_result (0 PASS, 1 FAIL, 2 SKIP); the one-line reason is then
 * wqx_case_report(ctx). */
int32_t wqx_case_check(wqx_ctx *ctx, const uint8_t *model, int32_t model_n,
                       const uint8_t *const *inputs, const int32_t *input_n, int32_t n_inputs,
                       const uint8_t *const *outputs, const int32_t *output_n, int32_t n_outputs);
const char *wqx_case_report(const wqx_ctx *ctx);

#endif
