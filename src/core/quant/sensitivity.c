/* Sensitivity (issue #9 item 6): the error each quantized node adds by
 * itself. On every kept calibration sample the float model runs with
 * capture on; each quantized node then runs alone on its captured float
 * inputs after quantize -> dequantize with the chosen parameters (weights
 * per channel as converted, activations per tensor), its output quantized
 * the same way when it carries a spec, and is compared with the float
 * node's output: max abs, MSE and SNR = 10 log10(sum ref^2 / sum err^2).
 * The whole QDQ model's outputs (lowered int8 run) give the output SNR that
 * a target SNR is checked against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/quant_ref.h"
#include "../runtime/executor.h"
#include "qdq_convert.h"

typedef struct {
  double sum_ref2, sum_err2, max_abs;
  int64_t count;
} error_acc;

static void accumulate(error_acc *e, const float *ref, const float *got, int64_t n) {
  for (int64_t k = 0; k < n; k++) {
    double d = (double)got[k] - (double)ref[k];
    e->sum_ref2 += (double)ref[k] * ref[k];
    e->sum_err2 += d * d;
    e->max_abs = fabs(d) > e->max_abs ? fabs(d) : e->max_abs;
  }
  e->count += n;
}

static double snr_db(const error_acc *e) {
  if (e->sum_err2 == 0.0)
    return INFINITY;
  if (e->sum_ref2 == 0.0)
    return -INFINITY;
  return 10.0 * log10(e->sum_ref2 / e->sum_err2);
}

/* x -> dequantize(quantize(x)) in place, per tensor. */
static void fake_quantize(float *x, int64_t n, const wq_qdq_params *p) {
  for (int64_t k = 0; k < n; k++) {
    int32_t q = wq_ref_quantize_value(x[k], p->scale, p->zero_point, p->qmin, p->qmax);
    x[k] = (float)(q - p->zero_point) * p->scale;
  }
}

/* A quantize -> dequantize copy of a weight, per channel as converted. */
static float *fake_weight(const wq_tensor *w, const wq_ann_tensor *at, float min_range) {
  wq_weight_grid grid;
  wq_ann_weight_grid(at, w, true, true, &grid);
  int64_t n = (int64_t)(w->nbytes / sizeof(float));
  void *codes = calloc((size_t)n + 1, 4);
  float *scales = malloc((size_t)grid.count * sizeof *scales);
  int32_t *zps = malloc((size_t)grid.count * sizeof *zps);
  float *out = malloc((size_t)n * sizeof *out + 1);
  if (codes && scales && zps && out &&
      wq_qdq_quantize_weight(w, &grid, at->spec, min_range, codes, scales, zps)) {
    for (int64_t k = 0; k < n; k++)
      out[k] = (float)wq_ref_q_load(codes, at->spec->dtype, k);
    wq_weight_grid_dequantize(w, &grid, scales, zps, out);
  } else {
    free(out);
    out = NULL;
  }
  free(codes);
  free(scales);
  free(zps);
  return out;
}

/* Per output channel: the sum of (quantized - float) outputs of a linear
 * with a bias, and the values summed per channel (bias correction). */
typedef struct {
  double *sum;
  int64_t channels, per_channel;
} bias_acc;

static void add_bias_error(bias_acc *b, const wq_node *n, const wq_value *got, const wq_value *ref,
                           int64_t bias_len) {
  /* Conv: NCHW, channels on dim 1; Gemm/MatMul: the last dim. */
  bool conv = strcmp(n->op_type, "Conv") == 0;
  if (got->rank < 2)
    return;
  int64_t c = conv ? got->dims[1] : got->dims[got->rank - 1];
  int64_t total = wq_value_numel(got);
  if (c != bias_len || c <= 0)
    return;
  if (!b->sum) {
    b->sum = calloc((size_t)c, sizeof *b->sum);
    b->channels = c;
    if (!b->sum)
      return;
  }
  int64_t inner = conv ? total / (got->dims[0] * c) : 1;
  const float *x = got->data, *r = ref->data;
  for (int64_t k = 0; k < total; k++)
    b->sum[(k / inner) % c] += (double)x[k] - (double)r[k];
  b->per_channel += total / c;
}

