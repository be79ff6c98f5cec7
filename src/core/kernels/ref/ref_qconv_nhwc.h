/* Scalar reference of the NHWC int8 convolution (kernels/qconv.h): direct
 * loops over the window, every algorithm choice computed the same obvious
 * way. The truth the SIMD kernels are tested against bit for bit; equal to
 * QLinearConv's wq_ref_qconv_acc + wq_ref_requantize_value on transposed
 * data (tests/c/test_kernels_int8.c). */
#ifndef WQ_KERNELS_REF_REF_QCONV_NHWC_H
#define WQ_KERNELS_REF_REF_QCONV_NHWC_H

#include "../common/kernel_config.h"

/* The reference variant's record (named "ref", always linked). */
extern const wq_qconv_config wq_qconv_config_ref;

/* Keeps W' as [M][KH][KW][C/group] and the per-channel data. Expects
 * wq_qconv_plan_common to have filled *p. */
wq_status wq_ref_qconv_pack(wq_qconv_plan *p, const wq_qconv_desc *d, const char *node,
                            wq_error *err);

void wq_ref_qconv_run(const wq_qconv_plan *p, const void *x, void *y);

#endif
