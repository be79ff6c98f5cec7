/* MatMul with numpy semantics: a 1-D A is promoted to [1, K] and a 1-D B to
 * [K, 1] (the added dim is removed from the result); leading batch dims
 * broadcast. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/sgemm.h"
#include "op.h"

/* A constant 2-D B packed at plan time for products of fewer than 4 rows
 * (batch-1 GEMV, wq_sgemv_packed), when the static shape of A says so. */
typedef struct {
  const float *b; /* the constant B it was packed from */
  float *packed;
} matmul_state;

static void matmul_free(void *state) {
  matmul_state *s = state;
  if (s)
    free(s->packed);
  free(s);
}

typedef struct {
  int64_t m, n, k;
  int batch_rank;
  int64_t batch[WQ_MAX_RANK];   /* broadcast batch dims of Y */
  int64_t a_batch[WQ_MAX_RANK]; /* A's batch dims right-aligned to batch_rank (1 if missing) */
  int64_t b_batch[WQ_MAX_RANK];
  int out_rank;
  int64_t out_dims[WQ_MAX_RANK];
} matmul_shape;

static wq_status matmul_resolve(const wq_node *node, const wq_value *in, matmul_shape *ms,
                                wq_error *err) {
  const wq_value *a = &in[0], *b = &in[1];
  if (a->dtype != WQ_DT_FLOAT || b->dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "MatMul: only float tensors are supported (A %s, B %s)", wq_dtype_name(a->dtype),
                   wq_dtype_name(b->dtype));
  if (a->rank < 0 || b->rank < 0)
    return WQ_OK; /* caller checks ranks */
  if (a->rank < 1 || b->rank < 1)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "MatMul: inputs must have rank >= 1 (%d, %d)",
                   a->rank, b->rank);
  ms->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  ms->k = a->dims[a->rank - 1];
  int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  ms->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
  if (ms->k >= 0 && kb >= 0 && ms->k != kb) {
    char sa[96], sb[96];
    wq_dims_format(a->dims, a->rank, sa, sizeof sa);
    wq_dims_format(b->dims, b->rank, sb, sizeof sb);
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "MatMul: inner dims differ: A %s, B %s", sa, sb);
  }
  if (ms->k < 0)
    ms->k = kb;
  int abr = a->rank > 2 ? a->rank - 2 : 0, bbr = b->rank > 2 ? b->rank - 2 : 0;
  ms->batch_rank = abr > bbr ? abr : bbr;
  for (int i = 0; i < ms->batch_rank; i++) {
    int ia = i - (ms->batch_rank - abr), ib = i - (ms->batch_rank - bbr);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    ms->a_batch[i] = da;
    ms->b_batch[i] = db;
    if (da == db || db == 1)
      ms->batch[i] = da;
    else if (da == 1)
      ms->batch[i] = db;
    else if (da < 0 || db < 0)
      ms->batch[i] = -1;
    else {
      char sa[96], sb[96];
      wq_dims_format(a->dims, a->rank, sa, sizeof sa);
      wq_dims_format(b->dims, b->rank, sb, sizeof sb);
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "MatMul: batch dims of A %s and B %s do not broadcast", sa, sb);
    }
  }
  ms->out_rank = 0;
  for (int i = 0; i < ms->batch_rank; i++)
    ms->out_dims[ms->out_rank++] = ms->batch[i];
  if (a->rank > 1)
    ms->out_dims[ms->out_rank++] = ms->m;
  if (b->rank > 1)
    ms->out_dims[ms->out_rank++] = ms->n;
  return WQ_OK;
}

static wq_status matmul_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  matmul_shape ms;
  WQ_TRY(matmul_resolve(node, in, &ms, err));
  out[0].dtype = WQ_DT_FLOAT;
  if (in[0].rank < 0 || in[1].rank < 0) {
    out[0].rank = -1;
    return WQ_OK;
  }
  out[0].rank = ms.out_rank;
  memcpy(out[0].dims, ms.out_dims, sizeof(int64_t) * (size_t)ms.out_rank);
  if (wq_value_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "MatMul output", err));
  return WQ_OK;
}

