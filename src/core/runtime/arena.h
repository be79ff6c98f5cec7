/* Arena planning: given every intermediate tensor's byte size and lifetime
 * (the steps from the node that produces it to its last consumer), assign
 * each an offset in one buffer so that tensors alive at the same step never
 * share bytes, while tensors whose lifetimes do not overlap may reuse them.
 *
 * The planner is pure (no graph, no runtime): the executor builds the
 * lifetimes, tests feed hand-built ones. */
#ifndef WQ_RUNTIME_ARENA_H
#define WQ_RUNTIME_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/status.h"

/* Offsets and sizes are padded to this many bytes so every tensor starts on a
 * SIMD (v128) boundary. */
#define WQ_ARENA_ALIGN 16

typedef struct {
  size_t size; /* bytes; 0 is allowed (takes no space) */
  int first;   /* step (node index) that writes it */
  int last;    /* last step that reads it; >= first */
} wq_lifetime;

typedef struct {
  size_t arena_bytes; /* size of the buffer the offsets fit in */
  /* Largest total of raw sizes alive at any one step: no placement of these
   * tensors can use less, so arena_bytes / lower_bound measures the waste. */
  size_t lower_bound;
  size_t unshared_bytes; /* sum of aligned sizes: the cost without reuse */
} wq_arena_summary;

/* Plans offsets[0..n) for the tensors (each aligned to `alignment`, a power
 * of two). Tries several placement orders — largest tensor first, and the
 * tensors of the busiest step first — placing each tensor in the smallest
 * gap left by the already placed tensors it overlaps in time, and keeps the
 * order that gives the smallest arena. Fails only on bad lifetimes, size
 * overflow or out of memory. */
wq_status wq_arena_plan(const wq_lifetime *tensors, int n, size_t alignment, size_t *offsets,
                        wq_arena_summary *summary, wq_error *err);

/* Largest total of sizes alive at one step (see wq_arena_summary). */
size_t wq_arena_lower_bound(const wq_lifetime *tensors, int n);

/* Checks a placement: every offset aligned, every tensor inside arena_bytes,
 * and no two tensors that are alive at a common step overlap in memory.
 * Returns true when valid; otherwise describes the first violation in err. */
bool wq_arena_verify(const wq_lifetime *tensors, int n, const size_t *offsets, size_t alignment,
                     size_t arena_bytes, wq_error *err);

#endif
