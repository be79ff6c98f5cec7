/* Layout transitions of the int8 regions the layout pass
 * (passes/layout_int8.c) builds, and the channels-last helpers the kernel
 * families share:
 *   ToNHWC / ToNCHW      [N, C, S...] <-> [N, S..., C] on 8-bit codes
 *                        (explicit transition nodes);
 *   wq_boundary_nhwc     such a transition fused into the Quantize /
 *                        DequantizeLinear at a region's edge (those ops call
 *                        it when their input and output layouts differ);
 *   wq_pool2d_of         the window of a pool over channels-last codes
 *                        (QAveragePool, MaxPool).
 * Weights keep ONNX's [M, C/group, kH, kW] layout; only activations move. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/nhwc.h"
#include "../kernels/quantize.h"
#include "../runtime/parallel.h"
#include "int8_common.h"
#include "int8_nhwc.h"

/* ---- transitions ------------------------------------------------------- */

/* ToNHWC / ToNCHW, and the same conversions fused into the Quantize /
 * DequantizeLinear at an int8 region's edge (float [N, C, S...] -> codes
 * [N, S..., C] and back), inputs as QuantizeLinear's with a constant
 * per-tensor scale and zero point (passes/layout_int8.c checks that; their
 * values were checked at load). */
enum { BOUNDARY_TILE = 4096 };

static wq_status transition_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                  wq_error *err) {
  const wq_layout layout = out[0].layout;
  out[0] = in[0]; /* logical dims: the same in both layouts */
  out[0].data = NULL;
  out[0].layout = layout;
  if (in[0].rank >= 0 && in[0].rank < 3)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: input must have rank >= 3 (has %d)",
                   node->op_type, in[0].rank);
  return WQ_OK;
}

/* The fused conversion in tiles of pixels through a small buffer: quantized
 * channel by channel, then transposed into place (or transposed out, then
 * dequantized) with the kernels of the two nodes it replaces, so the same
 * bits, in one pass over memory. Tiles are independent: threads take
 * shares of them. */
typedef struct {
  bool to_nhwc;
  const wq_value *in;
  wq_value *out;
  int64_t c, s, step, tiles_per_image;
} boundary_job;

static void boundary_tiles(void *ctx, int64_t t0, int64_t t1) {
  const boundary_job *j = ctx;
  const bool to_nhwc = j->to_nhwc;
  const wq_value *in = j->in, *out = j->out;
  const int64_t c = j->c, s = j->s;
  const wq_dtype dt = to_nhwc ? out[0].dtype : in[0].dtype;
  const float scale = *(const float *)in[1].data;
  const int32_t zp = (int32_t)wq_value_get_int(&in[2], 0), qmin = dt == WQ_DT_INT8 ? -128 : 0;
  uint8_t tile[BOUNDARY_TILE];
  float *f = to_nhwc ? in[0].data : out[0].data;
  uint8_t *codes = to_nhwc ? out[0].data : in[0].data;
  for (int64_t t = t0; t < t1; t++) {
    const int64_t b = t / j->tiles_per_image, p = t % j->tiles_per_image * j->step;
    const int64_t len = s - p < j->step ? s - p : j->step;
    uint8_t *at = codes + (b * s + p) * c;
    if (!to_nhwc)
      wq_nhwc_to_nchw_u8(1, c, len, at, tile);
    for (int64_t k = 0; k < c; k++) {
      float *fk = f + (b * c + k) * s + p;
      if (to_nhwc)
        wq_quantize_f32_q8(fk, len, scale, zp, dt, qmin, qmin + 255, tile + k * len);
      else
        wq_dequantize_q8_f32(tile + k * len, len, scale, zp, dt, fk);
    }
    if (to_nhwc)
      wq_nchw_to_nhwc_u8(1, c, len, tile, at);
  }
}

/* Conversions of fewer elements stay on one thread (~1 element per ns: a
 * region's few us of overhead would eat the gain); shares of >= 8 tiles. */
#define BOUNDARY_PARALLEL_MIN ((int64_t)1 << 16)

static void boundary_run(bool to_nhwc, const wq_value *in, wq_value *out, int64_t n, int64_t c,
                         int64_t s) {
  const int64_t step = BOUNDARY_TILE / c;
  boundary_job job = {to_nhwc, in, out, c, s, step, (s + step - 1) / step};
  const int64_t tiles = n * job.tiles_per_image;
  if (wq_parallel_threads() > 1 && n * c * s >= BOUNDARY_PARALLEL_MIN)
    wq_parallel_for(tiles, tiles / 16 > 8 ? (tiles + 15) / 16 : 8, boundary_tiles, &job);
  else
    boundary_tiles(&job, 0, tiles);
}