/* Runs node i alone on quantized copies of its inputs; adds its error. */
static wq_status node_error(const wq_quantizer *q, const wq_graph *g, const wq_model *fm,
                            const wq_value *feeds, int i, const wq_annotation *a,
                            const wq_qdq_params *p, error_acc *acc, bias_acc *bias, wq_error *err) {
  const wq_node *n = &g->nodes[i];
  wq_value in[16], out[8];
  float *owned[16] = {0};
  if (n->n_inputs > 16 || n->n_outputs > 8)
    return WQ_OK;
  memset(out, 0, sizeof out);
  wq_status st = WQ_OK;
  for (int k = 0; k < n->n_inputs && st == WQ_OK; k++) {
    int t = n->inputs[k];
    memset(&in[k], 0, sizeof in[k]);
    if (t < 0)
      continue;
    const wq_tensor *tt = &g->tensors[t];
    if (tt->is_constant) {
      in[k] = wq_tensor_value(tt);
    } else if (tt->is_input) {
      for (int j = 0; j < g->n_inputs; j++)
        if (g->inputs[j] == t)
          in[k] = feeds[j];
    } else {
      const wq_value *v = wq_model_captured(fm, t);
      if (!v)
        return WQ_OK; /* not computed on this sample */
      in[k] = *v;
    }
    const wq_ann_tensor *at = &a->tensors[t];
    if (at->kind == WQ_ANN_T_NONE || in[k].dtype != WQ_DT_FLOAT || !in[k].data)
      continue;
    int64_t count = wq_value_numel(&in[k]);
    owned[k] = at->kind == WQ_ANN_T_WEIGHT ? fake_weight(tt, at, wq_quantizer_config(q)->min_range)
                                           : malloc((size_t)count * sizeof(float) + 1);
    if (!owned[k]) {
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "out of memory");
      break;
    }
    if (at->kind != WQ_ANN_T_WEIGHT) {
      memcpy(owned[k], in[k].data, (size_t)count * sizeof(float));
      fake_quantize(owned[k], count, &p[t]);
    }
    in[k].data = owned[k];
  }
  if (st == WQ_OK)
    st = wq_run_node(n, in, out, err);
  if (st == WQ_OK) {
    int y = n->outputs[0];
    const wq_value *ref = wq_model_captured(fm, y);
    if (ref && out[0].dtype == WQ_DT_FLOAT && ref->dtype == WQ_DT_FLOAT &&
        wq_value_numel(ref) == wq_value_numel(&out[0])) {
      int64_t count = wq_value_numel(&out[0]);
      int b = a->nodes[i].bias;
      if (a->nodes[i].role == WQ_QROLE_LINEAR && b >= 0 && g->tensors[b].is_constant)
        add_bias_error(bias, n, &out[0], ref, (int64_t)(g->tensors[b].nbytes / sizeof(float)));
      if (a->tensors[y].kind == WQ_ANN_T_ACTIVATION)
        fake_quantize(out[0].data, count, &p[y]);
      accumulate(acc, ref->data, out[0].data, count);
    }
  }
  for (int k = 0; k < n->n_outputs; k++)
    free(out[k].data);
  for (int k = 0; k < n->n_inputs; k++)
    free(owned[k]);
  return st;
}

/* Float work of node n from its captured output: a linear with a constant
 * weight costs weight elements x output positions (output elements / output
 * channels); anything else its output elements. */
static double node_cost(const wq_graph *g, const wq_node *n, const wq_value *out) {
  double elems = (double)wq_value_numel(out);
  for (int k = 1; k < n->n_inputs && k < 2; k++) {
    int t = n->inputs[k];
    const wq_tensor *w = t >= 0 ? &g->tensors[t] : NULL;
    if (!w || !w->is_constant || w->rank < 2)
      continue;
    /* Conv: [M, C/g, kh, kw], output channels dim 0; Gemm/MatMul [K, N]: N is last. */
    int64_t oc = strcmp(n->op_type, "Conv") == 0 ? w->dims[0] : w->dims[w->rank - 1];
    double wn = (double)(w->nbytes / sizeof(float));
    if (oc > 0)
      return wn * elems / (double)oc;
  }
  return elems;
}

double wq_output_cosine(const wq_output_metrics *m) {
  if (m->ref2 == 0.0 && m->got2 == 0.0)
    return 1.0;
  if (m->ref2 == 0.0 || m->got2 == 0.0)
    return 0.0;
  return m->dot / sqrt(m->ref2 * m->got2);
}

double wq_output_snr_db(const wq_output_metrics *m) {
  error_acc e = {m->ref2, m->err2, m->max_abs, m->count};
  return snr_db(&e);
}

static int64_t argmax_row(const float *x, int64_t n) {
  int64_t best = 0;
  for (int64_t k = 1; k < n; k++)
    if (x[k] > x[best])
      best = k;
  return best;
}

static void add_metrics(wq_output_metrics *m, const wq_value *ref, const wq_value *got) {
  const float *r = ref->data, *q = got->data;
  int64_t n = wq_value_numel(ref);
  for (int64_t k = 0; k < n; k++) {
    double a = r[k], b = q[k], d = b - a;
    m->dot += a * b;
    m->ref2 += a * a;
    m->got2 += b * b;
    m->err2 += d * d;
    m->max_abs = fabs(d) > m->max_abs ? fabs(d) : m->max_abs;
  }
  m->count += n;
  /* Classifier-like: scores along the last dim of a [C] or [N, C] output. */
  int64_t c = ref->rank >= 1 ? ref->dims[ref->rank - 1] : 0;
  if ((ref->rank == 1 || ref->rank == 2) && c >= 2)
    for (int64_t row = 0; row < n / c; row++) {
      m->top1_rows++;
      m->top1_agree += argmax_row(r + row * c, c) == argmax_row(q + row * c, c);
    }
}

