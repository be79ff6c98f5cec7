/* Int8 layout pass: chooses the memory order of every int8 activation
 * (declared NCHW or channels-last NHWC) and inserts the transitions.
 *
 * Runs on the lowered graph (after passes/lower.h, before the plan hooks).
 * Each node gets one label. Fixed channels-last: the ops whose SIMD kernels
 * run channels-last (QConv, QAveragePool, QGlobalAveragePool, MaxPool on
 * codes) and QConvToFloat whose floats only per-tensor QuantizeLinears read
 * (with those). Free: the layout-agnostic ops (QLookup, Identity; QAdd/QMul
 * on equal ranks, a single element broadcasting either way; QConcat and
 * Concat on channel axis 1), Resize (nearest) and DepthToSpace on codes,
 * and a Quantize/DequantizeLinear with a constant per-tensor scale and zero
 * point on codes of at most 64 channels (channels-last there: its kernel
 * converts the layout in the same pass, moving no extra bytes). Everything
 * else, the graph inputs and outputs: the declared order. The free labels
 * minimize the bytes the transitions move, exactly (passes/layout_plan.h:
 * one transition per tensor whose producer and readers disagree; Shape, and
 * reshapes and QAdd/QMul/QConcat of a tensor whose bytes are the same in
 * both layouts, read it as it is), plus the bytes a channels-first Resize or
 * DepthToSpace writes (its kernel gathers them one by one). Ties take the
 * declared order.
 *
 * Ops keep their names; their kernels follow their tensors' layout records.
 * A tensor read in the other layout gets one explicit wasmq.ToNHWC /
 * ToNCHW node, right before its first reader that needs it (graph outputs
 * at the end). Only tensors of rank 3 or 4 with static shapes (a symbolic
 * batch aside) and per-tensor quantization move. */
#ifndef WQ_PASSES_LAYOUT_INT8_H
#define WQ_PASSES_LAYOUT_INT8_H

#include <stdint.h>

#include "../ir/graph.h"
#include "layout_plan.h"

typedef struct {
  int nodes_nhwc;           /* nodes running channels-last */
  int transitions;          /* layout conversions (ToNHWC / ToNCHW nodes, fused ones too) */
  int64_t transition_bytes; /* bytes the ToNHWC / ToNCHW nodes move per run */
  int64_t planned_bytes; /* the planner's minimum: transition bytes + channels-first followers' */
  int free_labels;       /* nodes whose label the planner chose */
} wq_layout_stats;

/* Why a node got its layout label (wq_node.rec.layout_why; the JSON's
 * node.layout.why names them, docs/graph-json.md). Stable: append only. */
enum {
  WQ_LWHY_NOT_PLANNED = 0,    /* no activation of it may move: no label */
  WQ_LWHY_DECLARED = 1,       /* fixed channels-first: its op runs only so */
  WQ_LWHY_KERNEL_LAST = 2,    /* fixed channels-last: its SIMD kernel runs so */
  WQ_LWHY_PLANNED = 3,        /* free: the planner's label */
  WQ_LWHY_FUSED_BOUNDARY = 4, /* free Quantize/DequantizeLinear labelled channels-last:
                                 the transition is fused into it */
  WQ_LWHY_AS_WRITTEN = 5,     /* reads its activations in any layout, writes none: no label */
  WQ_LWHY_TRANSITION = 6      /* a ToNHWC / ToNCHW the pass inserted: labelled as it writes */
};

/* "NOT_PLANNED", "DECLARED", "KERNEL_CHANNELS_LAST", ... (out of range:
 * "NOT_PLANNED"). */
const char *wq_layout_why_name(int why);

/* stats may be NULL. */
wq_status wq_pass_layout_int8(wq_graph *g, wq_layout_stats *stats, wq_error *err);

/* The planner's problem for g as the pass poses it (for tests): one
 * variable per free node (node_var[i], -1 for a fixed node; node_var holds
 * g->n_nodes entries, may be NULL), one group per tensor that may move. p
 * is initialized here; free it with wq_lplan_free. */
wq_status wq_layout_problem(const wq_graph *g, wq_lplan *p, int *node_var, wq_error *err);

#endif
