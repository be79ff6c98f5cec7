/* The kernel variants a model runs: one configuration record per kernel
 * family (common/kernel_config.h), selected once per model from what the
 * engine can run. A selection is a value the model owns, computed by a pure
 * function of the capabilities from const records: no global mutable state,
 * the same in every thread.
 *
 * Variants register in config.c: each family has a const list of the
 * records the build links, in increasing wq_isa order. The reference comes
 * first in native builds and in the wasm kernel tests (which check every
 * variant against it); the shipped wasm runtime leaves it out. */
#ifndef WQ_KERNELS_CONFIG_H
#define WQ_KERNELS_CONFIG_H

#include "common/kernel_config.h"

typedef struct wq_kernel_set {
  int isa; /* the most capable wq_isa any family selected */
  const wq_qgemm_config *qgemm;
  const wq_qconv_config *qconv;
  /* Families without a per-model choice (no variant needs a probe): their
   * dispatchers use the default set's record. */
  const wq_sgemm_config *sgemm;
  const wq_quantize_config *quantize;
  const wq_qeltwise_config *qeltwise;
  const wq_nhwc_config *nhwc;
} wq_kernel_set;

/* ISAs the build links (WQ_ISA_BIT mask; always has WQ_ISA_REF). */
unsigned wq_kernel_isas_linked(void);

/* The build's default selection: per family the most capable linked
 * variant whose ISA needs no probe (SIMD128 in the wasm build, the
 * reference natively). */
extern const wq_kernel_set wq_kernel_set_build;
static inline const wq_kernel_set *wq_kernel_set_default(void) { return &wq_kernel_set_build; }

/* The selection a graph's plan hooks use: the graph's, else the default. */
static inline const wq_kernel_set *wq_kernels_of(const wq_kernel_set *chosen) {
  return chosen ? chosen : wq_kernel_set_default();
}

/* Fills *out: per family the most capable variant whose ISA is in
 * `engine_isas` (WQ_ISA_BIT mask of what the engine has executed; 0 means
 * the ISAs that need no probe) and, when `force` is a wq_isa (else -1), not
 * past `force` (a family without a variant of that ISA takes the best below
 * it). Fails when `force` is not linked or not in engine_isas. */
wq_status wq_kernel_set_select(wq_kernel_set *out, unsigned engine_isas, int force, wq_error *err);

/* Every linked variant of a family, in list order. */
int wq_qgemm_variants(const wq_qgemm_config *const **out);
int wq_qconv_variants(const wq_qconv_config *const **out);
int wq_sgemm_variants(const wq_sgemm_config *const **out);
int wq_quantize_variants(const wq_quantize_config *const **out);
int wq_nhwc_variants(const wq_nhwc_config *const **out);
int wq_qeltwise_variants(const wq_qeltwise_config *const **out);

#endif
