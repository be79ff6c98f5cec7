/* Post-training static quantization of a float ONNX model: annotate ->
 * calibrate -> convert -> export (issue #9). The result is a QDQ ONNX model:
 * int8 weights behind DequantizeLinear (per output channel by default),
 * int32 biases at s_in * s_w, a QuantizeLinear -> DequantizeLinear pair on
 * every activation a quantized node reads or writes. It loads in
 * onnxruntime and lowers onto wasmq's int8 kernels.
 *
 *   wq_quantizer_new      loads the float model (graph preparation folds
 *                         BatchNormalization / Mul / Add into linears)
 *   wq_quantizer_observe  one calibration sample (all inputs), as many
 *                         times as there are samples; memory stays constant
 *   wq_quantizer_finish   annotation + ranges -> QDQ model bytes + report
 *
 * Deterministic: the same model, config and samples give the same bytes. */
#ifndef WQ_QUANT_QUANTIZER_H
#define WQ_QUANT_QUANTIZER_H

#include <stddef.h>
#include <stdint.h>

#include "../api/wasmq.h"
#include "quant_config.h"

typedef struct wq_quantizer wq_quantizer;

/* `config_json` (n bytes; NULL or n == 0: defaults) is parsed with
 * wq_quant_config_parse_json and its "exclude" names checked against the
 * model. Fails for a model that is already quantized (QuantizeLinear,
 * QLinear*, int8 ops), naming the first such node. */
wq_status wq_quantizer_new(const uint8_t *model, size_t n, const char *config_json,
                           size_t config_len, wq_quantizer **out, wq_error *err);
/* Same, binding input shapes at load (symbolic dims such as a batch or an
 * image size fixed for calibration; the written model keeps those shapes). */
wq_status wq_quantizer_new_shaped(const uint8_t *model, size_t n, const char *config_json,
                                  size_t config_len, const wq_input_shape *shapes, int n_shapes,
                                  wq_quantizer **out, wq_error *err);
void wq_quantizer_free(wq_quantizer *q);

/* The float model being calibrated (its inputs tell what a sample holds).
 * Cross-layer equalization replaces it with a rescaled twin (same inputs,
 * outputs and graph structure) once the first calibration samples are in:
 * the pointer is valid until the next observe or finish. */
const wq_model *wq_quantizer_float_model(const wq_quantizer *q);

/* Runs the float model on one sample (inputs in input order, as
 * wq_model_run) and folds every observed tensor into its observer; every
 * config holdout-th sample (the 4th, 8th, ... by default; at most 32) is
 * instead held apart, never seen by the ranges, for the report's accuracy. A
 * sample with NaN/Inf, or of the wrong dtype/shape, fails naming the
 * tensor and leaves the ranges as they were. (A finite sample whose
 * intermediate overflows to Inf fails at that tensor; the tensors before
 * it keep what the sample added.) */
wq_status wq_quantizer_observe(wq_quantizer *q, const wq_value *inputs, int n, wq_error *err);
/* Samples observed so far. */
int64_t wq_quantizer_samples(const wq_quantizer *q);

/* Overrides the config's keepFloat / targetSnrDb: keep the n most
 * sensitive nodes in float, and/or keep adding nodes to float until the
 * output SNR on the kept samples reaches target_snr_db (0: no target). */
void wq_quantizer_keep_float(wq_quantizer *q, int n, float target_snr_db);

/* Also searches for a target cosine (every output's, on the kept
 * calibration samples; 0: none), within max_time seconds (0: no limit). */
void wq_quantizer_search(wq_quantizer *q, float target_cosine, float max_time);

/* A time limit: `ms` milliseconds counted from from_ms on the clock now_ms
 * (the caller's start; ms <= 0 or no clock: none). An observe or finish
 * past it stops - a model run inside it in the node it is in - and fails
 * with WQ_ERR_TIMEOUT, returning no model; so does every later call. */
void wq_quantizer_time_limit(wq_quantizer *q, double (*now_ms)(void), double ms, double from_ms);

/* A warning the caller knows and the quantizer cannot (e.g. "calibrated on
 * random data"): carried into the report's "warnings" of every finish. */
wq_status wq_quantizer_note(wq_quantizer *q, const char *warning, wq_error *err);

/* fn receives one line per step of a target search (also for callers
 * without a terminal). NULL: silent. */
void wq_quantizer_on_progress(wq_quantizer *q, void (*fn)(void *ctx, const char *line), void *ctx);

/* The last finish's warnings, one per line ("" when none): random or
 * unrepresentative calibration, an output below the warning cosine on the
 * held-out samples, no held-out sample, a target not reached. */
const char *wq_quantizer_warnings(const wq_quantizer *q);

/* Builds the QDQ model: *onnx (malloc'ed, caller frees) and its size.
 * Needs at least one sample. Can be called again (e.g. after more
 * samples); each call re-derives everything from the observers. */
wq_status wq_quantizer_finish(wq_quantizer *q, uint8_t **onnx, size_t *onnx_len, wq_error *err);

/* The report of the last finish as JSON (malloc'ed, caller frees; NULL
 * before a finish or out of memory): per node the decision and reason, per
 * quantized tensor its range, scale and zero point, per quantized node the
 * error its own quantization adds on the kept samples, and a summary. */
char *wq_quantizer_report_json(const wq_quantizer *q);

/* One line: "quantized 9 of 12 compute nodes (3 float: ...), 14 tensors". */
const char *wq_quantizer_summary(const wq_quantizer *q);

#endif
