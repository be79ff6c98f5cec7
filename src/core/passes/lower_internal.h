/* Shared by the lowering pass's translation units (lower.c: driver,
 * lower_graph.c: graph editing, lower_quant.c: finding quantized inputs and
 * outputs, lower_linear.c: conv/gemm/matmul families, lower_eltwise.c:
 * elementwise, pooling, concat and data-movement ops). Not public. */
#ifndef WQ_PASSES_LOWER_INTERNAL_H
#define WQ_PASSES_LOWER_INTERNAL_H

#include <stdbool.h>

#include "../quant/qparams.h"
#include "lower.h"
#include "partition.h"

/* Where a DequantizeLinear that constant folding removed came from. */
typedef struct {
  int float_tensor;                      /* the folded output */
  int q_tensor, scale_tensor, zp_tensor; /* zp_tensor -1 when omitted */
  int64_t axis, block_size;
  char *node_name;
} wq_lower_dq_record;

struct wq_lower_capture {
  wq_lower_dq_record *records;
  int n_records;
};

/* Result of trying to lower one node: WQ_OK with `lowered` set, WQ_OK with
 * a reason in `why` (the node stays as it is), or a hard error (out of
 * memory) that aborts the load. */
#define WQ_LOWER_WHY_MAX 400

typedef struct {
  wq_graph *g;
  const wq_lower_capture *capture;
  bool *absorbed; /* [n_nodes] nodes folded into a lowered node, removed at the end */
  wq_lower_stats stats;
  char why[WQ_LOWER_WHY_MAX]; /* the current node's reason */
  int reason;                 /* its code (wq_reason) */
  /* A check (wq_lower_check): g is a shadow of the loaded graph (lower_shadow_new)
   * and the same matching runs on it. Rewrites change only what the shadow
   * owns — each node's input/output lists, its tensors' qparams, tensors it
   * adds — and record the rest here instead of touching the node. */
  bool dry;
  int *node_id;   /* [n_nodes] the loaded graph's index of each shadow node (moves reorder) */
  char **dry_why; /* [loaded node] the note the lowering would set, or NULL */
  int *dry_as;    /* [loaded node] the op id it would be rewritten to, or -1 */
} lower_ctx;

/* ---- lower_graph.c: graph editing ---------------------------------------- */

/* Index of the node producing tensor t, or -1 (ignores absorbed nodes). */
int lower_producer(const lower_ctx *c, int t);
/* Number of live nodes reading t (each reading node counted once);
 * *first gets the first of them. Graph outputs are not counted. */
int lower_consumers(const lower_ctx *c, int t, int *first);
/* The only live reader of t when t is not a graph output and that reader
 * is op op_id (WQ_OPID), else -1. */
int lower_sole_reader(const lower_ctx *c, int t, int op_id);

/* A growing attribute list for a rewritten node. */
typedef struct {
  wq_attr *items;
  int n, cap;
} lower_attrs;
wq_status lower_attrs_int(lower_attrs *a, const char *name, int64_t v, wq_error *err);
wq_status lower_attrs_float(lower_attrs *a, const char *name, float v, wq_error *err);
/* Deep copy of the node's attribute `name` when present (int, ints, float,
 * floats, string). */
wq_status lower_attrs_copy(lower_attrs *a, const wq_node *from, const char *name, wq_error *err);
void lower_attrs_free(lower_attrs *a);

/* Turns node i into the registry op op_id (WQ_OPID(...), usually the
 * op's int8_as) with the given inputs, outputs and attributes (moved into
 * the node; *attrs is emptied), frees the old op state and prepares the new
 * op. The node keeps its name. */
wq_status lower_rewrite_node(lower_ctx *c, int i, int op_id, const int *inputs, int n_inputs,
                             const int *outputs, int n_outputs, lower_attrs *attrs, wq_error *err);

/* The end of a rule's rewriting half: unless st is already an error, node
 * i becomes op_id (lower_rewrite_node) and the rule's decision is
 * recorded: INT8 with the sentence `why` (what it became, what it
 * absorbed), *done set. Frees attrs in every case; returns st or the
 * rewrite's error. */
wq_status lower_commit(lower_ctx *c, int i, int op_id, const int *inputs, int n_inputs,
                       const int *outputs, int n_outputs, lower_attrs *attrs, wq_status st,
                       const char *why, bool *done, wq_error *err);

/* Adds a tensor named after `base` + `suffix` (made unique) and returns its
 * index, or -1 out of memory. Tensor pointers are invalidated. */
int lower_add_tensor(lower_ctx *c, const char *base, const char *suffix);
/* Adds a constant tensor owning `data` (freed on failure too). */
int lower_add_constant(lower_ctx *c, const char *base, const char *suffix, wq_dtype dtype, int rank,
                       const int64_t *dims, void *data, size_t nbytes);

/* Gives tensor t its own copy of qp (replacing any). */
wq_status lower_set_qparams(lower_ctx *c, int t, const wq_qparams *qp, wq_error *err);

