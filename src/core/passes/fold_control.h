/* Constant folding through control flow: wq_pass_fold_constants, then an
 * If whose condition is a constant (the shape and sample-rate checks of
 * exports, once input shapes are bound) is replaced by the nodes of the
 * branch it takes, the other branch dropped; repeated while that changes
 * the graph. */
#ifndef WQ_PASSES_FOLD_CONTROL_H
#define WQ_PASSES_FOLD_CONTROL_H

#include "fold_constants.h"

typedef struct {
  wq_fold_stats fold; /* summed over the rounds */
  int ifs_inlined;    /* If nodes replaced by their taken branch */
} wq_fold_control_stats;

wq_status wq_pass_fold_control(wq_graph *g, int fold, wq_fold_control_stats *stats, wq_error *err);

#endif
