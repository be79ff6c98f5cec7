/* Graph preparation before quantization (issue #9 item 2): rewrites of the
 * float graph that are exact in real arithmetic and leave fewer, better
 * conditioned tensors to quantize.
 *
 *   BatchNormalization after a Conv / ConvTranspose / Gemm  -> folded into
 *     the weights and bias (W * gamma/sqrt(var+eps) per output channel).
 *   Mul by a constant after a linear (per output channel or per tensor)
 *     -> folded into its weights and bias.
 *   Mul by a constant before a linear (per input channel or per tensor)
 *     -> folded into its weights (exact with zero padding too).
 *   Add of a constant after a Conv / ConvTranspose / Gemm (per output
 *     channel or per tensor) -> folded into its bias. An Add before a
 *     linear is not foldable (padding would see the shift).
 *
 * "Linear" here is a Conv, ConvTranspose, Gemm or MatMul whose weight is a
 * float constant. A fold needs the intermediate tensor to have exactly one
 * reader and not be a graph output. The channel axis of a Mul's constant is
 * read from the constant's own shape, right-aligned against the operand
 * (NCHW: [1,K,1,1] or [K,1,1]; Gemm/MatMul: [K] or [1,K] on the last dim);
 * any other shape, including one that would broadcast the operand to a
 * larger shape, is left alone. Factors are computed in double, stored float.
 *
 * A MatMul has no bias input, so a BatchNormalization after it is left as
 * is; a Mul after it folds into its weight columns.
 *
 * The hard-swish that exporters without a HardSwish op write out,
 * x * Clip(x + 3, 0, 6) / 6 (or * (1/6)), becomes one HardSwish node (opset
 * 14; see wq_quant_prepare_ex for older models): one int8 lookup instead of four
 * int8 passes (two lookups, a multiply of two activations, a lookup).
 *
 * MatMul + Add(constant bias) stays two nodes: wq_quant_is_linear_bias_add
 * tells the annotation not to put Q/DQ between them. A rewrite to Gemm would
 * only cover a 2-D A, while PyTorch's Linear on [batch, seq, K] gives an N-D
 * MatMul; the int8 lowering already fuses MatMul -> Add(bias) into one QGemm
 * with an int32 bias, so recognising the pair covers every rank.
 *
 * Runs on a float graph whose ops are resolved (wq_graph_resolve_ops) after
 * constant folding, and before wq_pass_fuse_float (a Conv with a fused Relu
 * is not linear): the load option `rewrite` is that point. Tensors whose
 * dtype or rank was not inferred (symbolic shapes) are handled
 * conservatively: a float weight implies a float input, and an input of
 * unknown rank only takes 1-D per-channel constants. Changed nodes are re-prepared through the op
 * registry; a folded-away node is removed and its output tensor (name kept, it may be a graph
 * output) is produced by the linear. Weights shared with another node are copied, not changed in
 * place; constants no longer read stay in the graph. */
#ifndef WQ_QUANT_PREPARE_H
#define WQ_QUANT_PREPARE_H

#include <stdbool.h>

#include "../ir/graph.h"

typedef struct wq_quant_prepare_stats {
  int batchnorm_folded;  /* BatchNormalization nodes folded into a linear */
  int mul_folded_after;  /* Mul after a linear, folded into its weights and bias */
  int mul_folded_before; /* Mul before a linear, folded into its weights */
  int add_folded_after;  /* Add of a constant after a Conv/Gemm, folded into its bias */
  int linear_bias_adds;  /* MatMul + Add(bias) pairs left for the annotation */
  int hardswish_fused;   /* x * Clip(x + 3, 0, 6) / 6 chains made one HardSwish */
} wq_quant_prepare_stats;

/* Applies every fold until none applies. stats may be NULL. On failure (out
 * of memory, a node that no longer prepares) err names the node; folds done
 * before it stay, each one complete. */
wq_status wq_quant_prepare(wq_graph *g, wq_quant_prepare_stats *stats, wq_error *err);

/* Same; with raise_opset the hard-swish fusion also applies in models older
 * than opset 14 (the HardSwish node is marked opset 14 and whoever writes
 * the graph must raise the model's opset: the quantizer's converter does).
 * wq_quant_prepare leaves such chains alone below opset 14. */
wq_status wq_quant_prepare_ex(wq_graph *g, bool raise_opset, wq_quant_prepare_stats *stats,
                              wq_error *err);

/* True when node `add_node` is an Add of a MatMul's output (a float constant
 * 2-D weight [K,N], the output read by this Add only) and a float constant
 * bias of shape [N] or [1,...,1,N] that does not widen the MatMul's output:
 * one linear, so no Q/DQ belongs between the two. */
bool wq_quant_is_linear_bias_add(const wq_graph *g, int add_node);

/* Cross-layer equalization: a linear A (Conv or Gemm) whose output, alone
 * or through a Relu, is read only by a linear B of the same kind. Scaling
 * A's output channel c by t[c] (its weight row and bias) and B's input
 * channel c by 1/t[c] leaves B's output unchanged in real arithmetic (Relu
 * commutes with a positive factor, zero padding with any), while the tensor
 * between them, quantized per tensor, gets channels of more even range.
 * Weights and bias must be read by A or B alone (changed in place). */
typedef struct wq_quant_eq_pair {
  int a, b;   /* the two linears */
  int tensor; /* what B reads: A's output or the Relu's */
  int64_t channels;
  bool channelwise; /* B is a Conv whose every output reads one input channel (depthwise) */
} wq_quant_eq_pair;

/* The pairs of g in node order, up to max of them into out (NULL: none);
 * returns how many there are. */
int wq_quant_eq_pairs(const wq_graph *g, wq_quant_eq_pair *out, int max);
/* Scales A's output channels by t and B's input channels by 1/t. */
wq_status wq_quant_eq_apply(wq_graph *g, const wq_quant_eq_pair *p, const double *t, wq_error *err);

#endif
