/* Gemm: Y = alpha * op(A) * op(B) + beta * C with transA/transB; C is
 * optional from opset 11 and broadcasts unidirectionally to [M, N]
 * (scalar, [N], [1, N], [M, 1], [M, N]). Older opsets' `broadcast`
 * attribute is accepted: this broadcasting is a superset of both settings. */
#include <string.h>

#include "../kernels/sgemm.h"
#include "op.h"

typedef struct {
  int64_t m, n, k;
  bool trans_a, trans_b;
  const wq_value *c; /* NULL when absent */
} gemm_shape;

static wq_status gemm_resolve(const wq_node *node, const wq_value *in, gemm_shape *gs,
                              wq_error *err) {
  int64_t trans_a, trans_b;
  WQ_TRY(wq_attr_int(node, "transA", 0, &trans_a, err));
  WQ_TRY(wq_attr_int(node, "transB", 0, &trans_b, err));
  const wq_value *a = &in[0], *b = &in[1];
  const wq_value *c = node->n_inputs > 2 && wq_value_present(&in[2]) ? &in[2] : NULL;
  if (!c && node->opset < 11)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Gemm: input C is required before opset 11 (model imports opset %d)",
                   node->opset);
  if (a->dtype != WQ_DT_FLOAT || b->dtype != WQ_DT_FLOAT || (c && c->dtype != WQ_DT_FLOAT))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Gemm: only float tensors are supported (A %s, B %s%s%s)",
                   wq_dtype_name(a->dtype), wq_dtype_name(b->dtype), c ? ", C " : "",
                   c ? wq_dtype_name(c->dtype) : "");
  if (a->rank != 2 || b->rank != 2)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Gemm: A and B must be 2-D (ranks %d and %d)",
                   a->rank, b->rank);
  gs->trans_a = trans_a != 0;
  gs->trans_b = trans_b != 0;
  gs->m = a->dims[gs->trans_a ? 1 : 0];
  gs->k = a->dims[gs->trans_a ? 0 : 1];
  int64_t kb = b->dims[gs->trans_b ? 1 : 0];
  gs->n = b->dims[gs->trans_b ? 0 : 1];
  if (gs->k >= 0 && kb >= 0 && gs->k != kb)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Gemm: inner dims differ: op(A) is [%lld,%lld], op(B) is [%lld,%lld]",
                   (long long)gs->m, (long long)gs->k, (long long)kb, (long long)gs->n);
  if (gs->k < 0)
    gs->k = kb;
  gs->c = c;
  if (c) {
    if (c->rank > 2)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Gemm: C has rank %d (at most 2)", c->rank);
    /* Unidirectional: each C dim is 1 or equals the matching Y dim. */
    int64_t want[2] = {gs->m, gs->n};
    for (int i = 0; i < c->rank; i++) {
      int64_t cd = c->dims[i], yd = want[2 - c->rank + i];
      if (cd >= 0 && yd >= 0 && cd != 1 && cd != yd)
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Gemm: C dim %d is %lld, cannot broadcast to Y [%lld,%lld]", i,
                       (long long)cd, (long long)gs->m, (long long)gs->n);
    }
  }
  return WQ_OK;
}

static wq_status gemm_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  gemm_shape gs;
  WQ_TRY(gemm_resolve(node, in, &gs, err));
  out[0].dtype = WQ_DT_FLOAT;
  out[0].rank = 2;
  out[0].dims[0] = gs.m;
  out[0].dims[1] = gs.n;
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, 2, node->name, "Gemm output", err));
  return WQ_OK;
}

static wq_status gemm_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  gemm_shape gs;
  WQ_TRY(gemm_resolve(node, in, &gs, err));
  float alpha, beta;
  WQ_TRY(wq_attr_float(node, "alpha", 1.0f, &alpha, err));
  WQ_TRY(wq_attr_float(node, "beta", 1.0f, &beta, err));
  float *y = out[0].data;
  float gemm_beta = 0.0f;
  if (gs.c) {
    /* Y = beta * broadcast(C), then the GEMM accumulates onto it. */
    const float *c = gs.c->data;
    int64_t c_rows = gs.c->rank == 2 ? gs.c->dims[0] : 1;
    int64_t c_cols = gs.c->rank >= 1 ? gs.c->dims[gs.c->rank - 1] : 1;
    for (int64_t i = 0; i < gs.m; i++) {
      const float *crow = c + (c_rows == 1 ? 0 : i) * c_cols;
      for (int64_t j = 0; j < gs.n; j++)
        y[i * gs.n + j] = beta * crow[c_cols == 1 ? 0 : j];
    }
    gemm_beta = 1.0f;
  }
  const wq_value *a = &in[0], *b = &in[1];
  int64_t lda = a->dims[1], ldb = b->dims[1];
  wq_status st =
      wq_sgemm(gs.m, gs.n, gs.k, alpha, a->data, gs.trans_a ? 1 : lda, gs.trans_a ? lda : 1,
               b->data, gs.trans_b ? 1 : ldb, gs.trans_b ? ldb : 1, gemm_beta, y, gs.n);
  if (st != WQ_OK)
    return wq_fail(err, st, node->name, "Gemm: out of memory for packing scratch");
  return WQ_OK;
}

/* The GEMM's packing scratch at the graph's shapes (none while symbolic). */
static int64_t gemm_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  wq_value in[3];
  wq_node_input_values(g, node, in, 3);
  gemm_shape gs;
  wq_error err;
  *scratch = 0;
  if (wq_value_shape_known(&in[0]) && wq_value_shape_known(&in[1]) &&
      gemm_resolve(node, in, &gs, &err) == WQ_OK)
    *scratch = wq_sgemm_scratch_bytes(gs.m, gs.n, gs.k);
  return 0;
}

const wq_op wq_op_gemm = {
    .int8 = WQ_INT8_GEMM,
    .int8_as = WQ_OPID(int8_gemm),
    .quant_role = WQ_QROLE_LINEAR,

    .op_type = "Gemm",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .infer = gemm_infer,
    .run = gemm_run,
    .memory = gemm_memory,
};
