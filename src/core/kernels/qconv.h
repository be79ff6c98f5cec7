/* int8 convolution on channels-last (NHWC) data with requantization: the
 * kernel behind QConv inside int8 regions.
 *
 * x is [N, H, W, C] (a 1-D conv is H = 1), y is [N, OH, OW, M], the weight
 * is ONNX's [M, C/group, KH, KW]. Semantics are QLinearConv's (ref_qconv.h,
 * quant_ref.h): acc = bias[m] + sum over the window and the group's channels
 * of (x - x_zp) * (w - w_zp[m]), taps in the padding contributing 0, exact
 * and wrapped to int32; y = clamp(round_half_even((float)acc * mult[m]) +
 * y_zp, y_min, y_max). Float y (y_dtype WQ_DT_FLOAT): qgemm.h's float output
 * stage, multiplier = the rescale, float_bias and float_relu (fused
 * ConvInteger -> Cast -> Mul -> Add -> Relu); depthwise convs then run as
 * grouped GEMMs.
 *
 * The algorithm is chosen once per node when the plan is made (and shown by
 * `wasmq info --lowered` through wq_qconv_algo_name):
 *   gemm_1x1      1x1 kernel, stride 1, no padding, group 1: the NHWC input
 *                 rows are the GEMM's A matrix, no copy;
 *   im2col_gemm   group 1, any kernel: panels of im2col rows (built per
 *                 block, never the whole matrix) into the same GEMM;
 *   depthwise     group == C == M: channels across SIMD lanes;
 *   grouped_gemm  any other grouping: one im2col GEMM per group.
 * Every variant (common/kernel_config.h's wq_qconv_config: the scalar
 * reference, SIMD128, ...) makes the same choice and gives the same bits;
 * the plan runs on the variant that packed it. Types: common/qconv_types.h. */
#ifndef WQ_KERNELS_QCONV_H
#define WQ_KERNELS_QCONV_H

#include "common/kernel_config.h"

/* Validates d, picks the algorithm and packs the weights with `config`'s
 * variant into *p (which then owns its memory; wq_qconv_plan_free). On
 * failure *p holds nothing. */
wq_status wq_qconv_plan_init(wq_qconv_plan *p, const wq_qconv_config *config,
                             const wq_qconv_desc *d, const char *node, wq_error *err);

/* y = conv(x) for the plan's geometry and batch. Allocates nothing; fails
 * only when the bound scratch is smaller than wq_qconv_scratch_bytes (or
 * none is bound). */
wq_status wq_qconv_run(const wq_qconv_plan *p, const void *x, void *y, wq_error *err);

/* The wq_isa the plan's algorithm runs (a variant's depthwise code may use
 * a smaller ISA than its GEMMs), for the node's decision record. */
int wq_qconv_isa(const wq_qconv_plan *p);

/* The scratch one wq_qconv_run of p takes on one thread (panels, pair
 * rows, the padded copy), from this thread's slice of the bound scratch
 * (runtime/parallel.h); each thread of a run on T threads has its own. */
int64_t wq_qconv_scratch_bytes(const wq_qconv_plan *p);

#endif
