#include "executor.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/op.h"
#include "arena.h"
#include "parallel.h"

/* Input-shape sets whose arena plans are kept at once. */
#define WQ_ARENA_CACHE 4
/* Offset of a tensor that is not in the arena (inputs, constants, outputs). */
#define WQ_NOT_IN_ARENA SIZE_MAX
/* Sizes recorded for tensors the current run has not produced. */
#define WQ_NOT_PRODUCED SIZE_MAX
/* Key words per graph input: dtype, rank, dims. */
#define WQ_KEY_STRIDE (2 + WQ_MAX_RANK)
#define WQ_POISON_BYTE 0xA5
/* Placement of the graph outputs block (see plan_outputs). */
#define WQ_OUTPUTS_PAGE 4096u
#define WQ_OUTPUTS_PAGE_OFFSET (2048u + 64u)

/* One arena plan, valid for one set of input dtypes and shapes. */
struct wq_arena_entry {
  bool used;
  bool stale;      /* a tensor outgrew its slot: re-plan after this run */
  bool at_load;    /* planned from static shapes */
  int64_t *key;    /* n_inputs * WQ_KEY_STRIDE */
  size_t *offsets; /* per tensor, WQ_NOT_IN_ARENA if not placed */
  size_t *sizes;   /* per tensor: bytes its slot holds */
  int n_tensors;   /* tensors placed */
  wq_arena_summary summary;
  unsigned long last_used;
  /* at_load entries: every node's output shapes (data NULL), per output
   * (plan->out_base), recorded by the first complete run with this plan. */
  wq_value *templates;
  bool templates_ready;
};

/* Makes sure an error raised inside an op names the node it came from. */
static wq_status attribute_error(const wq_node *node, wq_status st, wq_error *err) {
  if (err && err->node[0] == '\0') {
    size_t cap = sizeof err->node;
    strncpy(err->node, node->name, cap - 1);
    err->node[cap - 1] = '\0';
  }
  if (err && err->code == WQ_OK)
    err->code = st;
  return st;
}

static void entry_clear(struct wq_arena_entry *e) {
  free(e->key);
  free(e->offsets);
  free(e->sizes);
  free(e->templates);
  memset(e, 0, sizeof *e);
}

/* Writes the dtype and shape of every graph input into key. */
static void input_key(const wq_graph *g, const wq_value *inputs_by_tensor, int64_t *key) {
  for (int i = 0; i < g->n_inputs; i++) {
    const wq_value *v = &inputs_by_tensor[g->inputs[i]];
    int64_t *k = key + (size_t)i * WQ_KEY_STRIDE;
    memset(k, 0, sizeof(int64_t) * WQ_KEY_STRIDE);
    k[0] = v->dtype;
    k[1] = v->rank;
    for (int d = 0; d < v->rank && d < WQ_MAX_RANK; d++)
      k[2 + d] = v->dims[d];
  }
}

static bool in_arena_candidate(const wq_exec_plan *plan, int t) {
  return plan->producer[t] >= 0 && !plan->graph->tensors[t].is_output;
}

/* Plans the arena for the intermediates whose sizes are in `sizes`
 * (WQ_NOT_PRODUCED ones stay out) into entry `e`, keyed by `key`. */