wq_status wq_quant_output_metrics(wq_model *fm, const uint8_t *onnx, size_t onnx_len,
                                  const wq_value *const *samples, int n_samples,
                                  wq_output_metrics *out, wq_error *err) {
  wq_model *qm = NULL;
  WQ_TRY(wq_model_load(onnx, onnx_len, NULL, &qm, err));
  wq_model_observe(fm, NULL, NULL);
  int n_feeds = wq_model_input_count(fm);
  wq_status st = WQ_OK;
  for (int s = 0; st == WQ_OK && s < n_samples; s++) {
    st = wq_model_run(fm, samples[s], n_feeds, err);
    if (st == WQ_OK)
      st = wq_model_run(qm, samples[s], n_feeds, err);
    for (int o = 0; st == WQ_OK && o < wq_model_output_count(fm); o++) {
      const wq_value *ref = wq_model_result(fm, o);
      const wq_value *got = wq_model_result(qm, o);
      if (ref->dtype == WQ_DT_FLOAT && got->dtype == WQ_DT_FLOAT &&
          wq_value_numel(ref) == wq_value_numel(got))
        add_metrics(&out[o], ref, got);
    }
  }
  wq_model_free(qm);
  return st;
}

wq_status wq_quant_sensitivity(wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                               bool correct_bias, wq_sensitivity **sens, wq_error *err) {
  *sens = NULL;
  wq_model *fm = (wq_model *)wq_quantizer_float_model(q);
  const wq_graph *g = wq_model_get_ir(fm)->graph;
  error_acc *acc = calloc((size_t)g->n_nodes + 1, sizeof *acc);
  bias_acc *bias = calloc((size_t)g->n_nodes + 1, sizeof *bias);
  wq_sensitivity *out = calloc((size_t)g->n_nodes + 1, sizeof *out);
  wq_status st = acc && out && bias ? wq_model_capture(fm, true, err)
                                    : wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  for (int s = 0; st == WQ_OK && s < wq_quantizer_kept_count(q); s++) {
    const wq_value *feeds = wq_quantizer_kept(q, s);
    st = wq_model_run(fm, feeds, wq_model_input_count(fm), err);
    for (int i = 0; st == WQ_OK && i < g->n_nodes; i++) {
      if (a->nodes[i].decision != WQ_ANN_QUANTIZED)
        continue;
      st = node_error(q, g, fm, feeds, i, a, p, &acc[i], &bias[i], err);
      const wq_value *y =
          g->nodes[i].n_outputs ? wq_model_captured(fm, g->nodes[i].outputs[0]) : NULL;
      if (s == 0 && y)
        out[i].cost = node_cost(g, &g->nodes[i], y);
    }
  }
  wq_model_capture(fm, false, NULL);
  /* The mean error per output channel, to be taken off the bias. */
  for (int i = 0; st == WQ_OK && i < g->n_nodes; i++) {
    if (!bias[i].sum || !bias[i].per_channel || !correct_bias)
      continue;
    float *shift = malloc((size_t)bias[i].channels * sizeof *shift);
    if (!shift) {
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
      break;
    }
    for (int64_t c = 0; c < bias[i].channels; c++)
      shift[c] = (float)(bias[i].sum[c] / (double)bias[i].per_channel);
    wq_quantizer_set_bias_shift(q, i, shift);
  }
  for (int i = 0; i < g->n_nodes; i++)
    free(bias ? bias[i].sum : NULL);
  free(bias);
  if (st != WQ_OK) {
    free(acc);
    free(out);
    return st;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    if (acc[i].count == 0)
      continue;
    out[i].measured = true;
    out[i].max_abs = acc[i].max_abs;
    out[i].mse = acc[i].sum_err2 / (double)acc[i].count;
    out[i].snr_db = snr_db(&acc[i]);
    out[i].noise = acc[i].sum_ref2 > 0 ? acc[i].sum_err2 / acc[i].sum_ref2 : acc[i].sum_err2;
  }
  free(acc);
  *sens = out;
  return WQ_OK;
}

int wq_quant_next_keep_float(const wq_annotation *a, const wq_sensitivity *sens,
                             const bool *keep_float, bool per_cost) {
  int best = -1;
  double best_score = 0;
  for (int i = 0; i < a->n_nodes; i++) {
    if (a->nodes[i].decision != WQ_ANN_QUANTIZED || keep_float[i] || !sens[i].measured)
      continue;
    double score =
        per_cost ? sens[i].noise / sqrt(sens[i].cost > 1 ? sens[i].cost : 1) : -sens[i].snr_db;
    if (best < 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}
