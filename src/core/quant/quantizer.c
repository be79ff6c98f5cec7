#include "quantizer.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/format.h"
#include "../ir/text.h"
#include "../kernels/ref/quant_ref.h"
#include "../passes/partition.h"
#include "../runtime/parallel.h"
#include "annotate.h"
#include "observer.h"
#include "prepare.h"
#include "qdq_convert.h"

/* Samples kept (inputs copied) for the sensitivity report and keep-float. */
#define KEPT_SAMPLES 8
/* Held-out samples kept for the accuracy evaluation; later ones calibrate. */
#define MAX_HELDOUT 32
#define MAX_NOTES 8

typedef struct {
  wq_value *inputs; /* data owned */
  int n;
} kept_sample;

struct wq_quantizer {
  uint8_t *model; /* a copy: convert loads it again to rewrite */
  size_t model_len;
  wq_input_shape *shapes; /* bound at every load; names and dims owned */
  int n_shapes;
  wq_quant_config cfg;
  wq_quant_prepare_stats prepared;
  wq_model *fmodel; /* the prepared float model calibration runs */
  int n_tensors, n_nodes;
  wq_dtype *dtypes; /* per tensor, as the latest sample ran it; NULL before one */
  wq_observer *obs; /* per tensor; every float tensor a node computes */
  bool *has_obs;
  int64_t samples; /* every sample observed, held-out ones included */
  kept_sample kept[KEPT_SAMPLES];
  int n_kept;
  kept_sample heldout[MAX_HELDOUT];
  int n_heldout;
  char *notes[MAX_NOTES]; /* the caller's warnings (e.g. random data), owned */
  int n_notes;
  void (*progress)(void *ctx, const char *line);
  void *progress_ctx;
  float **bias_shift; /* per node: bias correction per output channel, or NULL */
  int bias_corrected;
  /* Cross-layer equalization: the pairs of the float graph, per pair and
   * channel the largest |x| of the tensor between them over the first
   * calibration samples, then the factors every load applies. */
  wq_quant_eq_pair *eq;
  int n_eq;
  double **eq_range;
  double **eq_scale;
  bool eq_decided;
  bool bound;    /* symbolic input dims were bound to the first sample's sizes */
  int equalized; /* pairs rescaled */
  /* Results of the last finish. */
  wq_annotation ann;
  wq_qdq_params *params; /* per tensor */
  wq_sensitivity *sens;  /* per node */
  double output_snr_db;  /* int8 vs float outputs on the kept samples */
  double output_cosine;  /* the lowest output cosine on the kept samples */
  double output_noise;
  wq_calib_method method; /* the range method of the last conversion */
  uint8_t *tmethod;       /* per cluster: its own method ("auto"), or NULL: `method` */
  float method_percentile;
  /* its percentile */     /* error / signal energy of the outputs on the kept samples */
  int kept_float;          /* nodes kept float for sensitivity */
  wq_output_metrics *eval; /* per output, on the held-out samples; NULL: not measured */
  wq_text warnings;        /* JSON array items of the last finish */
  wq_text warn_lines;      /* the same, one per line */
  int n_warnings;
  char *report;
  char summary[320];
  /* wq_quantizer_time_limit: bound around every observe and finish (so the
   * model runs inside stop too); limit.now_ms NULL: none. */
  wq_deadline limit;
  double limit_ms;
};

typedef struct {
  const wq_quantizer *q;
  wq_quant_prepare_stats *stats; /* the folds are counted into it */
} load_ctx;

static wq_status prepare_hook(void *ctx, wq_graph *g, wq_error *err) {
  const load_ctx *c = ctx;
  const wq_quantizer *q = c->q;
  /* The converter raises the model's opset to the HardSwish it may add. */
  WQ_TRY(wq_quant_prepare_ex(g, true, c->stats, err));
  if (!q->eq_scale)
    return WQ_OK;
  /* The same graph gives the same pairs in the same order. */
  wq_quant_eq_pair *pairs = malloc((size_t)q->n_eq * sizeof *pairs);
  if (!pairs)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  wq_status st =
      wq_quant_eq_pairs(g, pairs, q->n_eq) == q->n_eq
          ? WQ_OK
          : wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "equalization pairs changed between loads");
  for (int k = 0; st == WQ_OK && k < q->n_eq; k++)
    if (q->eq_scale[k])
      st = wq_quant_eq_apply(g, &pairs[k], q->eq_scale[k], err);
  free(pairs);
  return st;
}

wq_status wq_quantizer_load_float(const wq_quantizer *q, wq_quant_prepare_stats *stats,
                                  wq_model **out, wq_error *err) {
  load_ctx ctx = {q, stats};
  wq_load_options opts = {.input_shapes = q->shapes,
                          .n_input_shapes = q->n_shapes,
                          .no_lowering = 1,
                          .no_float_fusion = 1,
                          .rewrite = prepare_hook,
                          .rewrite_ctx = &ctx,
                          .max_memory_bytes = q->cfg.max_memory_bytes};
  return wq_model_load(q->model, q->model_len, &opts, out, err);
}

static wq_status copy_shapes(wq_quantizer *q, const wq_input_shape *shapes, int n, wq_error *err) {
  if (n <= 0)
    return WQ_OK;
  q->shapes = calloc((size_t)n, sizeof *q->shapes);
  if (!q->shapes)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  q->n_shapes = n;
  for (int i = 0; i < n; i++) {
    int64_t *dims = malloc(((size_t)shapes[i].rank + 1) * sizeof *dims);
    char *name = wq_strdup(shapes[i].name);
    q->shapes[i] = (wq_input_shape){.name = name, .rank = shapes[i].rank, .dims = dims};
    if (!dims || !name)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
    memcpy(dims, shapes[i].dims, (size_t)shapes[i].rank * sizeof *dims);
  }
  return WQ_OK;
}

static void free_eq(wq_quantizer *q) {
  for (int k = 0; k < q->n_eq; k++) {
    free(q->eq_range ? q->eq_range[k] : NULL);
    free(q->eq_scale ? q->eq_scale[k] : NULL);
  }
  free(q->eq_range);
  free(q->eq_scale);
  free(q->eq);
  q->eq_range = q->eq_scale = NULL;
  q->eq = NULL;
}

/* The float graph's equalization pairs; those whose weights are quantized
 * per channel get a range to fill (a per-tensor grid would take the
 * rescaled rows' range for every row). */
static wq_status find_pairs(wq_quantizer *q, const wq_graph *g, wq_error *err) {
  int n = wq_quant_eq_pairs(g, NULL, 0);
  q->eq = calloc((size_t)n + 1, sizeof *q->eq);
  q->eq_range = calloc((size_t)n + 1, sizeof *q->eq_range);
  if (!q->eq || !q->eq_range)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  q->n_eq = wq_quant_eq_pairs(g, q->eq, n);
  for (int k = 0; k < n; k++) {
    const wq_quant_eq_pair *p = &q->eq[k];
    if (wq_quant_config_weight_for(&q->cfg, g->nodes[p->a].op_type)->granularity !=
            WQ_QGRAN_PER_CHANNEL ||
        wq_quant_config_weight_for(&q->cfg, g->nodes[p->b].op_type)->granularity !=
            WQ_QGRAN_PER_CHANNEL)
      continue;
    q->eq_range[k] = calloc((size_t)p->channels, sizeof **q->eq_range);
    if (!q->eq_range[k])
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  }
  return WQ_OK;
}