static wq_status build_entry(wq_exec_plan *plan, struct wq_arena_entry *e, const int64_t *key,
                             const size_t *sizes, bool at_load, wq_error *err) {
  const wq_graph *g = plan->graph;
  size_t nt = (size_t)g->n_tensors + 1;
  size_t key_words = (size_t)g->n_inputs * WQ_KEY_STRIDE + 1;
  entry_clear(e);
  e->key = malloc(key_words * sizeof *e->key);
  e->offsets = malloc(nt * sizeof *e->offsets);
  e->sizes = malloc(nt * sizeof *e->sizes);
  size_t n_templates = (size_t)plan->out_base[g->n_nodes] + 1;
  if (at_load)
    e->templates = calloc(n_templates, sizeof *e->templates);
  wq_lifetime *lifetimes = malloc(nt * sizeof *lifetimes);
  size_t *offsets = malloc(nt * sizeof *offsets);
  int *tensor_of = malloc(nt * sizeof *tensor_of);
  wq_status st = WQ_OK;
  if (!e->key || !e->offsets || !e->sizes || (at_load && !e->templates) || !lifetimes || !offsets ||
      !tensor_of) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory planning the arena");
    goto done;
  }
  memcpy(e->key, key, (size_t)g->n_inputs * WQ_KEY_STRIDE * sizeof *e->key);
  int n = 0;
  for (int t = 0; t < g->n_tensors; t++) {
    e->offsets[t] = WQ_NOT_IN_ARENA;
    e->sizes[t] = 0;
    if (!in_arena_candidate(plan, t) || sizes[t] == WQ_NOT_PRODUCED)
      continue;
    int first = plan->producer[t];
    /* A tensor nobody reads still lives through the step that writes it. */
    int last = plan->last_use[t] > first ? plan->last_use[t] : first;
    lifetimes[n] = (wq_lifetime){sizes[t], first, last};
    tensor_of[n] = t;
    n++;
  }
  st = wq_arena_plan(lifetimes, n, WQ_ARENA_ALIGN, offsets, &e->summary, err);
  if (st != WQ_OK)
    goto done;
  for (int k = 0; k < n; k++) {
    e->offsets[tensor_of[k]] = offsets[k];
    e->sizes[tensor_of[k]] = lifetimes[k].size;
  }
  e->n_tensors = n;
  e->used = true;
  e->at_load = at_load;
  e->last_used = plan->clock;
  plan->stats.plans_built++;
done:
  free(lifetimes);
  free(offsets);
  free(tensor_of);
  if (st != WQ_OK)
    entry_clear(e);
  return st;
}

static void note_entry(wq_exec_plan *plan, const struct wq_arena_entry *e) {
  plan->stats.planned = true;
  plan->stats.planned_at_load = e->at_load;
  plan->stats.arena_bytes = e->summary.arena_bytes;
  plan->stats.lower_bound = e->summary.lower_bound;
  plan->stats.unshared_bytes = e->summary.unshared_bytes;
  plan->stats.n_tensors = e->n_tensors;
}

/* Static sizes of every intermediate, or false when one is not known until
 * run time (symbolic dims, data-dependent shapes). */
static bool static_sizes(const wq_exec_plan *plan, size_t *sizes) {
  const wq_graph *g = plan->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    wq_value v = wq_tensor_value(&g->tensors[g->inputs[i]]);
    if (v.rank < 0 || !wq_value_shape_known(&v) || !wq_dtype_supported(v.dtype))
      return false;
  }
  for (int t = 0; t < g->n_tensors; t++) {
    sizes[t] = WQ_NOT_PRODUCED;
    if (!in_arena_candidate(plan, t))
      continue;
    wq_value v = wq_tensor_value(&g->tensors[t]);
    if (v.rank < 0 || !wq_value_shape_known(&v) || !wq_dtype_supported(v.dtype) ||
        wq_shape_check(v.dims, v.rank, NULL, "", NULL) != WQ_OK)
      return false;
    sizes[t] = wq_value_nbytes(&v);
  }
  return true;
}

/* Buffers for the graph outputs of the load-time plan (their static sizes),
 * kept across runs. Outputs of unknown size are left out (malloc'ed per run). */
static wq_status plan_outputs(wq_exec_plan *plan, wq_error *err) {
  const wq_graph *g = plan->graph;
  size_t total = 0;
  for (int i = 0; i < g->n_outputs; i++) {
    int t = g->outputs[i];
    if (plan->producer[t] < 0 || plan->output_offsets[t] != WQ_NOT_IN_ARENA)
      continue; /* an input or constant passed through, or listed twice */
    wq_value v = wq_tensor_value(&g->tensors[t]);
    if (v.rank < 0 || !wq_value_shape_known(&v) || !wq_dtype_supported(v.dtype) ||
        wq_shape_check(v.dims, v.rank, NULL, "", NULL) != WQ_OK)
      continue;
    size_t bytes = wq_value_nbytes(&v);
    size_t padded = (bytes + WQ_ARENA_ALIGN - 1) / WQ_ARENA_ALIGN * WQ_ARENA_ALIGN;
    if (padded < bytes || total > SIZE_MAX - WQ_OUTPUTS_PAGE - padded)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "graph outputs are too large");
    plan->output_offsets[t] = total;
    plan->output_sizes[t] = bytes;
    total += padded;
  }
  plan->outputs_total = total;
  return WQ_OK;
}

