/* Kernel configuration records: one record type per kernel family, one
 * const record per variant (the scalar reference, wasm SIMD128, ...), each
 * defined by the variant's own source file. Ops and passes never pick a
 * variant themselves: kernels/config.h selects one record per family once,
 * from the engine's capabilities, and the plan a kernel packs remembers the
 * record that packed it. A leaf header (only common/ types below it), so
 * variants include it without reaching back into kernels/. */
#ifndef WQ_KERNELS_COMMON_KERNEL_CONFIG_H
#define WQ_KERNELS_COMMON_KERNEL_CONFIG_H

#include "nhwc_types.h"
#include "qconv_types.h"
#include "qeltwise_types.h"
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
  int isa;                     /* of its GEMM-based algorithms */
  int depthwise_isa;           /* of its depthwise code (a relaxed build's is SIMD128) */
  const wq_qgemm_config *gemm; /* the GEMM its GEMM-based algorithms run on */
  wq_status (*pack)(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node, wq_error *err);
  wq_status (*run)(const wq_qconv_plan *p, const void *x, void *y, wq_error *err);
  int64_t (*scratch_bytes)(const wq_qconv_plan *p);
} wq_qconv_config;

/* int8 elementwise and data movement (kernels/qeltwise.h semantics): one
 * QAdd/QMul run, the 256-entry lookup, row copies (through a table or
 * not), nearest resize and depth-to-space on NHWC codes. */
typedef struct wq_qeltwise_config {
  const char *name;
  int isa;
  void (*binary_row)(const wq_qbinary_params *p, int64_t n, const void *a, int a_step,
                     const void *b, int b_step, void *y);
  void (*lookup)(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y);
  void (*copy_rows)(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                    const uint8_t *table, bool x_signed, const void *x, void *y);
  void (*resize_nearest)(const wq_resize_nhwc *r, const void *x, void *y);
  void (*depth_to_space)(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block, bool crd,
                         const void *x, void *y);
} wq_qeltwise_config;

/* NHWC layout transitions of 8-bit codes and the NHWC int8 pools
 * (kernels/nhwc.h semantics). */
typedef struct wq_nhwc_config {
  const char *name;
  int isa;
  void (*nchw_to_nhwc)(int64_t n, int64_t c, int64_t s, const void *x, void *y);
  void (*nhwc_to_nchw)(int64_t n, int64_t c, int64_t s, const void *x, void *y);
  void (*qgap)(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
               const void *x, void *y);
  void (*qavgpool)(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                   const void *x, void *y);
  void (*maxpool)(const wq_pool2d *p, bool is_unsigned, const void *x, void *y);
} wq_nhwc_config;

/* Per-tensor QuantizeLinear / DequantizeLinear between float32 and 8-bit
 * codes (kernels/quantize.h semantics). */
typedef struct wq_quantize_config {
  const char *name;
  int isa;
  void (*quantize)(const float *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                   int32_t qmin, int32_t qmax, void *y);
  void (*dequantize)(const void *x, int64_t n, float scale, int32_t zero_point, wq_dtype dtype,
                     float *y);
} wq_quantize_config;

/* Float GEMM (kernels/sgemm.h: C = alpha * A * B + beta * C over element
 * strides), its scratch, and the batch-1 GEMV on B packed in WQ_SGEMV_NR
 * column panels (wq_sgemv_pack). Optional parts (NULL when a variant has
 * none): A packed once for the column slices threads share (pack_a fills
 * packed_a_floats(m, k) floats, m >= 4, that gemm_packed_a reads), and
 * dw_plane, one output plane of a float depthwise conv read from its
 * zero-padded input (kernels/conv_f32.c). */
enum { WQ_SGEMV_NR = 16 };
typedef wq_status (*wq_sgemm_fn)(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                 int64_t a_row_stride, int64_t a_col_stride, const float *b,
                                 int64_t b_row_stride, int64_t b_col_stride, float beta, float *c,
                                 int64_t ldc);
typedef struct wq_sgemm_config {
  const char *name;
  int isa;
  wq_sgemm_fn gemm;
  int64_t (*scratch_bytes)(int64_t m, int64_t n, int64_t k);
  void (*gemv_packed)(int64_t n, int64_t k, const float *a, int64_t a_col_stride, const float *bp,
                      float *c);
  int64_t (*packed_a_floats)(int64_t m, int64_t k);
  void (*pack_a)(int64_t m, int64_t k, const float *a, int64_t a_row_stride, int64_t a_col_stride,
                 float *a_full);
  wq_status (*gemm_packed_a)(int64_t m, int64_t n, int64_t k, float alpha, const float *a_full,
                             const float *b, int64_t b_row_stride, int64_t b_col_stride, float beta,
                             float *c, int64_t ldc);
  void (*dw_plane)(const float *xp, int64_t pw, int64_t out_h, int64_t out_w, int64_t kh,
                   int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *w,
                   float bias, float *y);
} wq_sgemm_config;

#endif