/* Images n, channels c and pixels s of x (logical dims [N, C, S...]);
 * returns x's element count. */
static int64_t image_extents(const wq_value *x, int64_t *n, int64_t *c, int64_t *s) {
  const int64_t total = wq_value_numel(x);
  *n = x->dims[0];
  *c = x->dims[1];
  *s = *n * *c > 0 ? total / (*n * *c) : 0;
  return total;
}

wq_status wq_boundary_nhwc(const wq_node *node, bool to_nhwc, const wq_value *in, wq_value *out,
                           wq_error *err) {
  int64_t n, c, s;
  if (image_extents(&in[0], &n, &c, &s) == 0)
    return WQ_OK;
  if (c > BOUNDARY_TILE || in[1].dtype != WQ_DT_FLOAT || wq_value_numel(&in[1]) != 1 ||
      node->n_inputs < 3 || wq_value_numel(&in[2]) != 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "%s: a layout change needs a per-tensor scale and zero point and at most %d "
                   "channels",
                   node->op_type, BOUNDARY_TILE);
  boundary_run(to_nhwc, in, out, n, c, s);
  return WQ_OK;
}

static wq_status transition_run(const wq_node *node, const wq_value *in, wq_value *out,
                                wq_error *err) {
  const bool to_nhwc = node->op->flags & WQ_OP_FLAG_TO_NHWC;
  int64_t n, c, s;
  const int64_t total = image_extents(&in[0], &n, &c, &s);
  if (total == 0)
    return WQ_OK;
  if (wq_dtype_size(in[0].dtype) != 1)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: dtype %s is not 8-bit codes",
                   node->op_type, wq_dtype_name(in[0].dtype));
  else if (s == 1 || c == 1) /* the same bytes in both layouts */
    memcpy(out[0].data, in[0].data, (size_t)total);
  else if (to_nhwc)
    wq_nchw_to_nhwc_u8(n, c, s, in[0].data, out[0].data);
  else
    wq_nhwc_to_nchw_u8(n, c, s, in[0].data, out[0].data);
  return WQ_OK;
}

#define TRANSITION_OP(sym, name, inputs, flag, kind, lcap)                                         \
  const wq_op sym = {.op_type = name,                                                              \
                     .domain = WQ_INT8_DOMAIN,                                                     \
                     .min_opset = 1,                                                               \
                     .min_inputs = inputs,                                                         \
                     .max_inputs = inputs,                                                         \
                     .min_outputs = 1,                                                             \
                     .max_outputs = 1,                                                             \
                     .flags = flag,                                                                \
                     .int8 = kind,                                                                 \
                     .layout = lcap,                                                               \
                     .infer = transition_infer,                                                    \
                     .run = transition_run};
TRANSITION_OP(wq_op_to_nhwc, "ToNHWC", 1, WQ_OP_FLAG_TO_NHWC, WQ_INT8_KERNEL, WQ_LCAP_TO_NHWC)
TRANSITION_OP(wq_op_to_nchw, "ToNCHW", 1, 0, WQ_INT8_KERNEL, WQ_LCAP_TO_NCHW)

/* ---- pools ------------------------------------------------------------- */

/* The 2-D window of a 1-D or 2-D geometry. */
wq_pool2d wq_pool2d_of(const wq_conv_geometry *g, int64_t batch, int64_t channels) {
  const int two = g->n_spatial == 2, w = g->n_spatial - 1;
  wq_pool2d p = {.batch = batch,
                 .channels = channels,
                 .in_h = two ? g->in[0] : 1,
                 .in_w = g->in[w],
                 .out_h = two ? g->out[0] : 1,
                 .out_w = g->out[w],
                 .kernel_h = two ? g->kernel[0] : 1,
                 .kernel_w = g->kernel[w],
                 .stride_h = two ? g->stride[0] : 1,
                 .stride_w = g->stride[w],
                 .dil_h = two ? g->dilation[0] : 1,
                 .dil_w = g->dilation[w],
                 .pad_top = two ? g->pad_begin[0] : 0,
                 .pad_left = g->pad_begin[w],
                 .pad_bottom = two ? g->pad_end[0] : 0,
                 .pad_right = g->pad_end[w]};
  return p;
}