/* Whether weights, graph outputs and `used` bytes fit the limit (always
 * without one). */
static bool fits_limit(const wq_exec_plan *plan, size_t used) {
  size_t taken = plan->memory_fixed + plan->outputs_total;
  return !plan->memory_limit || (taken >= plan->memory_fixed && taken <= plan->memory_limit &&
                                 used <= plan->memory_limit - taken);
}

/* Bytes the limit still allows past `used` (SIZE_MAX without a limit). */
static size_t memory_room(const wq_exec_plan *plan, size_t used) {
  if (!plan->memory_limit)
    return SIZE_MAX;
  if (!fits_limit(plan, used))
    return 0;
  return plan->memory_limit - plan->memory_fixed - plan->outputs_total - used;
}

/* Fails when `bytes` more for `what` (past `used` bytes of arena and
 * intermediates) would pass the memory limit, naming the need and the limit.
 * Weights and graph outputs already over it fail whatever `bytes` is (a
 * graph with no intermediates plans an empty arena). */
static wq_status check_limit(const wq_exec_plan *plan, size_t used, size_t bytes, const char *what,
                             wq_error *err) {
  if (fits_limit(plan, used) && bytes <= memory_room(plan, used))
    return WQ_OK;
  if (bytes == 0 && used == 0)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL,
                   "memory limit: the graph outputs take %zu bytes, which makes %zu bytes with the "
                   "weights and kernels (%zu), more than the limit of %zu bytes (maxMemoryBytes)",
                   plan->outputs_total, plan->memory_fixed + plan->outputs_total,
                   plan->memory_fixed, plan->memory_limit);
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL,
                 "memory limit: %s needs %zu bytes, which makes %zu bytes in all (weights and "
                 "kernels %zu, graph outputs %zu, arena and intermediates %zu), more than the "
                 "limit of %zu bytes (maxMemoryBytes)",
                 what, bytes, plan->memory_fixed + plan->outputs_total + used + bytes,
                 plan->memory_fixed, plan->outputs_total, used + bytes, plan->memory_limit);
}

/* Allocates the graph outputs block plan_outputs sized. */
static wq_status alloc_outputs(wq_exec_plan *plan, wq_error *err) {
  size_t total = plan->outputs_total;
  /* The caller copies outputs out into fresh buffers, which usually start at
   * (or 16 bytes past) a page boundary: a source a few bytes before its
   * destination modulo 4096 stalls the copy's loads on stores they only seem
   * to alias. Half a page past a page boundary is clear of that. */
  plan->outputs_block = malloc(total + WQ_OUTPUTS_PAGE);
  if (!plan->outputs_block)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for %zu bytes of graph outputs",
                   total);
  uintptr_t at = (uintptr_t)plan->outputs_block;
  plan->outputs =
      plan->outputs_block +
      (WQ_OUTPUTS_PAGE + WQ_OUTPUTS_PAGE_OFFSET - at % WQ_OUTPUTS_PAGE) % WQ_OUTPUTS_PAGE;
  return WQ_OK;
}

static wq_status plan_at_load(wq_exec_plan *plan, wq_error *err) {
  const wq_graph *g = plan->graph;
  if (!static_sizes(plan, plan->run_sizes))
    return WQ_OK;
  WQ_TRY(plan_outputs(plan, err));
  int64_t *key = malloc(((size_t)g->n_inputs * WQ_KEY_STRIDE + 1) * sizeof *key);
  wq_value *views = calloc((size_t)g->n_tensors + 1, sizeof *views);
  wq_status st = WQ_OK;
  if (!key || !views) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory planning the arena");
  } else {
    for (int i = 0; i < g->n_inputs; i++)
      views[g->inputs[i]] = wq_tensor_value(&g->tensors[g->inputs[i]]);
    input_key(g, views, key);
    st = build_entry(plan, &plan->plans[0], key, plan->run_sizes, true, err);
    if (st == WQ_OK)
      st = check_limit(plan, 0, plan->plans[0].summary.arena_bytes, "the arena", err);
    if (st == WQ_OK)
      st = alloc_outputs(plan, err);
    if (st == WQ_OK)
      note_entry(plan, &plan->plans[0]);
  }
  free(key);
  free(views);
  return st;
}

