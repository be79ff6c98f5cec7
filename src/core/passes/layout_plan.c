#include "layout_plan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void wq_lplan_init(wq_lplan *p, int n_vars) {
  memset(p, 0, sizeof *p);
  p->n_vars = n_vars;
}

void wq_lplan_free(wq_lplan *p) {
  free(p->group_start);
  free(p->weight);
  free(p->members);
  memset(p, 0, sizeof *p);
}

static bool grow(void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap)
    return true;
  int cap2 = *cap ? *cap : 16;
  while (cap2 < need)
    cap2 *= 2;
  void *bigger = realloc(*arr, (size_t)cap2 * elem);
  if (!bigger)
    return false;
  *arr = bigger;
  *cap = cap2;
  return true;
}

wq_status wq_lplan_add_group(wq_lplan *p, const int *members, int n, int64_t weight,
                             wq_error *err) {
  if (p->n_groups == p->cap_groups) {
    const int cap = p->cap_groups ? 2 * p->cap_groups : 16;
    int *starts = realloc(p->group_start, (size_t)(cap + 1) * sizeof *starts);
    if (starts)
      p->group_start = starts;
    int64_t *weights = starts ? realloc(p->weight, (size_t)cap * sizeof *weights) : NULL;
    if (!weights)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
    p->weight = weights;
    p->cap_groups = cap;
  }
  if (!grow((void **)&p->members, &p->cap_members, p->n_members + n, sizeof *p->members))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  if (p->n_groups == 0)
    p->group_start[0] = 0;
  memcpy(p->members + p->n_members, members, (size_t)n * sizeof *members);
  p->n_members += n;
  p->weight[p->n_groups] = weight;
  p->group_start[++p->n_groups] = p->n_members;
  return WQ_OK;
}

static int label_of(int member, const unsigned char *labels) {
  return member >= 0 ? labels[member] : member == WQ_LPLAN_CHANNELS_LAST;
}

int64_t wq_lplan_cost(const wq_lplan *p, const unsigned char *labels) {
  int64_t cost = 0;
  for (int gi = 0; gi < p->n_groups; gi++) {
    bool seen[2] = {false, false};
    for (int k = p->group_start[gi]; k < p->group_start[gi + 1]; k++)
      seen[label_of(p->members[k], labels)] = true;
    if (seen[0] && seen[1])
      cost += p->weight[gi];
  }
  return cost;
}

/* The flow network: vertex 0 the source (declared), 1 the sink
 * (channels-last), 2.. the variables, then the groups' auxiliary vertices.
 * Edge e and e ^ 1 are each other's reverse. */
typedef struct {
  int n_vertices, n_edges, cap_edges;
  int *to, *next, *head, *level, *iter, *queue, *path;
  int64_t *cap;
} flow_net;

static int vertex_of(int member) {
  return member >= 0 ? member + 2 : member == WQ_LPLAN_CHANNELS_LAST ? 1 : 0;
}

/* u -> v with capacity c, and v -> u with capacity back. */
static bool add_edge(flow_net *f, int u, int v, int64_t c, int64_t back) {
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
  const int e = f->n_edges;
  f->to[e] = v;
  f->cap[e] = c;
  f->next[e] = f->head[u];
  f->head[u] = e;
  f->to[e + 1] = u;
  f->cap[e + 1] = back;
  f->next[e + 1] = f->head[v];
  f->head[v] = e + 1;
  f->n_edges += 2;
  return true;
}

static void net_free(flow_net *f) {
  free(f->to);
  free(f->next);
  free(f->head);
  free(f->level);
  free(f->iter);
  free(f->queue);
  free(f->path);
  free(f->cap);
}

/* Builds the network; *constant collects the groups that hold both fixed
 * labels (paid whatever the variables take). */
