/* Executes a graph node by node: infer each node's output shapes from the
 * actual inputs, place the outputs, run the kernel.
 *
 * Intermediates live in one arena planned from their lifetimes (see arena.h):
 * at load when every shape is static, otherwise after the first run with a
 * given set of input shapes, which runs on malloc'ed buffers (freed after
 * their last consumer) and records each tensor's size. Plans are cached by
 * input shapes. Graph outputs always get their own buffers so they survive
 * the run. A tensor whose run-time size exceeds its planned slot (a
 * data-dependent shape) falls back to malloc, and the plan is rebuilt.
 *
 * Static fast path: when the plan was made at load (every shape static),
 * the first run records each node's inferred output shapes, and later runs
 * (whose input shapes then necessarily equal the declared ones) reuse them
 * instead of calling infer again. The shapes cannot differ: load-time
 * inference already derived them without the non-constant data. Nodes with
 * a non-constant integer input (indices, shape tensors: data an op may
 * validate in infer) still run infer every time. Graph outputs of such a
 * plan live in buffers the plan keeps, so a run allocates nothing. */
#ifndef WQ_RUNTIME_EXECUTOR_H
#define WQ_RUNTIME_EXECUTOR_H

#include <stdbool.h>

#include "../ir/graph.h"

/* Memory figures of the arena plan used by the latest run (or planned at
 * load). */
typedef struct {
  bool planned;          /* false until a plan exists (symbolic shapes, no run yet) */
  bool planned_at_load;  /* the plan came from static shapes at load */
  size_t arena_bytes;    /* peak: size of the arena buffer the plan needs */
  size_t lower_bound;    /* largest total of intermediates alive at one step */
  size_t unshared_bytes; /* what the intermediates would take without reuse */
  int n_tensors;         /* intermediates placed in the arena */
  int plans_built;       /* plans computed so far (load + re-plans) */
  int arena_runs;        /* runs that executed in a planned arena */
  int recording_runs;    /* runs on malloc'ed buffers that recorded sizes */
  int shape_reuse_runs;  /* arena runs that reused the recorded shapes (no infer) */
} wq_arena_stats;

struct wq_arena_entry;

typedef struct {
  const wq_graph *graph;
  int *last_use; /* per tensor: index of its last consuming node, or -1 */
  int *producer; /* per tensor: index of the node writing it, or -1 */
  /* false: every intermediate is malloc'ed and freed after its last use (the
   * reference path tests compare the arena against). */
  bool use_arena;
  /* Tests: fill every output buffer with a 0xA5 pattern before its kernel
   * runs, so a kernel that relies on zeroed memory shows up. */
  bool poison;
  struct wq_arena_entry *plans; /* cache by input shapes, WQ_ARENA_CACHE slots */
  unsigned long clock;          /* run counter, for least-recently-used eviction */
  size_t *run_sizes;            /* bytes each tensor took in the current run */
  int *out_base;                /* per node: index of its first output in per-output tables */
  bool *may_skip_infer;         /* per node: no non-constant integer input (see above) */
  /* Graph outputs of the load-time plan: per tensor offset into
   * outputs_block (SIZE_MAX if none) and capacity. */
  size_t *output_offsets;
  size_t *output_sizes;
  unsigned char *outputs_block; /* malloc'ed; outputs is its first aligned byte */
  unsigned char *outputs;
  unsigned char *arena_block; /* malloc'ed; arena is its first aligned byte */
  unsigned char *arena;
  size_t arena_capacity;
  wq_arena_stats stats;
  /* Per-node timing, off while node_ms is NULL: node_ms[2 * i] accumulates
   * the milliseconds node i took in all (inputs, infer, placement, kernel),
   * node_ms[2 * i + 1] its kernel alone; now_ms is the caller's clock. The
   * difference is the executor's fixed cost per node. */
  double *node_ms;
  double (*now_ms)(void);
  /* Optional observer (off while NULL), called after each node runs with
   * every tensor's current value (`values`, as wq_execute's): the node's
   * outputs are valid during the call only, their buffers are reused later.
   * Capture, calibration and per-node comparisons read intermediates here.
   * A failure stops the run with that error. */
  wq_status (*observe)(void *ctx, const wq_graph *g, int node, const wq_value *values,
                       wq_error *err);
  void *observe_ctx;
  /* Memory limit (wq_load_options.max_memory_bytes; 0: none): the bytes
   * held outside the executor (memory_fixed: the weights, what the kernels'
   * plans hold and their scratch, wq_op.memory), the graph outputs
   * block, the arena and the intermediates a run mallocs may not pass it.
   * Checked before each allocation; one that would pass it fails the load
   * or the run with WQ_ERR_OUT_OF_MEMORY, and the plan stays usable. */
  size_t memory_limit;
  /* Time limit of a run (time_limit_ms > 0, on the clock limit_now_ms):
   * checked between nodes, so the run stops with WQ_ERR_TIMEOUT naming the
   * last node it finished; a single node still runs to its end. */
  double time_limit_ms;
  double (*limit_now_ms)(void);
  size_t memory_fixed;
  size_t outputs_total; /* bytes of the graph outputs block */
} wq_exec_plan;

/* Computes lifetimes and, when every intermediate's shape is static, the
 * arena plan for the declared input shapes. */
wq_status wq_exec_plan_init(wq_exec_plan *plan, const wq_graph *g, wq_error *err);
/* The same under a memory limit (bytes; 0: none) of which `fixed` bytes are
 * already taken: a load-time plan whose weights + outputs + arena pass it
 * fails here, naming the need and the limit, before anything is allocated. */
wq_status wq_exec_plan_init_within(wq_exec_plan *plan, const wq_graph *g, size_t limit,
                                   size_t fixed, wq_error *err);
void wq_exec_plan_free(wq_exec_plan *plan);

/* Runs every node. `values` has one entry per graph tensor; constants and
 * graph inputs must be filled in (owned[i] false), every other entry is
 * produced here. Buffers the executor allocates are marked owned[i] = true;
 * intermediates are freed after their last use, graph outputs are kept.
 * A graph output produced with owned[i] false lives in the plan's own
 * buffers: valid until the next run or wq_exec_plan_free.
 * On failure every owned buffer except graph outputs is freed and err names
 * the node; the caller frees what is left with wq_exec_values_release. */
wq_status wq_execute(wq_exec_plan *plan, wq_value *values, bool *owned, wq_error *err);

/* Frees every owned buffer and clears the flags. */
void wq_exec_values_release(int n, wq_value *values, bool *owned);

/* Memory figures of the current plan (see wq_arena_stats). */
wq_arena_stats wq_exec_arena_stats(const wq_exec_plan *plan);

/* Where the most recently used arena plan places tensor t: true with its
 * byte offset in the arena and the size of its slot; false when no plan
 * exists or t is not in the arena. */
bool wq_exec_tensor_slot(const wq_exec_plan *plan, int t, size_t *offset, size_t *size);

/* Runs one node on `in` (all data present) into `out`: infers output shapes,
 * allocates each output (owned by the caller afterwards; free(out[k].data))
 * and runs the kernel. On failure nothing stays allocated. Shared by the
 * executor and the constant folder. */
wq_status wq_run_node(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err);

#endif