/* Dtypes whose values are never indices, sizes or axes: floats, and the
 * 8-bit codes of quantized activations. An op's infer may validate the data
 * of other (integer) inputs, so a node reading those keeps calling it. */
static bool carries_no_indices(wq_dtype dtype) {
  switch (dtype) {
  case WQ_DT_FLOAT:
  case WQ_DT_DOUBLE:
  case WQ_DT_FLOAT16:
  case WQ_DT_BFLOAT16:
  case WQ_DT_INT8:
  case WQ_DT_UINT8: return true;
  default: return false;
  }
}

wq_status wq_exec_plan_init(wq_exec_plan *plan, const wq_graph *g, wq_error *err) {
  return wq_exec_plan_init_within(plan, g, 0, 0, err);
}

wq_status wq_exec_plan_init_within(wq_exec_plan *plan, const wq_graph *g, size_t limit,
                                   size_t fixed, wq_error *err) {
  memset(plan, 0, sizeof *plan);
  plan->graph = g;
  plan->memory_limit = limit;
  plan->memory_fixed = fixed;
  plan->use_arena = true;
  size_t nt = (size_t)(g->n_tensors ? g->n_tensors : 1);
  plan->last_use = malloc(sizeof(int) * nt);
  plan->producer = malloc(sizeof(int) * nt);
  plan->run_sizes = malloc(sizeof(size_t) * nt);
  plan->plans = calloc(WQ_ARENA_CACHE, sizeof *plan->plans);
  plan->out_base = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
  plan->may_skip_infer = calloc((size_t)g->n_nodes + 1, sizeof *plan->may_skip_infer);
  plan->output_offsets = malloc(sizeof(size_t) * nt);
  plan->output_sizes = calloc(nt, sizeof(size_t));
  if (!plan->last_use || !plan->producer || !plan->run_sizes || !plan->plans || !plan->out_base ||
      !plan->may_skip_infer || !plan->output_offsets || !plan->output_sizes) {
    wq_exec_plan_free(plan);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory planning execution");
  }
  for (int t = 0; t < g->n_tensors; t++) {
    plan->last_use[t] = -1;
    plan->producer[t] = -1;
    plan->output_offsets[t] = WQ_NOT_IN_ARENA;
  }
  plan->out_base[0] = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    plan->out_base[i + 1] = plan->out_base[i] + g->nodes[i].n_outputs;
    plan->may_skip_infer[i] = true;
    for (int k = 0; k < g->nodes[i].n_inputs; k++) {
      int t = g->nodes[i].inputs[k];
      if (t >= 0 && !g->tensors[t].is_constant && !carries_no_indices(g->tensors[t].dtype))
        plan->may_skip_infer[i] = false;
    }
  }
  for (int i = 0; i < g->n_nodes; i++) {
    for (int k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].inputs[k] >= 0)
        plan->last_use[g->nodes[i].inputs[k]] = i;
    for (int k = 0; k < g->nodes[i].n_outputs; k++)
      if (g->nodes[i].outputs[k] >= 0)
        plan->producer[g->nodes[i].outputs[k]] = i;
  }
  wq_status st = plan_at_load(plan, err);
  if (st != WQ_OK)
    wq_exec_plan_free(plan);
  return st;
}

void wq_exec_plan_free(wq_exec_plan *plan) {
  if (plan->plans)
    for (int e = 0; e < WQ_ARENA_CACHE; e++)
      entry_clear(&plan->plans[e]);
  free(plan->plans);
  free(plan->last_use);
  free(plan->producer);
  free(plan->run_sizes);
  free(plan->arena_block);
  free(plan->out_base);
  free(plan->may_skip_infer);
  free(plan->output_offsets);
  free(plan->output_sizes);
  free(plan->outputs_block);
  free(plan->node_ms);
  memset(plan, 0, sizeof *plan);
}

wq_arena_stats wq_exec_arena_stats(const wq_exec_plan *plan) { return plan->stats; }

bool wq_exec_tensor_slot(const wq_exec_plan *plan, int t, size_t *offset, size_t *size) {
  const struct wq_arena_entry *latest = NULL;
  for (int e = 0; plan->plans && e < WQ_ARENA_CACHE; e++)
    if (plan->plans[e].used && (!latest || plan->plans[e].last_used > latest->last_used))
      latest = &plan->plans[e];
  if (!latest || t < 0 || t >= plan->graph->n_tensors || latest->offsets[t] == WQ_NOT_IN_ARENA)
    return false;
  *offset = latest->offsets[t];
  *size = latest->sizes[t];
  return true;
}

