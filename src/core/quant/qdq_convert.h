/* The quantizer's internals shared by its translation units: per-tensor
 * parameters from calibration, the QDQ rewrite and export (qdq_convert.c)
 * and the per-node sensitivity measurement (sensitivity.c). Not public:
 * callers use quantizer.h. */
#ifndef WQ_QUANT_QDQ_CONVERT_H
#define WQ_QUANT_QDQ_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "annotate.h"
#include "prepare.h"
#include "quantizer.h"

/* One tensor's calibrated range and the parameters of its cluster. */
typedef struct wq_qdq_params {
  float lo, hi; /* this tensor's own range */
  bool has_range;
  float scale;
  int32_t zero_point;
  wq_dtype dtype;
  int32_t qmin, qmax;
} wq_qdq_params;

/* The error one node's own quantization adds, on the kept samples. */
typedef struct wq_sensitivity {
  bool measured;
  double max_abs, mse, snr_db;
  double noise; /* error energy / signal energy (10^(-snr/10)) */
  double cost;  /* float work of the node: multiply-adds of a linear, else output elements */
} wq_sensitivity;

/* One output of the QDQ model (its lowered int8 run) against the float
 * model's, pooled over samples. Classifier-like outputs ([C] or [N, C] with
 * C >= 2) also count the rows whose argmax agrees. */
typedef struct wq_output_metrics {
  double dot, ref2, got2, err2, max_abs;
  int64_t count;
  int64_t top1_rows, top1_agree;
} wq_output_metrics;

double wq_output_cosine(const wq_output_metrics *m);
double wq_output_snr_db(const wq_output_metrics *m);

/* Runs the float model and the QDQ model (`onnx`) on `n_samples` samples
 * (each the model's inputs in order); adds into out[o] per float output. */
wq_status wq_quant_output_metrics(wq_model *fm, const uint8_t *onnx, size_t onnx_len,
                                  const wq_value *const *samples, int n_samples,
                                  wq_output_metrics *out, wq_error *err);

/* The prepared float graph (folds counted into *stats), as calibration
 * and conversion see it. */
wq_status wq_quantizer_load_float(const wq_quantizer *q, wq_quant_prepare_stats *stats,
                                  wq_model **out, wq_error *err);
const wq_quant_config *wq_quantizer_config(const wq_quantizer *q);
const wq_dtype *wq_quantizer_dtypes(const wq_quantizer *q);
int wq_quantizer_kept_count(const wq_quantizer *q);
const wq_value *wq_quantizer_kept(const wq_quantizer *q, int sample);

/* How a weight's (scale, zero point) pairs are laid out: one for the
 * tensor (axis -1), one per index of `axis` (block 0; a 1-D scale), or one
 * per block of `block` elements along `axis` and per index of every other
 * dim (ONNX blocked quantization, opset 21; a scale of the weight's rank). */
typedef struct wq_weight_grid {
  int axis;
  int64_t block;
  int rank;                  /* rank of the scale tensor as written */
  int64_t dims[WQ_MAX_RANK]; /* its dims */
  int64_t count;             /* number of pairs */
} wq_weight_grid;

void wq_weight_grid_init(wq_weight_grid *grid, const wq_tensor *w, int axis, int64_t block);

/* Symmetric or affine codes of a float weight in spec->dtype (codes: the
 * weight's element count), and grid->count scales and zero points. False
 * when out of memory. */
bool wq_qdq_quantize_weight(const wq_tensor *w, const wq_weight_grid *grid,
                            const wq_quant_spec *spec, float min_range, void *codes, float *scales,
                            int32_t *zero_points);

/* values[k] holds element k's code: replaced by (code - zp) * scale. */
void wq_weight_grid_dequantize(const wq_tensor *w, const wq_weight_grid *grid, const float *scales,
                               const int32_t *zero_points, float *values);

/* The grid weight `w` is written with: per group when its spec says so
 * and `blocked` (opset 21), per channel when not per tensor and
 * `per_channel` (opset 13), else per tensor. */
void wq_ann_weight_grid(const wq_ann_tensor *at, const wq_tensor *w, bool per_channel, bool blocked,
                        wq_weight_grid *grid);

/* The QDQ model of the annotated float graph as ONNX bytes (caller frees). */
wq_status wq_qdq_convert(const wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                         uint8_t **onnx, size_t *onnx_len, wq_error *err);

/* Per quantized node, the error of running it alone on quantized inputs
 * and weights against the float node, on the kept samples (*sens: one
 * entry per node, caller frees). With correct_bias, a linear with a
 * constant bias also gets its mean error per output channel as the bias
 * shift the next conversion subtracts (wq_quantizer_set_bias_shift). */
wq_status wq_quant_sensitivity(wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                               bool correct_bias, wq_sensitivity **sens, wq_error *err);

/* Bias correction of linear node `node`: one value per output channel
 * (owned by q from then on), or NULL. */
void wq_quantizer_set_bias_shift(wq_quantizer *q, int node, float *shift);
const float *wq_quantizer_bias_shift(const wq_quantizer *q, int node);

/* The quantized node not yet kept float with the lowest SNR (per_cost
 * false) or the most error per unit of float work it would cost (per_cost
 * true: relative error energy / sqrt(cost), so a cheap noisy node goes
 * first without a far noisier large one waiting forever), or -1. */
int wq_quant_next_keep_float(const wq_annotation *a, const wq_sensitivity *sens,
                             const bool *keep_float, bool per_cost);

#endif
