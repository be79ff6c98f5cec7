#include "layout_plan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

wq_status wq_lplan_init(wq_lplan *p, int n_vars, int n_groups, wq_error *err) {
  memset(p, 0, sizeof *p);
  p->n_vars = n_vars;
  p->n_groups = n_groups;
  p->weight = calloc((size_t)n_groups + 1, sizeof *p->weight);
  return p->weight ? WQ_OK : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
}

void wq_lplan_free(wq_lplan *p) {
  free(p->weight);
  free(p->pairs);
  memset(p, 0, sizeof *p);
}

wq_status wq_lplan_add(wq_lplan *p, int group, int member, wq_error *err) {
  if (p->n_pairs == p->cap_pairs) {
    const int cap = p->cap_pairs ? 2 * p->cap_pairs : 64;
    int *pairs = realloc(p->pairs, 2 * (size_t)cap * sizeof *pairs);
    if (!pairs)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
    p->pairs = pairs;
    p->cap_pairs = cap;
  }
  p->pairs[2 * p->n_pairs] = group;
  p->pairs[2 * p->n_pairs++ + 1] = member;
  return WQ_OK;
}

int64_t wq_lplan_charges(const wq_lplan *p, const unsigned char *labels, int64_t *charge) {
  unsigned char *seen = calloc((size_t)p->n_groups + 1, 1); /* bit 0: declared, bit 1: last */
  int64_t cost = 0;
  for (int k = 0; seen && k < p->n_pairs; k++) {
    const int m = p->pairs[2 * k + 1];
    seen[p->pairs[2 * k]] |=
        (unsigned char)(1 << (m >= 0 ? labels[m] : m == WQ_LPLAN_CHANNELS_LAST));
  }
  for (int gi = 0; seen && gi < p->n_groups; gi++) {
    const int64_t w = seen[gi] == 3 ? p->weight[gi] : 0;
    cost += w;
    if (charge)
      charge[gi] = w;
  }
  free(seen);
  return seen ? cost : -1;
}

int64_t wq_lplan_cost(const wq_lplan *p, const unsigned char *labels) {
  return wq_lplan_charges(p, labels, NULL);
}

