/* wasmq public C API. Flat, status-returning; errors go into a caller-owned
 * wq_error (node name + message). Used by the native CLI and tests; the wasm
 * build exports the JS-friendly wrappers in wasm_exports.h on top of it. */
#ifndef WQ_API_WASMQ_H
#define WQ_API_WASMQ_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/graph.h"
#include "../passes/partition.h"
#include "../passes/pass_manager.h"

typedef struct wq_model wq_model;

typedef struct {
  const char *name; /* graph input name */
  int rank;
  const int64_t *dims; /* concrete dims; binds symbolic dims ("batch") at load */
} wq_input_shape;

typedef struct {
  const wq_input_shape *input_shapes; /* optional, may be NULL */
  int n_input_shapes;
  int no_constant_folding; /* 1 keeps Shape/Constant chains as nodes (debugging) */
  /* int+fp (default): int8 where possible, float islands; int: a quantized
   * node that cannot run int8 fails the load, naming it and its reason
   * code; fp: everything float (passes/partition.h). */
  wq_partition_mode partition;
  int no_lowering;     /* older spelling of partition fp (used when partition is DEFAULT) */
  int lower_strict;    /* older spelling of partition int (used when partition is DEFAULT) */
  int no_float_fusion; /* 1 keeps the float graph node for node (the quantizer exports it) */
  /* Optional: called once on the graph after constant folding and before
   * lowering (the quantizer's graph preparation); nodes it adds or changes
   * must be resolved (wq_graph_resolve_ops) before it returns. */
  wq_status (*rewrite)(void *ctx, wq_graph *g, wq_error *err);
  void *rewrite_ctx;
  int validate_ir; /* 1 checks the IR after every load pass (native; always on in debug builds) */
  /* Memory limit in bytes (0: none): the weights the loaded graph keeps, its
   * graph outputs, the arena and the intermediates a run allocates may not
   * pass it. Checked before allocating: a model whose load-time plan passes
   * it fails to load, a run that would pass it (larger input shapes) fails,
   * both with WQ_ERR_OUT_OF_MEMORY naming the need and the limit; the model
   * stays usable. Packed weight copies and kernel scratch count too: the
   * int8 kernels' scratch is one block of a slice per thread, held from load
   * on (runs allocate none of it). */
  size_t max_memory_bytes;
  /* Kernel variants (kernels/config.h). engine_isas: the wq_isa bits
   * (1 << isa) the engine has executed known-answer probes for, 0 for what
   * needs no probe (the reference and the build's SIMD128). kernels: 0
   * picks the most capable, else 1 + the wq_isa to run (reference 1,
   * SIMD128 2, relaxed 3); the load fails when the build or the engine
   * cannot run it. */
  unsigned engine_isas;
  int kernels;
} wq_load_options;

/* Imports an ONNX model from bytes, resolves every op, binds the given input
 * shapes and constant-folds shape plumbing. On failure *out is NULL, nothing
 * is leaked and err names the node and the reason. opts may be NULL. */
wq_status wq_model_load(const uint8_t *bytes, size_t n, const wq_load_options *opts, wq_model **out,
                        wq_error *err);
void wq_model_free(wq_model *m);

/* The load pipeline's passes, in order, each with what it did
 * (wq_pass_record: name, whether it ran, named counters such as
 * fold_constants "folded" or layout_int8 "transitions"). */
#define WQ_MODEL_PASSES 11
int wq_model_pass_count(const wq_model *m);
const wq_pass_record *wq_model_pass(const wq_model *m, int i); /* NULL past the end */

/* The partition mode the model was loaded with (wq_partition_mode, never
 * DEFAULT). */
int wq_model_partition_mode(const wq_model *m);

/* The loaded graph (after folding); owned by the model. */
const wq_model_ir *wq_model_get_ir(const wq_model *m);
/* Frees the model except its graph, which the caller takes (free it with
 * wq_model_ir_free): the quantizer rewrites a loaded float graph. */
wq_model_ir *wq_model_release_ir(wq_model *m);

/* Calls fn after every node of each following run with every tensor's
 * current value (see wq_exec_plan.observe); NULL turns it off. Replaces a
 * capture (wq_model_capture) and is replaced by one. */
void wq_model_observe(wq_model *m,
                      wq_status (*fn)(void *ctx, const wq_graph *g, int node,
                                      const wq_value *values, wq_error *err),
                      void *ctx);

int wq_model_input_count(const wq_model *m);
int wq_model_output_count(const wq_model *m);
/* Declared name/dtype/shape (dims -1 with dim_params set where symbolic). */
const wq_tensor *wq_model_input(const wq_model *m, int i);
const wq_tensor *wq_model_output(const wq_model *m, int i);
/* Index of the input named `name`, or -1. */
int wq_model_input_index(const wq_model *m, const char *name);

/* Runs the model on inputs[0..n) given in input order. Each input's dtype and
 * shape must match the declaration (symbolic dims bind consistently). The
 * data is read, not kept. Results stay valid until the next run or free. */
wq_status wq_model_run(wq_model *m, const wq_value *inputs, int n, wq_error *err);
const wq_value *wq_model_result(const wq_model *m, int i);

