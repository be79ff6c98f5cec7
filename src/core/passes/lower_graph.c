/* Graph editing for the lowering pass: who produces and reads a tensor,
 * rewriting a node in place (so node order — the topological order — never
 * changes during the pass), new tensors and constants, the why attribute,
 * and dead-node removal at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/topo.h"
#include "../ops/op.h"
#include "lower_internal.h"

int lower_producer(const lower_ctx *c, int t) {
  const wq_graph *g = c->g;
  for (int i = 0; i < g->n_nodes; i++) {
    if (c->absorbed[i])
      continue;
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] == t)
        return i;
  }
  return -1;
}

int lower_consumers(const lower_ctx *c, int t, int *first) {
  const wq_graph *g = c->g;
  int count = 0;
  if (first)
    *first = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    if (c->absorbed[i])
      continue;
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] == t) {
        if (count == 0 && first)
          *first = i;
        count++;
        break;
      }
  }
  return count;
}

int lower_sole_reader(const lower_ctx *c, int t, int op_id) {
  int first;
  if (t < 0 || c->g->tensors[t].is_output || lower_consumers(c, t, &first) != 1)
    return -1;
  return wq_node_is(&c->g->nodes[first], op_id) ? first : -1;
}

/* ---- attributes ------------------------------------------------------------ */

static wq_attr *attrs_push(lower_attrs *a, const char *name, wq_error *err) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 8;
    wq_attr *items = realloc(a->items, (size_t)cap * sizeof *items);
    if (!items) {
      wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
      return NULL;
    }
    a->items = items;
    a->cap = cap;
  }
  wq_attr *at = &a->items[a->n];
  memset(at, 0, sizeof *at);
  at->name = wq_strdup(name);
  if (!at->name) {
    wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
    return NULL;
  }
  a->n++;
  return at;
}

wq_status lower_attrs_int(lower_attrs *a, const char *name, int64_t v, wq_error *err) {
  wq_attr *at = attrs_push(a, name, err);
  if (!at)
    return WQ_ERR_OUT_OF_MEMORY;
  at->type = WQ_ATTR_INT;
  at->i = v;
  return WQ_OK;
}

wq_status lower_attrs_float(lower_attrs *a, const char *name, float v, wq_error *err) {
  wq_attr *at = attrs_push(a, name, err);
  if (!at)
    return WQ_ERR_OUT_OF_MEMORY;
  at->type = WQ_ATTR_FLOAT;
  at->f = v;
  return WQ_OK;
}

wq_status lower_attrs_copy(lower_attrs *a, const wq_node *from, const char *name, wq_error *err) {
  const wq_attr *src = wq_node_attr(from, name);
  if (!src)
    return WQ_OK;
  wq_attr *at = attrs_push(a, name, err);
  if (!at)
    return WQ_ERR_OUT_OF_MEMORY;
  at->type = src->type;
  at->i = src->i;
  at->f = src->f;
  at->count = 0;
  bool ok = true;
  if (src->s) {
    at->s = malloc(src->s_len + 1);
    ok = at->s != NULL;
    if (ok) {
      memcpy(at->s, src->s, src->s_len + 1);
      at->s_len = src->s_len;
    }
  }
  if (ok && src->ints && src->count) {
    at->ints = malloc(src->count * sizeof *at->ints);
    ok = at->ints != NULL;
    if (ok) {
      memcpy(at->ints, src->ints, src->count * sizeof *at->ints);
      at->count = src->count;
    }
  }
  if (ok && src->floats && src->count) {
    at->floats = malloc(src->count * sizeof *at->floats);
    ok = at->floats != NULL;
    if (ok) {
      memcpy(at->floats, src->floats, src->count * sizeof *at->floats);
      at->count = src->count;
    }
  }
  if (!ok)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, from->name, "lowering: out of memory");
  return WQ_OK;
}

void lower_attrs_free(lower_attrs *a) {
  for (int i = 0; i < a->n; i++)
    wq_attr_clear(&a->items[i]);
  free(a->items);
  memset(a, 0, sizeof *a);
}

/* Keeps the why attribute across a rewrite; drops the rest. */
static void clear_attrs(wq_node *n) {
  for (int i = 0; i < n->n_attrs; i++)
    wq_attr_clear(&n->attrs[i]);
  free(n->attrs);
  n->attrs = NULL;
  n->n_attrs = 0;
}

