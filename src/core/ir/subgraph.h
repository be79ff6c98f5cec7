/* Subgraphs (If branches): the outer-scope values a branch reads become
 * ordinary inputs of the node owning it, so every pass (lifetimes, folding,
 * the arena) sees those reads as edges, and the op's kernel receives them
 * as values like any other input. */
#ifndef WQ_IR_SUBGRAPH_H
#define WQ_IR_SUBGRAPH_H

#include "graph.h"

/* For every node of g (and, first, of every subgraph inside it) that owns
 * subgraphs: appends to the node's inputs each tensor of g its subgraphs
 * read without defining it (matched by name; ONNX forbids shadowing), and
 * sets each subgraph's `inputs` to one entry per node input after the
 * first: the subgraph's tensor bound to it, or -1 when it does not read
 * that one. Only for subgraphs without declared inputs (If); a node whose
 * subgraphs declare inputs (Loop, Scan) is left as it is. */
wq_status wq_graph_bind_captures(wq_graph *g, wq_error *err);

/* True when tensor t of subgraph s is defined inside it: a constant, a
 * declared input or some node's output. */
bool wq_subgraph_defines(const wq_graph *s, int t);

#endif
