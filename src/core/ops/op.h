/* The op registry. One wq_op entry per op: attribute parsing, shape
 * inference, the float reference kernel and the op's capabilities — how the
 * int8 backend takes it (wq_int8_kind, the op it becomes, a check that says
 * yes or no with a reason code without rewriting anything), the layouts its
 * arguments accept (wq_layout_cap) — which the partition, lowering and
 * layout passes, the quantizer's annotation and the graph JSON's legend read
 * instead of lists of op names. Adding an op = one entry in one family file
 * plus one line in ops.inc. */
#ifndef WQ_OPS_OP_H
#define WQ_OPS_OP_H

#include "../ir/graph.h"

/* Reason codes: why a node runs where it runs; names (wq_reason_name,
 * passes/partition.h) are the graph JSON's reason.code. Append only: codes
 * are compared by programs. */
#define WQ_REASON_LIST(X)                                                                          \
  X(NONE)                   /* not decided (no partition pass ran) */                              \
  X(INT8)                   /* runs on an int8 kernel */                                           \
  X(INT8_REFERENCE)         /* int8, on the file op's scalar reference kernel */                   \
  X(BOUNDARY)               /* Quantize/DequantizeLinear at a region's edge */                     \
  X(TRANSITION)             /* layout conversion inserted by the layout pass */                    \
  X(SHAPE)                  /* computes shapes or indices as integers */                           \
  X(NOT_QUANTIZED)          /* float op off the quantized path */                                  \
  X(MODE_FP)                /* fp mode ran it in float */                                          \
  X(UNSUPPORTED_OP)         /* the int8 backend has no kernel for this op */                       \
  X(UNSUPPORTED_ATTR)       /* attributes or operand shapes the int8 kernel does not take */       \
  X(UNSUPPORTED_DTYPE)      /* quantized to a type other than int8/uint8 */                        \
  X(NO_QPARAMS)             /* quantization parameters missing or of an unusable form */           \
  X(QPARAMS_MISMATCH)       /* read with other parameters than written with */                     \
  X(PER_CHANNEL_ACTIVATION) /* activations quantized per channel */                                \
  X(NOT_CONSTANT)           /* a weight, bias, scale or zero point computed at run time */         \
  X(UNKNOWN_SHAPE)          /* a shape the kernel needs is not known at load */                    \
  X(INPUT_NOT_QUANTIZED)    /* an input does not come from a DequantizeLinear */                   \
  X(OUTPUT_NOT_QUANTIZED)   /* the result is not quantized (or read by others too) */

#define WQ_REASON_ENUM_(name) WQ_REASON_##name,
typedef enum { WQ_REASON_LIST(WQ_REASON_ENUM_) WQ_REASON_COUNT } wq_reason;
#undef WQ_REASON_ENUM_

/* Op ids: WQ_OPID(name) for the line WQ_OP_ENTRY(name) of ops.inc (the
 * registry's order); WQ_OPID_NONE (0) is no op. */
#define WQ_OPID(name) WQ_OPID_##name
typedef enum {
  WQ_OPID_NONE = 0,
#define WQ_OP_ENTRY(name) WQ_OPID(name),
#include "ops.inc"
#undef WQ_OP_ENTRY
  WQ_OPID_COUNT
} wq_op_id;

/* How the int8 backend takes a node of this op: which lowering rule tries
 * it (passes/lower.c dispatches on it). */