/* Node i's note: its record's detail, or in a check the note recorded for it. */
wq_status lower_note(lower_ctx *c, int i, const char *why, wq_error *err);
const char *lower_note_of(const lower_ctx *c, int i);
/* Node i's op type as the lowering has left it so far (in a check, the op
 * it was rewritten to): notes naming an earlier node read it. */
const char *lower_op_type(const lower_ctx *c, int i);

/* A shadow of g for a check: its own node and tensor arrays, each node's
 * input/output lists and each tensor's qparams copied; names, attributes,
 * op state and constant data borrowed from g, which must outlive it and is
 * never written through it. NULL out of memory. */
wq_graph *lower_shadow_new(const wq_graph *g);
/* Frees what the shadow owns; `borrowed` is g's tensor count when it was made. */
void lower_shadow_free(wq_graph *s, int borrowed);
/* Sets the record's sources (copies of s[0..n), replacing previous ones). */
wq_status lower_set_sources(wq_node *node, const char *const *s, int n, wq_error *err);

/* Removes absorbed nodes, then DequantizeLinear nodes nobody reads, and
 * releases the data of constants nothing reads any more. */
void lower_remove_dead(lower_ctx *c);

/* ---- lower_quant.c: quantized inputs and outputs --------------------------- */

/* Records a reason for the current node: its code (wq_reason) and a
 * sentence (printf style); returns WQ_OK so a matcher can
 * `return lower_why(...)` to leave the node as it is. */
