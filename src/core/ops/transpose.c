/* Transpose: output dim j is input dim perm[j]; perm defaults to reversed. */
#include "../kernels/ref/transpose_ref.h"
#include "tensor_util.h"

/* Reads and validates perm for an input of `rank`. */
static wq_status transpose_perm(const wq_node *node, int rank, int *perm, wq_error *err) {
  int64_t vals[WQ_MAX_RANK];
  int count = 0;
  bool present = false;
  WQ_TRY(wq_tu_attr_ints(node, "perm", vals, WQ_MAX_RANK, &count, &present, err));
  if (!present) {
    for (int j = 0; j < rank; j++)
      perm[j] = rank - 1 - j;
    return WQ_OK;
  }
  char text[160];
  wq_dims_format(vals, count, text, sizeof text);
  if (count != rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Transpose: perm %s has %d entries for rank %d",
                   text, count, rank);
  bool seen[WQ_MAX_RANK] = {false};
  for (int j = 0; j < rank; j++) {
    if (vals[j] < 0 || vals[j] >= rank || seen[vals[j]])
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Transpose: perm %s is not a permutation of 0..%d", text, rank - 1);
    seen[vals[j]] = true;
    perm[j] = (int)vals[j];
  }
  return WQ_OK;
}

static wq_status transpose_infer(const wq_node *node, const wq_value *in, wq_value *out,
                                 wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  int rank = in[0].rank;
  if (rank < 0) {
    /* The perm's length still fixes the rank. */
    int64_t vals[WQ_MAX_RANK];
    int count = 0;
    bool present = false;
    WQ_TRY(wq_tu_attr_ints(node, "perm", vals, WQ_MAX_RANK, &count, &present, err));
    wq_tu_set_unknown(&out[0], in[0].dtype, present ? count : -1);
    return WQ_OK;
  }
  int perm[WQ_MAX_RANK];
  WQ_TRY(transpose_perm(node, rank, perm, err));
  wq_tu_set_unknown(&out[0], in[0].dtype, rank);
  for (int j = 0; j < rank; j++)
    out[0].dims[j] = in[0].dims[perm[j]];
  return WQ_OK;
}

static wq_status transpose_run(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  const int rank = in[0].rank;
  int perm[WQ_MAX_RANK];
  WQ_TRY(transpose_perm(node, rank, perm, err));
  /* X as stored (channels-last when the layout pass lets it read its
   * producer's codes as written): the stored dims and, per output dim, the
   * stored position of its source dim. NCHW -> NHWC of a channels-last X is
   * then the identity: a copy. */
  int64_t stored[WQ_MAX_RANK];
  for (int p = 0; p < rank; p++)
    stored[p] = in[0].dims[wq_layout_logical_dim(in[0].layout, rank, p)];
  for (int j = 0; j < rank; j++)
    perm[j] = wq_layout_memory_pos(in[0].layout, rank, perm[j]);
  wq_ref_transpose(in[0].data, out[0].data, elem, rank, stored, perm);
  return WQ_OK;
}

const wq_op wq_op_transpose = {.int8 = WQ_INT8_MOVE,
                               .quant_role = WQ_QROLE_SHARED,
                               .op_type = "Transpose",
                               .domain = "",
                               .min_opset = 1,
                               .min_inputs = 1,
                               .max_inputs = 1,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .infer = transpose_infer,
                               .run = transpose_run};
