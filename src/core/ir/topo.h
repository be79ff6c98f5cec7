/* Topological order of a graph's nodes, for passes that append nodes out of
 * order (the quantizer's Q/DQ insertion) and for the ONNX writer, and other
 * queries on the graph's edges. */
#ifndef WQ_IR_TOPO_H
#define WQ_IR_TOPO_H

#include "graph.h"

/* Fills order[0..g->n_nodes) with node indices such that every node comes
 * after the nodes producing its inputs. Among ready nodes the lowest index
 * goes first, so an already sorted graph keeps its order. Only the inputs
 * of the nodes count (not tensors their subgraphs read). Fails with
 * WQ_ERR_INVALID_MODEL naming the node when a tensor is produced by two
 * nodes or the nodes form a cycle. */
wq_status wq_graph_topo_order(const wq_graph *g, int *order, wq_error *err);

/* Kahn's algorithm on edges in CSR form: the consumers of node p are
 * consumers[start[p] .. start[p + 1]) (an edge per input, repeats allowed)
 * and indeg[c] counts c's incoming edges (used up). Writes the order into
 * order[], the lowest ready index first, and returns the number of nodes
 * placed: fewer than n when there is a cycle (their indeg stays > 0).
 * heap has room for n ints. Shared with the ONNX importer. */
int wq_kahn_order(int n, const int *start, const int *consumers, int *indeg, int *heap, int *order);

/* True when tensor t is a graph output or some node reads it (false for
 * t < 0). Linear in the graph's size. */
bool wq_graph_tensor_is_read(const wq_graph *g, int t);

#endif