/* What is kept per tensor and node of the float graph (before any sample). */
static wq_status graph_state(wq_quantizer *q, const wq_graph *g, wq_error *err) {
  free(q->obs);
  free(q->has_obs);
  free(q->bias_shift);
  free_eq(q);
  q->n_eq = 0;
  q->n_tensors = g->n_tensors;
  q->n_nodes = g->n_nodes;
  size_t nt = (size_t)g->n_tensors + 1;
  q->obs = calloc(nt, sizeof *q->obs);
  q->has_obs = calloc(nt, sizeof *q->has_obs);
  q->bias_shift = calloc((size_t)g->n_nodes + 1, sizeof *q->bias_shift);
  if (!q->obs || !q->has_obs || !q->bias_shift)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  return q->cfg.equalization ? find_pairs(q, g, err) : WQ_OK;
}

wq_status wq_quantizer_new(const uint8_t *model, size_t n, const char *config_json,
                           size_t config_len, wq_quantizer **out, wq_error *err) {
  return wq_quantizer_new_shaped(model, n, config_json, config_len, NULL, 0, out, err);
}

wq_status wq_quantizer_new_shaped(const uint8_t *model, size_t n, const char *config_json,
                                  size_t config_len, const wq_input_shape *shapes, int n_shapes,
                                  wq_quantizer **out, wq_error *err) {
  wq_error_clear(err);
  *out = NULL;
  wq_quantizer *q = calloc(1, sizeof *q);
  if (!q)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  wq_quant_config_default(&q->cfg);
  q->model = malloc(n ? n : 1);
  wq_status st = q->model ? WQ_OK : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  if (st == WQ_OK) {
    memcpy(q->model, model, n);
    q->model_len = n;
    st = copy_shapes(q, shapes, n_shapes, err);
  }
  if (st == WQ_OK && config_json && config_len)
    st = wq_quant_config_parse_json(&q->cfg, config_json, config_len, err);
  if (st == WQ_OK)
    st = wq_quantizer_load_float(q, &q->prepared, &q->fmodel, err);
  const wq_graph *g = st == WQ_OK ? wq_model_get_ir(q->fmodel)->graph : NULL;
  if (st == WQ_OK)
    st = wq_annotate_check_float(g, err);
  if (st == WQ_OK)
    st = wq_quant_config_check_nodes(&q->cfg, g, err);
  if (st == WQ_OK)
    st = graph_state(q, g, err);
  if (st != WQ_OK) {
    wq_quantizer_free(q);
    return st;
  }
  *out = q;
  return WQ_OK;
}

static void free_results(wq_quantizer *q) {
  wq_annotation_free(&q->ann);
  free(q->params);
  q->params = NULL;
  free(q->tmethod);
  q->tmethod = NULL;
  free(q->sens);
  q->sens = NULL;
  free(q->report);
  q->report = NULL;
  free(q->eval);
  q->eval = NULL;
  free(wq_text_take(&q->warnings));
  free(wq_text_take(&q->warn_lines));
  q->n_warnings = 0;
  for (int i = 0; q->bias_shift && i < q->n_nodes; i++) {
    free(q->bias_shift[i]);
    q->bias_shift[i] = NULL;
  }
  q->bias_corrected = 0;
  q->summary[0] = 0;
}

static void free_samples(kept_sample *s, int n) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < s[k].n; i++)
      free(s[k].inputs[i].data);
    free(s[k].inputs);
  }
}

void wq_quantizer_free(wq_quantizer *q) {
  if (!q)
    return;
  free_results(q);
  if (q->obs)
    for (int t = 0; t < q->n_tensors; t++)
      if (q->has_obs[t])
        wq_observer_free(&q->obs[t]);
  free(q->obs);
  free(q->has_obs);
  free(q->bias_shift);
  free_eq(q);
  free_samples(q->kept, q->n_kept);
  free_samples(q->heldout, q->n_heldout);
  for (int i = 0; i < q->n_notes; i++)
    free(q->notes[i]);
  free(q->dtypes);
  wq_model_free(q->fmodel);
  wq_quant_config_free(&q->cfg);
  for (int i = 0; i < q->n_shapes; i++) {
    free((char *)q->shapes[i].name);
    free((int64_t *)q->shapes[i].dims);
  }
  free(q->shapes);
  free(q->model);
  free(q);
}

const wq_model *wq_quantizer_float_model(const wq_quantizer *q) { return q->fmodel; }
int64_t wq_quantizer_samples(const wq_quantizer *q) { return q->samples; }
const wq_quant_config *wq_quantizer_config(const wq_quantizer *q) { return &q->cfg; }
const wq_dtype *wq_quantizer_dtypes(const wq_quantizer *q) { return q->dtypes; }

static wq_observer_kind observer_kind(wq_calib_method m) {
  switch (m) {
  case WQ_CALIB_MOVING_AVERAGE: return WQ_OBS_MOVING_AVERAGE;
  case WQ_CALIB_PERCENTILE:
  case WQ_CALIB_MSE:
  case WQ_CALIB_AUTO:
  case WQ_CALIB_TENSOR: return WQ_OBS_HISTOGRAM;
  case WQ_CALIB_MINMAX: break;
  }
  return WQ_OBS_MINMAX;
}

static wq_status observe_tensor(wq_quantizer *q, const wq_graph *g, int t, const wq_value *v,
                                wq_error *err) {
  if (v->dtype != WQ_DT_FLOAT || !v->data)
    return WQ_OK;
  if (!q->has_obs[t]) {
    wq_status st = observer_kind(q->cfg.calibration) == WQ_OBS_HISTOGRAM
                       ? wq_observer_init_histogram(&q->obs[t], q->cfg.histogram_bins, err)
                       : wq_observer_init(&q->obs[t], observer_kind(q->cfg.calibration),
                                          q->cfg.averaging, -1, 1, err);
    WQ_TRY(st);
    q->has_obs[t] = true;
  }
  return wq_observer_update(&q->obs[t], v->data, v->rank, v->dims, g->tensors[t].name, err);
}

/* Per channel (axis 1), the largest |x| of a pair's tensor so far. */
static void eq_observe(wq_quantizer *q, int t, const wq_value *v) {
  for (int k = 0; k < q->n_eq; k++) {
    double *r = q->eq_range[k];
    int64_t c = q->eq[k].channels;
    if (q->eq[k].tensor != t || !r || v->rank < 2 || v->dims[1] != c)
      continue;
    int64_t inner = wq_value_numel(v) / (v->dims[0] * c);
    const float *x = v->data;
    for (int64_t o = 0; o < v->dims[0] * c; o++)
      for (int64_t i = 0; i < inner; i++)
        r[o % c] = fmax(r[o % c], fabs((double)x[o * inner + i]));
  }
}

static wq_status observe_node(void *ctx, const wq_graph *g, int node, const wq_value *values,
                              wq_error *err) {
  wq_quantizer *q = ctx;
  const wq_node *n = &g->nodes[node];
  for (int k = 0; k < n->n_outputs; k++) {
    int t = n->outputs[k];
    if (t < 0 || !values[t].data)
      continue;
    q->dtypes[t] = values[t].dtype;
    WQ_TRY(observe_tensor(q, g, t, &values[t], err));
    if (!q->eq_decided && values[t].dtype == WQ_DT_FLOAT)
      eq_observe(q, t, &values[t]);
  }
  return WQ_OK;
}