wq_status lower_why(lower_ctx *c, wq_reason code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The same for a matcher (a rule's matching half, which changes nothing):
 * records the reason and gives false, so it can `return lower_no(...)`. */
#define lower_no(c, ...) (lower_why((c), __VA_ARGS__), false)

/* A rule longer than a screen is split into its matching half (reads the
 * graph, fills a match record, says no with a reason through lower_no) and
 * its rewriting half (adds tensors, rewrites node i, absorbs the sink).
 * Both halves are called once; inlined back into the rule they cost no
 * code over one long function. */
#if defined(__GNUC__)
#define LOWER_RULE_PART static inline __attribute__((always_inline))
#else
#define LOWER_RULE_PART static inline
#endif

/* qparams of a (Dequantize|Quantize)Linear node for its int8 tensor
 * `data_tensor`: scale and zero point must be constants. false with a
 * reason in c->why when not. */
bool lower_node_qparams(lower_ctx *c, const wq_node *node, int data_tensor, wq_qparams *out);

/* Attaches qparams to the int8 tensors of QuantizeLinear outputs,
 * DequantizeLinear inputs, captured (folded) DequantizeLinear sources and
 * the QLinearConv/QLinearMatMul operands. A tensor keeps the parameters its
 * producer gave it. */
wq_status lower_attach_qparams(lower_ctx *c, wq_error *err);

/* onnxruntime's operator-format contrib ops (domain com.microsoft) carry
 * each operand's scale and zero point as inputs: operand `data` (input
 * index; -1 for output 0) with its `scale` and `zp` (optional) inputs. */
typedef struct {
  int data, scale, zp;
} lower_qlinear_operand;
/* QLinearConcat has one operand per input plus its output. */
#define LOWER_CONTRIB_MAX_OPERANDS 32
/* The operands of a contrib QLinear op (the count), 0 for any other node
 * (and for a QLinearConcat of more inputs than fit). */
int lower_contrib_operands(const wq_node *n, lower_qlinear_operand out[LOWER_CONTRIB_MAX_OPERANDS]);
/* Operand o's tensor carries per-tensor parameters equal to those the node
 * reads it with; false with a reason in c->why. */
bool lower_contrib_operand_matches(lower_ctx *c, const wq_node *n, const lower_qlinear_operand *o);

bool lower_qparams_equal(const wq_qparams *a, const wq_qparams *b);
/* Same dtype and single (scale, zero point); shapes may differ. */
bool lower_per_tensor_equal(const wq_qparams *a, const wq_qparams *b);

/* An activation operand: float tensor `t` is DequantizeLinear(x) with x an
 * int8/uint8 tensor quantized per tensor, and the DequantizeLinear's
 * parameters equal x's (seed 004: they are read at the DequantizeLinear).
 * Gives x's index, or -1 with a reason. */
int lower_activation_input(lower_ctx *c, int t, const char *what);

/* A constant quantized operand: `t` is DequantizeLinear(constant) — a live
 * node or one constant folding removed. Gives the constant int8/int32
 * tensor (with qparams attached), or -1 with a reason. */
int lower_constant_input(lower_ctx *c, int t, const char *what);

/* The quantized result of float tensor `t` (the output of the node being
 * lowered): t's only reader is a QuantizeLinear to int8/uint8 with
 * per-tensor parameters — or, with `fuse` LOWER_FUSE_CLAMP, a Relu or Clip
 * whose only reader is such a QuantizeLinear (folded into a clamp of the
 * output codes); with LOWER_FUSE_LEAKY (ops whose requantization scales
 * negative values: QConv, QGemm) also a LeakyRelu, or a PRelu with one
 * constant slope, of slope in [0, 1]. */
enum { LOWER_FUSE_NONE = 0, LOWER_FUSE_CLAMP = 1, LOWER_FUSE_LEAKY = 2 };
typedef struct {
  int tensor;          /* the QuantizeLinear output: the lowered node's output */
  int quantize_node;   /* absorbed */
  int activation_node; /* absorbed, or -1 */
  int32_t act_min, act_max;
  bool leaky; /* the activation is a LeakyRelu of slope act_alpha */
  float act_alpha;
  wq_dtype dtype;
} lower_sink;
bool lower_output_sink(lower_ctx *c, int t, int fuse, lower_sink *out);

/* Marks the sink's nodes absorbed and appends their description to buf. */
void lower_absorb_sink(lower_ctx *c, const lower_sink *s, char *buf, size_t cap);

/* ---- lower_move.c ---------------------------------------------------------- */

/* Hoists QuantizeLinear above, and sinks DequantizeLinear below, ops that
 * only move elements, so those ops run on int8 data (see lower_move.c). */
wq_status lower_move_quantization(lower_ctx *c, wq_error *err);

/* ---- per family ------------------------------------------------------------ */

/* Each tries node i; WQ_OK whether or not it lowered (reason in c->why when
 * not), an error only for out-of-memory and similar hard failures. *done
 * is set when the node was rewritten. */
wq_status lower_conv(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_gemm(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_qlinear(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_integer(lower_ctx *c, int i, bool *done, wq_error *err);
/* Zero-point-only parameters (unit scales) of integer operand data_t from
 * its optional zero point input zp_t (per tensor or along `axis`); false
 * with a reason when the zero point is not a usable constant. */
bool lower_zero_point_qparams(lower_ctx *c, int data_t, int zp_t, int axis, wq_qparams *out);
/* Gives tensor t the parameters qp unless it has some already, which must
 * then have the same zero points (*ok false with a reason if not). */
wq_status lower_adopt_zero_point(lower_ctx *c, int t, const wq_qparams *qp, bool *ok,
                                 wq_error *err);
/* lower_rescale.c: DynamicQuantizeLinear -> MatMulInteger -> float rescale,
 * MatMulIntegerToFloat and DynamicQuantizeMatMul -> QGemmToFloat of a float
 * x. Leaves a reason only for the contrib ops (MatMulInteger falls to
 * lower_integer). */
wq_status lower_dynamic(lower_ctx *c, int i, bool *done, wq_error *err);
/* Nodes the dead-node sweep removes once nothing reads them. */
static inline bool lower_is_sweepable(const wq_node *n) {
  return wq_node_is(n, WQ_OPID(dequantize_linear)) || wq_node_is(n, WQ_OPID(quantize_linear)) ||
         wq_node_is(n, WQ_OPID(dynamic_quantize_linear));
}
/* The constant int8 weight `q` of a matrix product ([K, N] when `kn`, else
 * [N, K]) as QGemm's [N, K] operand with per-tensor or per-N parameters,
 * scaled by alpha (a new constant unless already so); *out -1 with a
 * reason in c->why when its parameters do not allow it. */
wq_status lower_weight_nk(lower_ctx *c, int q, bool kn, float alpha, const char *base, int *out,
                          wq_error *err);
/* lower_contrib.c: QLinearAdd/QLinearMul/QLinearGlobalAveragePool (com.microsoft). */
wq_status lower_contrib(lower_ctx *c, int i, bool *done, wq_error *err);

/* lower_rescale.c: node i, just lowered to QConv (conv) or QGemm with int32 output,
 * absorbs a following Cast -> Mul(scale) [-> Add(bias)] [-> Relu] into a
 * QConvToFloat/QGemmToFloat when the chain allows (else stays as it is). */
wq_status lower_float_rescale(lower_ctx *c, int i, bool conv, wq_error *err);
wq_status lower_binary(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_pool(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_concat(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_lookup(lower_ctx *c, int i, bool *done, wq_error *err);
/* lower_reduce.c: DequantizeLinear -> Softmax -> QuantizeLinear -> QLinearSoftmax. */
wq_status lower_softmax(lower_ctx *c, int i, bool *done, wq_error *err);
/* lower_reduce.c: a decomposed LayerNorm's Sub -> Pow -> ReduceMean -> Add ->
 * Sqrt -> Div between codes -> QNormalize (tried on Sub before its check). */
wq_status lower_normalize(lower_ctx *c, int i, bool *done, wq_error *err);
/* lower_reduce.c: DequantizeLinear -> ReduceMean chain -> QuantizeLinear. */
wq_status lower_reduce_mean(lower_ctx *c, int i, bool *done, wq_error *err);
wq_status lower_data_movement(lower_ctx *c, int i, bool *done, wq_error *err);
/* QuantizeLinear(DequantizeLinear(x)): x itself (equal parameters) or a
 * requantizing QLookup. */
wq_status lower_requantize(lower_ctx *c, int i, bool *done, wq_error *err);

#endif
