/* QLinearMatMul and MatMulInteger: numpy.matmul over zero-point-free int32
 * operands, with each operand's parameters per tensor, per row (a, output)
 * or per column (b), looked up through wq_qparams. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/ref/quant_ref.h"
#include "quant_common.h"

/* ---- shared ------------------------------------------------------------ */

static wq_status matmul_shapes(const wq_node *node, const wq_value *a, const wq_value *b,
                               wq_value *out, wq_qmatmul_geometry *g, bool *known, wq_error *err) {
  *known = wq_value_shape_known(a) && wq_value_shape_known(b);
  if (!*known) {
    out->rank = -1;
    return WQ_OK;
  }
  WQ_TRY(wq_qmatmul_geometry_init(a, b, g, node->name, node->op_type, err));
  out->rank = g->out_rank;
  memcpy(out->dims, g->out_dims, sizeof out->dims);
  return wq_shape_check(out->dims, out->rank, node->name, node->op_type, err);
}

/* Zero-point-free int32 copies of a and b. */
static wq_status center_operands(const wq_node *node, const wq_value *a, const wq_qparams *qa,
                                 const wq_value *b, const wq_qparams *qb, int32_t **a32,
                                 int32_t **b32, wq_error *err) {
  int64_t na = wq_value_numel(a), nb = wq_value_numel(b);
  *a32 = malloc((size_t)(na > 0 ? na : 1) * sizeof(int32_t));
  *b32 = malloc((size_t)(nb > 0 ? nb : 1) * sizeof(int32_t));
  if (!*a32 || !*b32) {
    free(*a32);
    free(*b32);
    *a32 = *b32 = NULL;
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  }
  wq_ref_q_center(a->data, na, qa, *a32);
  wq_ref_q_center(b->data, nb, qb, *b32);
  return WQ_OK;
}

/* ---- QLinearMatMul ----------------------------------------------------- */

typedef struct {
  wq_qparams a, b, y;
} qlinear_matmul_params;

static void qlinear_matmul_params_free(qlinear_matmul_params *p) {
  wq_qparams_free(&p->a);
  wq_qparams_free(&p->b);
  wq_qparams_free(&p->y);
}

static wq_status qlinear_matmul_params_build(const wq_node *node, const wq_value *in,
                                             const wq_value *y, qlinear_matmul_params *p,
                                             wq_error *err) {
  memset(p, 0, sizeof *p);
  wq_status st =
      wq_qmatmul_operand_qparams(&p->a, node, "a", WQ_QMATMUL_PER_ROW, &in[0], &in[1], &in[2], err);
  if (st == WQ_OK)
    st = wq_qmatmul_operand_qparams(&p->b, node, "b", WQ_QMATMUL_PER_COLUMN, &in[3], &in[4], &in[5],
                                    err);
  if (st == WQ_OK)
    st = wq_qmatmul_operand_qparams(&p->y, node, "y", WQ_QMATMUL_PER_ROW, y, &in[6], &in[7], err);
  if (st != WQ_OK)
    qlinear_matmul_params_free(p);
  return st;
}

static wq_status qlinear_matmul_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                      wq_error *err) {
  WQ_TRY(wq_quant_check_qlinear_inputs(node, in, "a", "b", err));
  out[0].dtype = in[7].dtype;
  wq_qmatmul_geometry g;
  bool known;
  WQ_TRY(matmul_shapes(node, &in[0], &in[3], &out[0], &g, &known, err));
  for (int i = 1; i < 8; i++)
    if (!wq_value_shape_known(&in[i]))
      known = false;
  if (!known)
    return WQ_OK;
  qlinear_matmul_params p;
  WQ_TRY(qlinear_matmul_params_build(node, in, &out[0], &p, err));
  qlinear_matmul_params_free(&p);
  return WQ_OK;
}

