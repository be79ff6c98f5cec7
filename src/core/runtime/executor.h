/* Executes a graph node by node: infer each node's output shapes from the
 * actual inputs, allocate the outputs, run the reference kernel, and free each
 * intermediate after its last consumer. */
#ifndef WQ_RUNTIME_EXECUTOR_H
#define WQ_RUNTIME_EXECUTOR_H

#include <stdbool.h>

#include "../ir/graph.h"

typedef struct {
  const wq_graph *graph;
  int *last_use; /* per tensor: index of its last consuming node, or -1 */
} wq_exec_plan;

wq_status wq_exec_plan_init(wq_exec_plan *plan, const wq_graph *g, wq_error *err);
void wq_exec_plan_free(wq_exec_plan *plan);

/* Runs every node. `values` has one entry per graph tensor; constants and
 * graph inputs must be filled in (owned[i] false), every other entry is
 * produced here. Buffers the executor allocates are marked owned[i] = true;
 * intermediates are freed after their last use, graph outputs are kept.
 * On failure every owned buffer except graph outputs is freed and err names
 * the node; the caller frees what is left with wq_exec_values_release. */
wq_status wq_execute(const wq_exec_plan *plan, wq_value *values, bool *owned, wq_error *err);

/* Frees every owned buffer and clears the flags. */
void wq_exec_values_release(int n, wq_value *values, bool *owned);

/* Runs one node on `in` (all data present) into `out`: infers output shapes,
 * allocates each output (owned by the caller afterwards; free(out[k].data))
 * and runs the kernel. On failure nothing stays allocated. Shared by the
 * executor and the constant folder. */
wq_status wq_run_node(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err);

#endif
