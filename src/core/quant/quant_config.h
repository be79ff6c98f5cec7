/* The post-training quantizer's settings: how activations and weights are
 * quantized, how ranges are calibrated, what stays float. Every field has a
 * default (wq_quant_config_default) so a model quantizes without a config
 * file; a JSON file (wq_quant_config_parse_json) overrides any subset. */
#ifndef WQ_QUANT_CONFIG_H
#define WQ_QUANT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/dtype.h"
#include "../ir/graph.h"
#include "../ir/status.h"

typedef enum wq_quant_granularity {
  WQ_QGRAN_PER_TENSOR = 0,
  WQ_QGRAN_PER_CHANNEL = 1, /* weights: along the output-channel axis */
  WQ_QGRAN_PER_GROUP = 2,   /* weights: per output channel, blocks of group_size along K */
} wq_quant_granularity;

typedef enum wq_calib_method {
  WQ_CALIB_MINMAX = 0,
  WQ_CALIB_MOVING_AVERAGE = 1,
  WQ_CALIB_PERCENTILE = 2, /* histogram, clipped at `percentile` */
  WQ_CALIB_MSE = 3,        /* histogram, range minimizing the quantization MSE */
  WQ_CALIB_AUTO = 4,       /* histogram; MSE, percentile 99.999 or min/max, whichever gives the
                              outputs least error on the kept calibration samples */
  WQ_CALIB_TENSOR = 5,     /* "auto", then each tensor tries the other two alone */
} wq_calib_method;

typedef struct wq_quant_spec {
  wq_dtype dtype; /* WQ_DT_INT8 or WQ_DT_UINT8 */
  bool symmetric; /* zero point at the middle of [qmin, qmax] */
  int32_t qmin, qmax;
  wq_quant_granularity granularity; /* weights only; activations are per-tensor */
  int64_t group_size;               /* WQ_QGRAN_PER_GROUP: elements per group along K */
} wq_quant_spec;

/* Settings for every node of one op type. */
typedef struct wq_quant_op_override {
  char *op_type; /* owned */
  bool has_activation, has_weight;
  wq_quant_spec activation, weight;
  bool keep_float; /* leave every node of this type in float */
} wq_quant_op_override;

typedef struct wq_quant_config {
  wq_quant_spec activation; /* default: int8 affine [-128, 127] */
  wq_quant_spec weight;     /* default: int8 symmetric per-channel [-127, 127] */
  wq_calib_method calibration;
  float averaging;  /* moving average: weight of each new batch, (0, 1] */
  float percentile; /* WQ_CALIB_PERCENTILE: e.g. 99.99 */
  int histogram_bins;
  /* dtype of the model's inputs and outputs after quantization: WQ_DT_FLOAT
   * (default: Q after each input, DQ before each output) or int8/uint8. */
  wq_dtype io_dtype;
  float min_range;                 /* floor for a tensor's calibrated range (constant tensors) */
  wq_quant_op_override *overrides; /* owned */
  int n_overrides;
  char **exclude_nodes; /* owned: node names kept float */
  int n_exclude_nodes;
  int keep_float;      /* keep the N most sensitive nodes in float */
  float target_snr_db; /* > 0: keep nodes float until the output SNR reaches it */
  float target_cosine; /* > 0: keep nodes float until every output's cosine reaches it */
  float max_time;      /* > 0: seconds the target search may take (then it stops) */
  int holdout;         /* every holdout-th sample is held apart for evaluation (0: none) */
  float warn_cosine;   /* a held-out output below this cosine gets a warning */
  /* > 0: the float model's memory limit while calibrating and converting
   * (wq_load_options.max_memory_bytes); 0: none */
  size_t max_memory_bytes;
  bool bias_correction; /* take each linear's mean quantization error off its bias */
  bool equalization;    /* cross-layer equalization of linear -> (Relu) -> linear pairs */
} wq_quant_config;

void wq_quant_config_default(wq_quant_config *cfg);
void wq_quant_config_free(wq_quant_config *cfg);

/* Overrides fields of *cfg (which holds defaults or earlier settings) from a
 * JSON document; unknown keys, wrong types and out-of-range values fail
 * with WQ_ERR_INVALID_ARG naming the JSON path and its line:column
 * ("ops.Conv.weight.qmin: 200 is outside int8 [-128, 127] (at 4:15)"); a
 * syntax error names line:column first. On failure *cfg is unchanged. An
 * "ops" entry starts from the global spec (or that op's earlier override)
 * and changes only what it names; "exclude" replaces the list. The
 * documented schema is in docs/quantize.md. */
wq_status wq_quant_config_parse_json(wq_quant_config *cfg, const char *json, size_t n,
                                     wq_error *err);

/* Fails (WQ_ERR_INVALID_ARG) on the first excluded node name that no node of
 * `g` carries: node names can only be checked against a model. */
wq_status wq_quant_config_check_nodes(const wq_quant_config *cfg, const wq_graph *g, wq_error *err);

/* The override for `op_type`, or NULL. Pointers returned by these lookups
 * stay valid until the next parse into or free of *cfg. */
const wq_quant_op_override *wq_quant_config_op(const wq_quant_config *cfg, const char *op_type);
/* The activation / weight spec that applies to nodes of `op_type`. */
const wq_quant_spec *wq_quant_config_activation_for(const wq_quant_config *cfg,
                                                    const char *op_type);
const wq_quant_spec *wq_quant_config_weight_for(const wq_quant_config *cfg, const char *op_type);
/* True when the node is listed in "exclude" or its op type has keepFloat. */
bool wq_quant_config_keeps_float(const wq_quant_config *cfg, const char *op_type,
                                 const char *node_name);

#endif