static bool net_build(const wq_lplan *p, flow_net *f, int64_t *constant) {
  f->n_vertices = 2 + p->n_vars + 2 * p->n_groups;
  f->head = malloc((size_t)f->n_vertices * sizeof *f->head);
  f->level = malloc((size_t)f->n_vertices * sizeof *f->level);
  f->iter = malloc((size_t)f->n_vertices * sizeof *f->iter);
  f->queue = malloc((size_t)f->n_vertices * sizeof *f->queue);
  f->path = malloc((size_t)f->n_vertices * sizeof *f->path);
  int *seen = calloc((size_t)f->n_vertices, sizeof *seen); /* group stamp + 1 */
  int *distinct = malloc(((size_t)p->n_members + 1) * sizeof *distinct);
  bool ok = f->head && f->level && f->iter && f->queue && f->path && seen && distinct;
  for (int v = 0; ok && v < f->n_vertices; v++)
    f->head[v] = -1;
  /* Unbounded: more than every weight together (weights are tensor bytes,
   * capped far below 2^62 / the group count by the caller). */
  int64_t inf = 1;
  for (int gi = 0; gi < p->n_groups; gi++)
    inf = inf + p->weight[gi] < INT64_MAX / 4 ? inf + p->weight[gi] : INT64_MAX / 4;
  *constant = 0;
  int aux = 2 + p->n_vars;
  for (int gi = 0; ok && gi < p->n_groups; gi++) {
    int n = 0;
    for (int k = p->group_start[gi]; k < p->group_start[gi + 1]; k++) {
      const int v = vertex_of(p->members[k]);
      if (seen[v] != gi + 1) {
        seen[v] = gi + 1;
        distinct[n++] = v;
      }
    }
    const int64_t w = p->weight[gi];
    if (n < 2 || w == 0)
      continue;
    if (seen[0] == gi + 1 && seen[1] == gi + 1) {
      *constant += w;
      continue;
    }
    if (n == 2) {
      ok = add_edge(f, distinct[0], distinct[1], w, w);
      continue;
    }
    const int a1 = aux++, a2 = aux++;
    ok = add_edge(f, a1, a2, w, 0);
    for (int k = 0; ok && k < n; k++)
      ok = add_edge(f, distinct[k], a1, inf, 0) && add_edge(f, a2, distinct[k], inf, 0);
  }
  free(seen);
  free(distinct);
  return ok;
}

/* Levels from the source over edges with room; true when the sink is
 * reached. */
static bool net_levels(flow_net *f) {
  for (int v = 0; v < f->n_vertices; v++)
    f->level[v] = -1;
  int qh = 0, qt = 0;
  f->queue[qt++] = 0;
  f->level[0] = 0;
  while (qh < qt) {
    const int u = f->queue[qh++];
    for (int e = f->head[u]; e >= 0; e = f->next[e])
      if (f->cap[e] > 0 && f->level[f->to[e]] < 0) {
        f->level[f->to[e]] = f->level[u] + 1;
        f->queue[qt++] = f->to[e];
      }
  }
  return f->level[1] >= 0;
}

/* One augmenting path along increasing levels (Dinic's blocking flow, kept
 * iterative: the path can be as long as the graph). Returns the flow sent,
 * 0 when the level graph is blocked. */
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
    while (e >= 0 && (f->cap[e] <= 0 || f->level[f->to[e]] != f->level[u] + 1))
      e = f->next[e];
    f->iter[u] = e;
    if (e >= 0) {
      f->path[depth++] = e;
      u = f->to[e];
      continue;
    }
    /* Dead end: no path to the sink from u at this level. */
    f->level[u] = -1;
    if (depth == 0)
      return 0;
    const int back = f->path[--depth];
    u = f->to[back ^ 1];
    f->iter[u] = f->next[f->iter[u]];
  }
}

wq_status wq_lplan_solve(const wq_lplan *p, unsigned char *labels, int64_t *cost, wq_error *err) {
  flow_net f;
  memset(&f, 0, sizeof f);
  int64_t constant = 0;
  if (!net_build(p, &f, &constant)) {
    net_free(&f);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  int64_t flow = 0;
  while (net_levels(&f)) {
    memcpy(f.iter, f.head, (size_t)f.n_vertices * sizeof *f.iter);
    for (int64_t sent; (sent = net_augment(&f)) > 0;)
      flow += sent;
  }
  /* Channels-last: the vertices that still reach the sink (the smallest
   * sink side among the minimum cuts). */
  int qh = 0, qt = 0;
  bool *to_sink = calloc((size_t)f.n_vertices, sizeof *to_sink);
  if (!to_sink) {
    net_free(&f);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "layout: out of memory");
  }
  to_sink[1] = true;
  f.queue[qt++] = 1;
  while (qh < qt) {
    const int v = f.queue[qh++];
    for (int e = f.head[v]; e >= 0; e = f.next[e]) { /* e: v -> u; e ^ 1: u -> v */
      const int u = f.to[e];
      if (!to_sink[u] && f.cap[e ^ 1] > 0) {
        to_sink[u] = true;
        f.queue[qt++] = u;
      }
    }
  }
  for (int v = 0; v < p->n_vars; v++)
    labels[v] = to_sink[v + 2];
  free(to_sink);
  net_free(&f);
  *cost = flow + constant;
  return WQ_OK;
}