void wq_exec_values_release(int n, wq_value *values, bool *owned) {
  for (int i = 0; i < n; i++) {
    if (owned[i])
      free(values[i].data);
    if (owned[i])
      values[i].data = NULL;
    owned[i] = false;
  }
}

static void reset_value(wq_value *v) {
  memset(v, 0, sizeof *v);
  v->dtype = WQ_DT_UNDEFINED;
  v->rank = -1;
}

/* Where one output of a node goes: `data` holds `capacity` bytes, or data
 * NULL for a fresh allocation. */
typedef struct {
  void *data;
  size_t capacity;
} output_slot;

/* Gives each output of `node` (shape already set in out[]) its buffer: the
 * slot when it fits, else a fresh allocation (allocated[k] set; *outgrown
 * set when a slot was too small). Poisons the buffers when asked. On failure
 * nothing stays allocated. */
static wq_status place_outputs(const wq_node *node, wq_value *out, const output_slot *slots,
                               bool poison, bool *allocated, bool *outgrown, size_t *room,
                               wq_error *err) {
  for (int k = 0; k < node->n_outputs; k++) {
    if (node->outputs[k] < 0 && out[k].dtype == WQ_DT_UNDEFINED)
      continue;
    size_t nbytes = wq_value_nbytes(&out[k]);
    if (slots && slots[k].data && nbytes <= slots[k].capacity) {
      out[k].data = slots[k].data;
    } else {
      if (slots && slots[k].data && outgrown)
        *outgrown = true;
      /* Zero-sized tensors still get a valid pointer so kernels need no NULL checks. */
      bool over = room && nbytes > *room;
      out[k].data = over ? NULL : calloc(nbytes ? nbytes : 1, 1);
      if (!out[k].data) {
        for (int j = 0; j < k; j++)
          if (allocated[j]) {
            free(out[j].data);
            allocated[j] = false;
          }
        if (over)
          return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name,
                         "%s: output %d needs %zu bytes, more than the %zu the memory limit "
                         "leaves (maxMemoryBytes)",
                         node->op_type, k, nbytes, *room);
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory for %zu bytes",
                       node->op_type, nbytes);
      }
      if (room)
        *room -= nbytes;
      allocated[k] = true;
    }
    if (poison)
      memset(out[k].data, WQ_POISON_BYTE, nbytes);
  }
  return WQ_OK;
}

/* Validates the output shapes infer gave (known, within limits, executable
 * dtypes). */
static wq_status check_outputs(const wq_node *node, const wq_value *out, wq_error *err) {
  for (int k = 0; k < node->n_outputs; k++) {
    if (node->outputs[k] < 0 && out[k].dtype == WQ_DT_UNDEFINED)
      continue;
    if (out[k].rank < 0 || !wq_value_shape_known(&out[k]))
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: output %d shape could not be inferred",
                     node->op_type, k);
    if (wq_shape_check(out[k].dims, out[k].rank, NULL, "", NULL) != WQ_OK) {
      /* Only a failure pays for formatting the name. */
      char what[64];
      wq_format(what, sizeof what, "%s output %d", node->op_type, k);
      return wq_shape_check(out[k].dims, out[k].rank, node->name, what, err);
    }
    if (!wq_dtype_supported(out[k].dtype))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: output dtype %s is not supported",
                     node->op_type, wq_dtype_name(out[k].dtype));
  }
  return WQ_OK;
}

/* Places the outputs (shapes set in out[]) and runs the kernel, adding its
 * time to *kernel_ms when timed. On failure nothing stays allocated. */
static wq_status place_and_run(const wq_node *node, const wq_value *in, wq_value *out,
                               const output_slot *slots, bool poison, bool *allocated,
                               bool *outgrown, size_t *room, double (*now_ms)(void),
                               double *kernel_ms, wq_error *err) {
  wq_status st = place_outputs(node, out, slots, poison, allocated, outgrown, room, err);
  if (st == WQ_OK && kernel_ms) {
    double t0 = now_ms();
    st = node->op->run(node, in, out, err);
    *kernel_ms += now_ms() - t0;
  } else if (st == WQ_OK) {
    st = node->op->run(node, in, out, err);
  }
  if (st != WQ_OK) {
    for (int k = 0; k < node->n_outputs; k++) {
      if (allocated[k])
        free(out[k].data);
      out[k].data = NULL;
      allocated[k] = false;
    }
    return attribute_error(node, st, err);
  }
  return WQ_OK;
}

