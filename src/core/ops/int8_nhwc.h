/* Channels-last pieces the kernel families share (ops/int8_nhwc.c): the
 * fused Quantize/DequantizeLinear layout change and the window of pools
 * over channels-last codes. */
#ifndef WQ_OPS_INT8_NHWC_H
#define WQ_OPS_INT8_NHWC_H

#include "../kernels/nhwc.h"
#include "nn_window.h"

/* QuantizeLinear writing channels-last codes from float [N, C, S...]
 * (to_nhwc), or DequantizeLinear reading channels-last codes into float
 * [N, C, S...], in one pass; in[1], in[2] a per-tensor scale and zero
 * point. Fails naming the node for other parameters or over 4096
 * channels. */
wq_status wq_boundary_nhwc(const wq_node *node, bool to_nhwc, const wq_value *in, wq_value *out,
                           wq_error *err);

/* The 2-D window of a 1-D or 2-D geometry. */
wq_pool2d wq_pool2d_of(const wq_conv_geometry *g, int64_t batch, int64_t channels);

#endif
