#include "quant_common.h"
#include "../ir/format.h"

#include <stdlib.h>
#include <string.h>

wq_status wq_quant_expect_dtype(const wq_node *node, const char *what, wq_dtype dtype,
                                unsigned allowed, wq_error *err) {
  if (dtype > WQ_DT_UNDEFINED && dtype < 32 && (allowed & WQ_QDT_BIT(dtype)))
    return WQ_OK;
  if (dtype == WQ_DT_UNDEFINED)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: %s is missing", node->op_type, what);
  if (!wq_dtype_supported(dtype))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %s dtype %s is not supported",
                   node->op_type, what, wq_dtype_name(dtype));
  return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "%s: %s may not have dtype %s",
                 node->op_type, what, wq_dtype_name(dtype));
}

bool wq_quant_values_known(const wq_value *in, int n_inputs) {
  for (int i = 0; i < n_inputs; i++)
    if (wq_value_present(&in[i]) && (!in[i].data || !wq_value_shape_known(&in[i])))
      return false;
  return true;
}

static bool present(const wq_value *v) { return v && wq_value_present(v); }

wq_status wq_qmatmul_operand_qparams(wq_qparams *qp, const wq_node *node, const char *what,
                                     wq_qmatmul_role role, const wq_value *data,
                                     const wq_value *scale, const wq_value *zero_point,
                                     wq_error *err) {
  memset(qp, 0, sizeof *qp);
  const int rank = data->rank;
  int64_t sd[WQ_MAX_RANK];
  for (int i = 0; i < WQ_MAX_RANK; i++)
    sd[i] = 1;
  const wq_value *shape_src = present(scale) ? scale : present(zero_point) ? zero_point : NULL;
  if (present(scale) && present(zero_point) &&
      !(wq_value_numel(scale) == 1 && wq_value_numel(zero_point) == 1) &&
      (scale->rank != zero_point->rank ||
       memcmp(scale->dims, zero_point->dims, (size_t)scale->rank * sizeof(int64_t)) != 0)) {
    char ss[96], zs[96];
    wq_dims_format(scale->dims, scale->rank, ss, sizeof ss);
    wq_dims_format(zero_point->dims, zero_point->rank, zs, sizeof zs);
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: %s scale shape %s and zero point shape %s differ", node->op_type, what, ss,
                   zs);
  }
  int64_t n = shape_src ? wq_value_numel(shape_src) : 1;
  if (n < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s parameter shape is unknown",
                   node->op_type, what);
  const char *form = role == WQ_QMATMUL_PER_ROW ? "per-row" : "per-column";
  char ps[96], ds[96];
  if (shape_src)
    wq_dims_format(shape_src->dims, shape_src->rank, ps, sizeof ps);
  wq_dims_format(data->dims, rank, ds, sizeof ds);
  if (n != 1) {
    /* The dim the parameters may vary along (1-D form) and the summed dim K,
     * along which they must not vary. */
    int vary = role == WQ_QMATMUL_PER_ROW ? rank - 2 : rank - 1;
    int k_dim = role == WQ_QMATMUL_PER_ROW ? rank - 1 : rank - 2;
    if (rank < 2)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: %s parameters %s must be per-tensor for a 1-D operand", node->op_type,
                     what, ps);
    if (shape_src->rank == 1) {
      if (shape_src->dims[0] != data->dims[vary])
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "%s: %s %s parameters %s need %lld entries (data shape %s)", node->op_type,
                       what, form, ps, (long long)data->dims[vary], ds);
      sd[vary] = shape_src->dims[0];
    } else if (shape_src->rank == rank) {
      for (int i = 0; i < rank; i++) {
        int64_t s = shape_src->dims[i];
        if ((i == k_dim && s != 1) || (s != 1 && s != data->dims[i]))
          return wq_fail(err, WQ_ERR_SHAPE, node->name,
                         "%s: %s parameters %s are not %s for data shape %s (dim %d)",
                         node->op_type, what, ps, form, ds, i);
        sd[i] = s;
      }
    } else {
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: %s parameters %s must be a scalar, 1-D or of the data's rank %d",
                     node->op_type, what, ps, rank);
    }
  }
  return wq_qparams_init(qp, data->dtype, rank, data->dims, sd, NULL, present(scale) ? scale : NULL,
                         present(zero_point) ? zero_point : NULL, node->name, what, err);
}