/* Calibration data must be finite: a NaN would poison every range after it. */
static wq_status check_finite(const wq_model *m, const wq_value *inputs, int n, wq_error *err) {
  for (int i = 0; i < n; i++) {
    if (inputs[i].dtype != WQ_DT_FLOAT || !inputs[i].data)
      continue;
    const float *x = inputs[i].data;
    int64_t count = wq_value_numel(&inputs[i]);
    for (int64_t k = 0; k < count; k++)
      if (!isfinite(x[k]))
        return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                       "calibration input '%s' has a non-finite value (%g) at element %lld",
                       wq_model_input(m, i)->name, (double)x[k], (long long)k);
  }
  return WQ_OK;
}

static wq_status keep_sample(kept_sample *s, int *count, const wq_value *inputs, int n,
                             wq_error *err) {
  s = &s[*count];
  s->inputs = calloc((size_t)n + 1, sizeof *s->inputs);
  if (!s->inputs)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory keeping a sample");
  s->n = n;
  (*count)++;
  for (int i = 0; i < n; i++) {
    size_t bytes = wq_value_nbytes(&inputs[i]);
    s->inputs[i] = inputs[i];
    s->inputs[i].data = malloc(bytes ? bytes : 1);
    if (!s->inputs[i].data)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory keeping a sample");
    memcpy(s->inputs[i].data, inputs[i].data, bytes);
  }
  return WQ_OK;
}

/* ---- time limit ---------------------------------------------------------- */

__attribute__((cold)) void wq_quantizer_time_limit(wq_quantizer *q, double (*now_ms)(void),
                                                   double ms, double from_ms) {
  q->limit.now_ms = now_ms && ms > 0 ? now_ms : NULL;
  q->limit.at_ms = from_ms + ms;
  q->limit_ms = ms;
}

__attribute__((cold)) static wq_status timed_out(const wq_quantizer *q, const char *what,
                                                 wq_error *err) {
  char node[sizeof err->node];
  wq_format(node, sizeof node, "%s", err->code == WQ_ERR_TIMEOUT ? err->node : "");
  return wq_fail(err, WQ_ERR_TIMEOUT, node[0] ? node : NULL,
                 "quantize stopped %s: the time limit of %g ms was reached", what, q->limit_ms);
}

/* Between steps: WQ_ERR_TIMEOUT once the limit has passed. */
static wq_status check_limit(const wq_quantizer *q, const char *what, wq_error *err) {
  return q->limit.now_ms && wq_deadline_passed() ? timed_out(q, what, err) : WQ_OK;
}

/* An observe or finish runs with the time limit bound (limit_begin ...
 * limit_end): past it a model run inside stops in the node it is in, and
 * whatever failed then is reported as the timeout. */
static wq_deadline *limit_begin(wq_quantizer *q) {
  wq_deadline *caller = wq_deadline_current();
  if (q->limit.now_ms)
    wq_deadline_bind(&q->limit);
  return caller;
}

static wq_status limit_end(wq_quantizer *q, wq_deadline *caller, wq_status st, const char *what,
                           wq_error *err) {
  if (!q->limit.now_ms)
    return st;
  if (st != WQ_OK && wq_deadline_passed())
    st = timed_out(q, what, err);
  wq_deadline_bind(caller);
  return st;
}

/* Symbolic input dims the caller left unbound take the first sample's sizes,
 * as --shape would (some rewrites need static shapes): the float model is
 * loaded again with them and the written model keeps them. */
static wq_status bind_from_sample(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  wq_input_shape *shapes = realloc(q->shapes, (size_t)(q->n_shapes + n + 1) * sizeof *shapes);
  if (!shapes)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  q->shapes = shapes;
  int before = q->n_shapes;
  for (int i = 0; i < n; i++) {
    const wq_tensor *t = wq_model_input(q->fmodel, i);
    int d = 0;
    while (d < t->rank && t->dims[d] >= 0)
      d++;
    if (d == t->rank || inputs[i].rank != t->rank)
      continue;
    int64_t *dims = malloc(((size_t)t->rank + 1) * sizeof *dims);
    q->shapes[q->n_shapes++] = (wq_input_shape){wq_strdup(t->name), t->rank, dims};
    if (!dims || !q->shapes[q->n_shapes - 1].name)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
    memcpy(dims, inputs[i].dims, (size_t)t->rank * sizeof *dims);
  }
  if (q->n_shapes == before)
    return WQ_OK;
  q->bound = true;
  wq_model *m = NULL;
  WQ_TRY(wq_quantizer_load_float(q, &q->prepared, &m, err));
  wq_model_free(q->fmodel);
  q->fmodel = m;
  return graph_state(q, wq_model_get_ir(m)->graph, err);
}

/* One run both records the dtypes and feeds the observers. */
static wq_status calibrate_on(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  const wq_graph *g = wq_model_get_ir(q->fmodel)->graph;
  wq_model_observe(q->fmodel, observe_node, q);
  WQ_TRY(wq_model_run(q->fmodel, inputs, n, err));
  for (int i = 0; i < n; i++)
    WQ_TRY(observe_tensor(q, g, g->inputs[i], &inputs[i], err));
  return WQ_OK;
}

/* Largest factor equalization gives a channel: a channel nearly silent on
 * the calibration samples must not be blown up past what others reach. */
#define EQ_MAX_FACTOR 16.0

/* The factors of one pair from its tensor's channel ranges r: a depthwise
 * B quantizes each channel's weights alone, so every channel is brought to
 * the widest one's range; otherwise halfway (sqrt), as B's weight columns
 * shrink by the same factors. NULL when nothing changes. */
static double *eq_factors(const wq_quant_eq_pair *p, const double *r) {
  double *t = malloc((size_t)p->channels * sizeof *t), top = 0;
  bool changed = false;
  for (int64_t c = 0; t && c < p->channels; c++)
    top = fmax(top, r[c]);
  for (int64_t c = 0; t && c < p->channels; c++) {
    double f = r[c] > 0 ? top / r[c] : 1.0;
    t[c] = fmin(p->channelwise ? f : sqrt(f), EQ_MAX_FACTOR);
    changed = changed || t[c] != 1.0;
  }
  if (!changed) {
    free(t);
    return NULL;
  }
  return t;
}

/* Rescales every pair by the ranges seen so far, reloads the float model
 * with the new weights and calibrates again on the kept samples (the
 * tensors between the pairs changed). */
