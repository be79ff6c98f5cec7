#include "quant_config.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"

void wq_quant_config_default(wq_quant_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  /* Activations: affine int8 over the full code range, as the int8 kernels
   * take them (zero point folded into the requantization). */
  cfg->activation = (wq_quant_spec){.dtype = WQ_DT_INT8,
                                    .symmetric = false,
                                    .qmin = -128,
                                    .qmax = 127,
                                    .granularity = WQ_QGRAN_PER_TENSOR};
  /* Weights: symmetric per output channel on [-127, 127], so a weight code
   * never reaches -128 and products of two codes stay within int16 pairs. */
  cfg->weight = (wq_quant_spec){.dtype = WQ_DT_INT8,
                                .symmetric = true,
                                .qmin = -127,
                                .qmax = 127,
                                .granularity = WQ_QGRAN_PER_CHANNEL};
  cfg->calibration = WQ_CALIB_MINMAX;
  cfg->averaging = 0.01f;
  cfg->percentile = 99.99f;
  cfg->histogram_bins = 2048;
  cfg->io_dtype = WQ_DT_FLOAT;
  /* A constant tensor (range 0) still needs a positive, normal scale. */
  cfg->min_range = 1e-5f;
}

void wq_quant_config_free(wq_quant_config *cfg) {
  for (int i = 0; i < cfg->n_overrides; i++)
    free(cfg->overrides[i].op_type);
  free(cfg->overrides);
  for (int i = 0; i < cfg->n_exclude_nodes; i++)
    free(cfg->exclude_nodes[i]);
  free(cfg->exclude_nodes);
  cfg->overrides = NULL;
  cfg->exclude_nodes = NULL;
  cfg->n_overrides = cfg->n_exclude_nodes = 0;
}

wq_status wq_quant_config_check_nodes(const wq_quant_config *cfg, const wq_graph *g,
                                      wq_error *err) {
  for (int k = 0; k < cfg->n_exclude_nodes; k++) {
    bool found = false;
    for (int i = 0; i < g->n_nodes && !found; i++)
      found = strcmp(g->nodes[i].name, cfg->exclude_nodes[k]) == 0;
    if (!found)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "exclude: the model has no node named '%s'",
                     cfg->exclude_nodes[k]);
  }
  return WQ_OK;
}
