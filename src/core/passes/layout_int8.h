/* Int8 layout pass: inside int8 regions activations are channels-last.
 *
 * Runs on the lowered graph (after passes/lower.h, before the plan hooks).
 * Nodes with a channels-last kernel switch to it — QConv -> QConvNHWC,
 * QAveragePool / QGlobalAveragePool -> Q*NHWC, MaxPool on int8/uint8 ->
 * MaxPoolNHWC — and layout-agnostic int8 ops whose activation inputs are all
 * already channels-last follow them (QLookup; QAdd/QMul, broadcasting
 * between equal-rank channels-last operands or against a single element;
 * QConcat and Concat on int8 codes with the axis moved from C to last), as
 * do Resize (nearest) and DepthToSpace on int8 codes, which become
 * wasmq.ResizeNearestNHWC / DepthToSpaceNHWC (ops/int8_nhwc_move.c). Every other reader of such a
 * tensor, and every graph output, gets it back through an explicit
 * wasmq.ToNCHW node; a channels-last op reading a channels-first tensor gets
 * a wasmq.ToNHWC node. Each conversion is made once per tensor, right
 * before its first reader. A ToNHWC of a QuantizeLinear's result that nothing
 * else reads, or a ToNCHW read only by a DequantizeLinear, folds into it
 * (wasmq.QuantizeLinearNHWC / DequantizeLinearNHWC: per-tensor constant
 * qparams, <= 64 channels), moving no extra bytes. Channels-last tensors carry the physical shape
 * [N, spatial..., C] and a copy of the quantization parameters.
 *
 * Only tensors of rank 3 or 4 with static shapes and per-tensor
 * quantization move; anything else keeps its layout. */
#ifndef WQ_PASSES_LAYOUT_INT8_H
#define WQ_PASSES_LAYOUT_INT8_H

#include <stdint.h>

#include "../ir/graph.h"

typedef struct {
  int nodes_nhwc;           /* nodes running channels-last */
  int transitions;          /* layout conversions (ToNHWC / ToNCHW nodes, fused ones too) */
  int64_t transition_bytes; /* bytes the ToNHWC / ToNCHW nodes move per run */
} wq_layout_stats;

/* stats may be NULL. */
wq_status wq_pass_layout_int8(wq_graph *g, wq_layout_stats *stats, wq_error *err);

/* Replaces the node's lowering note (the text `wasmq info --lowered`
 * prints as "why"). */
wq_status wq_layout_set_note(wq_node *node, const char *note, wq_error *err);

#endif
