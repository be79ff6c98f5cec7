#include "config.h"

#include <string.h>

#include "../ir/format.h"

#include "ref/ref_gemm_f32.h"
#include "ref/ref_nhwc.h"
#include "ref/ref_qconv_nhwc.h"
#include "ref/ref_qeltwise.h"
#include "ref/ref_qgemm.h"
#include "ref/ref_quantize.h"
#ifdef __wasm_simd128__
#include "simd/nhwc_simd.h"
#include "simd/qconv_simd.h"
#include "simd/qeltwise_simd.h"
#include "simd/qgemm_simd.h"
#include "simd/quantize_simd.h"
#include "simd/sgemm_simd.h"
#endif
#ifdef WQ_QGEMM_USDOT
/* The relaxed-SIMD build (wasm_build/relaxed.sh compiles this file, the
 * GEMM's and the conv's with relaxed SIMD): its records replace SIMD128's. */
extern const wq_qgemm_config wq_qgemm_config_relaxed;
extern const wq_qconv_config wq_qconv_config_relaxed;
#endif

/* The shipped wasm runtime links no reference variant (it never selects
 * one: SIMD128 is there whenever the module runs); native builds and the
 * wasm kernel tests (WQ_KERNELS_WITH_REF) do, first in every list. */
#if !defined(__wasm_simd128__) || defined(WQ_KERNELS_WITH_REF)
#define WITH_REF 1
#endif

/* The variant lists: the reference first, then by increasing ISA. A new
 * variant adds its record here (under the macro its build defines). */
static const wq_qgemm_config *const qgemm_variants[] = {
#ifdef WITH_REF
    &wq_qgemm_config_ref,
#endif
#if defined(WQ_QGEMM_USDOT)
    &wq_qgemm_config_relaxed,
#elif defined(__wasm_simd128__)
    &wq_qgemm_config_simd128,
#endif
};
static const wq_qconv_config *const qconv_variants[] = {
#ifdef WITH_REF
    &wq_qconv_config_ref,
#endif
#if defined(WQ_QGEMM_USDOT)
    &wq_qconv_config_relaxed,
#elif defined(__wasm_simd128__)
    &wq_qconv_config_simd128,
#endif
};

static const wq_sgemm_config *const sgemm_variants[] = {
#ifdef WITH_REF
    &wq_sgemm_config_ref,
#endif
#ifdef __wasm_simd128__
    &wq_sgemm_config_simd128,
#endif
};

static const wq_quantize_config *const quantize_variants[] = {
#ifdef WITH_REF
    &wq_quantize_config_ref,
#endif
#ifdef __wasm_simd128__
    &wq_quantize_config_simd128,
#endif
};

static const wq_qeltwise_config *const qeltwise_variants[] = {
#ifdef WITH_REF
    &wq_qeltwise_config_ref,
#endif
#ifdef __wasm_simd128__
    &wq_qeltwise_config_simd128,
#endif
};