static wq_status qlinear_matmul_run(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  wq_qmatmul_geometry g;
  WQ_TRY(wq_qmatmul_geometry_init(&in[0], &in[3], &g, node->name, node->op_type, err));
  qlinear_matmul_params p;
  WQ_TRY(qlinear_matmul_params_build(node, in, &out[0], &p, err));
  int32_t *a32 = NULL, *b32 = NULL, *acc = NULL;
  wq_status st = center_operands(node, &in[0], &p.a, &in[3], &p.b, &a32, &b32, err);
  int64_t n_out = wq_value_numel(&out[0]);
  if (st == WQ_OK) {
    acc = malloc((size_t)(n_out > 0 ? n_out : 1) * sizeof *acc);
    if (!acc)
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "QLinearMatMul: out of memory");
  }
  if (st == WQ_OK) {
    wq_ref_qmatmul_acc(&g, a32, b32, acc);
    /* The multiplier of output (m, n) combines a's row m, b's column n and
     * y's row m, each looked up by element index: no broadcasting of one
     * parameter vector against another. */
    for (int64_t bt = 0; bt < g.batch_count; bt++) {
      int64_t a_off, b_off;
      wq_qmatmul_batch_offsets(&g, bt, &a_off, &b_off);
      for (int64_t m = 0; m < g.M; m++) {
        float sa = p.a.scale[wq_qparams_index_of(&p.a, a_off + m * g.K)];
        for (int64_t n = 0; n < g.N; n++) {
          int64_t o = (bt * g.M + m) * g.N + n;
          float sb = p.b.scale[wq_qparams_index_of(&p.b, b_off + n)];
          int64_t py = wq_qparams_index_of(&p.y, o);
          float multiplier = (sa * sb) / p.y.scale[py];
          int32_t q =
              wq_ref_requantize_value(acc[o], multiplier, p.y.zero_point[py], p.y.qmin, p.y.qmax);
          wq_ref_q_store(out[0].data, out[0].dtype, o, q);
        }
      }
    }
  }
  free(a32);
  free(b32);
  free(acc);
  qlinear_matmul_params_free(&p);
  return st;
}

const wq_op wq_op_qlinear_matmul = {.int8 = WQ_INT8_QLINEAR,
                                    .int8_as = WQ_OPID(int8_gemm),
                                    .op_type = "QLinearMatMul",
                                    .domain = "",
                                    .min_opset = 10,
                                    .min_inputs = 8,
                                    .max_inputs = 8,
                                    .min_outputs = 1,
                                    .max_outputs = 1,
                                    .flags = WQ_OP_FLAG_INT8,
                                    .infer = qlinear_matmul_infer,
                                    .run = qlinear_matmul_run};

/* ---- MatMulInteger ----------------------------------------------------- */

static wq_status matmul_integer_params(const wq_node *node, const wq_value *in, wq_qparams *qa,
                                       wq_qparams *qb, wq_error *err) {
  WQ_TRY(wq_qmatmul_operand_qparams(qa, node, "a_zero_point", WQ_QMATMUL_PER_ROW, &in[0], NULL,
                                    wq_quant_optional_input(node, in, 2), err));
  wq_status st = wq_qmatmul_operand_qparams(qb, node, "b_zero_point", WQ_QMATMUL_PER_COLUMN, &in[1],
                                            NULL, wq_quant_optional_input(node, in, 3), err);
  if (st != WQ_OK)
    wq_qparams_free(qa);
  return st;
}

static wq_status matmul_integer_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                      wq_error *err) {
  WQ_TRY(wq_quant_check_integer_inputs(node, in, "A", "B", "a_zero_point", "b_zero_point", err));
  out[0].dtype = WQ_DT_INT32;
  wq_qmatmul_geometry g;
  bool known;
  WQ_TRY(matmul_shapes(node, &in[0], &in[1], &out[0], &g, &known, err));
  for (int i = 2; i < node->n_inputs; i++)
    if (wq_quant_optional_input(node, in, i) && !wq_value_shape_known(&in[i]))
      known = false;
  if (!known)
    return WQ_OK;
  wq_qparams qa, qb;
  WQ_TRY(matmul_integer_params(node, in, &qa, &qb, err));
  wq_qparams_free(&qa);
  wq_qparams_free(&qb);
  return WQ_OK;
}

static wq_status matmul_integer_run(const wq_node *node, const wq_value *in, wq_value *out,
                                    wq_error *err) {
  wq_qmatmul_geometry g;
  WQ_TRY(wq_qmatmul_geometry_init(&in[0], &in[1], &g, node->name, node->op_type, err));
  wq_qparams qa, qb;
  WQ_TRY(matmul_integer_params(node, in, &qa, &qb, err));
  int32_t *a32, *b32;
  wq_status st = center_operands(node, &in[0], &qa, &in[1], &qb, &a32, &b32, err);
  if (st == WQ_OK)
    wq_ref_qmatmul_acc(&g, a32, b32, out[0].data);
  if (st == WQ_OK) {
    free(a32);
    free(b32);
  }
  wq_qparams_free(&qa);
  wq_qparams_free(&qb);
  return st;
}

const wq_op wq_op_matmul_integer = {.int8 = WQ_INT8_INTEGER,
                                    .int8_as = WQ_OPID(int8_gemm),
                                    .op_type = "MatMulInteger",
                                    .domain = "",
                                    .min_opset = 10,
                                    .min_inputs = 2,
                                    .max_inputs = 4,
                                    .min_outputs = 1,
                                    .max_outputs = 1,
                                    .flags = WQ_OP_FLAG_INT8,
                                    .infer = matmul_integer_infer,
                                    .run = matmul_integer_run};