/* Memory for intermediate tensors: one arena planned from their lifetimes
 * (at load when every shape is static, else after the first run with new
 * input shapes; plans are cached by input shapes). Figures are those of the
 * plan for the latest run (or the load-time plan). Graph outputs, inputs and
 * weights are not in the arena. */
typedef struct {
  int planned;              /* 0 until a plan exists (symbolic shapes, no run yet) */
  int planned_at_load;      /* the plan came from static shapes at load */
  size_t arena_bytes;       /* peak: the arena buffer the plan needs */
  size_t lower_bound_bytes; /* largest total of intermediates alive at one step */
  size_t unshared_bytes;    /* what the intermediates take without reuse */
  int n_tensors;            /* intermediates placed in the arena */
  int plans_built;          /* plans computed so far (load + re-plans) */
} wq_memory_info;
void wq_model_memory(const wq_model *m, wq_memory_info *out);

/* Runs split their larger kernels (GEMM/conv output tiles) over `threads`
 * threads in all, created here once and kept until the next call or free;
 * results are bit-identical for any count. A build without threads, or an
 * environment with fewer workers, runs fewer: wq_model_threads tells. */
wq_status wq_model_set_threads(wq_model *m, int threads, wq_error *err);
int wq_model_threads(const wq_model *m);

/* Per-node timing of the runs that follow (now_ms: the caller's
 * millisecond clock; NULL turns it off). Turning it on clears the counts.
 * wq_model_node_ms gives, for node i of the executed (lowered) graph, the
 * milliseconds it took in all (kind 0) or in its kernel (kind 1) summed
 * over the timed runs: the difference is the executor's fixed cost. */
wq_status wq_model_profile(wq_model *m, double (*now_ms)(void), wq_error *err);
/* Limits each later run to `ms` milliseconds on the clock now_ms (ms <= 0
 * or no clock: no limit). Checked between nodes: a run past it stops with
 * WQ_ERR_TIMEOUT naming the last node finished, and the model stays usable. */
void wq_model_time_limit(wq_model *m, double (*now_ms)(void), double ms);
double wq_model_node_ms(const wq_model *m, int i, int kind);
/* Nodes of the executed graph, and node i's op type and name ("" past the end). */
int wq_model_node_count(const wq_model *m);
const char *wq_model_node_op(const wq_model *m, int i);
const char *wq_model_node_name(const wq_model *m, int i);

/* Capture of intermediates: while on, each run keeps a copy of every
 * tensor a node produced (in the executed, lowered graph: int8 codes with
 * the tensor's qparams, in its layout), readable until the next run or
 * until capture is turned off. Turning it off frees the copies. */
wq_status wq_model_capture(wq_model *m, bool on, wq_error *err);
/* The captured value of tensor t of the executed graph, or NULL. */
const wq_value *wq_model_captured(const wq_model *m, int t);
/* Tensors of the executed graph (ids of wq_model_graph_json). */
int wq_model_tensor_count(const wq_model *m);

/* After lowering, one entry per node: the int8 op it became with the
 * quantization parameters of its tensors, or why it stayed float. A
 * malloc'ed string the caller frees (NULL when out of memory). */
char *wq_model_describe_lowered(const wq_model *m);

/* The decision records as JSON (docs/graph-json.md, schema 1): per node
 * backend, region, reason code + detail, kernel; per tensor dtype, logical
 * dims, layout, qparams, producer/consumers, lifetime; regions,
 * transitions, memory, load passes and the summary line. The same model
 * and options give the same bytes. Caller frees; NULL out of memory. */
char *wq_model_graph_json(const wq_model *m);

/* The partition's one-line summary ("int8: 41 of 52 nodes in 3 regions;
 * ..."); caller frees; NULL out of memory. */
char *wq_model_partition_summary(const wq_model *m);

/* Human-readable summary (inputs, outputs, opsets, op histogram, parameter
 * count and bytes) as a malloc'ed string the caller frees. */
char *wq_model_describe(const wq_model *m);

/* Decodes one serialized ONNX TensorProto (a test_data_set_*.pb file) into
 * *out: the value's data is malloc'ed and owned by the caller (free(out->data)).
 * The tensor's name is copied into name_buf (may be NULL). */
wq_status wq_tensor_decode(const uint8_t *bytes, size_t n, wq_value *out, char *name_buf,
                           size_t name_cap, wq_error *err);

/* One ONNX conformance case: runs the model on the decoded inputs and compares
 * every output with the expected tensors (integers exact; floats
 * |got-want| <= 1e-7 + 1e-3*|want|, NaN == NaN; dtypes and shapes must match).
 * Returns PASS, FAIL or SKIP (a dtype outside the supported set, or an
 * int8-family op not registered) and writes a one-line reason to `report`. */
typedef enum { WQ_CASE_PASS = 0, WQ_CASE_FAIL = 1, WQ_CASE_SKIP = 2 } wq_case_result;
wq_case_result wq_case_check(const uint8_t *model, size_t model_n, const uint8_t *const *inputs,
                             const size_t *input_n, int n_inputs, const uint8_t *const *outputs,
                             const size_t *output_n, int n_outputs, char *report,
                             size_t report_cap);

#endif