wq_status lower_rewrite_node(lower_ctx *c, int i, int op_id, const int *inputs, int n_inputs,
                             const int *outputs, int n_outputs, lower_attrs *attrs, wq_error *err) {
  wq_node *n = &c->g->nodes[i];
  const wq_op *op = wq_op_by_id(op_id);
  int *in = malloc((size_t)(n_inputs > 0 ? n_inputs : 1) * sizeof *in);
  int *out = malloc((size_t)(n_outputs > 0 ? n_outputs : 1) * sizeof *out);
  char *type = wq_strdup(op->op_type), *dom = wq_strdup(op->domain);
  if (!in || !out || !type || !dom) {
    free(in), free(out), free(type), free(dom);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "lowering: out of memory");
  }
  memcpy(in, inputs, (size_t)n_inputs * sizeof *in);
  memcpy(out, outputs, (size_t)n_outputs * sizeof *out);
  if (c->dry) {
    /* A check: the shadow node reads and writes what the op would; its op,
     * attributes and state stay the loaded graph's. */
    free(type), free(dom);
    free(n->inputs), free(n->outputs);
    n->inputs = in, n->n_inputs = n_inputs;
    n->outputs = out, n->n_outputs = n_outputs;
    c->dry_as[c->node_id[i]] = op_id;
    return WQ_OK;
  }
  if (n->op && n->op->free_state && n->op_state)
    n->op->free_state(n->op_state);
  n->op_state = NULL;
  free(n->inputs), free(n->outputs), free(n->op_type), free(n->domain);
  n->inputs = in, n->n_inputs = n_inputs;
  n->outputs = out, n->n_outputs = n_outputs;
  n->op_type = type, n->domain = dom;
  if (op->domain[0])
    n->opset = 1;
  clear_attrs(n);
  n->attrs = attrs->items;
  n->n_attrs = attrs->n;
  memset(attrs, 0, sizeof *attrs);
  n->op = op;
  if (op->prepare) {
    wq_status st = op->prepare(n, err);
    if (st != WQ_OK) {
      n->op = NULL; /* no state to free */
      return st;
    }
  }
  return WQ_OK;
}

/* ---- tensors --------------------------------------------------------------- */

int lower_add_tensor(lower_ctx *c, const char *base, const char *suffix) {
  return wq_graph_add_unique_tensor(c->g, base, suffix);
}

int lower_add_constant(lower_ctx *c, const char *base, const char *suffix, wq_dtype dtype, int rank,
                       const int64_t *dims, void *data, size_t nbytes) {
  return wq_graph_add_constant(c->g, base, suffix, dtype, rank, dims, data, nbytes);
}

wq_status lower_set_qparams(lower_ctx *c, int t, const wq_qparams *qp, wq_error *err) {
  wq_tensor *tensor = &c->g->tensors[t];
  wq_qparams *copy = calloc(1, sizeof *copy);
  if (!copy)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "lowering: out of memory");
  wq_status st = wq_qparams_clone(copy, qp, err);
  if (st != WQ_OK) {
    free(copy);
    return st;
  }
  if (tensor->qparams) {
    wq_qparams_free(tensor->qparams);
    free(tensor->qparams);
  }
  tensor->qparams = copy;
  return WQ_OK;
}

wq_status lower_set_sources(wq_node *node, const char *const *s, int n, wq_error *err) {
  char **copy = calloc((size_t)n + 1, sizeof *copy);
  bool ok = copy != NULL;
  for (int k = 0; ok && k < n; k++)
    ok = (copy[k] = wq_strdup(s[k])) != NULL;
  if (!ok) {
    for (int k = 0; copy && k < n; k++)
      free(copy[k]);
    free(copy);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "lowering: out of memory");
  }
  wq_decision *d = &node->rec;
  for (int k = 0; k < d->n_sources; k++)
    free(d->sources[k]);
  free(d->sources);
  d->sources = copy;
  d->n_sources = n;
  return WQ_OK;
}

wq_status lower_note(lower_ctx *c, int i, const char *why, wq_error *err) {
  if (!c->dry)
    return wq_node_set_detail(&c->g->nodes[i], why, err);
  char *copy = wq_strdup(why);
  if (!copy)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, c->g->nodes[i].name, "lowering: out of memory");
  free(c->dry_why[c->node_id[i]]);
  c->dry_why[c->node_id[i]] = copy;
  return WQ_OK;
}

const char *lower_note_of(const lower_ctx *c, int i) {
  return c->dry ? c->dry_why[c->node_id[i]] : wq_lower_why(&c->g->nodes[i]);
}

const char *lower_op_type(const lower_ctx *c, int i) {
  if (c->dry && c->dry_as[c->node_id[i]] >= 0)
    return wq_op_by_id(c->dry_as[c->node_id[i]])->op_type;
  return c->g->nodes[i].op_type;
}

