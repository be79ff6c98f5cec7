#include "topo.h"

#include <stdlib.h>

/* Min-heap of node indices: Kahn's algorithm takes the lowest ready one. */
static void heap_push(int *heap, int *size, int v) {
  int i = (*size)++;
  heap[i] = v;
  while (i > 0 && heap[(i - 1) / 2] > heap[i]) {
    int p = (i - 1) / 2, tmp = heap[p];
    heap[p] = heap[i];
    heap[i] = tmp;
    i = p;
  }
}

static int heap_pop(int *heap, int *size) {
  int top = heap[0];
  heap[0] = heap[--(*size)];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < *size && heap[l] < heap[m])
      m = l;
    if (r < *size && heap[r] < heap[m])
      m = r;
    if (m == i)
      break;
    int tmp = heap[m];
    heap[m] = heap[i];
    heap[i] = tmp;
    i = m;
  }
  return top;
}

int wq_kahn_order(int n, const int *start, const int *consumers, int *indeg, int *heap,
                  int *order) {
  int heap_size = 0, done_count = 0;
  for (int c = 0; c < n; c++)
    if (indeg[c] == 0)
      heap_push(heap, &heap_size, c);
  while (heap_size > 0) {
    int p = heap_pop(heap, &heap_size);
    order[done_count++] = p;
    for (int e = start[p]; e < start[p + 1]; e++)
      if (--indeg[consumers[e]] == 0)
        heap_push(heap, &heap_size, consumers[e]);
  }
  return done_count;
}

wq_status wq_graph_topo_order(const wq_graph *g, int *order, wq_error *err) {
  const int n = g->n_nodes;
  int *producer = malloc(((size_t)g->n_tensors + 1) * sizeof *producer);
  int *start = calloc((size_t)n + 2, sizeof *start);
  int *indeg = calloc((size_t)n + 1, sizeof *indeg);
  int *heap = malloc(((size_t)n + 1) * sizeof *heap);
  int *consumers = NULL;
  wq_status st = WQ_OK;
  if (!producer || !start || !indeg || !heap) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory while ordering the nodes");
    goto done;
  }
  for (int t = 0; t < g->n_tensors; t++)
    producer[t] = -1;
  for (int i = 0; i < n && st == WQ_OK; i++) {
    const wq_node *node = &g->nodes[i];
    for (int k = 0; k < node->n_outputs; k++) {
      int t = node->outputs[k];
      if (t < 0)
        continue;
      if (producer[t] >= 0) {
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                     "tensor '%s' is produced twice: by node '%s' and by node '%s'",
                     g->tensors[t].name, g->nodes[producer[t]].name, node->name);
        break;
      }
      producer[t] = i;
    }
  }
  if (st != WQ_OK)
    goto done;
  /* Edges producer -> consumer in CSR form, one per input (with repeats). */
  size_t n_edges = 0;
  for (int c = 0; c < n; c++) {
    const wq_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t >= 0 && producer[t] >= 0) {
        start[producer[t] + 2]++;
        indeg[c]++;
        n_edges++;
      }
    }
  }
  consumers = malloc((n_edges ? n_edges : 1) * sizeof *consumers);
  if (!consumers) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory while ordering the nodes");
    goto done;
  }
  /* start[p + 1] becomes the fill cursor of p, start[p] its first edge. */
  for (int i = 0; i < n; i++)
    start[i + 2] += start[i + 1];
  for (int c = 0; c < n; c++) {
    const wq_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t >= 0 && producer[t] >= 0)
        consumers[start[producer[t] + 1]++] = c;
    }
  }
  if (wq_kahn_order(n, start, consumers, indeg, heap, order) < n) {
    int u = 0;
    while (indeg[u] == 0)
      u++;
    /* Walking back through unfinished producers n times ends on the cycle. */
    for (int step = 0; step < n; step++) {
      const wq_node *node = &g->nodes[u];
      int next = -1;
      for (int k = 0; k < node->n_inputs && next < 0; k++) {
        int t = node->inputs[k];
        if (t >= 0 && producer[t] >= 0 && indeg[producer[t]] > 0)
          next = producer[t];
      }
      if (next < 0)
        break;
      u = next;
    }
    st = wq_fail(err, WQ_ERR_INVALID_MODEL, g->nodes[u].name,
                 "graph has a cycle through node '%s' (%s)", g->nodes[u].name, g->nodes[u].op_type);
  }
done:
  free(producer);
  free(start);
  free(indeg);
  free(heap);
  free(consumers);
  return st;
}

bool wq_graph_tensor_is_read(const wq_graph *g, int t) {
  if (t < 0)
    return false;
  if (g->tensors[t].is_output)
    return true;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t)
        return true;
  return false;
}
