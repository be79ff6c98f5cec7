/* The op registry. One wq_op entry per ONNX op: attribute parsing, shape
 * inference and the float reference kernel (the int8 backend's support and
 * layouts join this record in later stages). Adding an op = one entry in one
 * family file plus one line in that family's list_*.inc. */
#ifndef WQ_OPS_OP_H
#define WQ_OPS_OP_H

#include "../ir/graph.h"

enum {
  /* Output depends only on input shapes, not data (Shape, Size): constant
   * folding may evaluate it once input shapes are static. */
  WQ_OP_FLAG_SHAPE_ONLY = 1u << 0,
  /* int8 op whose kernels the int8-semantics stage owns (QuantizeLinear...);
   * the conformance runner reports such cases as skipped when unregistered. */
  WQ_OP_FLAG_INT8 = 1u << 1,
  /* Layout transition writing channels-last (ToNHWC, QuantizeLinearNHWC). */
  WQ_OP_FLAG_TO_NHWC = 1u << 2,
  /* Quantize/DequantizeLinear with a layout transition fused in. */
  WQ_OP_FLAG_FUSED_BOUNDARY = 1u << 3,
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

typedef struct wq_op {
  const char *op_type;
  const char *domain; /* "" for ai.onnx */
  int min_opset;      /* lowest opset version whose semantics we implement */
  int min_inputs, max_inputs, min_outputs, max_outputs;
  unsigned flags;
  wq_quant_role quant_role;

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
   * node->op_state. */
  wq_status (*plan)(wq_node *node, const wq_graph *g, wq_error *err);
} wq_op;

/* Registry entry for (domain, op_type), or NULL. "ai.onnx" and "" are the
 * same domain. */
const wq_op *wq_op_find(const char *domain, const char *op_type);

/* "linear", "clamp", "own-output", "shared" or "none". */
const char *wq_quant_role_name(wq_quant_role role);

/* Number of registered ops and the i-th one (for listings). */
int wq_op_count(void);
const wq_op *wq_op_at(int i);

/* True when `op_type` is one of ONNX's int8 ops (QuantizeLinear,
 * DequantizeLinear, QLinear*, *Integer, DynamicQuantizeLinear). */
int wq_op_is_int8_family(const char *op_type);

/* Resolves node->op for every node, checks input/output counts and opset
 * ranges, and calls prepare. Fails naming the first unsupported node. */
wq_status wq_graph_resolve_ops(wq_graph *g, wq_error *err);

/* Makes a prepared Conv node apply Relu to its output itself (the float
 * fusion pass, passes/fuse_float.h); false for any other node. */
bool wq_conv_fuse_relu(wq_node *node);

#endif
