/* Kernel configuration records: one record type per kernel family, one
 * const record per variant (the scalar reference, wasm SIMD128, ...), each
 * defined by the variant's own source file. Ops and passes never pick a
 * variant themselves: kernels/config.h selects one record per family once,
 * from the engine's capabilities, and the plan a kernel packs remembers the
 * record that packed it. A leaf header (only common/ types below it), so
 * variants include it without reaching back into kernels/. */
#ifndef WQ_KERNELS_COMMON_KERNEL_CONFIG_H
#define WQ_KERNELS_COMMON_KERNEL_CONFIG_H

#include "qconv_types.h"
#include "qgemm_types.h"

/* Instruction sets, in order of preference (a later one wins when the
 * engine has it). */
typedef enum {
  WQ_ISA_REF = 0, /* portable scalar C: the numerical truth */
  WQ_ISA_SIMD128, /* wasm SIMD128 */
  WQ_ISA_RELAXED, /* wasm relaxed SIMD, only after a probe executed its known answers */
  WQ_ISA_COUNT
} wq_isa;

#define WQ_ISA_BIT(isa) (1u << (unsigned)(isa))

/* "ref", "simd128", "relaxed". */
const char *wq_isa_name(int isa);

/* int8 GEMM and batch-1 GEMV (kernels/qgemm.h semantics). pack gets a
 * validated description (wq_qgemm_desc_check) and fills *p through
 * wq_qgemm_packed_alloc; run takes any m >= 1, gemv m == 1 on the same
 * packing (NULL: run does it). */
typedef wq_status (*wq_qgemm_pack_fn)(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                                      wq_error *err);
typedef wq_status (*wq_qgemm_run_fn)(const wq_qgemm_packed *p, int64_t m, const void *a,
                                     int64_t lda, void *y, int64_t ldy, wq_error *err);
typedef struct wq_qgemm_config {
  const char *name; /* the variant, e.g. "simd128_4x8" */
  int isa;          /* wq_isa */
  int mr, nr, kr;   /* register tile rows x columns; K granularity of the packing */
  wq_qgemm_pack_fn pack;
  wq_qgemm_run_fn run;
  wq_qgemm_run_fn gemv;
  /* The most scratch one run (any m) takes on one thread. */
  int64_t (*scratch_bytes)(const wq_qgemm_packed *p);
} wq_qgemm_config;

/* int8 NHWC convolution (kernels/qconv.h semantics): 1x1 and im2col as
 * GEMMs, depthwise, grouped. pack runs after wq_qconv_plan_common (which
 * chose p->algo); the plan then owns what pack allocated. */
typedef struct wq_qconv_config {
  const char *name;
  int isa;
  const wq_qgemm_config *gemm; /* the GEMM its GEMM-based algorithms run on */
  wq_status (*pack)(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node, wq_error *err);
  wq_status (*run)(const wq_qconv_plan *p, const void *x, void *y, wq_error *err);
  int64_t (*scratch_bytes)(const wq_qconv_plan *p);
} wq_qconv_config;

#endif