static wq_status equalize(wq_quantizer *q, wq_error *err) {
  q->eq_decided = true;
  if (!q->n_eq)
    return WQ_OK;
  q->eq_scale = calloc((size_t)q->n_eq, sizeof *q->eq_scale);
  if (!q->eq_scale)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  int changed = 0;
  for (int k = 0; k < q->n_eq; k++) {
    if (!q->eq_range[k])
      continue;
    q->eq_scale[k] = eq_factors(&q->eq[k], q->eq_range[k]);
    changed += q->eq_scale[k] != NULL;
  }
  wq_model *m = NULL;
  wq_status st = changed ? wq_quantizer_load_float(q, NULL, &m, err) : WQ_OK;
  if (st != WQ_OK || !changed) {
    for (int k = 0; k < q->n_eq; k++)
      free(q->eq_scale[k]);
    free(q->eq_scale);
    q->eq_scale = NULL;
    return st;
  }
  wq_model_free(q->fmodel);
  q->fmodel = m;
  q->equalized = changed;
  for (int t = 0; t < q->n_tensors; t++)
    if (q->has_obs[t])
      wq_observer_free(&q->obs[t]);
  memset(q->has_obs, 0, (size_t)q->n_tensors * sizeof *q->has_obs);
  for (int s = 0; s < q->n_kept; s++)
    WQ_TRY(calibrate_on(q, q->kept[s].inputs, q->kept[s].n, err));
  return WQ_OK;
}

/* A failed sample after symbolic dims were bound from the first one: the
 * error says so. */
static wq_status bound_hint(const wq_quantizer *q, wq_status st, wq_error *err) {
  if (st == WQ_OK || !q->bound)
    return st;
  char why[sizeof err->message], node[sizeof err->node];
  wq_format(why, sizeof why, "%s", err->message);
  wq_format(node, sizeof node, "%s", err->node);
  return wq_fail(err, st, node[0] ? node : NULL,
                 "%s (symbolic input dims were bound to the first calibration sample's sizes; "
                 "every sample must have them, or bind others with --shape)",
                 why);
}

/* One sample, held apart or calibrating; equalization after the first
 * KEPT_SAMPLES calibration samples. */
static wq_status observe_one(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  if (q->samples == 0)
    WQ_TRY(bind_from_sample(q, inputs, n, err));
  const wq_graph *g = wq_model_get_ir(q->fmodel)->graph;
  /* Every holdout-th sample is held apart: the ranges never see it, the
   * accuracy evaluation runs on it. The run checks its dtypes and shapes. */
  int every = q->cfg.holdout;
  if (every > 1 && q->n_heldout < MAX_HELDOUT && q->samples % every == every - 1) {
    wq_model_observe(q->fmodel, NULL, NULL);
    WQ_TRY(wq_model_run(q->fmodel, inputs, n, err));
    WQ_TRY(keep_sample(q->heldout, &q->n_heldout, inputs, n, err));
    q->samples++;
    return WQ_OK;
  }
  if (!q->dtypes) {
    /* Element types of every tensor, as run time gives them (static
     * inference leaves some unknown under symbolic shapes). */
    q->dtypes = malloc(((size_t)g->n_tensors + 1) * sizeof *q->dtypes);
    if (!q->dtypes)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
    for (int t = 0; t < g->n_tensors; t++)
      q->dtypes[t] = g->tensors[t].dtype;
  }
  WQ_TRY(calibrate_on(q, inputs, n, err));
  if (q->n_kept < KEPT_SAMPLES)
    WQ_TRY(keep_sample(q->kept, &q->n_kept, inputs, n, err));
  q->samples++;
  /* The first calibration samples decide the equalization. */
  if (q->n_kept == KEPT_SAMPLES && !q->eq_decided)
    WQ_TRY(equalize(q, err));
  return WQ_OK;
}

wq_status wq_quantizer_observe(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  wq_error_clear(err);
  char what[64];
  wq_format(what, sizeof what, "after %lld calibration sample(s)", (long long)q->samples);
  wq_deadline *caller = limit_begin(q);
  wq_status st = check_limit(q, what, err);
  int want = wq_model_input_count(q->fmodel);
  if (st == WQ_OK && n != want)
    st = wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "a calibration sample needs %d input(s), got %d",
                 want, n);
  if (st == WQ_OK)
    st = check_finite(q->fmodel, inputs, n, err);
  if (st == WQ_OK)
    st = bound_hint(q, observe_one(q, inputs, n, err), err);
  return limit_end(q, caller, st, what, err);
}

/* ---- ranges -> parameters ------------------------------------------------ */

static void constant_range(const wq_tensor *t, float *lo, float *hi) {
  const float *x = t->data;
  int64_t n = (int64_t)(t->nbytes / sizeof(float));
  float a = 0.0f, b = 0.0f;
  for (int64_t k = 0; k < n; k++) {
    if (!isfinite(x[k]))
      continue;
    a = x[k] < a ? x[k] : a;
    b = x[k] > b ? x[k] : b;
  }
  *lo = a;
  *hi = b;
}

/* Every activation cluster's range: the union of its members' calibrated
 * (or, for constants, exact) ranges; then one (scale, zero point). */
static wq_status cluster_params(wq_quantizer *q, const wq_graph *g, wq_error *err) {
  const wq_annotation *a = &q->ann;
  wq_qdq_params *p = q->params;
  for (int t = 0; t < g->n_tensors; t++) {
    const wq_ann_tensor *at = &a->tensors[t];
    if (at->kind != WQ_ANN_T_ACTIVATION && at->kind != WQ_ANN_T_CONSTANT)
      continue;
    float lo, hi;
    if (at->kind == WQ_ANN_T_CONSTANT) {
      constant_range(&g->tensors[t], &lo, &hi);
    } else if (q->has_obs[t]) {
      WQ_TRY(wq_observer_range(&q->obs[t], q->tmethod ? q->tmethod[at->cluster] : q->method,
                               q->method_percentile, at->spec->qmin, at->spec->qmax,
                               at->spec->symmetric, &lo, &hi, err));
    } else {
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                     "tensor '%s' was never computed during calibration", g->tensors[t].name);
    }
    wq_qdq_params *r = &p[at->cluster];
    if (!r->has_range) {
      r->lo = lo;
      r->hi = hi;
      r->has_range = true;
    } else {
      r->lo = lo < r->lo ? lo : r->lo;
      r->hi = hi > r->hi ? hi : r->hi;
    }
    p[t].lo = lo;
    p[t].hi = hi;
  }
  for (int t = 0; t < g->n_tensors; t++) {
    const wq_ann_tensor *at = &a->tensors[t];
    if (at->kind != WQ_ANN_T_ACTIVATION && at->kind != WQ_ANN_T_CONSTANT)
      continue;
    const wq_qdq_params *r = &p[at->cluster];
    wq_range_to_qparams(r->lo, r->hi, at->spec->qmin, at->spec->qmax, at->spec->symmetric,
                        q->cfg.min_range, &p[t].scale, &p[t].zero_point);
    p[t].dtype = at->spec->dtype;
    p[t].qmin = at->spec->qmin;
    p[t].qmax = at->spec->qmax;
    p[t].has_range = true;
  }
  return WQ_OK;
}

/* ---- finish ----------------------------------------------------------------- */

static int count_decision(const wq_annotation *a, wq_ann_decision d) {
  int n = 0;
  for (int i = 0; i < a->n_nodes; i++)
    n += a->nodes[i].decision == d;
  return n;
}

/* The node of the loaded int8 graph rt that stands for float node `name`:
 * the one of that name or the one whose decision record lists it among
 * the nodes it replaced (a Relu absorbed into its QConv); NULL: none (a
 * Quantize/DequantizeLinear pair folded away). */