wq_status wq_qconv_operand_qparams(wq_qparams *qp, const wq_node *node, const char *what, int axis,
                                   const wq_value *data, const wq_value *scale,
                                   const wq_value *zero_point, wq_error *err) {
  memset(qp, 0, sizeof *qp);
  const int64_t len = data->dims[axis];
  const wq_value *parts[2] = {present(scale) ? scale : NULL,
                              present(zero_point) ? zero_point : NULL};
  const char *names[2] = {"scale", "zero point"};
  bool per_channel = false;
  for (int p = 0; p < 2; p++) {
    const wq_value *v = parts[p];
    if (!v)
      continue;
    int64_t n = wq_value_numel(v);
    if (n < 0)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "%s: %s %s shape is unknown", node->op_type,
                     what, names[p]);
    if (n == 1)
      continue;
    if (v->rank != 1 || n != len) {
      char vs[96], ds[96];
      wq_dims_format(v->dims, v->rank, vs, sizeof vs);
      wq_dims_format(data->dims, data->rank, ds, sizeof ds);
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "%s: %s %s shape %s must be a scalar or 1-D of %lld (dim %d of %s)",
                     node->op_type, what, names[p], vs, (long long)len, axis, ds);
    }
    per_channel = true;
  }
  if (parts[0] && parts[0]->dtype != WQ_DT_FLOAT)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name, "%s: %s scale dtype %s is not supported",
                   node->op_type, what, wq_dtype_name(parts[0]->dtype));
  if (parts[1] && parts[1]->dtype != data->dtype)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: %s zero point dtype %s differs from the data's %s", node->op_type, what,
                   wq_dtype_name(parts[1]->dtype), wq_dtype_name(data->dtype));
  int64_t sd[WQ_MAX_RANK];
  for (int i = 0; i < WQ_MAX_RANK; i++)
    sd[i] = 1;
  int64_t count = per_channel ? len : 1;
  if (per_channel)
    sd[axis] = len;
  bool known = (!parts[0] || parts[0]->data) && (!parts[1] || parts[1]->data);
  if (!known) /* shapes only: unit scales and zero zero points stand in */
    return wq_qparams_init_arrays(qp, data->dtype, data->rank, data->dims, sd, NULL, NULL, NULL,
                                  node->name, what, err);
  size_t cap = count > 0 ? (size_t)count : 1;
  float *s = malloc(cap * sizeof *s);
  int32_t *z = malloc(cap * sizeof *z);
  wq_status st = WQ_OK;
  if (!s || !z) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory", node->op_type);
  } else {
    /* A scalar part is replicated per channel explicitly, never broadcast. */
    for (int64_t c = 0; c < count; c++) {
      s[c] =
          !parts[0] ? 1.0f : ((const float *)parts[0]->data)[wq_value_numel(parts[0]) == 1 ? 0 : c];
      z[c] = !parts[1] ? 0
                       : (int32_t)wq_value_get_int(parts[1], wq_value_numel(parts[1]) == 1 ? 0 : c);
    }
    st = wq_qparams_init_arrays(qp, data->dtype, data->rank, data->dims, sd, NULL, s, z, node->name,
                                what, err);
  }
  free(s);
  free(z);
  return st;
}

wq_status wq_quant_check_qlinear_inputs(const wq_node *node, const wq_value *in, const char *a,
                                        const char *b, wq_error *err) {
  char name[32];
  WQ_TRY(wq_quant_expect_dtype(node, a, in[0].dtype, WQ_QDT_8BIT, err));
  WQ_TRY(wq_quant_expect_dtype(node, b, in[3].dtype, WQ_QDT_8BIT, err));
  WQ_TRY(wq_quant_expect_dtype(node, "y_zero_point", in[7].dtype, WQ_QDT_8BIT, err));
  const char *operands[3] = {a, b, "y"};
  const int scale_inputs[3] = {1, 4, 6};
  for (int i = 0; i < 3; i++) {
    wq_format(name, sizeof name, "%s_scale", operands[i]);
    WQ_TRY(
        wq_quant_expect_dtype(node, name, in[scale_inputs[i]].dtype, WQ_QDT_BIT(WQ_DT_FLOAT), err));
  }
  wq_format(name, sizeof name, "%s_zero_point", a);
  WQ_TRY(wq_quant_expect_dtype(node, name, in[2].dtype, WQ_QDT_BIT(in[0].dtype), err));
  wq_format(name, sizeof name, "%s_zero_point", b);
  return wq_quant_expect_dtype(node, name, in[5].dtype, WQ_QDT_BIT(in[3].dtype), err);
}

const wq_value *wq_quant_optional_input(const wq_node *node, const wq_value *in, int i) {
  return node->n_inputs > i && wq_value_present(&in[i]) ? &in[i] : NULL;
}

wq_status wq_quant_check_integer_inputs(const wq_node *node, const wq_value *in, const char *a,
                                        const char *b, const char *a_zero_point,
                                        const char *b_zero_point, wq_error *err) {
  WQ_TRY(wq_quant_expect_dtype(node, a, in[0].dtype, WQ_QDT_8BIT, err));
  WQ_TRY(wq_quant_expect_dtype(node, b, in[1].dtype, WQ_QDT_8BIT, err));
  if (wq_quant_optional_input(node, in, 2))
    WQ_TRY(wq_quant_expect_dtype(node, a_zero_point, in[2].dtype, WQ_QDT_BIT(in[0].dtype), err));
  if (wq_quant_optional_input(node, in, 3))
    WQ_TRY(wq_quant_expect_dtype(node, b_zero_point, in[3].dtype, WQ_QDT_BIT(in[1].dtype), err));
  return WQ_OK;
}