static const wq_nhwc_config *const nhwc_variants[] = {
#ifdef WITH_REF
    &wq_nhwc_config_ref,
#endif
#ifdef __wasm_simd128__
    &wq_nhwc_config_simd128,
#endif
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ISAs that a module running at all proves: the reference and the
 * module's own SIMD128; relaxed SIMD only after a probe. */
#define NO_PROBE_ISAS (WQ_ISA_BIT(WQ_ISA_REF) | WQ_ISA_BIT(WQ_ISA_SIMD128))

const char *wq_isa_name(int isa) {
  switch (isa) {
  case WQ_ISA_REF: return "ref";
  case WQ_ISA_SIMD128: return "simd128";
  case WQ_ISA_RELAXED: return "relaxed";
  }
  return "unknown";
}

int wq_qgemm_variants(const wq_qgemm_config *const **out) {
  *out = qgemm_variants;
  return COUNT(qgemm_variants);
}

int wq_qconv_variants(const wq_qconv_config *const **out) {
  *out = qconv_variants;
  return COUNT(qconv_variants);
}

int wq_sgemm_variants(const wq_sgemm_config *const **out) {
  *out = sgemm_variants;
  return COUNT(sgemm_variants);
}

int wq_quantize_variants(const wq_quantize_config *const **out) {
  *out = quantize_variants;
  return COUNT(quantize_variants);
}

int wq_qeltwise_variants(const wq_qeltwise_config *const **out) {
  *out = qeltwise_variants;
  return COUNT(qeltwise_variants);
}

int wq_nhwc_variants(const wq_nhwc_config *const **out) {
  *out = nhwc_variants;
  return COUNT(nhwc_variants);
}

unsigned wq_kernel_isas_linked(void) {
  unsigned isas = 0;
  for (int i = 0; i < COUNT(qgemm_variants); i++)
    isas |= WQ_ISA_BIT(qgemm_variants[i]->isa);
  for (int i = 0; i < COUNT(qconv_variants); i++)
    isas |= WQ_ISA_BIT(qconv_variants[i]->isa);
  return isas;
}

/* The last listed variant (the most capable) whose ISA is in `allowed`;
 * the first (the least capable) when none is. */
static int pick(const int *isas, int count, unsigned allowed) {
  int at = 0;
  for (int i = 0; i < count; i++)
    if (allowed & WQ_ISA_BIT(isas[i]))
      at = i;
  return at;
}

#define PICK(list, allowed)                                                                        \
  do {                                                                                             \
    int isas_[COUNT(list##_variants)];                                                             \
    for (int i_ = 0; i_ < COUNT(list##_variants); i_++)                                            \
      isas_[i_] = list##_variants[i_]->isa;                                                        \
    s->list = list##_variants[pick(isas_, COUNT(list##_variants), allowed)];                       \
    if (s->list->isa > s->isa)                                                                     \
      s->isa = s->list->isa;                                                                       \
  } while (0)

static void select_into(wq_kernel_set *s, unsigned allowed) {
  s->isa = WQ_ISA_REF;
  PICK(qgemm, allowed);
  PICK(qconv, allowed);
  PICK(sgemm, allowed);
  PICK(quantize, allowed);
  PICK(nhwc, allowed);
  PICK(qeltwise, allowed);
}

const wq_kernel_set wq_kernel_set_build = {
#if defined(__wasm_simd128__)
#if defined(WQ_QGEMM_USDOT)
    .isa = WQ_ISA_RELAXED,
    .qgemm = &wq_qgemm_config_relaxed,
    .qconv = &wq_qconv_config_relaxed,
#else
    .isa = WQ_ISA_SIMD128,
    .qgemm = &wq_qgemm_config_simd128,
    .qconv = &wq_qconv_config_simd128,
#endif
    .sgemm = &wq_sgemm_config_simd128,
    .quantize = &wq_quantize_config_simd128,
    .nhwc = &wq_nhwc_config_simd128,
    .qeltwise = &wq_qeltwise_config_simd128,
#else
    .isa = WQ_ISA_REF,
    .qgemm = &wq_qgemm_config_ref,
    .qconv = &wq_qconv_config_ref,
    .sgemm = &wq_sgemm_config_ref,
    .quantize = &wq_quantize_config_ref,
    .nhwc = &wq_nhwc_config_ref,
    .qeltwise = &wq_qeltwise_config_ref,
#endif
};

wq_status wq_kernel_set_select(wq_kernel_set *out, unsigned engine_isas, int force, wq_error *err) {
  const unsigned linked = wq_kernel_isas_linked();
  unsigned allowed = engine_isas ? engine_isas | WQ_ISA_BIT(WQ_ISA_REF) : NO_PROBE_ISAS;
  if (force >= 0) {
    if (force >= WQ_ISA_COUNT || !(linked & WQ_ISA_BIT(force))) {
      char has[32] = "";
      for (int isa = 0; isa < WQ_ISA_COUNT; isa++)
        if (linked & WQ_ISA_BIT(isa))
          wq_format(has + strlen(has), sizeof has - strlen(has), "%s%s", has[0] ? ", " : "",
                    wq_isa_name(isa));
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "kernels '%s': this build has no such variant (it has %s)", wq_isa_name(force),
                     has);
    }
    if (!(allowed & WQ_ISA_BIT(force)))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                     "kernels '%s': the engine did not pass its probe for them",
                     wq_isa_name(force));
    allowed &= WQ_ISA_BIT(force + 1) - 1;
  }
  select_into(out, allowed & linked);
  return WQ_OK;
}