wq_status lower_commit(lower_ctx *c, int i, int op_id, const int *inputs, int n_inputs,
                       const int *outputs, int n_outputs, lower_attrs *attrs, wq_status st,
                       const char *why, bool *done, wq_error *err) {
  if (st == WQ_OK)
    st = lower_rewrite_node(c, i, op_id, inputs, n_inputs, outputs, n_outputs, attrs, err);
  lower_attrs_free(attrs);
  if (st == WQ_OK) {
    lower_why(c, WQ_REASON_INT8, "%s", why);
    *done = true;
  }
  return st;
}

/* ---- shadow graph for a check ------------------------------------------------ */

void lower_shadow_free(wq_graph *s, int borrowed) {
  if (!s)
    return;
  for (int t = 0; s->tensors && t < s->n_tensors; t++) {
    if (t >= borrowed) {
      wq_tensor_clear(&s->tensors[t]);
    } else if (s->tensors[t].qparams) {
      wq_qparams_free(s->tensors[t].qparams);
      free(s->tensors[t].qparams);
    }
  }
  for (int i = 0; s->nodes && i < s->n_nodes; i++) {
    free(s->nodes[i].inputs);
    free(s->nodes[i].outputs);
  }
  free(s->tensors);
  free(s->nodes);
  free(s);
}

wq_graph *lower_shadow_new(const wq_graph *g) {
  wq_graph *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  *s = *g;
  s->tensors = calloc((size_t)g->n_tensors + 1, sizeof *s->tensors);
  s->nodes = calloc((size_t)g->n_nodes + 1, sizeof *s->nodes);
  s->cap_tensors = g->n_tensors + 1;
  s->cap_nodes = g->n_nodes + 1;
  bool ok = s->tensors && s->nodes;
  if (!ok) {
    s->n_tensors = s->n_nodes = 0;
    lower_shadow_free(s, 0);
    return NULL;
  }
  for (int t = 0; t < g->n_tensors; t++) {
    s->tensors[t] = g->tensors[t];
    s->tensors[t].qparams = NULL;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    s->nodes[i] = g->nodes[i];
    s->nodes[i].inputs = NULL;
    s->nodes[i].outputs = NULL;
  }
  wq_error local;
  wq_error_clear(&local);
  for (int t = 0; ok && t < g->n_tensors; t++) {
    if (!g->tensors[t].qparams)
      continue;
    wq_qparams *copy = calloc(1, sizeof *copy);
    ok = copy && wq_qparams_clone(copy, g->tensors[t].qparams, &local) == WQ_OK;
    if (!ok)
      free(copy);
    else
      s->tensors[t].qparams = copy;
  }
  for (int i = 0; ok && i < g->n_nodes; i++) {
    const wq_node *n = &g->nodes[i];
    s->nodes[i].inputs = malloc((size_t)(n->n_inputs + 1) * sizeof(int));
    s->nodes[i].outputs = malloc((size_t)(n->n_outputs + 1) * sizeof(int));
    ok = s->nodes[i].inputs && s->nodes[i].outputs;
    if (ok) {
      memcpy(s->nodes[i].inputs, n->inputs, (size_t)n->n_inputs * sizeof(int));
      memcpy(s->nodes[i].outputs, n->outputs, (size_t)n->n_outputs * sizeof(int));
    }
  }
  if (ok)
    return s;
  lower_shadow_free(s, g->n_tensors);
  return NULL;
}

const char *wq_lower_why(const wq_node *node) { return node->rec.detail; }

/* ---- cleanup --------------------------------------------------------------- */

void lower_remove_dead(lower_ctx *c) {
  wq_graph *g = c->g;
  for (int i = g->n_nodes - 1; i >= 0; i--)
    if (c->absorbed[i])
      wq_graph_remove_node(g, i);
  /* Dequantize/Quantize nodes whose result nobody reads any more; removing
   * one can free its producer, so sweep from the back. */
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    const wq_node *n = &g->nodes[i];
    if (!lower_is_sweepable(n))
      continue;
    bool read = false;
    for (int k = 0; k < n->n_outputs; k++)
      read = read || wq_graph_tensor_is_read(g, n->outputs[k]);
    if (!read)
      wq_graph_remove_node(g, i);
  }
  /* Constants nothing reads (folded float copies of int8 weights). */
  bool *used = calloc((size_t)g->n_tensors + 1, sizeof *used);
  if (!used)
    return; /* only memory is lost */
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] >= 0)
        used[g->nodes[i].inputs[k]] = true;
  for (int t = 0; t < g->n_tensors; t++) {
    wq_tensor *tensor = &g->tensors[t];
    if (tensor->is_constant && tensor->data && !used[t] && !tensor->is_output &&
        !tensor->is_input) {
      free(tensor->data);
      tensor->data = NULL;
      tensor->nbytes = 0;
    }
  }
  free(used);
}
