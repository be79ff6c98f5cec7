#include "quantizer.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ir/text.h"
#include "../kernels/ref/quant_ref.h"
#include "annotate.h"
#include "observer.h"
#include "prepare.h"
#include "qdq_convert.h"

/* Samples kept (inputs copied) for the sensitivity report and keep-float. */
#define KEPT_SAMPLES 4

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
  int64_t samples;
  kept_sample kept[KEPT_SAMPLES];
  int n_kept;
  /* Results of the last finish. */
  wq_annotation ann;
  wq_qdq_params *params; /* per tensor */
  wq_sensitivity *sens;  /* per node */
  double output_snr_db;  /* int8 vs float outputs on the kept samples */
  int kept_float;        /* nodes kept float for sensitivity */
  char *report;
  char summary[320];
};

/* ctx: the wq_quant_prepare_stats the folds are counted into. */
static wq_status prepare_hook(void *ctx, wq_graph *g, wq_error *err) {
  /* The converter raises the model's opset to the HardSwish it may add. */
  return wq_quant_prepare_ex(g, true, ctx, err);
}

wq_status wq_quantizer_load_float(const wq_quantizer *q, wq_quant_prepare_stats *stats,
                                  wq_model **out, wq_error *err) {
  wq_load_options opts = {.input_shapes = q->shapes,
                          .n_input_shapes = q->n_shapes,
                          .no_lowering = 1,
                          .no_float_fusion = 1,
                          .rewrite = prepare_hook,
                          .rewrite_ctx = stats};
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
  if (st == WQ_OK) {
    q->n_tensors = g->n_tensors;
    q->n_nodes = g->n_nodes;
    size_t nt = (size_t)g->n_tensors + 1;
    q->obs = calloc(nt, sizeof *q->obs);
    q->has_obs = calloc(nt, sizeof *q->has_obs);
    if (!q->obs || !q->has_obs)
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  }
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
  free(q->sens);
  q->sens = NULL;
  free(q->report);
  q->report = NULL;
  q->summary[0] = 0;
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
  for (int s = 0; s < q->n_kept; s++) {
    for (int i = 0; i < q->kept[s].n; i++)
      free(q->kept[s].inputs[i].data);
    free(q->kept[s].inputs);
  }
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
  case WQ_CALIB_MSE: return WQ_OBS_HISTOGRAM;
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

static wq_status keep_sample(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  kept_sample *s = &q->kept[q->n_kept];
  s->inputs = calloc((size_t)n + 1, sizeof *s->inputs);
  if (!s->inputs)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory keeping a sample");
  s->n = n;
  q->n_kept++;
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

wq_status wq_quantizer_observe(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err) {
  wq_error_clear(err);
  int want = wq_model_input_count(q->fmodel);
  if (n != want)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "a calibration sample needs %d input(s), got %d",
                   want, n);
  WQ_TRY(check_finite(q->fmodel, inputs, n, err));
  const wq_graph *g = wq_model_get_ir(q->fmodel)->graph;
  if (!q->dtypes) {
    /* Element types of every tensor, as run time gives them (static
     * inference leaves some unknown under symbolic shapes). */
    q->dtypes = malloc(((size_t)g->n_tensors + 1) * sizeof *q->dtypes);
    if (!q->dtypes)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
    for (int t = 0; t < g->n_tensors; t++)
      q->dtypes[t] = g->tensors[t].dtype;
  }
  /* One run both records the dtypes and feeds the observers. */
  wq_model_observe(q->fmodel, observe_node, q);
  WQ_TRY(wq_model_run(q->fmodel, inputs, n, err));
  for (int i = 0; i < n; i++)
    WQ_TRY(observe_tensor(q, g, g->inputs[i], &inputs[i], err));
  if (q->n_kept < KEPT_SAMPLES)
    WQ_TRY(keep_sample(q, inputs, n, err));
  q->samples++;
  return WQ_OK;
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
      WQ_TRY(wq_observer_range(&q->obs[t], q->cfg.calibration, q->cfg.percentile, at->spec->qmin,
                               at->spec->qmax, at->spec->symmetric, &lo, &hi, err));
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

static void write_report(wq_quantizer *q, const wq_graph *g, size_t onnx_len) {
  const wq_annotation *a = &q->ann;
  int quantized = count_decision(a, WQ_ANN_QUANTIZED);
  int absorbed = count_decision(a, WQ_ANN_ABSORBED);
  int fl = count_decision(a, WQ_ANN_FLOAT);
  int tensors = 0;
  for (int t = 0; t < g->n_tensors; t++)
    tensors += a->tensors[t].kind == WQ_ANN_T_ACTIVATION;
  wq_format(q->summary, sizeof q->summary,
            "quantized %d of %d compute nodes (%d absorbed into a linear, %d float), "
            "%d activations, %lld sample(s)",
            quantized + absorbed, quantized + absorbed + fl, absorbed, fl, tensors,
            (long long)q->samples);
  wq_text r = {0};
  wq_text_put(&r, "{\n  \"summary\": ");
  wq_text_json_string(&r, q->summary);
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
  if (q->sens && isfinite(q->output_snr_db))
    wq_text_put(&r, "  \"outputSnrDb\": %.3f,\n", q->output_snr_db);
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
    wq_text_put(&r, "}");
  }
  wq_text_put(&r, "\n  ]\n}\n");
  q->report = wq_text_take(&r);
}

wq_status wq_quantizer_finish(wq_quantizer *q, uint8_t **onnx, size_t *onnx_len, wq_error *err) {
  wq_error_clear(err);
  *onnx = NULL;
  *onnx_len = 0;
  if (q->samples == 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "no calibration samples: observe at least one before finish");
  free_results(q);
  const wq_graph *g = wq_model_get_ir(q->fmodel)->graph;
  bool *keep_float = calloc((size_t)g->n_nodes + 1, sizeof *keep_float);
  q->params = calloc((size_t)g->n_tensors + 1, sizeof *q->params);
  if (!keep_float || !q->params) {
    free(keep_float);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  }
  wq_status st = WQ_OK;
  q->kept_float = 0;
  q->output_snr_db = NAN;
  /* Annotate and convert; with --keep-float / a target SNR, the most
   * sensitive nodes go float and the model is converted again. */
  for (;;) {
    wq_annotation_free(&q->ann);
    memset(q->params, 0, ((size_t)g->n_tensors + 1) * sizeof *q->params);
    st = wq_annotate(g, &q->cfg, q->dtypes, keep_float, &q->ann, err);
    if (st == WQ_OK)
      st = cluster_params(q, g, err);
    if (st == WQ_OK)
      st = wq_qdq_convert(q, &q->ann, q->params, onnx, onnx_len, err);
    if (st != WQ_OK || q->n_kept == 0)
      break;
    free(q->sens);
    q->sens = NULL;
    st = wq_quant_sensitivity(q, &q->ann, q->params, *onnx, *onnx_len, &q->sens, &q->output_snr_db,
                              err);
    if (st != WQ_OK)
      break;
    int next = wq_quant_next_keep_float(q, &q->ann, q->sens, keep_float);
    /* The target needs the output SNR (not measured with int8/uint8 IO). */
    bool below_target = q->cfg.target_snr_db > 0 && isfinite(q->output_snr_db) &&
                        q->output_snr_db < q->cfg.target_snr_db;
    bool more = next >= 0 && (q->kept_float < q->cfg.keep_float || below_target);
    if (!more)
      break;
    keep_float[next] = true;
    q->kept_float++;
    free(*onnx);
    *onnx = NULL;
    *onnx_len = 0;
  }
  free(keep_float);
  if (st != WQ_OK) {
    free(*onnx);
    *onnx = NULL;
    *onnx_len = 0;
    return st;
  }
  write_report(q, g, *onnx_len);
  return WQ_OK;
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

int wq_quantizer_kept_count(const wq_quantizer *q) { return q->n_kept; }
const wq_value *wq_quantizer_kept(const wq_quantizer *q, int s) { return q->kept[s].inputs; }