typedef enum wq_int8_kind {
  WQ_INT8_NONE = 0,   /* no int8 form: runs float */
  WQ_INT8_CONV,       /* Conv -> QConv */
  WQ_INT8_GEMM,       /* Gemm, MatMul -> QGemm */
  WQ_INT8_QLINEAR,    /* QLinearConv/QLinearMatMul -> QConv/QGemm, else its reference kernel */
  WQ_INT8_INTEGER,    /* ConvInteger/MatMulInteger -> QConv/QGemm with int32 output */
  WQ_INT8_CONTRIB,    /* com.microsoft QLinear* / QGemm -> wasmq int8 ops, else reference */
  WQ_INT8_BINARY,     /* Add/Mul -> QAdd/QMul (a lookup against a scalar constant) */
  WQ_INT8_POOL,       /* AveragePool/GlobalAveragePool -> QAveragePool/QGlobalAveragePool */
  WQ_INT8_CONCAT,     /* Concat on int8 codes, or QConcat when parameters differ */
  WQ_INT8_REDUCE,     /* ReduceMean -> QReduceMean */
  WQ_INT8_LOOKUP,     /* elementwise map of one varying input -> QLookup (256-entry table) */
  WQ_INT8_MOVE,       /* pure data movement: runs as it is on int8 codes */
  WQ_INT8_QUANTIZE,   /* QuantizeLinear (a region's entry) */
  WQ_INT8_DEQUANTIZE, /* DequantizeLinear (a region's exit) */
  WQ_INT8_KERNEL,     /* already an int8 kernel (wasmq domain) */
  WQ_INT8_SOFTMAX,    /* DequantizeLinear -> Softmax -> QuantizeLinear -> QLinearSoftmax */
  WQ_INT8_KIND_COUNT
} wq_int8_kind;

/* The layouts an op's arguments accept and its output produces (read by
 * passes/layout_int8.c). NCHW stands for channels-first (the declared
 * layout), NHWC for channels-last, for rank 3 and 4 alike. An op that
 * accepts both picks its kernel by its tensors' layouts (wq_value.layout):
 * there are no per-layout twin ops. */
typedef enum wq_layout_cap {
  WQ_LCAP_NCHW = 0,     /* every argument in the declared (channels-first) layout */
  WQ_LCAP_NHWC_KERNEL,  /* input 0 and output in either layout; the planner makes them NHWC */
  WQ_LCAP_FOLLOW,       /* input 0 and output NHWC when input 0 already is, else NCHW */
  WQ_LCAP_AGNOSTIC,     /* elementwise on input 0: any layout, output as input */
  WQ_LCAP_AGNOSTIC_BIN, /* inputs 0 and 1 in any layouts, each read through its own record;
                           one without the output's bytes for its shape (wq_layout_same_bytes)
                           is gathered: correct, slower than agreeing */
  WQ_LCAP_AGNOSTIC_ALL, /* every input agrees (Concat: the inputs share the output's
                           layout; QConcat reads each input through its own record like
                           _BIN); the channel axis attribute follows */
  WQ_LCAP_NHWC_FLOAT,   /* int8 codes in, floats out (QConvToFloat): both NHWC when only
                           per-tensor QuantizeLinears read the floats, which then quantize
                           them channels-last (elementwise, no transition) */
  WQ_LCAP_TO_NHWC,      /* transition: reads channels-first, writes channels-last */
  WQ_LCAP_TO_NCHW,      /* transition: reads channels-last, writes channels-first */
  WQ_LCAP_COUNT
} wq_layout_cap;

/* The answer of an int8 check: reason WQ_REASON_INT8 and the op the node
 * runs as (`as`, e.g. "QConv"), or the code of the first condition that
 * keeps it float with a sentence in detail. */
typedef struct {
  int reason; /* wq_reason */
  const char *as;
  char detail[192];
} wq_int8_answer;

enum {
  /* Output depends only on input shapes, not data (Shape, Size): constant
   * folding may evaluate it once input shapes are static. */
  WQ_OP_FLAG_SHAPE_ONLY = 1u << 0,
  /* int8 op whose kernels the int8-semantics stage owns (QuantizeLinear...);
   * the conformance runner reports such cases as skipped when unregistered. */
  WQ_OP_FLAG_INT8 = 1u << 1,
  /* Layout transition writing channels-last (ToNHWC). */
  WQ_OP_FLAG_TO_NHWC = 1u << 2,
};

/* How the post-training quantizer treats a float node of this op: what the
 * int8 backend can take after lowering (src/core/quant/annotate.h refines it
 * per node, e.g. Resize only in nearest mode). */
