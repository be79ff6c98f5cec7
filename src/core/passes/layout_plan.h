/* Exact two-label layout planner: a minimum cut over groups.
 *
 * Each free variable takes label 0 (the declared order) or 1 (channels
 * last). A group is one tensor: its members are the variables (or fixed
 * labels) of its producer and of every reader that cares about its layout,
 * and it costs its weight (the tensor's bytes) when its members do not all
 * agree: one transition per tensor, shared by every reader wanting the other
 * order. The total is a hypergraph cut; with two labels it is solved exactly
 * for any graph (DAG or not) as a minimum s-t cut, each group of three or
 * more members becoming two auxiliary vertices (members -> a1 unbounded,
 * a1 -> a2 its weight, a2 -> members unbounded).
 *
 * Ties: among all minimum labelings the one with the fewest channels-last
 * variables is taken (the vertices that can still reach the sink in the
 * residual graph are channels-last, every other one declared). That set is
 * the same for every maximum flow, so the answer depends only on the groups,
 * not on the order the flow was found in.
 *
 * More than two labels (say a channel-blocked packed layout beside these
 * two) make the problem NP-hard in general; the planner would then run a
 * bounded number of alpha-expansion moves (each an exact minimum cut like
 * this one, between "keep your label" and "take label alpha", alpha in a
 * fixed order) starting from the all-declared labeling, which stays
 * deterministic and never increases the cost. */
#ifndef WQ_PASSES_LAYOUT_PLAN_H
#define WQ_PASSES_LAYOUT_PLAN_H

#include <stdint.h>

#include "../ir/status.h"

/* Members that are not variables: a fixed label. */
enum { WQ_LPLAN_DECLARED = -1, WQ_LPLAN_CHANNELS_LAST = -2 };

typedef struct {
  int n_vars, n_groups;
  int64_t *weight; /* [n_groups], 0 until set */
  int n_pairs, cap_pairs;
  int *pairs; /* [2 * n_pairs]: group, member (a variable, or a fixed label) */
} wq_lplan;

wq_status wq_lplan_init(wq_lplan *p, int n_vars, int n_groups, wq_error *err);
void wq_lplan_free(wq_lplan *p);

/* Adds member (a variable index, WQ_LPLAN_DECLARED or
 * WQ_LPLAN_CHANNELS_LAST) to group; repeats are fine. A group costs
 * weight[group] (>= 0) when its members' labels differ. */
wq_status wq_lplan_add(wq_lplan *p, int group, int member, wq_error *err);

/* The cost of a labeling (labels[v] 0 or 1 per variable). */
int64_t wq_lplan_cost(const wq_lplan *p, const unsigned char *labels);
/* The same, and in charge[n_groups] what each group adds to it (its weight
 * when its members disagree, else 0); -1 out of memory. */
int64_t wq_lplan_charges(const wq_lplan *p, const unsigned char *labels, int64_t *charge);

/* Fills labels[n_vars] with a minimum-cost labeling (ties as above) and
 * *cost with its cost. */
wq_status wq_lplan_solve(const wq_lplan *p, unsigned char *labels, int64_t *cost, wq_error *err);

/* delta[v] (n_vars entries): how much the cost of `labels` grows when only
 * variable v takes the other label (>= 0 at a minimum; 0 is a tie). Linear
 * in the pairs: why each free label is the one it is, as a number. */
wq_status wq_lplan_flip_costs(const wq_lplan *p, const unsigned char *labels, int64_t *delta,
                              wq_error *err);

#endif
