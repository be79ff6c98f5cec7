/* QConcat (domain "wasmq"): Concat of int8/uint8 inputs whose quantization
 * parameters may differ from the output's. Each such input is requantized
 * through a 256-entry table, quantize_y(dequantize_x(q)) — exactly
 * DequantizeLinear → Concat → QuantizeLinear in float32; inputs that share
 * the output's parameters are copied. Attributes: axis, y_dtype. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "../kernels/ref/int8_eltwise_ref.h"
#include "../kernels/ref/quant_ref.h"
#include "../kernels/simd/cold_loop.h"
#include "int8_common.h"

typedef struct {
  int64_t axis;
  wq_dtype y_dtype;
  bool planned;
  int n_inputs;
  uint8_t (*tables)[256]; /* one per input */
  bool *identity;         /* input already has the output's parameters */
} qconcat_state;

static void qconcat_free(void *p) {
  qconcat_state *s = p;
  if (!s)
    return;
  free(s->tables);
  free(s->identity);
  free(s);
}

static wq_status qconcat_prepare(wq_node *node, wq_error *err) {
  qconcat_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConcat: out of memory");
  wq_status st = wq_attr_int(node, "axis", 0, &s->axis, err);
  if (st == WQ_OK)
    st = wq_int8_read_y_dtype(node, false, &s->y_dtype, err);
  if (st != WQ_OK) {
    free(s);
    return st;
  }
  node->op_state = s;
  return WQ_OK;
}

static wq_status qconcat_axis(const wq_node *node, int rank, int *axis, wq_error *err) {
  const qconcat_state *s = node->op_state;
  if (s->axis < -rank || s->axis >= rank)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QConcat: axis %lld is out of range for rank %d", (long long)s->axis, rank);
  *axis = (int)(s->axis < 0 ? s->axis + rank : s->axis);
  return WQ_OK;
}

static wq_status qconcat_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  const qconcat_state *s = node->op_state;
  out[0].dtype = s->y_dtype;
  out[0].rank = -1;
  int rank = -1;
  for (int k = 0; k < node->n_inputs; k++) {
    WQ_TRY(wq_int8_expect_8bit(node, "input", in[k].dtype, err));
    if (in[k].rank >= 0)
      rank = in[k].rank;
  }
  if (rank < 0)
    return WQ_OK;
  if (rank == 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConcat: inputs must have rank >= 1");
  int axis;
  WQ_TRY(qconcat_axis(node, rank, &axis, err));
  out[0].rank = rank;
  for (int d = 0; d < rank; d++)
    out[0].dims[d] = d == axis ? 0 : -1;
  for (int k = 0; k < node->n_inputs; k++) {
    const wq_value *v = &in[k];
    if (v->rank < 0) {
      out[0].dims[axis] = -1;
      continue;
    }
    if (v->rank != rank)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "QConcat: input %d has rank %d, expected %d", k,
                     v->rank, rank);
    for (int d = 0; d < rank; d++) {
      if (d == axis) {
        out[0].dims[d] = (out[0].dims[d] < 0 || v->dims[d] < 0) ? -1 : out[0].dims[d] + v->dims[d];
      } else if (v->dims[d] >= 0) {
        if (out[0].dims[d] >= 0 && out[0].dims[d] != v->dims[d])
          return wq_fail(err, WQ_ERR_SHAPE, node->name,
                         "QConcat: input %d dim %d is %lld, expected %lld", k, d,
                         (long long)v->dims[d], (long long)out[0].dims[d]);
        out[0].dims[d] = v->dims[d];
      }
    }
  }
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "QConcat output", err));
  return WQ_OK;
}

static bool same_per_tensor(float s1, int32_t z1, wq_dtype d1, float s2, int32_t z2, wq_dtype d2) {
  return s1 == s2 && z1 == z2 && d1 == d2;
}

static wq_status qconcat_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                              wq_error *err) {
  (void)kernel;
  qconcat_state *s = node->op_state;
  const wq_qparams *qy;
  float sy;
  int32_t zy;
  WQ_TRY(wq_int8_tensor_qparams(node, g, 0, true, &qy, err));
  WQ_TRY(wq_int8_per_tensor(node, qy, "output", &sy, &zy, err));
  if (qy->dtype != s->y_dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "QConcat: output quantization parameters are %s but y_dtype is %s",
                   wq_dtype_name(qy->dtype), wq_dtype_name(s->y_dtype));
  free(s->tables);
  free(s->identity);
  s->n_inputs = node->n_inputs;
  s->tables = malloc((size_t)node->n_inputs * sizeof *s->tables);
  s->identity = calloc((size_t)node->n_inputs, sizeof *s->identity);
  if (!s->tables || !s->identity)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QConcat: out of memory");
  for (int k = 0; k < node->n_inputs; k++) {
    const wq_qparams *qx;
    float sx;
    int32_t zx;
    WQ_TRY(wq_int8_tensor_qparams(node, g, k, false, &qx, err));
    WQ_TRY(wq_int8_per_tensor(node, qx, "input", &sx, &zx, err));
    s->identity[k] = same_per_tensor(sx, zx, qx->dtype, sy, zy, qy->dtype);
    float real[256];
    wq_int8_dequant_table(qx->dtype, sx, zx, real);
    for (int i = 0; i < 256; i++) {
      int32_t q = wq_ref_quantize_value(real[i], sy, zy, qy->qmin, qy->qmax);
      s->tables[k][i] = (uint8_t)(qy->dtype == WQ_DT_INT8 ? (uint8_t)(int8_t)q : (uint8_t)q);
    }
  }
  s->planned = true;
  return WQ_OK;
}