static const wq_node *runtime_node(const wq_graph *rt, const char *name) {
  for (int i = 0; i < rt->n_nodes; i++) {
    const wq_decision *d = &rt->nodes[i].rec;
    if (!strcmp(rt->nodes[i].name, name))
      return &rt->nodes[i];
    for (int k = 1; k < d->n_sources; k += 2)
      if (!strcmp(d->sources[k], name))
        return &rt->nodes[i];
  }
  return NULL;
}

/* What the runtime did with float node `name` of the written model, from
 * its decision record: {"op", "reason", "kernel"} or null. */
static void put_runtime(wq_text *r, const wq_graph *rt, const char *name) {
  const wq_node *n = rt ? runtime_node(rt, name) : NULL;
  if (!n) {
    wq_text_put(r, ", \"runtime\": null");
    return;
  }
  /* Registry op types, code and kernel names: identifiers, nothing to escape. */
  wq_text_put(r, ", \"runtime\": {\"op\": \"%s\", \"reason\": \"%s\", \"kernel\": \"%s\"}",
              n->op_type, wq_reason_name(n->rec.reason), n->rec.kernel ? n->rec.kernel : "");
}

static const char *const method_names[] = {"minmax", "moving-average", "percentile", "mse", "auto"};

/* rt: the written model as the runtime loaded it (NULL: it did not load). */
static void write_report(wq_quantizer *q, const wq_graph *g, size_t onnx_len, const wq_model *rt) {
  const wq_annotation *a = &q->ann;
  int quantized = count_decision(a, WQ_ANN_QUANTIZED);
  int absorbed = count_decision(a, WQ_ANN_ABSORBED);
  int fl = count_decision(a, WQ_ANN_FLOAT);
  int tensors = 0;
  for (int t = 0; t < g->n_tensors; t++)
    tensors += a->tensors[t].kind == WQ_ANN_T_ACTIVATION;
  int n_out = wq_model_output_count(q->fmodel);
  double worst = 2.0;
  for (int o = 0; q->eval && o < n_out; o++)
    if (q->eval[o].count && wq_output_cosine(&q->eval[o]) < worst)
      worst = wq_output_cosine(&q->eval[o]);
  char accuracy[96] = "";
  if (worst <= 1.0)
    wq_format(accuracy, sizeof accuracy, ", held-out output cosine >= %.4f", worst);
  wq_format(q->summary, sizeof q->summary,
            "quantized %d of %d compute nodes (%d absorbed into a linear, %d float), "
            "%d activations, %lld calibration + %d held-out sample(s)%s%s",
            quantized + absorbed, quantized + absorbed + fl, absorbed, fl, tensors,
            (long long)(q->samples - q->n_heldout), q->n_heldout, accuracy,
            q->n_warnings ? " (see warnings)" : "");
  wq_text r = {0};
  wq_text_put(&r, "{\n  \"summary\": ");
  wq_text_json_string(&r, q->summary);
  /* The runtime's own summary of the written model (its decision records). */
  char *rt_summary = rt ? wq_model_partition_summary(rt) : NULL;
  wq_text_put(&r, ",\n  \"runtime\": ");
  if (rt_summary)
    wq_text_json_string(&r, rt_summary);
  else
    wq_text_put(&r, "null");
  free(rt_summary);
  wq_text_put(&r,
              ",\n  \"samples\": %lld,\n  \"onnxBytes\": %zu,\n  \"nodesQuantized\": %d,\n"
              "  \"nodesAbsorbed\": %d,\n  \"nodesFloat\": %d,\n  \"keptFloat\": %d,\n",
              (long long)q->samples, onnx_len, quantized, absorbed, fl, q->kept_float);
  wq_text_put(&r,
              "  \"prepared\": {\"batchNormFolded\": %d, \"mulFolded\": %d, \"addFolded\": %d, "
              "\"hardSwishFused\": %d},\n",
              q->prepared.batchnorm_folded,
              q->prepared.mul_folded_after + q->prepared.mul_folded_before,
              q->prepared.add_folded_after, q->prepared.hardswish_fused);
  wq_text_put(&r, "  \"rangeMethod\": \"%s\",\n", method_names[q->method]);
  wq_text_put(
      &r, "  \"calibrationSamples\": %lld,\n  \"heldOutSamples\": %d,\n  \"biasCorrected\": %d,\n",
      (long long)(q->samples - q->n_heldout), q->n_heldout, q->bias_corrected);
  wq_text_put(&r, "  \"equalized\": %d,\n", q->equalized);
  /* Measured on (some of) the calibration samples: what a target search
   * steers by, never the accuracy the evaluation reports. */
  if (isfinite(q->output_snr_db))
    wq_text_put(&r, "  \"outputSnrDb\": %.3f,\n  \"outputCosine\": %.6f,\n", q->output_snr_db,
                q->output_cosine);
  wq_text_put(&r, "  \"evaluation\": ");
  if (q->eval) {
    wq_text_put(&r, "{\"on\": \"held-out samples\", \"samples\": %d, \"outputs\": [", q->n_heldout);
    for (int o = 0; o < n_out; o++) {
      const wq_output_metrics *m = &q->eval[o];
      wq_text_put(&r, "%s\n    {\"name\": ", o ? "," : "");
      wq_text_json_string(&r, wq_model_output(q->fmodel, o)->name);
      if (m->count) {
        double snr = wq_output_snr_db(m);
        wq_text_put(&r, ", \"cosine\": %.6f, \"snrDb\": %.3f, \"maxAbs\": %.6g",
                    wq_output_cosine(m), isfinite(snr) ? snr : 999.0, m->max_abs);
      }
      if (m->top1_rows)
        wq_text_put(&r, ", \"top1Agree\": %lld, \"top1Rows\": %lld", (long long)m->top1_agree,
                    (long long)m->top1_rows);
      wq_text_put(&r, "}");
    }
    wq_text_put(&r, "\n  ]},\n");
  } else {
    wq_text_put(&r, "null,\n");
  }
  wq_text_put(&r, "  \"warnings\": [%s%s],\n", q->warnings.buf ? q->warnings.buf : "",
              q->warnings.buf ? "\n  " : "");
  wq_text_put(&r, "  \"nodes\": [");
  bool first = true;
  for (int i = 0; i < a->n_nodes; i++) {
    const wq_ann_node *an = &a->nodes[i];
    if (an->decision == WQ_ANN_NOT_COMPUTED)
      continue;
    wq_text_put(&r, "%s\n    {\"name\": ", first ? "" : ",");
    first = false;
    wq_text_json_string(&r, g->nodes[i].name);
    wq_text_put(&r, ", \"op\": ");
    wq_text_json_string(&r, g->nodes[i].op_type);
    wq_text_put(&r, ", \"decision\": \"%s\", \"role\": \"%s\", \"reason\": ",
                wq_ann_decision_name(an->decision), wq_quant_role_name(an->role));
    wq_text_json_string(&r, an->reason);
    put_runtime(&r, rt ? wq_model_get_ir(rt)->graph : NULL, g->nodes[i].name);
    if (q->sens && q->sens[i].measured)
      wq_text_put(&r, ", \"maxAbs\": %.6g, \"mse\": %.6g, \"snrDb\": %.3f", q->sens[i].max_abs,
                  q->sens[i].mse, isfinite(q->sens[i].snr_db) ? q->sens[i].snr_db : 999.0);
    wq_text_put(&r, "}");
  }
  wq_text_put(&r, "\n  ],\n  \"tensors\": [");
  first = true;
  for (int t = 0; t < g->n_tensors; t++) {
    const wq_ann_tensor *at = &a->tensors[t];
    if (at->kind != WQ_ANN_T_ACTIVATION && at->kind != WQ_ANN_T_CONSTANT)
      continue;
    const wq_qdq_params *p = &q->params[t];
    wq_text_put(&r, "%s\n    {\"name\": ", first ? "" : ",");
    first = false;
    wq_text_json_string(&r, g->tensors[t].name);
    wq_text_put(&r,
                ", \"kind\": \"%s\", \"dtype\": \"%s\", \"min\": %.9g, \"max\": %.9g, "
                "\"scale\": %.9g, \"zeroPoint\": %d, \"cluster\": ",
                at->kind == WQ_ANN_T_CONSTANT ? "constant" : "activation", wq_dtype_name(p->dtype),
                (double)p->lo, (double)p->hi, (double)p->scale, (int)p->zero_point);
    wq_text_json_string(&r, g->tensors[at->cluster].name);
    if (at->kind == WQ_ANN_T_ACTIVATION)
      wq_text_put(&r, ", \"method\": \"%s\"",
                  method_names[q->tmethod ? q->tmethod[at->cluster] : q->method]);
    wq_text_put(&r, "}");
  }
  wq_text_put(&r, "\n  ]\n}\n");
  q->report = wq_text_take(&r);
}

