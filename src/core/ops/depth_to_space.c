/* DepthToSpace: moves channel blocks into b x b spatial tiles, NCHW, or
 * NHWC ([N, H, W, C] -> [N, H*b, W*b, C/b²]) on 8-bit codes the layout
 * pass stores channels-last (the kernel follows the input's layout). */
#include <string.h>

#include "../kernels/qeltwise.h"
#include "../kernels/ref/depth_to_space_ref.h"
#include "tensor_util.h"

static wq_status d2s_params(const wq_node *node, int64_t *block, bool *crd, wq_error *err) {
  if (!wq_node_attr(node, "blocksize"))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "DepthToSpace: attribute 'blocksize' missing");
  WQ_TRY(wq_attr_int(node, "blocksize", 0, block, err));
  if (*block <= 0 || *block > 4096)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "DepthToSpace: blocksize %lld is invalid",
                   (long long)*block);
  const char *mode = "DCR";
  if (node->opset >= 11) /* mode arrived in opset 11 */
    WQ_TRY(wq_attr_string(node, "mode", "DCR", &mode, err));
  if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "DepthToSpace: mode '%s' is not DCR or CRD",
                   mode);
  *crd = strcmp(mode, "CRD") == 0;
  return WQ_OK;
}

static wq_status d2s_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  int64_t b = 0;
  bool crd = false;
  WQ_TRY(d2s_params(node, &b, &crd, err));
  wq_tu_set_unknown(&out[0], in[0].dtype, 4);
  if (in[0].rank < 0)
    return WQ_OK;
  if (in[0].rank != 4)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "DepthToSpace: input must be 4-D, got rank %d",
                   in[0].rank);
  const int64_t *d = in[0].dims;
  if (wq_layout_channels_last(in[0].layout, 4) && elem != 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "DepthToSpace: channels-last only on 8-bit codes");
  if (d[1] >= 0 && d[1] % (b * b) != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "DepthToSpace: %lld channels are not divisible by blocksize^2 = %lld",
                   (long long)d[1], (long long)(b * b));
  out[0].dims[0] = d[0];
  out[0].dims[1] = d[1] < 0 ? -1 : d[1] / (b * b);
  out[0].dims[2] = d[2] < 0 ? -1 : d[2] * b;
  out[0].dims[3] = d[3] < 0 ? -1 : d[3] * b;
  if (wq_tu_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, 4, node->name, "DepthToSpace output", err));
  return WQ_OK;
}

static wq_status d2s_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  int64_t b = 0;
  bool crd = false;
  WQ_TRY(d2s_params(node, &b, &crd, err));
  const int64_t *d = in[0].dims;
  if (wq_value_numel(&out[0]) <= 0)
    return WQ_OK;
  if (wq_layout_channels_last(in[0].layout, in[0].rank)) /* 8-bit codes: infer checked */
    wq_depth_to_space_nhwc_q8(d[0], d[2], d[3], d[1], b, crd, in[0].data, out[0].data);
  else
    wq_ref_depth_to_space(in[0].data, out[0].data, elem, d, b, crd);
  return WQ_OK;
}

const wq_op wq_op_depth_to_space = {.int8 = WQ_INT8_MOVE,
                                    .layout = WQ_LCAP_FOLLOW,
                                    .quant_role = WQ_QROLE_SHARED,
                                    .op_type = "DepthToSpace",
                                    .domain = "",
                                    .min_opset = 1,
                                    .min_inputs = 1,
                                    .max_inputs = 1,
                                    .min_outputs = 1,
                                    .max_outputs = 1,
                                    .infer = d2s_infer,
                                    .run = d2s_run};
