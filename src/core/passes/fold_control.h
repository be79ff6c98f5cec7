/* Constant folding through control flow: wq_pass_fold_constants, then
 * - a Gather of a Shape's result whose selected dims are static becomes a
 *   constant even when other dims are symbolic (the sample-count checks of
 *   audio exports: Shape(x)[1] == 1 with x of [batch, 1, samples]);
 * - an If whose condition is a constant is replaced by the nodes of the
 *   branch it takes (the other branch is dropped);
 * repeated while either changes the graph. */
#ifndef WQ_PASSES_FOLD_CONTROL_H
#define WQ_PASSES_FOLD_CONTROL_H

#include "fold_constants.h"

typedef struct {
  wq_fold_stats fold;   /* summed over the rounds */
  int ifs_inlined;      /* If nodes replaced by their taken branch */
  int static_dims_read; /* Shape -> Gather pairs folded from static dims */
} wq_fold_control_stats;

wq_status wq_pass_fold_control(wq_graph *g, int fold, wq_fold_control_stats *stats, wq_error *err);

#endif
