/* int8 GEMM with requantization: Y = requant(A * W + bias), the kernel
 * behind QGemm/QMatMul and 1x1 / im2col convolutions.
 *
 * Semantics (identical to quant_ref.h's QLinearMatMul/QLinearConv):
 *   acc[i][j] = bias[j] + sum_k (A[i][k] - a_zp) * (W[k][j] - w_zp[j])
 *               (exact, wrapped to int32 like ONNX's 32-bit accumulator)
 *   Y[i][j]   = clamp(round_half_even((float)acc * multiplier[j]) + y_zp,
 *                     y_min, y_max)
 * where y_min/y_max are the output dtype's range intersected with a fused
 * activation clamp (Relu/Clip folded into the requantization).
 *
 * Float output (y_dtype WQ_DT_FLOAT, the rescale of dynamically quantized
 * models: ConvInteger/MatMulInteger -> Cast -> Mul -> Add -> Relu fused):
 *   t = (float)acc * multiplier[j];  Y[i][j] = t + float_bias[j];
 *   then, with float_relu, Y < 0 ? 0 : Y
 * — each step rounded to float32 as the op-by-op graph rounds it, so the
 * result is bit-identical to Cast, Mul, Add, Relu run one after another.
 *
 * Weights are packed once (wq_qgemm_pack, at plan time) and stay int8 in
 * memory: uint8 weights are stored as W' = W - 128 with zero point
 * w_zp - 128, which leaves every (W - w_zp) unchanged. The SIMD kernels
 * multiply raw activations by W' and correct for the zero points with the
 * column sums of W' (precomputed here) and, only when some w_zp != 0, with
 * row sums of A.
 *
 * One entry point per operation, through the variant's configuration
 * record (common/kernel_config.h: the reference, SIMD128, ...) chosen once
 * per model (kernels/config.h); every variant gives the same bits. The
 * types live in common/qgemm_types.h. */
#ifndef WQ_KERNELS_QGEMM_H
#define WQ_KERNELS_QGEMM_H

#include "common/kernel_config.h"

/* The scratch one wq_qgemm_run of p takes on one thread, for any m
 * (activation panels, the GEMV's widened row): the run takes it from this
 * thread's slice of the bound scratch (runtime/parallel.h wq_scratch_take),
 * each thread of a run on T threads from its own. */
int64_t wq_qgemm_scratch_bytes(const wq_qgemm_packed *p);

/* Validates d (dtypes, sizes, ranges; `node` names the caller in errors) and
 * packs it with `config`'s variant into *p, which owns its arrays afterwards
 * (wq_qgemm_packed_free) and runs on that variant. On failure *p holds
 * nothing. */
wq_status wq_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_config *config, const wq_qgemm_desc *d,
                        const char *node, wq_error *err);

/* Y[i][j] for i < m: A row i at a + i * lda (elements of p->a_dtype), Y row
 * i at y + i * ldy (elements of p->y_dtype, 4 bytes for float). Uses a batch-1 GEMV kernel when
 * m == 1. Allocates nothing; fails only when the bound scratch is smaller
 * than wq_qgemm_scratch_bytes (or none is bound). */
wq_status wq_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda, void *y,
                       int64_t ldy, wq_error *err);

/* The kernel a product of m rows runs ("gemv" for m == 1, else "gemm";
 * m < 1: not known before the run), for the node's decision record. */
const char *wq_qgemm_kernel_name(int64_t m);

#endif