#if defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
static double now_seconds(void) { return emscripten_get_now() * 1e-3; }
#else
static double now_seconds(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#endif

static void say(const wq_quantizer *q, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(const wq_quantizer *q, const char *fmt, ...) {
  if (!q->progress)
    return;
  char line[400];
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(line, sizeof line, fmt, ap);
  va_end(ap);
  q->progress(q->progress_ctx, line);
}

/* A warning for the report (and the CLI's stderr). */
static void warn(wq_quantizer *q, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void warn(wq_quantizer *q, const char *fmt, ...) {
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(line, sizeof line, fmt, ap);
  va_end(ap);
  wq_text_put(&q->warnings, "%s\n    ", q->n_warnings ? "," : "");
  wq_text_json_string(&q->warnings, line);
  wq_text_put(&q->warn_lines, "%s\n", line);
  q->n_warnings++;
}

/* Annotates with `keep_float`, sets the ranges and writes the QDQ model. */
static wq_status convert(wq_quantizer *q, const wq_graph *g, const bool *keep_float, uint8_t **onnx,
                         size_t *onnx_len, wq_error *err) {
  free(*onnx);
  *onnx = NULL;
  *onnx_len = 0;
  wq_annotation_free(&q->ann);
  memset(q->params, 0, ((size_t)g->n_tensors + 1) * sizeof *q->params);
  WQ_TRY(wq_annotate(g, &q->cfg, q->dtypes, keep_float, &q->ann, err));
  WQ_TRY(cluster_params(q, g, err));
  return wq_qdq_convert(q, &q->ann, q->params, onnx, onnx_len, err);
}

/* Output SNR (pooled) and lowest output cosine of `onnx` on the kept samples. */
static wq_status measure_kept(wq_quantizer *q, const uint8_t *onnx, size_t onnx_len,
                              wq_error *err) {
  q->output_snr_db = NAN;
  q->output_cosine = NAN;
  /* With int8/uint8 IO the QDQ model takes codes, not the float samples. */
  if (q->cfg.io_dtype != WQ_DT_FLOAT || q->n_kept == 0)
    return WQ_OK;
  int n_out = wq_model_output_count(q->fmodel);
  wq_output_metrics *m = calloc((size_t)n_out + 1, sizeof *m);
  const wq_value *samples[KEPT_SAMPLES];
  for (int s = 0; s < q->n_kept; s++)
    samples[s] = q->kept[s].inputs;
  wq_status st = m ? wq_quant_output_metrics(q->fmodel, onnx, onnx_len, samples, q->n_kept, m, err)
                   : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  if (st == WQ_OK) {
    wq_output_metrics all = {0};
    double cos = 1.0;
    for (int o = 0; o < n_out; o++) {
      if (!m[o].count)
        continue;
      all.ref2 += m[o].ref2;
      all.err2 += m[o].err2;
      all.count += m[o].count;
      double c = wq_output_cosine(&m[o]);
      cos = c < cos ? c : cos;
    }
    if (all.count) {
      q->output_noise = all.ref2 > 0 ? all.err2 / all.ref2 : 1.0;
      q->output_snr_db = wq_output_snr_db(&all);
      q->output_cosine = cos;
    }
  }
  free(m);
  return st;
}

static bool below_target(const wq_quantizer *q) {
  return (q->cfg.target_snr_db > 0 && isfinite(q->output_snr_db) &&
          q->output_snr_db < q->cfg.target_snr_db) ||
         (q->cfg.target_cosine > 0 && isfinite(q->output_cosine) &&
          q->output_cosine < q->cfg.target_cosine);
}

static void count_int8(const wq_annotation *a, int *in_int8, int *compute) {
  *in_int8 = count_decision(a, WQ_ANN_QUANTIZED) + count_decision(a, WQ_ANN_ABSORBED);
  *compute = *in_int8 + count_decision(a, WQ_ANN_FLOAT);
}

/* "auto" ranges: the method among MSE, percentile 99.999 and min/max whose
 * model is closest to float on the kept samples (error / signal energy of
 * the outputs; ties to the earlier). One method for every tensor. */
static wq_status choose_method(wq_quantizer *q, const wq_graph *g, const bool *keep_float,
                               uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  static const wq_calib_method methods[] = {WQ_CALIB_MSE, WQ_CALIB_PERCENTILE, WQ_CALIB_MINMAX};
  wq_calib_method best = WQ_CALIB_MSE;
  double best_noise = INFINITY;
  for (int k = 0; k < 3; k++) {
    q->method = methods[k];
    q->method_percentile = 99.999f;
    WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
    WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
    if (!isfinite(q->output_snr_db))
      break; /* not measurable (int8 IO): keep MSE */
    if (q->output_noise < best_noise) {
      best_noise = q->output_noise;
      best = methods[k];
    }
  }
  q->method = best;
  return WQ_OK;
}

/* "auto" per tensor: each activation cluster in graph order tries the
 * other methods' ranges alone and keeps one whose model is closer to float
 * on the kept samples by more than 1% of the error (less is sample noise).
 * Deterministic: no clock decides anything here. */
static wq_status refine_methods(wq_quantizer *q, const wq_graph *g, const bool *keep_float,
                                uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  static const uint8_t methods[] = {WQ_CALIB_MSE, WQ_CALIB_PERCENTILE, WQ_CALIB_MINMAX};
  WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
  if (!isfinite(q->output_snr_db))
    return WQ_OK;
  q->tmethod = malloc((size_t)g->n_tensors + 1);
  if (!q->tmethod)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  memset(q->tmethod, q->method, (size_t)g->n_tensors + 1);
  double best = q->output_noise;
  bool stale = false;
  for (int t = 0; t < g->n_tensors; t++) {
    /* A copy: every conversion annotates afresh. */
    const wq_ann_tensor at = q->ann.tensors[t];
    if (at.kind != WQ_ANN_T_ACTIVATION || at.cluster != t || !q->has_obs[t])
      continue;
    uint8_t was = q->tmethod[t];
    float now_lo = q->params[t].lo, now_hi = q->params[t].hi;
    for (int k = 0; k < 3; k++) {
      float lo, hi;
      WQ_TRY(wq_observer_range(&q->obs[t], methods[k], q->method_percentile, at.spec->qmin,
                               at.spec->qmax, at.spec->symmetric, &lo, &hi, err));
      if (methods[k] == was || (lo == now_lo && hi == now_hi))
        continue;
      q->tmethod[t] = methods[k];
      WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
      WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
      stale = q->output_noise >= best * 0.99;
      if (stale) {
        q->tmethod[t] = was;
        continue;
      }
      say(q, "ranges: '%s' by %s: output SNR %.2f dB", g->tensors[t].name, method_names[methods[k]],
          q->output_snr_db);
      best = q->output_noise;
      was = methods[k];
      now_lo = lo;
      now_hi = hi;
    }
  }
  return stale ? convert(q, g, keep_float, onnx, onnx_len, err) : WQ_OK;
}

/* How far the kept-sample outputs are from float, in the target's terms:
 * 1 - cosine for a cosine target, else error / signal energy. */
static double badness(const wq_quantizer *q) {
  if (q->cfg.target_cosine > 0)
    return 1.0 - q->output_cosine;
  return q->output_noise;
}

#define SEARCH_TRIALS 8

/* Ranks the SEARCH_TRIALS lowest-SNR quantized nodes not kept float by what
 * keeping each one float alone gains on the outputs, per sqrt of its float
 * cost: order[] gets those that gain, best first. Returns their count. */
static wq_status rank_trials(wq_quantizer *q, const wq_graph *g, bool *keep_float, int *order,
                             int *n_order, uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  double base = badness(q), saved_snr = q->output_snr_db, saved_cos = q->output_cosine;
  double score[SEARCH_TRIALS];
  int tried[SEARCH_TRIALS], n = 0;
  *n_order = 0;
  while (n < SEARCH_TRIALS) {
    int c = wq_quant_next_keep_float(&q->ann, q->sens, keep_float, false);
    if (c < 0)
      break;
    keep_float[c] = true; /* also marks it tried for the next pick */
    tried[n++] = c;
  }
  for (int k = 0; k < n; k++)
    keep_float[tried[k]] = false;
  for (int k = 0; k < n; k++) {
    keep_float[tried[k]] = true;
    WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
    WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
    keep_float[tried[k]] = false;
    double gain = base - badness(q);
    double cost = q->sens[tried[k]].cost > 1 ? q->sens[tried[k]].cost : 1;
    score[k] = gain / sqrt(cost);
    say(q, "search: trial %s '%s' float: output cosine %.5f, SNR %.1f dB",
        g->nodes[tried[k]].op_type, g->nodes[tried[k]].name, q->output_cosine, q->output_snr_db);
    if (gain > 0)
      order[(*n_order)++] = k;
  }
  /* Best score first (insertion sort; ties keep the SNR order). */
  for (int i = 1; i < *n_order; i++)
    for (int j = i; j > 0 && score[order[j]] > score[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < *n_order; i++)
    order[i] = tried[order[i]];
  /* Nothing gains alone: the lowest-SNR node still goes first. */
  if (*n_order == 0 && n > 0)
    order[(*n_order)++] = tried[0];
  q->output_snr_db = saved_snr;
  q->output_cosine = saved_cos;
  return WQ_OK;
}

/* Keeps nodes in float until the targets are met on the kept calibration
 * samples: first the keepFloat lowest-SNR nodes, then for a target the
 * nodes whose float run gains most per cost (measured a few at a time),
 * within maxTime seconds. */
static wq_status search(wq_quantizer *q, const wq_graph *g, bool *keep_float, uint8_t **onnx,
                        size_t *onnx_len, wq_error *err) {
  double t0 = now_seconds();
  bool targeted = q->cfg.target_snr_db > 0 || q->cfg.target_cosine > 0;
  int fixed = 0;
  for (; fixed < q->cfg.keep_float; fixed++) {
    int next = wq_quant_next_keep_float(&q->ann, q->sens, keep_float, false);
    if (next < 0)
      break;
    keep_float[next] = true;
  }
  if (fixed) {
    q->kept_float = fixed;
    WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
    WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
  }
  int in8, total;
  count_int8(&q->ann, &in8, &total);
  if (targeted)
    say(q,
        "search: start: %d/%d compute nodes int8, output cosine %.5f, SNR %.1f dB (targets: "
        "cosine %.4g, SNR %.4g dB)",
        in8, total, q->output_cosine, q->output_snr_db, (double)q->cfg.target_cosine,
        (double)q->cfg.target_snr_db);
  int order[SEARCH_TRIALS], n_order = 0, next_in_order = 0;
  bool changed = false;
  while (targeted && below_target(q)) {
    WQ_TRY(check_limit(q, "in the target search", err));
    double elapsed = now_seconds() - t0;
    if (q->cfg.max_time > 0 && elapsed >= q->cfg.max_time) {
      warn(q,
           "target search stopped at its time limit (%.0f s) with %d node(s) kept float: "
           "output cosine %.5f, SNR %.1f dB on the calibration samples",
           (double)q->cfg.max_time, q->kept_float, q->output_cosine, q->output_snr_db);
      say(q, "search: time limit (%.0f s) reached", (double)q->cfg.max_time);
      break;
    }
    if (next_in_order == n_order) {
      WQ_TRY(rank_trials(q, g, keep_float, order, &n_order, onnx, onnx_len, err));
      next_in_order = 0;
      changed = true; /* the last conversion was a trial */
      if (n_order == 0) {
        warn(q,
             "target not reached: no quantized node is left to keep float (output cosine "
             "%.5f, SNR %.1f dB)",
             q->output_cosine, q->output_snr_db);
        break;
      }
    }
    int next = order[next_in_order++];
    keep_float[next] = true;
    q->kept_float++;
    WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
    WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
    changed = false;
    count_int8(&q->ann, &in8, &total);
    say(q,
        "search: %d: %s '%s' float (its SNR %.1f dB): %d/%d int8, output cosine %.5f, SNR "
        "%.1f dB, %.1f s",
        q->kept_float, g->nodes[next].op_type, g->nodes[next].name, q->sens[next].snr_db, in8,
        total, q->output_cosine, q->output_snr_db, now_seconds() - t0);
  }
  /* The model written is the one with the nodes kept float so far. */
  if (changed) {
    WQ_TRY(convert(q, g, keep_float, onnx, onnx_len, err));
    WQ_TRY(measure_kept(q, *onnx, *onnx_len, err));
  }
  if (targeted) {
    count_int8(&q->ann, &in8, &total);
    say(q, "search: done: %d node(s) kept float, %d/%d compute nodes int8, output cosine %.5f",
        q->kept_float, in8, total, q->output_cosine);
  }
  return WQ_OK;
}

/* The written model against the float model on the held-out samples. */
static wq_status evaluate(wq_quantizer *q, const uint8_t *onnx, size_t onnx_len, wq_error *err) {
  if (q->n_heldout == 0) {
    warn(q,
         "accuracy not measured: no sample was held apart (%lld sample(s); one in %d is held "
         "apart, so give at least %d)",
         (long long)q->samples, q->cfg.holdout, q->cfg.holdout);
    return WQ_OK;
  }
  if (q->cfg.io_dtype != WQ_DT_FLOAT) {
    warn(q, "accuracy not measured: with int8/uint8 IO the model takes codes, not the float "
            "samples");
    return WQ_OK;
  }
  int n_out = wq_model_output_count(q->fmodel);
  q->eval = calloc((size_t)n_out + 1, sizeof *q->eval);
  const wq_value **samples = malloc((size_t)q->n_heldout * sizeof *samples);
  wq_status st =
      q->eval && samples ? WQ_OK : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  for (int s = 0; st == WQ_OK && s < q->n_heldout; s++)
    samples[s] = q->heldout[s].inputs;
  if (st == WQ_OK)
    st = wq_quant_output_metrics(q->fmodel, onnx, onnx_len, samples, q->n_heldout, q->eval, err);
  free(samples);
  for (int o = 0; st == WQ_OK && o < n_out; o++) {
    const wq_output_metrics *m = &q->eval[o];
    const char *name = wq_model_output(q->fmodel, o)->name;
    if (m->count && wq_output_cosine(m) < q->cfg.warn_cosine)
      warn(q, "output '%s': cosine %.4f to the float model on %d held-out sample(s), below %.4g",
           name, wq_output_cosine(m), q->n_heldout, (double)q->cfg.warn_cosine);
    if (m->top1_rows && m->top1_agree < m->top1_rows)
      warn(q, "output '%s': top-1 agrees with the float model on %lld of %lld held-out row(s)",
           name, (long long)m->top1_agree, (long long)m->top1_rows);
  }
  return st;
}

static wq_status finish(wq_quantizer *q, uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  if (q->samples - q->n_heldout == 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "no calibration samples: observe at least one before finish");
  if (!q->eq_decided)
    WQ_TRY(equalize(q, err));
  free_results(q);
  for (int i = 0; i < q->n_notes; i++)
    warn(q, "%s", q->notes[i]);
  if (q->bound)
    warn(q, "symbolic input dims were bound to the first calibration sample's sizes: the "
            "written model takes them (--shape binds others)");
  const wq_graph *g = wq_model_get_ir(q->fmodel)->graph;
  bool *keep_float = calloc((size_t)g->n_nodes + 1, sizeof *keep_float);
  q->params = calloc((size_t)g->n_tensors + 1, sizeof *q->params);
  if (!keep_float || !q->params) {
    free(keep_float);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  }
  q->kept_float = 0;
  q->output_snr_db = NAN;
  q->output_cosine = NAN;
  /* All int8 first; its per-node sensitivity orders the nodes that
   * --keep-float / a target keep in float. */
  q->method = q->cfg.calibration;
  q->method_percentile = q->cfg.percentile;
  wq_status st = WQ_OK;
  if (q->method >= WQ_CALIB_AUTO)
    st = choose_method(q, g, keep_float, onnx, onnx_len, err);
  /* The model runs inside these steps check the time limit (bound by
   * wq_quantizer_finish); the search checks it per step, and the end. */
  if (st == WQ_OK)
    st = convert(q, g, keep_float, onnx, onnx_len, err);
  if (st == WQ_OK)
    st = wq_quant_sensitivity(q, &q->ann, q->params, q->cfg.bias_correction, &q->sens, err);
  /* With the bias corrections measured, convert again. */
  if (st == WQ_OK && q->bias_corrected)
    st = convert(q, g, keep_float, onnx, onnx_len, err);
  if (st == WQ_OK && q->cfg.calibration == WQ_CALIB_TENSOR)
    st = refine_methods(q, g, keep_float, onnx, onnx_len, err);
  if (st == WQ_OK)
    st = measure_kept(q, *onnx, *onnx_len, err);
  if (st == WQ_OK)
    st = search(q, g, keep_float, onnx, onnx_len, err);
  if (st == WQ_OK)
    st = evaluate(q, *onnx, *onnx_len, err);
  if (st == WQ_OK)
    st = check_limit(q, "while writing the int8 model", err);
  free(keep_float);
  if (st != WQ_OK) {
    free(*onnx);
    *onnx = NULL;
    *onnx_len = 0;
    return st;
  }
  /* The report renders what the runtime decided for the written model; a
   * model the runtime cannot load still gets its report (runtime null). */
  wq_model *rt = NULL;
  wq_load_options lo = {.input_shapes = q->shapes,
                        .n_input_shapes = q->n_shapes,
                        .max_memory_bytes = q->cfg.max_memory_bytes};
  if (wq_model_load(*onnx, *onnx_len, &lo, &rt, NULL) != WQ_OK)
    rt = NULL;
  write_report(q, g, *onnx_len, rt);
  wq_model_free(rt);
  return WQ_OK;
}

wq_status wq_quantizer_finish(wq_quantizer *q, uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  wq_error_clear(err);
  *onnx = NULL;
  *onnx_len = 0;
  const char *what = "while writing the int8 model";
  wq_deadline *caller = limit_begin(q);
  wq_status st = check_limit(q, what, err);
  if (st == WQ_OK)
    st = finish(q, onnx, onnx_len, err);
  return limit_end(q, caller, st, what, err);
}

char *wq_quantizer_report_json(const wq_quantizer *q) {
  if (!q->report)
    return NULL;
  return wq_strdup(q->report);
}

const char *wq_quantizer_summary(const wq_quantizer *q) { return q->summary; }

void wq_quantizer_keep_float(wq_quantizer *q, int n, float target_snr_db) {
  q->cfg.keep_float = n;
  q->cfg.target_snr_db = target_snr_db;
}

void wq_quantizer_set_bias_shift(wq_quantizer *q, int node, float *shift) {
  free(q->bias_shift[node]);
  q->bias_shift[node] = shift;
  q->bias_corrected += shift != NULL;
}

const float *wq_quantizer_bias_shift(const wq_quantizer *q, int node) {
  return q->bias_shift[node];
}

void wq_quantizer_search(wq_quantizer *q, float target_cosine, float max_time) {
  q->cfg.target_cosine = target_cosine;
  q->cfg.max_time = max_time;
}

wq_status wq_quantizer_note(wq_quantizer *q, const char *warning, wq_error *err) {
  if (q->n_notes == MAX_NOTES)
    return WQ_OK;
  q->notes[q->n_notes] = wq_strdup(warning);
  if (!q->notes[q->n_notes])
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  q->n_notes++;
  return WQ_OK;
}

void wq_quantizer_on_progress(wq_quantizer *q, void (*fn)(void *ctx, const char *line), void *ctx) {
  q->progress = fn;
  q->progress_ctx = fn ? ctx : NULL;
}

const char *wq_quantizer_warnings(const wq_quantizer *q) {
  return q->warn_lines.buf ? q->warn_lines.buf : "";
}

int wq_quantizer_kept_count(const wq_quantizer *q) { return q->n_kept; }
const wq_value *wq_quantizer_kept(const wq_quantizer *q, int s) { return q->kept[s].inputs; }
