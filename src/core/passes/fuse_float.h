/* Float fusion: a Relu whose input is a float Conv's output that nothing
 * else reads (and that is not a graph output) is folded into the Conv,
 * which then applies it to each block of output while it is in cache (one
 * pass over the activations fewer). Results are unchanged bit for bit. */
#ifndef WQ_PASSES_FUSE_FLOAT_H
#define WQ_PASSES_FUSE_FLOAT_H

#include "../ir/graph.h"

/* Runs on a graph whose ops are resolved and prepared; *fused (may be NULL)
 * counts the Relu nodes removed. */
void wq_pass_fuse_float(wq_graph *g, int *fused);

#endif
