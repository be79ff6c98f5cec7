/* The pass manager: every load-time pass has one signature and runs from an
 * ordered table (api/model.c holds the load pipeline's). After each pass
 * that ran, the IR can be checked (wq_graph_validate) so a pass that leaves
 * a dangling index, a second producer or a read before its write fails the
 * load naming the pass instead of misbehaving later. Each pass reports a
 * few named counters; the manager keeps one record per table entry for the
 * caller (wq_model_pass_count / wq_model_pass). */
#ifndef WQ_PASSES_PASS_MANAGER_H
#define WQ_PASSES_PASS_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/graph.h"

#define WQ_PASS_MAX_STATS 6

typedef struct {
  const char *name; /* static string, e.g. "folded" */
  int64_t value;
} wq_pass_stat;

typedef struct {
  const char *name; /* the pass's name (static) */
  bool ran;         /* false: its options turned it off */
  int n_stats;
  wq_pass_stat stats[WQ_PASS_MAX_STATS];
} wq_pass_record;

/* Adds (or overwrites) counter `name` of a pass's record; counters past
 * WQ_PASS_MAX_STATS are dropped. */
void wq_pass_stat_set(wq_pass_record *rec, const char *name, int64_t value);

/* One pass: runs on g with the pipeline's context (ctx, the caller's type)
 * and writes its counters into rec. */
typedef wq_status (*wq_pass_fn)(void *ctx, wq_graph *g, wq_pass_record *rec, wq_error *err);

typedef struct {
  const char *name;
  wq_pass_fn run;
  bool (*enabled)(const void *ctx); /* NULL: always runs */
  bool ops_resolved;                /* the graph's ops are resolved once it has run */
} wq_pass;

/* Runs passes[0..n) in order, filling records[0..n) (names, ran, counters).
 * With `validate`, checks the graph after each pass that ran. Stops at the
 * first failure; err then names the node (when the pass did) and, for a
 * validation failure, the pass. */
wq_status wq_pass_run_all(const wq_pass *passes, int n, void *ctx, wq_graph *g, bool validate,
                          wq_pass_record *records, wq_error *err);

/* Structural checks on the IR: tensor indices in range, ranks in
 * [-1, WQ_MAX_RANK], at most one producer per tensor and none for constants
 * and graph inputs, every tensor a node reads written by an earlier node
 * (or a constant or graph input), graph inputs/outputs in range and every
 * output produced, and (ops_resolved) every node's op resolved. The wasm
 * build compiles it to a no-op (size budget). */
wq_status wq_graph_validate(const wq_graph *g, bool ops_resolved, wq_error *err);

/* Validation runs after every pass in debug builds (native without NDEBUG:
 * the ASan test build); elsewhere a load option turns it on. */
#if !defined(NDEBUG) && !defined(__EMSCRIPTEN__)
#define WQ_VALIDATE_IR_DEFAULT true
#else
#define WQ_VALIDATE_IR_DEFAULT false
#endif

#endif
