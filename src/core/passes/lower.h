/* Lowering: QDQ graphs (DequantizeLinear → op → QuantizeLinear, as
 * onnxruntime's quantizer and PyTorch's export write them) and ONNX's
 * operator-oriented int8 ops (QLinearConv, QLinearMatMul, ConvInteger,
 * MatMulInteger) become wasmq's own int8 ops (domain "wasmq": QConv, QGemm,
 * QAdd, QMul, QAveragePool, QGlobalAveragePool, QConcat, QLookup) plus the
 * data-movement ops run directly on int8 data. Quantization parameters go on
 * the int8 tensors (wq_tensor.qparams); every node's decision record
 * (wq_node.rec, ir/decision.h) gets the reason code, the sentence saying
 * what it became or why it stayed float (wq_lower_why) and, when lowered,
 * the nodes it replaced.
 *
 * Rules (DESIGN.md "Lowering", seeds 003/004):
 *  - an op's input parameters are those of the DequantizeLinear feeding it,
 *    never those of whatever op produced the int8 tensor (they must agree
 *    with the tensor's, else the op stays float, saying so);
 *  - gemm/matmul weights are matched by meaning (transA/transB/alpha/beta,
 *    MatMul's [K, N]) and normalised to one [N, K] layout;
 *  - conv/gemm → relu/clip → QuantizeLinear fuses as a clamp of the
 *    requantized output computed from the activation's output parameters,
 *    for any zero point; when it cannot fuse, the activation becomes its own
 *    QLookup and the conv keeps its own output parameters, or stays float
 *    with the reason — never an int8 conv without output parameters.
 *
 * Constant folding turns DequantizeLinear of constant weights into float
 * constants; wq_lower_capture runs before folding and remembers where each
 * such float constant came from, so lowering can use the int8 original. */
#ifndef WQ_PASSES_LOWER_H
#define WQ_PASSES_LOWER_H

#include <stdbool.h>

#include "../ir/graph.h"

typedef struct wq_lower_capture wq_lower_capture;

/* Records every DequantizeLinear (and its scale/zero point/axis) before
 * constant folding. *out is NULL on failure. */
wq_status wq_lower_capture_new(const wq_graph *g, wq_lower_capture **out, wq_error *err);
void wq_lower_capture_free(wq_lower_capture *c);
/* DequantizeLinear nodes recorded (0 for NULL). */
int wq_lower_capture_count(const wq_lower_capture *c);

typedef struct {
  int nodes_lowered;    /* int8 ops created or ops moved onto int8 data */
  int nodes_absorbed;   /* Q/DQ/activation nodes folded into them */
  int nodes_kept_float; /* nodes next to quantized tensors that stayed float */
} wq_lower_stats;

/* Runs on the folded graph (shapes known). capture may be NULL (nothing was
 * folded). New nodes are resolved and prepared; plan hooks run later. */
wq_status wq_pass_lower(wq_graph *g, const wq_lower_capture *capture, wq_lower_stats *stats,
                        wq_error *err);

/* What the lowering would do with one node of the graph it is given. */
typedef struct {
  char *name;             /* the node's name */
  const struct wq_op *op; /* its op before the lowering */
  int reason;             /* wq_reason: INT8, the code that keeps it as it is, NONE untried */
  int as;                 /* registry op id it would be rewritten to (WQ_OPID), -1 kept */
  bool absorbed;          /* folded into another node (a Q/Relu sink, a bias Add, ...) */
  char *why;              /* the explanation the lowering would attach, or NULL */
} wq_lower_answer;

/* The lowering's answer for every node of the folded graph g, without
 * changing g: the same matching runs on a shadow of g (its own node and
 * tensor lists; names, attributes and constant data read from g), so it
 * answers what wq_pass_lower then does, neighbours included (equal
 * parameters, the QuantizeLinear a result feeds, per-channel weights, moves
 * across data movement). strict (int mode): fails on the first node on the
 * quantized path that would run float, naming it and its reason code
 * (passes/partition.h). *answers ([g->n_nodes], by node index) is optional
 * (native builds; the wasm build leaves it NULL: size); free with
 * wq_lower_answers_free. */
wq_status wq_lower_check(const wq_graph *g, const wq_lower_capture *capture, bool strict,
                         wq_lower_answer **answers, wq_error *err);
void wq_lower_answers_free(wq_lower_answer *a, int n);

/* Debug builds (and wq_load_options.validate_ir): the lowered graph g did
 * to each node what answers (wq_lower_check of the graph before) said —
 * absorbed nodes are gone, the others carry the same reason code and note
 * and run the op it named. Nodes whose name is not unique are skipped.
 * WQ_ERR_INVALID_MODEL naming the first node where they differ. The wasm
 * build compiles it to a no-op (size budget). */
wq_status wq_lower_answers_verify(const wq_graph *g, const wq_lower_answer *answers, int n,
                                  wq_error *err);

/* The node's decision detail (what it became or why it stayed float), or
 * NULL when no pass explained it. */
const char *wq_lower_why(const wq_node *node);

/* One line per node: the op it runs (int8 op with the qparams of its
 * tensors, or float) and why. A malloc'ed string the caller frees, or NULL
 * when out of memory. */
char *wq_lower_describe(const wq_graph *g);

#endif