static wq_status matmul_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  matmul_shape ms;
  WQ_TRY(matmul_resolve(node, in, &ms, err));
  const float *a = in[0].data, *b = in[1].data;
  float *y = out[0].data;
  int64_t a_mat = ms.m * ms.k, b_mat = ms.k * ms.n, y_mat = ms.m * ms.n;
  int64_t n_batch = 1, b_count = 1;
  for (int i = 0; i < ms.batch_rank; i++) {
    n_batch *= ms.batch[i];
    b_count *= ms.b_batch[i];
  }
  wq_status st = WQ_OK;
  const matmul_state *s = node->op_state;
  if (s && s->b == b && in[1].rank == 2 && n_batch * ms.m < 4) {
    for (int64_t i = 0; i < n_batch * ms.m; i++)
      wq_sgemv_packed(ms.n, ms.k, a + i * ms.k, 1, s->packed, y + i * ms.n);
  } else if (b_count == 1) {
    /* B is shared by every batch: A's batch rows stack into one tall GEMM
     * (A's batch dims then equal Y's, so A is contiguous [n_batch * M, K]). */
    st = wq_sgemm(n_batch * ms.m, ms.n, ms.k, 1.0f, a, ms.k, 1, b, ms.n, 1, 0.0f, y, ms.n);
  } else {
    int64_t idx[WQ_MAX_RANK] = {0};
    for (int64_t t = 0; t < n_batch && st == WQ_OK; t++) {
      /* Offsets of this batch in A and B under broadcasting. */
      int64_t ao = 0, bo = 0;
      for (int i = 0; i < ms.batch_rank; i++) {
        ao = ao * ms.a_batch[i] + (ms.a_batch[i] == 1 ? 0 : idx[i]);
        bo = bo * ms.b_batch[i] + (ms.b_batch[i] == 1 ? 0 : idx[i]);
      }
      st = wq_sgemm(ms.m, ms.n, ms.k, 1.0f, a + ao * a_mat, ms.k, 1, b + bo * b_mat, ms.n, 1, 0.0f,
                    y + t * y_mat, ms.n);
      for (int i = ms.batch_rank - 1; i >= 0; i--) {
        if (++idx[i] < ms.batch[i])
          break;
        idx[i] = 0;
      }
    }
  }
  if (st != WQ_OK)
    return wq_fail(err, st, node->name, "MatMul: out of memory for packing scratch");
  return WQ_OK;
}

static wq_status matmul_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel,
                             wq_error *err) {
  (void)kernel;
  const wq_tensor *a = &g->tensors[node->inputs[0]], *b = &g->tensors[node->inputs[1]];
  int64_t rows = 1;
  for (int d = 0; d + 1 < a->rank; d++)
    rows *= a->dims[d] < 0 ? 4 : a->dims[d];
  matmul_free(node->op_state);
  node->op_state = NULL;
  if (!b->is_constant || !b->data || b->dtype != WQ_DT_FLOAT || b->rank != 2 || b->dims[0] < 1 ||
      b->dims[1] < 1 || a->rank < 1 || rows < 0 || rows >= 4)
    return WQ_OK;
  matmul_state *s = calloc(1, sizeof *s);
  if (s)
    s->packed = wq_sgemv_pack(b->dims[1], b->dims[0], b->data, b->dims[1], 1);
  if (!s || !s->packed) {
    matmul_free(s);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "MatMul: out of memory packing B");
  }
  s->b = b->data;
  node->op_state = s;
  return WQ_OK;
}

/* The packed B of the GEMV path, and the GEMM's packing scratch at the
 * graph's shapes (none while they are symbolic or the GEMV runs). */
static int64_t matmul_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  const matmul_state *s = node->op_state;
  const wq_value in[2] = {wq_tensor_value(&g->tensors[node->inputs[0]]),
                          wq_tensor_value(&g->tensors[node->inputs[1]])};
  const int64_t held = s ? (in[1].dims[1] + WQ_SGEMV_NR - 1) / WQ_SGEMV_NR * WQ_SGEMV_NR *
                               in[1].dims[0] * (int64_t)sizeof(float)
                         : 0;
  matmul_shape ms;
  wq_error err;
  *scratch = 0;
  if (!wq_value_shape_known(&in[0]) || !wq_value_shape_known(&in[1]) ||
      matmul_resolve(node, in, &ms, &err) != WQ_OK)
    return held;
  int64_t n_batch = 1, b_count = 1;
  for (int i = 0; i < ms.batch_rank; i++) {
    n_batch *= ms.batch[i];
    b_count *= ms.b_batch[i];
  }
  if (!(s && in[1].rank == 2 && n_batch * ms.m < 4))
    *scratch = wq_sgemm_scratch_bytes(b_count == 1 ? n_batch * ms.m : ms.m, ms.n, ms.k);
  return held;
}

const wq_op wq_op_matmul = {
    .int8 = WQ_INT8_GEMM,
    .int8_as = WQ_OPID(int8_gemm),
    .quant_role = WQ_QROLE_LINEAR,

    .op_type = "MatMul",
    .domain = "",
    .min_opset = 1,
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .free_state = matmul_free,
    .infer = matmul_infer,
    .run = matmul_run,
    .plan = matmul_plan,
    .memory = matmul_memory,
};
