/* Attribute parsing and geometry resolution shared by the sliding-window
 * ops (Conv, ConvTranspose, MaxPool, AveragePool). */
#ifndef WQ_OPS_NN_WINDOW_H
#define WQ_OPS_NN_WINDOW_H

#include <stdbool.h>

#include "../kernels/common/conv_geometry.h"
#include "op.h"

typedef struct {
  wq_auto_pad auto_pad;
  int n_kernel_shape, n_strides, n_dilations, n_pads; /* 0 when the attribute is absent */
  int64_t kernel_shape[WQ_CONV_MAX_SPATIAL];
  int64_t strides[WQ_CONV_MAX_SPATIAL];
  int64_t dilations[WQ_CONV_MAX_SPATIAL];
  int64_t pads[2 * WQ_CONV_MAX_SPATIAL]; /* begins then ends, as in ONNX */
} wq_window_attrs;

/* Reads kernel_shape, strides, dilations, pads and auto_pad, checking value
 * ranges (kernel, stride, dilation >= 1; pads >= 0). */
wq_status wq_window_attrs_parse(const wq_node *node, wq_window_attrs *out, wq_error *err);

/* A conv's "group" (default 1), from 1 to WQ_MAX_DIM: a group times a
 * channel count (both within WQ_MAX_DIM) then stays far inside int64. */
wq_status wq_conv_group_parse(const wq_node *node, int64_t *group, wq_error *err);

/* Reads an optional ints attribute of at most `cap` entries into dst;
 * *count is 0 when absent. */
wq_status wq_window_read_ints(const wq_node *node, const char *name, int64_t *dst, int cap,
                              int *count, wq_error *err);

/* Fills g for an input whose spatial dims are in_spatial[0..n_spatial) (a
 * dim may be -1: unknown), with the kernel from the kernel_shape attribute or,
 * when absent, from weight_kernel (NULL for pools, which require the
 * attribute). Checks every attribute's length against n_spatial. When
 * `forward` is true it resolves auto_pad and out[] (an unknown input dim
 * gives out -1); ConvTranspose passes false and sizes its output itself. */
wq_status wq_window_geometry(const wq_node *node, const wq_window_attrs *a, int n_spatial,
                             const int64_t *in_spatial, const int64_t *weight_kernel,
                             bool ceil_mode, bool forward, wq_conv_geometry *g, wq_error *err);

#endif