/* wq_run_node with optional slots (NULL: every output allocated). Sets
 * allocated[k] when out[k].data was malloc'ed here, and *outgrown when an
 * output did not fit its slot and was allocated instead. */
static wq_status run_node_placed(const wq_graph *g, const wq_node *node, const wq_value *in,
                                 wq_value *out, const output_slot *slots, bool poison,
                                 bool *allocated, bool *outgrown, size_t *room,
                                 double (*now_ms)(void), double *kernel_ms, wq_error *err) {
  for (int k = 0; k < node->n_outputs; k++) {
    reset_value(&out[k]);
    /* The layout the layout pass gave the result: infer and the kernel
     * see it (a fused QuantizeLinear writes channels-last). */
    if (g && node->outputs[k] >= 0)
      out[k].layout = g->tensors[node->outputs[k]].layout;
    allocated[k] = false;
  }
  wq_status st = node->op->infer(node, in, out, err);
  if (st == WQ_OK)
    st = check_outputs(node, out, err);
  if (st != WQ_OK)
    return attribute_error(node, st, err);
  return place_and_run(node, in, out, slots, poison, allocated, outgrown, room, now_ms, kernel_ms,
                       err);
}

wq_status wq_run_node(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  bool stack_flags[16];
  bool *allocated = stack_flags;
  if (node->n_outputs > 16) {
    allocated = calloc((size_t)node->n_outputs, sizeof *allocated);
    if (!allocated)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
  }
  wq_status st =
      run_node_placed(NULL, node, in, out, NULL, false, allocated, NULL, NULL, NULL, NULL, err);
  if (allocated != stack_flags)
    free(allocated);
  return st;
}

/* The cached plan for the current input shapes, or NULL. */
static struct wq_arena_entry *find_entry(wq_exec_plan *plan, const int64_t *key) {
  size_t words = (size_t)plan->graph->n_inputs * WQ_KEY_STRIDE;
  for (int e = 0; e < WQ_ARENA_CACHE; e++)
    if (plan->plans[e].used && memcmp(plan->plans[e].key, key, words * sizeof *key) == 0)
      return &plan->plans[e];
  return NULL;
}

/* The slot a new plan for `key` goes into: the one it replaces, a free one,
 * or the least recently used. */
static struct wq_arena_entry *slot_for(wq_exec_plan *plan, const int64_t *key) {
  struct wq_arena_entry *same = find_entry(plan, key);
  if (same)
    return same;
  struct wq_arena_entry *oldest = &plan->plans[0];
  for (int e = 0; e < WQ_ARENA_CACHE; e++) {
    if (!plan->plans[e].used)
      return &plan->plans[e];
    if (plan->plans[e].last_used < oldest->last_used)
      oldest = &plan->plans[e];
  }
  return oldest;
}

static wq_status reserve_arena(wq_exec_plan *plan, size_t bytes, wq_error *err) {
  if (plan->arena && plan->arena_capacity >= bytes)
    return WQ_OK;
  /* Before the old arena goes: a run over the limit leaves the model as it was. */
  WQ_TRY(check_limit(plan, 0, bytes, "the arena for these input shapes", err));
  free(plan->arena_block);
  plan->arena = NULL;
  plan->arena_capacity = 0;
  if (bytes > SIZE_MAX - WQ_ARENA_ALIGN)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "arena of %zu bytes is too large", bytes);
  plan->arena_block = malloc(bytes + WQ_ARENA_ALIGN);
  if (!plan->arena_block)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for an arena of %zu bytes",
                   bytes);
  uintptr_t at = (uintptr_t)plan->arena_block;
  plan->arena = plan->arena_block + ((WQ_ARENA_ALIGN - at % WQ_ARENA_ALIGN) % WQ_ARENA_ALIGN);
  plan->arena_capacity = bytes;
  return WQ_OK;
}

#define WQ_STACK_ARGS 16

/* A run past a time limit: the plan's own, or the one its caller bound
 * (whose caller words it: the quantizer). */
