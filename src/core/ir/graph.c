#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"
#include "../quant/qparams.h"
#include "format.h"

char *wq_strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

const char *wq_strfind(const char *s, const char *sub) {
  size_t n = strlen(sub);
  for (; *s; s++)
    if (strncmp(s, sub, n) == 0)
      return s;
  return n == 0 ? s : NULL;
}

wq_graph *wq_graph_new(void) { return calloc(1, sizeof(wq_graph)); }

void wq_tensor_clear(wq_tensor *t) {
  free(t->name);
  for (int i = 0; i < WQ_MAX_RANK; i++)
    free(t->dim_params[i]);
  free(t->data);
  if (t->qparams) {
    wq_qparams_free(t->qparams);
    free(t->qparams);
  }
  memset(t, 0, sizeof *t);
}

void wq_attr_clear(wq_attr *a) {
  free(a->name);
  free(a->s);
  free(a->floats);
  free(a->ints);
  if (a->strings)
    for (size_t i = 0; i < a->count; i++)
      free(a->strings[i]);
  free(a->strings);
  if (a->t) {
    wq_tensor_clear(a->t);
    free(a->t);
  }
  if (a->tensors)
    for (size_t i = 0; i < a->count; i++)
      wq_tensor_clear(&a->tensors[i]);
  free(a->tensors);
  wq_graph_free(a->g);
  if (a->graphs)
    for (size_t i = 0; i < a->count; i++)
      wq_graph_free(a->graphs[i]);
  free(a->graphs);
  memset(a, 0, sizeof *a);
}

void wq_decision_clear(wq_decision *d) {
  free(d->detail);
  for (int k = 0; k < d->n_sources; k++)
    free(d->sources[k]);
  free(d->sources);
  free(d->layout_as_is);
  memset(d, 0, sizeof *d);
}

wq_status wq_node_set_detail(wq_node *node, const char *detail, wq_error *err) {
  char *copy = wq_strdup(detail);
  if (!copy)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
  free(node->rec.detail);
  node->rec.detail = copy;
  return WQ_OK;
}

void wq_node_clear(wq_node *n) {
  if (n->op && n->op->free_state && n->op_state)
    n->op->free_state(n->op_state);
  free(n->name);
  free(n->op_type);
  free(n->domain);
  free(n->inputs);
  free(n->outputs);
  wq_decision_clear(&n->rec);
  for (int i = 0; i < n->n_attrs; i++)
    wq_attr_clear(&n->attrs[i]);
  free(n->attrs);
  memset(n, 0, sizeof *n);
}

void wq_graph_free(wq_graph *g) {
  if (!g)
    return;
  free(g->name);
  for (int i = 0; i < g->n_tensors; i++)
    wq_tensor_clear(&g->tensors[i]);
  free(g->tensors);
  for (int i = 0; i < g->n_nodes; i++)
    wq_node_clear(&g->nodes[i]);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g);
}

void wq_model_ir_free(wq_model_ir *m) {
  if (!m)
    return;
  free(m->producer_name);
  free(m->producer_version);
  for (int i = 0; i < m->n_opsets; i++)
    free(m->opsets[i].domain);
  free(m->opsets);
  wq_graph_free(m->graph);
  free(m);
}

int wq_graph_find_tensor(const wq_graph *g, const char *name) {
  for (int i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].name && strcmp(g->tensors[i].name, name) == 0)
      return i;
  return -1;
}

int wq_graph_add_tensor(wq_graph *g, const char *name) {
  if (g->n_tensors == g->cap_tensors) {
    int cap = g->cap_tensors ? g->cap_tensors * 2 : 16;
    wq_tensor *t = realloc(g->tensors, (size_t)cap * sizeof *t);
    if (!t)
      return -1;
    g->tensors = t;
    g->cap_tensors = cap;
  }
  wq_tensor *t = &g->tensors[g->n_tensors];
  memset(t, 0, sizeof *t);
  t->name = wq_strdup(name ? name : "");
  if (!t->name)
    return -1;
  t->rank = -1;
  return g->n_tensors++;
}

int wq_graph_add_unique_tensor(wq_graph *g, const char *base, const char *suffix) {
  char name[512];
  wq_format(name, sizeof name, "%s%s", base, suffix);
  for (int k = 2; wq_graph_find_tensor(g, name) >= 0; k++)
    wq_format(name, sizeof name, "%s%s_%d", base, suffix, k);
  return wq_graph_add_tensor(g, name);
}