/* An input whose layout does not give it the output's bytes (another dim
 * order for its dims larger than 1): its codes visited in the output's
 * memory order, gathered from their places in its own layout a piece of
 * the innermost dim at a time, then copied or mapped like a row. The
 * input's block starts at `start` along the axis. */
static void qconcat_gather(const wq_value *x, const wq_value *y, int axis, int64_t start,
                           const uint8_t *table) {
  const int rank = y->rank;
  int64_t xs[WQ_MAX_RANK], ys[WQ_MAX_RANK], dims[WQ_MAX_RANK], src[WQ_MAX_RANK], dst[WQ_MAX_RANK],
      at[WQ_MAX_RANK] = {0};
  wq_value_strides(x, xs);
  wq_value_strides(y, ys);
  for (int pos = 0; pos < rank; pos++) {
    const int d = wq_layout_logical_dim(y->layout, rank, pos);
    dims[pos] = x->dims[d];
    src[pos] = xs[d];
    dst[pos] = ys[d];
  }
  const int64_t inner = dims[rank - 1], step = src[rank - 1];
  const int64_t rows = wq_value_numel(x) / inner;
  const uint8_t *x8 = x->data;
  uint8_t *y8 = (uint8_t *)y->data + start * ys[axis];
  uint8_t piece[256];
  int64_t xi = 0, yi = 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i0 = 0; i0 < inner; i0 += (int64_t)sizeof piece) {
      const int64_t n = inner - i0 < (int64_t)sizeof piece ? inner - i0 : (int64_t)sizeof piece;
      WQ_COLD_LOOP
      for (int64_t i = 0; i < n; i++)
        piece[i] = x8[xi + (i0 + i) * step];
      wq_copy_rows_q8(1, n, n, n, table, x->dtype == WQ_DT_INT8, piece, y8 + yi + i0);
    }
    for (int pos = rank - 2; pos >= 0; pos--) {
      xi += src[pos];
      yi += dst[pos];
      if (++at[pos] < dims[pos])
        break;
      xi -= src[pos] * dims[pos];
      yi -= dst[pos] * dims[pos];
      at[pos] = 0;
    }
  }
}

static wq_status qconcat_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const qconcat_state *s = node->op_state;
  if (!s->planned || s->n_inputs != node->n_inputs)
    return wq_int8_not_planned(node, err);
  int rank = out[0].rank, axis;
  WQ_TRY(qconcat_axis(node, rank, &axis, err));
  /* Rows of the output in memory: channels-last codes join along their last
   * dim when axis is the channels. Each input is read through its own
   * layout record: one with the output's bytes for its shape is copied in
   * rows, any other gathered. */
  const wq_value ym = wq_value_memory_order(&out[0]);
  const int at = wq_layout_memory_pos(out[0].layout, rank, axis);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < at; d++)
    outer *= ym.dims[d];
  for (int d = at + 1; d < rank; d++)
    inner *= ym.dims[d];
  const int64_t out_row = ym.dims[at] * inner;
  uint8_t *y = out[0].data;
  int64_t offset = 0, start = 0;
  for (int k = 0; k < node->n_inputs; k++) {
    const int64_t row = in[k].dims[axis] * inner;
    const uint8_t *table = s->identity[k] ? NULL : s->tables[k];
    if (row > 0 && outer > 0) {
      if (wq_layout_same_bytes(in[k].layout, out[0].layout, rank, in[k].dims))
        wq_copy_rows_q8(outer, row, row, out_row, table, in[k].dtype == WQ_DT_INT8, in[k].data,
                        y + offset);
      else
        qconcat_gather(&in[k], &out[0], axis, start, table);
    }
    offset += row;
    start += in[k].dims[axis];
  }
  return WQ_OK;
}

const wq_op wq_op_int8_concat = {.int8 = WQ_INT8_KERNEL,
                                 .layout = WQ_LCAP_AGNOSTIC_ALL,
                                 .op_type = "QConcat",
                                 .domain = WQ_INT8_DOMAIN,
                                 .min_opset = 1,
                                 .min_inputs = 1,
                                 .max_inputs = 1 << 16,
                                 .min_outputs = 1,
                                 .max_outputs = 1,
                                 .prepare = qconcat_prepare,
                                 .free_state = qconcat_free,
                                 .infer = qconcat_infer,
                                 .run = qconcat_run,
                                 .plan = qconcat_plan};