__attribute__((cold)) static wq_status timed_out(const wq_exec_plan *plan, const char *node,
                                                 bool cut, int done, int nodes, wq_error *err) {
  return wq_fail(err, WQ_ERR_TIMEOUT, node,
                 "run stopped %s node %d of %d: the time limit of %g ms was reached",
                 cut ? "in" : "after", done, nodes, plan->time_limit_ms);
}

wq_status wq_execute(wq_exec_plan *plan, wq_value *values, bool *owned, wq_error *err) {
  const wq_graph *g = plan->graph;
  wq_status st = WQ_OK;
  plan->clock++;
  int64_t key_stack[4 * WQ_KEY_STRIDE];
  size_t key_words = (size_t)g->n_inputs * WQ_KEY_STRIDE;
  int64_t *key = key_words <= 4 * WQ_KEY_STRIDE ? key_stack : malloc(key_words * sizeof *key);
  if (!key)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  input_key(g, values, key);
  struct wq_arena_entry *entry = NULL;
  if (plan->use_arena) {
    entry = find_entry(plan, key);
    if (entry && entry->stale)
      entry = NULL;
    if (entry) {
      st = reserve_arena(plan, entry->summary.arena_bytes, err);
      if (st != WQ_OK)
        goto finish;
      entry->last_used = plan->clock;
      note_entry(plan, entry);
    }
  }
  bool outgrown = false;
  /* What the memory limit leaves for the intermediates this run mallocs. */
  size_t room_left = memory_room(plan, plan->arena_capacity);
  size_t *room = plan->memory_limit ? &room_left : NULL;
  for (int t = 0; t < g->n_tensors; t++)
    plan->run_sizes[t] = WQ_NOT_PRODUCED;
  /* The load-time plan keeps the graph outputs in its own buffers, and once
   * a run recorded every node's output shapes, skips their inference. */
  bool at_load = entry && entry->at_load;
  wq_value *templates = at_load ? entry->templates : NULL;
  bool reuse_shapes = at_load && entry->templates_ready;

  /* The run's own time limit, nested in any the caller bound (a quantizer's). */
  wq_deadline limit = {0};
  wq_deadline *caller_deadline = NULL;
  if (plan->time_limit_ms > 0) {
    limit.now_ms = plan->limit_now_ms;
    limit.at_ms = limit.now_ms() + plan->time_limit_ms;
    caller_deadline = wq_deadline_bind(&limit);
  }
  wq_deadline *deadline = wq_deadline_current();

  for (int i = 0; i < g->n_nodes && st == WQ_OK; i++) {
    const wq_node *node = &g->nodes[i];
    double node_t0 = plan->node_ms ? plan->now_ms() : 0.0;
    double *kernel_ms = plan->node_ms ? &plan->node_ms[2 * i + 1] : NULL;
    wq_value in_stack[WQ_STACK_ARGS], out_stack[WQ_STACK_ARGS];
    output_slot slot_stack[WQ_STACK_ARGS];
    bool allocated_stack[WQ_STACK_ARGS];
    wq_value *in = in_stack, *out = out_stack;
    output_slot *slots = slot_stack;
    bool *allocated = allocated_stack;
    if (node->n_inputs > WQ_STACK_ARGS || node->n_outputs > WQ_STACK_ARGS) {
      in = calloc((size_t)node->n_inputs + 1, sizeof *in);
      out = calloc((size_t)node->n_outputs + 1, sizeof *out);
      slots = calloc((size_t)node->n_outputs + 1, sizeof *slots);
      allocated = calloc((size_t)node->n_outputs + 1, sizeof *allocated);
      if (!in || !out || !slots || !allocated) {
        free(in);
        free(out);
        free(slots);
        free(allocated);
        st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
        break;
      }
    }
    for (int k = 0; k < node->n_inputs; k++) {
      int t = node->inputs[k];
      if (t < 0) {
        reset_value(&in[k]);
        continue;
      }
      in[k] = values[t];
      in[k].layout = g->tensors[t].layout; /* graph inputs come from the caller */
      if (!in[k].data && wq_value_nbytes(&in[k]) > 0) {
        st = wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: input '%s' has no value",
                     node->op_type, g->tensors[t].name);
        break;
      }
    }
    for (int k = 0; k < node->n_outputs; k++) {
      int t = node->outputs[k];
      slots[k].data = NULL;
      slots[k].capacity = 0;
      if (entry && t >= 0 && entry->offsets[t] != WQ_NOT_IN_ARENA) {
        slots[k].data = plan->arena + entry->offsets[t];
        slots[k].capacity = entry->sizes[t];
      } else if (at_load && t >= 0 && plan->output_offsets[t] != WQ_NOT_IN_ARENA) {
        slots[k].data = plan->outputs + plan->output_offsets[t];
        slots[k].capacity = plan->output_sizes[t];
      }
    }
    if (st == WQ_OK && reuse_shapes && plan->may_skip_infer[i]) {
      const wq_value *shapes = templates + plan->out_base[i];
      for (int k = 0; k < node->n_outputs; k++) {
        out[k] = shapes[k];
        allocated[k] = false;
      }
      st = place_and_run(node, in, out, slots, plan->poison, allocated, &outgrown, room,
                         plan->now_ms, kernel_ms, err);
    } else if (st == WQ_OK) {
      st = run_node_placed(g, node, in, out, slots, plan->poison, allocated, &outgrown, room,
                           plan->now_ms, kernel_ms, err);
      if (st == WQ_OK && templates && !reuse_shapes)
        for (int k = 0; k < node->n_outputs; k++) {
          templates[plan->out_base[i] + k] = out[k];
          templates[plan->out_base[i] + k].data = NULL;
        }
    }
    if (st == WQ_OK) {
      for (int k = 0; k < node->n_outputs; k++) {
        int t = node->outputs[k];
        if (t < 0) {
          if (allocated[k])
            free(out[k].data); /* an omitted optional output the kernel still produced */
          continue;
        }
        if (owned[t])
          free(values[t].data);
        values[t] = out[k];
        owned[t] = allocated[k];
        plan->run_sizes[t] = wq_value_nbytes(&out[k]);
      }
      if (plan->observe)
        st = plan->observe(plan->observe_ctx, g, i, values, err);
      /* Release malloc'ed intermediates whose last consumer was this node. */
      for (int k = 0; k < node->n_inputs; k++) {
        int t = node->inputs[k];
        if (t >= 0 && plan->last_use[t] == i && owned[t] && !g->tensors[t].is_output) {
          if (room)
            *room += wq_value_nbytes(&values[t]);
          free(values[t].data);
          values[t].data = NULL;
          owned[t] = false;
        }
      }
    }
    if (in != in_stack) {
      free(in);
      free(out);
      free(slots);
      free(allocated);
    }
    if (plan->node_ms)
      plan->node_ms[2 * i] += plan->now_ms() - node_t0;
    /* A node a kernel cut short (the flag set inside it) fails even as the
     * last one; a finished node past the limit stops the run before the next. */
    if (st == WQ_OK && deadline) {
      bool cut = atomic_load(&deadline->passed);
      if (cut || (i + 1 < g->n_nodes && wq_deadline_passed()))
        st = timed_out(plan, node->name, cut, i + 1, g->n_nodes, err);
    }
  }
  if (plan->time_limit_ms > 0)
    wq_deadline_bind(caller_deadline);
  if (entry && outgrown)
    entry->stale = true;
  /* First run with these input shapes (or a slot was outgrown): plan from
   * the sizes this run recorded, for the next run. */
  if (st == WQ_OK && plan->use_arena) {
    if (entry && !outgrown) {
      plan->stats.arena_runs++;
      if (reuse_shapes)
        plan->stats.shape_reuse_runs++;
      else if (templates)
        entry->templates_ready = true;
    } else {
      plan->stats.recording_runs++;
      /* The run itself succeeded: a plan that cannot be built (out of
       * memory) only means the next run records again. */
      struct wq_arena_entry *slot = slot_for(plan, key);
      wq_error plan_err;
      if (build_entry(plan, slot, key, plan->run_sizes, false, &plan_err) == WQ_OK)
        note_entry(plan, slot);
    }
  }
finish:
  if (key != key_stack)
    free(key);
  if (st != WQ_OK) {
    for (int t = 0; t < g->n_tensors; t++)
      if (owned[t] && !g->tensors[t].is_output) {
        free(values[t].data);
        values[t].data = NULL;
        owned[t] = false;
      }
  }
  return st;
}
