/* Static shape inference and constant folding, run once at load.
 *
 * Walks the nodes in order. A node whose inputs all have known shapes gets its
 * output dtypes and shapes inferred (a static shape mismatch is reported here,
 * naming the node, rather than at run time). A node whose inputs are all
 * constants — or, for shape-only ops like Shape, whose input shape is static —
 * is executed now and removed; its outputs become constants. This turns the
 * Shape→Gather→Concat→Reshape plumbing of PyTorch and Paddle exports into
 * plain constants once the input shapes are bound. */
#ifndef WQ_PASSES_FOLD_CONSTANTS_H
#define WQ_PASSES_FOLD_CONSTANTS_H

#include "../ir/graph.h"

typedef struct {
  int nodes_folded;
  int shapes_inferred;
  int shape_reads_rewired; /* Shape reading a DequantizeLinear's input instead */
} wq_fold_stats;

/* `fold` = 0 only infers shapes. stats may be NULL. */
wq_status wq_pass_fold_constants(wq_graph *g, int fold, wq_fold_stats *stats, wq_error *err);

#endif
