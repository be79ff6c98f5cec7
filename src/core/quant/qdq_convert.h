/* The quantizer's internals shared by its translation units: per-tensor
 * parameters from calibration, the QDQ rewrite and export (qdq_convert.c)
 * and the per-node sensitivity measurement (sensitivity.c). Not public:
 * callers use quantizer.h. */
#ifndef WQ_QUANT_QDQ_CONVERT_H
#define WQ_QUANT_QDQ_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "annotate.h"
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
} wq_sensitivity;

wq_status wq_quantizer_load_float(const wq_quantizer *q, wq_model **out, wq_error *err);
const wq_quant_config *wq_quantizer_config(const wq_quantizer *q);
const wq_dtype *wq_quantizer_dtypes(const wq_quantizer *q);
int wq_quantizer_kept_count(const wq_quantizer *q);
const wq_value *wq_quantizer_kept(const wq_quantizer *q, int sample);

/* Symmetric or affine codes of a float weight, one (scale, zero point) per
 * index of `axis` (axis -1: one for the whole tensor). codes has the
 * weight's element count in spec->dtype; scales/zero_points `channels`. */
void wq_qdq_quantize_weight(const wq_tensor *w, int axis, const wq_quant_spec *spec,
                            float min_range, void *codes, float *scales, int32_t *zero_points);

/* The QDQ model of the annotated float graph as ONNX bytes (caller frees). */
wq_status wq_qdq_convert(const wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                         uint8_t **onnx, size_t *onnx_len, wq_error *err);

/* Per quantized node, the error of running it alone on quantized inputs
 * and weights against the float node (*sens: one entry per node, caller
 * frees); *output_snr_db: the QDQ model's outputs (lowered int8 run of
 * `onnx`) against the float model's on the kept samples. */
wq_status wq_quant_sensitivity(wq_quantizer *q, const wq_annotation *a, const wq_qdq_params *p,
                               const uint8_t *onnx, size_t onnx_len, wq_sensitivity **sens,
                               double *output_snr_db, wq_error *err);

/* The quantized node with the lowest SNR not yet kept float, or -1. */
int wq_quant_next_keep_float(const wq_quantizer *q, const wq_annotation *a,
                             const wq_sensitivity *sens, const bool *keep_float);

#endif