wq_status wq_lplan_flip_costs(const wq_lplan *p, const unsigned char *labels, int64_t *delta,
                              wq_error *err) {
  int *count = calloc(2 * (size_t)p->n_groups + 1, sizeof *count); /* members labelled 0 / 1 */
  int *start = calloc((size_t)p->n_vars + 2, sizeof *start);       /* each variable's pairs */
  int *group = malloc(((size_t)p->n_pairs + 1) * sizeof *group);   /* their groups, by variable */
  int *moved = calloc((size_t)p->n_groups + 1, sizeof *moved);     /* v's members of a group */
  if (!count || !start || !group || !moved) {
    free(count);
    free(start);
    free(group);
    free(moved);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  for (int k = 0; k < p->n_pairs; k++) {
    const int m = p->pairs[2 * k + 1];
    count[2 * p->pairs[2 * k] + (m >= 0 ? labels[m] : m == WQ_LPLAN_CHANNELS_LAST)]++;
    if (m >= 0)
      start[m + 2]++;
  }
  for (int v = 2; v <= p->n_vars + 1; v++)
    start[v] += start[v - 1];
  for (int k = 0; k < p->n_pairs; k++)
    if (p->pairs[2 * k + 1] >= 0)
      group[start[p->pairs[2 * k + 1] + 1]++] = p->pairs[2 * k];
  /* Now variable v's groups are group[start[v] .. start[v + 1]). */
  for (int v = 0; v < p->n_vars; v++) {
    int64_t d = 0;
    for (int k = start[v]; k < start[v + 1]; k++)
      moved[group[k]]++;
    for (int k = start[v]; k < start[v + 1]; k++) {
      const int g = group[k], l = labels[v], n = moved[g];
      if (!n)
        continue; /* counted at its first pair */
      const bool before = count[2 * g] && count[2 * g + 1];
      const bool after = count[2 * g + l] > n; /* the other label now has n members */
      d += ((int64_t)after - (int64_t)before) * p->weight[g];
      moved[g] = 0;
    }
    delta[v] = d;
  }
  free(count);
  free(start);
  free(group);
  free(moved);
  return WQ_OK;
}

/* The flow network: vertex 0 the source (declared), 1 the sink
 * (channels-last), 2.. the variables, then two auxiliary vertices per group.
 * Edge e and e ^ 1 are each other's reverse. */
typedef struct {
  int n_vertices, n_edges, cap_edges;
  int *to, *next, *head, *queue;
  int *via;   /* the edge a search reached a vertex by, -1: not reached */
  int *level; /* search depth from the source */
  int *iter;  /* the next edge to try from each vertex (Dinic) */
  int *path;
  int64_t *cap;
} flow_net;

static int vertex_of(int member) {
  return member >= 0 ? member + 2 : member == WQ_LPLAN_CHANNELS_LAST ? 1 : 0;
}

/* u -> v with capacity c (its reverse starts empty). */
static bool add_edge(flow_net *f, int u, int v, int64_t c) {
  if (f->n_edges + 2 > f->cap_edges) {
    const int cap = f->cap_edges ? 2 * f->cap_edges : 64;
    int *to = realloc(f->to, (size_t)cap * sizeof *to);
    if (to)
      f->to = to;
    int *next = to ? realloc(f->next, (size_t)cap * sizeof *next) : NULL;
    if (next)
      f->next = next;
    int64_t *caps = next ? realloc(f->cap, (size_t)cap * sizeof *caps) : NULL;
    if (!caps)
      return false;
    f->cap = caps;
    f->cap_edges = cap;
  }
  for (int k = 0; k < 2; k++) {
    const int e = f->n_edges++;
    f->to[e] = k ? u : v;
    f->cap[e] = k ? 0 : c;
    f->next[e] = f->head[k ? v : u];
    f->head[k ? v : u] = e;
  }
  return true;
}

static void net_free(flow_net *f) {
  free(f->to);
  free(f->next);
  free(f->head);
  free(f->via);
  free(f->queue);
  free(f->level);
  free(f->iter);
  free(f->path);
  free(f->cap);
}

/* Each pair adds member -> a1 and a2 -> member, unbounded; each group with
 * a weight a1 -> a2 of that weight. A cut pays the weight exactly when the
 * group's members sit on both sides. */
static bool net_build(const wq_lplan *p, flow_net *f) {
  f->n_vertices = 2 + p->n_vars + 2 * p->n_groups;
  const size_t nv = (size_t)f->n_vertices;
  f->head = malloc(nv * sizeof *f->head);
  f->via = malloc(nv * sizeof *f->via);
  f->queue = malloc(nv * sizeof *f->queue);
  f->level = malloc(nv * sizeof *f->level);
  f->iter = malloc(nv * sizeof *f->iter);
  f->path = malloc(nv * sizeof *f->path);
  bool ok = f->head && f->via && f->queue && f->level && f->iter && f->path;
  for (int v = 0; ok && v < f->n_vertices; v++)
    f->head[v] = -1;
  /* Unbounded: more than every weight together (weights are tensor bytes,
   * capped far below INT64_MAX / the group count by the caller). */
  int64_t inf = 1;
  for (int gi = 0; gi < p->n_groups; gi++) {
    inf = inf < INT64_MAX / 4 - p->weight[gi] ? inf + p->weight[gi] : INT64_MAX / 4;
    const int a1 = 2 + p->n_vars + 2 * gi;
    ok = ok && (p->weight[gi] == 0 || add_edge(f, a1, a1 + 1, p->weight[gi]));
  }
  for (int k = 0; ok && k < p->n_pairs; k++) {
    const int gi = p->pairs[2 * k], v = vertex_of(p->pairs[2 * k + 1]);
    const int a1 = 2 + p->n_vars + 2 * gi;
    ok = p->weight[gi] == 0 || (add_edge(f, v, a1, inf) && add_edge(f, a1 + 1, v, inf));
  }
  return ok;
}

/* Breadth-first search over edges with room from vertex `from`: forward
 * (along the edges) or backward (against them: who can reach `from`).
 * Fills via[]; true when vertex `to` is reached. */
static bool net_search(flow_net *f, int from, int to, bool backward) {
  for (int v = 0; v < f->n_vertices; v++)
    f->via[v] = -1;
  int qh = 0, qt = 0;
  f->queue[qt++] = from;
  f->via[from] = f->n_edges; /* reached, by no edge */
  f->level[from] = 0;
  while (qh < qt) {
    const int u = f->queue[qh++];
    for (int e = f->head[u]; e >= 0; e = f->next[e]) {
      const int v = f->to[e];
      if (f->via[v] < 0 && f->cap[backward ? e ^ 1 : e] > 0) {
        f->via[v] = e;
        f->level[v] = f->level[u] + 1;
        f->queue[qt++] = v;
      }
    }
  }
  return to >= 0 && f->via[to] >= 0;
}

/* One augmenting path along increasing levels of the last forward search
 * (Dinic's blocking flow, iterative: a path can be as long as the graph).
 * Returns the flow sent, 0 when the level graph is blocked. */
static int64_t net_augment(flow_net *f) {
  int depth = 0, u = 0;
  for (;;) {
    if (u == 1) {
      int64_t push = INT64_MAX;
      for (int k = 0; k < depth; k++)
        push = f->cap[f->path[k]] < push ? f->cap[f->path[k]] : push;
      for (int k = 0; k < depth; k++) {
        f->cap[f->path[k]] -= push;
        f->cap[f->path[k] ^ 1] += push;
      }
      return push;
    }
    int e = f->iter[u];
    while (e >= 0 &&
           (f->cap[e] <= 0 || f->via[f->to[e]] < 0 || f->level[f->to[e]] != f->level[u] + 1))
      e = f->next[e];
    f->iter[u] = e;
    if (e >= 0) {
      f->path[depth++] = e;
      u = f->to[e];
      continue;
    }
    f->via[u] = -1; /* a dead end: no path to the sink from u at this level */
    if (depth == 0)
      return 0;
    u = f->to[f->path[--depth] ^ 1];
    f->iter[u] = f->next[f->iter[u]];
  }
}

wq_status wq_lplan_solve(const wq_lplan *p, unsigned char *labels, int64_t *cost, wq_error *err) {
  flow_net f;
  memset(&f, 0, sizeof f);
  if (!net_build(p, &f)) {
    net_free(&f);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  int64_t flow = 0;
  while (net_search(&f, 0, 1, false)) {
    memcpy(f.iter, f.head, (size_t)f.n_vertices * sizeof *f.iter);
    for (int64_t sent; (sent = net_augment(&f)) > 0;)
      flow += sent;
  }
  /* Channels-last: the vertices that still reach the sink (the smallest
   * sink side among the minimum cuts). */
  net_search(&f, 1, -1, true);
  for (int v = 0; v < p->n_vars; v++)
    labels[v] = f.via[v + 2] >= 0;
  net_free(&f);
  *cost = flow;
  return WQ_OK;
}