typedef enum wq_quant_role {
  WQ_QROLE_NONE = 0, /* stays float */
  /* Conv/Gemm/MatMul: input 0 an activation, input 1 a constant weight
   * (int8, per output channel), input 2 the bias (int32 at s_in * s_w). */
  WQ_QROLE_LINEAR,
  /* Relu/Clip: fused into a preceding linear's requantization (no Q/DQ
   * between them), else an int8 lookup with its own output qparams. */
  WQ_QROLE_CLAMP,
  /* Its own output qparams: unary lookups (Sigmoid...), pools, reductions
   * (input 0 only) and Add/Mul (every float input). */
  WQ_QROLE_OWN_OUTPUT,
  /* Data movement: the output carries input 0's codes unchanged, so input
   * and output share one spec (Concat: all inputs). */
  WQ_QROLE_SHARED,
} wq_quant_role;

/* A plan hook's kernel choice: its name ("im2col_gemm", "gemv") and the
 * ISA of the variant that runs it ("ref", "simd128", ...); static strings,
 * NULL when the op has no choice. */
typedef struct {
  const char *name, *isa;
} wq_op_kernel;

typedef struct wq_op {
  const char *op_type;
  const char *domain; /* "" for ai.onnx */
  int max_inputs, max_outputs;
  unsigned flags;
  unsigned char min_opset; /* lowest opset version whose semantics we implement */
  unsigned char min_inputs, min_outputs;
  unsigned char quant_role; /* wq_quant_role */

  /* Capabilities. */
  unsigned char int8;   /* wq_int8_kind */
  unsigned char layout; /* wq_layout_cap */
  short int8_as;        /* wq_op_id of the int8 op a node becomes (WQ_OPID_NONE: itself) */
  /* Optional: the op's own conditions for an int8 form (attributes, which
   * inputs are constants), checked on the graph as it stands without
   * changing it; sets a->reason (and a->detail) only when it says no. The
   * generic conditions of the kind are wq_op_int8_check's. */
  void (*int8_check)(const wq_graph *g, const wq_node *n, wq_int8_answer *a);

  /* Parses and validates attributes once at load into node->op_state (may be
   * NULL: no state). Fails naming the node for a bad or unsupported value. */
  wq_status (*prepare)(wq_node *node, wq_error *err);
  void (*free_state)(void *state);

  /* Shape inference: given in[0..node->n_inputs) (an omitted optional input
   * has dtype WQ_DT_UNDEFINED; an input whose data is not known has
   * data == NULL), sets dtype, rank and dims of out[0..node->n_outputs).
   * When an output shape depends on input data that is not known, it sets
   * the output dtype and rank = -1 and returns WQ_OK. Must never write data.
   * Must validate everything the kernel relies on (ranks, dims, dtypes).
   * On a static plan the executor runs infer once and reuses the shapes, so
   * infer is skipped on later runs except for nodes with a non-constant
   * integer input (indices, sizes): a check of such input DATA that the
   * kernel needs must live in run (Gather re-checks its indices there). */
  wq_status (*infer)(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err);

  /* Float/integer reference kernel: every in[i].data is present; out[i] has
   * the shape infer gave and an allocated, uninitialised buffer (an omitted
   * output has data == NULL and must be skipped). */
  wq_status (*run)(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err);

  /* Optional. Called once the graph is final (after lowering and layout
   * passes), before the first run, with the graph for context: an int8 op
   * reads its tensors' qparams and constant weights here and keeps what it
   * needs (requantization multipliers, prepacked weights, lookup tables) in
   * node->op_state. An op that chooses between kernels says which in
   * *kernel (zeroed by the caller; the pipeline stores it in the node's
   * decision record, ir/decision.h). */
  wq_status (*plan)(wq_node *node, const wq_graph *g, wq_op_kernel *kernel, wq_error *err);

  /* Optional, after plan: the bytes the node's plan holds beyond the
   * graph's tensors (packed or widened weights) and, in *scratch, the most
   * its kernels use during one run on one thread (activation panels,
   * im2col columns, padded and layout copies; 0 when its shapes are known
   * only at run time). An int8 op (domain "wasmq", or WQ_OP_FLAG_INT8)
   * takes exactly that from the run's scratch block and allocates nothing
   * while it runs (runtime/parallel.h wq_scratch_take); the float kernels
   * still allocate it. The memory limit (wq_load_options.max_memory_bytes) counts both. */
  int64_t (*memory)(const wq_node *node, const wq_graph *g, int64_t *scratch);
} wq_op;

