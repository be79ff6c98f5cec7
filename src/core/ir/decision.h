/* The decision record: one per node, owned by the load pipeline. Every
 * pass that decides something about a node writes it here and nowhere
 * else; the graph JSON (api/graph_json.c), `wasmq info --lowered`
 * (passes/lower_report.c), the inspector and the quantize report render
 * it. Ops never write it: a plan hook returns its kernel as data
 * (ops/op.h wq_op_kernel) and the pipeline stores it.
 *
 * Who writes what:
 *  - reason, detail, sources: the int8 lowering (passes/lower*.c) on each
 *    node it tries; the partition pass codes the rest; the layout pass its
 *    transitions;
 *  - layout_*, planned_bytes, moved_bytes: the layout pass
 *    (passes/layout_int8.c);
 *  - kernel, kernel_isa: the pipeline, from the op's plan hook.
 * What a node became is its op after the pipeline (wq_node.op) with what it
 * replaced in sources. */
#ifndef WQ_IR_DECISION_H
#define WQ_IR_DECISION_H

#include <stdint.h>

typedef struct wq_decision {
  int reason;   /* wq_reason code (ops/op.h WQ_REASON_LIST), 0 undecided */
  char *detail; /* owned sentence for people: what it became or why it stayed float; NULL
                   when no pass explained it (the lowering did not run) */
  /* Op type and name of each node it replaced, in pairs (owned; n_sources
   * strings): itself as written, the DequantizeLinear nodes it read
   * through, the nodes it absorbed. 0 for a node the lowering kept. */
  char **sources;
  int n_sources;
  /* The kernel its plan hook chose ("im2col_gemm", "gemv") and the ISA of
   * the variant running it ("ref", "simd128", "relaxed"); static strings,
   * NULL before planning or for ops without a choice. */
  const char *kernel, *kernel_isa;
  /* Layout: why it got its label (WQ_LWHY_*, passes/layout_int8.h; 0 not
   * planned), the label (1 channels-last), and per input 1 when it was read
   * as its producer wrote it (owned, [n_inputs], NULL when none was). */
  unsigned char layout_why, layout_last;
  unsigned char *layout_as_is;
  int64_t layout_flip; /* free label: what the other label alone would add to the planned bytes */
  /* The bytes per run the layout planner charged to this node (a
   * transition: its tensor; a channels-first Resize/DepthToSpace: what it
   * gathers) and the bytes its transition actually moves (0 when fused
   * into a Quantize/DequantizeLinear or not a transition). */
  int64_t planned_bytes, moved_bytes;
} wq_decision;

/* Frees what the record owns and zeroes it. */
void wq_decision_clear(wq_decision *d);

#endif
