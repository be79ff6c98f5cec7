/* Partitioning: which backend runs each node, why, and the int8 regions.
 *
 * Every node carries a reason code (wq_node.rec.reason, one of wq_reason): the
 * int8 lowering sets it on each node it tries (INT8 when it rewrote the
 * node onto an int8 kernel, otherwise the first condition that kept it
 * float), and the partition pass, right after lowering, gives every other
 * node one (BOUNDARY for the Quantize/DequantizeLinear left at a region's
 * edge, SHAPE for integer shape plumbing, NOT_QUANTIZED for a float node
 * off the quantized path, MODE_FP in fp mode); the layout pass marks its
 * transitions TRANSITION. The human sentence is the record's detail
 * (wq_lower_why).
 *
 * Modes (wq_load_options.partition):
 *  - int+fp (default): int8 where the lowering can, float islands with
 *    Quantize/DequantizeLinear at their edges;
 *  - int: strict; a node on the quantized path (reading a
 *    DequantizeLinear's result or feeding a QuantizeLinear) that stays
 *    float fails the load, naming the node and its reason code;
 *  - fp: no int8 lowering; QDQ graphs run op by op in float, constant
 *    weights dequantized once at load by constant folding (to compare
 *    against int8).
 *
 * wq_partition_report reads the final graph (after layout) and gives each
 * node its backend and region: regions are the connected groups of int8
 * nodes (int8 kernels, boundary Quantize/DequantizeLinear, transitions),
 * numbered from 1 in the order of their first node. */
#ifndef WQ_PASSES_PARTITION_H
#define WQ_PASSES_PARTITION_H

#include <stdint.h>

#include "../ir/graph.h"
#include "../ops/op.h"

/* Reason codes: WQ_REASON_LIST in ops/op.h. */

/* "INT8", "UNSUPPORTED_OP", ...; "NONE" for an out-of-range code. */
const char *wq_reason_name(int code);

typedef enum {
  WQ_PARTITION_DEFAULT = 0, /* int+fp */
  WQ_PARTITION_INT_FP = 1,
  WQ_PARTITION_INT = 2,
  WQ_PARTITION_FP = 3
} wq_partition_mode;

/* "int", "int+fp", "fp" -> mode; -1 for anything else. */
int wq_partition_mode_parse(const char *s);
/* The mode's name; DEFAULT is "int+fp". */
const char *wq_partition_mode_name(wq_partition_mode mode);

typedef enum { WQ_BACKEND_FLOAT = 0, WQ_BACKEND_INT8_SIMD = 1, WQ_BACKEND_INT8_REF = 2 } wq_backend;
const char *wq_backend_name(wq_backend b); /* "float", "int8-simd", "int8-ref" */

typedef struct {
  int int8;     /* nodes on int8 kernels (simd or reference) */
  int boundary; /* Quantize/DequantizeLinear */
  int floats;   /* float nodes (shape plumbing excluded) */
  int on_path;  /* float nodes on the quantized path */
  int shape;    /* shape plumbing */
} wq_partition_stats;

/* Gives each node without a reason its code and, in int mode, fails on the
 * first node on the quantized path that runs float (WQ_ERR_UNSUPPORTED
 * naming it, its reason code and the lowering's explanation). stats may be
 * NULL. */
wq_status wq_pass_partition(wq_graph *g, wq_partition_mode mode, wq_partition_stats *stats,
                            wq_error *err);

/* int mode, before the int8 lowering rewrites anything: g is the graph as
 * the lowering would leave it (the shadow of passes/lower.h wq_lower_check;
 * per node: gone[i] absorbed into another, rewritten[i] onto an int8 op,
 * why[i] its note or NULL). Fails on the first node on the quantized path
 * that would run float, naming it, its reason code and the note — the
 * decision wq_pass_partition makes after the lowering. */
wq_status wq_partition_check_int(const wq_graph *g, const bool *gone, const bool *rewritten,
                                 const char *const *why, wq_error *err);

/* The backends and regions of the final graph. */
typedef struct {
  int n_nodes;
  wq_backend *backend; /* [n_nodes] */
  int *region;         /* [n_nodes] region id (1...), -1 for float nodes */
  int n_regions;
  int int8, boundary, floats, shape; /* node counts as in wq_partition_stats */
  int transitions;                   /* layout conversions, fused ones included */
  int64_t transition_bytes;          /* bytes the unfused ones move per run (their records' sum) */
  int fused; /* folded into a Quantize/DequantizeLinear (move nothing extra) */
} wq_partition_report;

/* n is a Quantize/DequantizeLinear with a layout transition fused in: its
 * input and output layouts differ (passes/layout_int8.c). */
bool wq_fused_boundary(const wq_graph *g, const wq_node *n);

/* Fills *r (arrays malloc'ed; wq_partition_report_free releases them). */
wq_status wq_partition_report_build(const wq_graph *g, wq_partition_report *r, wq_error *err);
void wq_partition_report_free(wq_partition_report *r);

/* The one-line summary, e.g. "int8: 41 of 52 nodes in 3 regions;
 * quantize/dequantize: 4; float: 7 nodes (LeakyRelu x6, Softmax x1
 * unsupported); 4 transitions moving 3.0 KB" (malloc'ed; NULL out of
 * memory). Float ops are listed when their reason is not NOT_QUANTIZED or
 * MODE_FP. */
char *wq_partition_summary(const wq_graph *g, const wq_partition_report *r);

/* Bytes a tensor holds (static shape), 0 when unknown (or past int64). */
int64_t wq_tensor_static_bytes(const wq_tensor *t);

#endif