/* Registry entry for (domain, op_type), or NULL (a binary search of the
 * sorted registry). "ai.onnx" and "" are the same domain. */
const wq_op *wq_op_find(const char *domain, const char *op_type);
/* The registry by id (ops.inc's order); [WQ_OPID_NONE] is NULL. */
extern const wq_op *const wq_op_registry[WQ_OPID_COUNT];
/* Node n runs the registry op of this id (a pointer compare: an op is
 * told by its id, not by comparing names). */
static inline bool wq_node_is(const wq_node *n, int id) {
  return n->op && n->op == wq_op_registry[id];
}
/* Registry entry of an id, NULL for WQ_OPID_NONE or out of range. */
const wq_op *wq_op_by_id(int id);
/* The id of a registry entry (WQ_OPID_NONE for NULL or a foreign op). */
int wq_op_id_of(const wq_op *op);

/* Can the int8 backend take node n (resolved) of graph g as it stands? Asks
 * the op's capability record without rewriting anything: no int8 kind ->
 * UNSUPPORTED_OP; then the op's own int8_check; else INT8 with a->as the op
 * it runs as. Returns a->reason. This is the op's part of the answer: the
 * lowering asks it first for every node, then its matchers decide from the
 * quantized neighbours (qparams, sinks, weights' axes). The whole answer,
 * neighbours included, without rewriting: passes/lower.h wq_lower_check. */
int wq_op_int8_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a);

/* An int8_check's "no": sets a->reason and the detail sentence (printf
 * style). */
void wq_int8_no(wq_int8_answer *a, int reason, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The condition of a lookup (WQ_INT8_LOOKUP, and Add/Mul against a scalar
 * constant): exactly one varying input; every other one a constant of one
 * element (Clip's bounds, the 0.5 of x * 0.5). Sets a->reason and detail
 * only when not met. */
void wq_op_lookup_check(const wq_graph *g, const wq_node *n, wq_int8_answer *a);

/* "conv", "gemm", ..., "none" (the graph JSON's legend). */
const char *wq_int8_kind_name(int kind);
/* "nchw", "nhwc-kernel", "follow", "agnostic", ... (the legend). */
const char *wq_layout_cap_name(int cap);

/* Helpers for int8_check functions: t is a constant with data; t is a
 * constant of exactly one element; the number of nodes reading t (a graph
 * output counts as one). */
bool wq_op_is_constant(const wq_graph *g, int t);
bool wq_op_is_scalar_constant(const wq_graph *g, int t);
int wq_op_readers(const wq_graph *g, int t);

/* "linear", "clamp", "own-output", "shared" or "none". */
const char *wq_quant_role_name(wq_quant_role role);

/* Number of registered ops and the i-th one (0-based, sorted by domain and
 * op type; wq_op_by_id(i + 1)). */
int wq_op_count(void);
const wq_op *wq_op_at(int i);

/* True when `op_type` names one of the int8 ops (QuantizeLinear,
 * DequantizeLinear, QLinear*, *Integer, DynamicQuantizeLinear, and
 * onnxruntime's quantized contrib ops): a registry entry of that name in
 * the default or com.microsoft domain carrying WQ_OP_FLAG_INT8. */
int wq_op_is_int8_family(const char *op_type);

/* Resolves node->op for every node, checks input/output counts and opset
 * ranges, and calls prepare. Fails naming the first unsupported node. */
wq_status wq_graph_resolve_ops(wq_graph *g, wq_error *err);

/* Makes a prepared Conv node apply Relu to its output itself (the float
 * fusion pass, passes/fuse_float.h); false for any other node. */
bool wq_conv_fuse_relu(wq_node *node);

#endif