int wq_graph_add_constant(wq_graph *g, const char *base, const char *suffix, wq_dtype dtype,
                          int rank, const int64_t *dims, void *data, size_t nbytes) {
  int t = wq_graph_add_unique_tensor(g, base, suffix);
  if (t < 0) {
    free(data);
    return -1;
  }
  wq_tensor *tensor = &g->tensors[t];
  tensor->dtype = dtype;
  tensor->rank = rank;
  for (int d = 0; d < rank; d++)
    tensor->dims[d] = dims[d];
  tensor->data = data;
  tensor->nbytes = nbytes;
  tensor->is_constant = true;
  return t;
}

wq_node *wq_graph_add_node(wq_graph *g) {
  if (g->n_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
    wq_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
    if (!n)
      return NULL;
    g->nodes = n;
    g->cap_nodes = cap;
  }
  wq_node *n = &g->nodes[g->n_nodes++];
  memset(n, 0, sizeof *n);
  return n;
}

void wq_graph_remove_node(wq_graph *g, int i) {
  if (i < 0 || i >= g->n_nodes)
    return;
  wq_node_clear(&g->nodes[i]);
  memmove(&g->nodes[i], &g->nodes[i + 1], (size_t)(g->n_nodes - i - 1) * sizeof(wq_node));
  g->n_nodes--;
}

wq_value wq_tensor_value(const wq_tensor *t) {
  wq_value v;
  memset(&v, 0, sizeof v);
  v.dtype = t->dtype;
  v.rank = t->rank;
  for (int i = 0; i < WQ_MAX_RANK; i++)
    v.dims[i] = (t->rank > i) ? t->dims[i] : 0;
  v.data = t->data;
  v.layout = t->layout;
  return v;
}

void wq_node_input_values(const wq_graph *g, const wq_node *node, wq_value *in, int n) {
  for (int k = 0; k < n; k++) {
    const bool present = k < node->n_inputs && node->inputs[k] >= 0;
    in[k] = present ? wq_tensor_value(&g->tensors[node->inputs[k]])
                    : (wq_value){.dtype = WQ_DT_UNDEFINED, .rank = -1};
  }
}

const wq_attr *wq_node_attr(const wq_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i];
  return NULL;
}

static wq_status wrong_type(const wq_node *n, const wq_attr *a, const char *want, wq_error *err) {
  return wq_fail(err, WQ_ERR_INVALID_MODEL, n->name, "%s: attribute '%s' must be %s (type %d)",
                 n->op_type, a->name, want, (int)a->type);
}

wq_status wq_attr_int(const wq_node *n, const char *name, int64_t dflt, int64_t *out,
                      wq_error *err) {
  const wq_attr *a = wq_node_attr(n, name);
  *out = dflt;
  if (!a)
    return WQ_OK;
  if (a->type != WQ_ATTR_INT)
    return wrong_type(n, a, "an int", err);
  *out = a->i;
  return WQ_OK;
}

wq_status wq_attr_float(const wq_node *n, const char *name, float dflt, float *out, wq_error *err) {
  const wq_attr *a = wq_node_attr(n, name);
  *out = dflt;
  if (!a)
    return WQ_OK;
  if (a->type != WQ_ATTR_FLOAT)
    return wrong_type(n, a, "a float", err);
  *out = a->f;
  return WQ_OK;
}

wq_status wq_attr_string(const wq_node *n, const char *name, const char *dflt, const char **out,
                         wq_error *err) {
  const wq_attr *a = wq_node_attr(n, name);
  *out = dflt;
  if (!a)
    return WQ_OK;
  if (a->type != WQ_ATTR_STRING)
    return wrong_type(n, a, "a string", err);
  *out = a->s ? a->s : "";
  return WQ_OK;
}

wq_status wq_attr_ints(const wq_node *n, const char *name, const int64_t **out, size_t *count,
                       wq_error *err) {
  const wq_attr *a = wq_node_attr(n, name);
  *out = NULL;
  *count = 0;
  if (!a)
    return WQ_OK;
  if (a->type != WQ_ATTR_INTS)
    return wrong_type(n, a, "a list of ints", err);
  *out = a->ints;
  *count = a->count;
  return WQ_OK;
}

wq_status wq_attr_floats(const wq_node *n, const char *name, const float **out, size_t *count,
                         wq_error *err) {
  const wq_attr *a = wq_node_attr(n, name);
  *out = NULL;
  *count = 0;
  if (!a)
    return WQ_OK;
  if (a->type != WQ_ATTR_FLOATS)
    return wrong_type(n, a, "a list of floats", err);
  *out = a->floats;
  *count = a->count;
  return WQ_OK;
}
