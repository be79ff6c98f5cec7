/* Ops that cut tensors apart or join them: Concat, Split, Slice, Gather.
 * Kernels copy bytes (element size only), so every dtype works. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/qeltwise.h"
#include "../kernels/ref/transpose_ref.h"
#include "tensor_util.h"

/* --------------------------------------------------------------- Concat */

static wq_status concat_axis(const wq_node *node, int rank, int *axis, wq_error *err) {
  int64_t a = 0;
  const bool required = node->opset >= 4; /* opset 1 defaulted axis to 1 */
  if (required && !wq_node_attr(node, "axis"))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Concat: attribute 'axis' missing");
  WQ_TRY(wq_attr_int(node, "axis", 1, &a, err));
  return wq_tu_axis(node, a, rank, "axis", axis, err);
}

static wq_status concat_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  int ref = -1;
  for (int i = 0; i < node->n_inputs; i++) {
    if (!wq_tu_has_input(node, in, i))
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Concat: input %d is empty", i);
    if (in[i].dtype != in[0].dtype)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Concat: input %d is %s but input 0 is %s", i,
                     wq_dtype_name(in[i].dtype), wq_dtype_name(in[0].dtype));
    if (ref < 0 && in[i].rank >= 0)
      ref = i;
  }
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  wq_tu_set_unknown(&out[0], in[0].dtype, -1);
  if (ref < 0)
    return WQ_OK;
  int rank = in[ref].rank, axis;
  if (rank == 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Concat: inputs must have rank >= 1");
  WQ_TRY(concat_axis(node, rank, &axis, err));
  out[0].rank = rank;
  int64_t total = 0;
  for (int i = 0; i < node->n_inputs; i++) {
    if (in[i].rank < 0) {
      total = -1;
      continue;
    }
    if (in[i].rank != rank)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Concat: input %d has rank %d, input %d %d", i,
                     in[i].rank, ref, rank);
    for (int d = 0; d < rank; d++) {
      int64_t v = in[i].dims[d];
      if (d == axis) {
        /* Saturate so absurd declared dims cannot overflow the sum;
         * wq_shape_check below rejects the result. */
        int64_t cap = WQ_MAX_ELEMENTS + 1;
        total = (total < 0 || v < 0) ? -1 : (v > cap - total ? cap : total + v);
        continue;
      }
      if (v < 0)
        continue;
      if (out[0].dims[d] >= 0 && out[0].dims[d] != v) {
        char a[160], b[160];
        wq_dims_format(in[i].dims, rank, a, sizeof a);
        wq_dims_format(in[ref].dims, rank, b, sizeof b);
        return wq_fail(err, WQ_ERR_SHAPE, node->name,
                       "Concat: input %d shape %s differs from %s outside axis %d", i, a, b, axis);
      }
      out[0].dims[d] = v;
    }
  }
  out[0].dims[axis] = total;
  if (wq_tu_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, rank, node->name, "Concat output", err));
  return WQ_OK;
}

static wq_status concat_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  int axis = 0;
  WQ_TRY(concat_axis(node, out[0].rank, &axis, err));
  /* Rows in memory: channels-last codes (the layout pass's) join along
   * their last dim when axis is the channels; the inputs share the layout. */
  const wq_value ym = wq_value_memory_order(&out[0]);
  const int at = wq_layout_memory_pos(out[0].layout, out[0].rank, axis);
  int64_t outer = wq_tu_prod(ym.dims, 0, at);
  int64_t inner = wq_tu_prod(ym.dims, at + 1, out[0].rank);
  unsigned char *dst = out[0].data;
  if (elem ==
      1) { /* codes: each input's rows in one strided copy (short rows of channels-last data) */
    const int64_t out_row = ym.dims[at] * inner;
    for (int i = 0; i < node->n_inputs; i++) {
      const int64_t block = in[i].dims[axis] * inner;
      if (block > 0)
        wq_copy_rows_q8(outer, block, block, out_row, NULL, false, in[i].data, dst);
      dst += block;
    }
    return WQ_OK;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < node->n_inputs; i++) {
      size_t block = (size_t)(in[i].dims[axis] * inner) * elem;
      if (block == 0)
        continue;
      wq_tu_copy(dst, (const unsigned char *)in[i].data + (size_t)o * block, block);
      dst += block;
    }
  return WQ_OK;
}

const wq_op wq_op_concat = {.int8 = WQ_INT8_CONCAT,
                            .layout = WQ_LCAP_AGNOSTIC_ALL,
                            .quant_role = WQ_QROLE_SHARED,
                            .op_type = "Concat",
                            .domain = "",
                            .min_opset = 1,
                            .min_inputs = 1,
                            .max_inputs = INT_MAX,
                            .min_outputs = 1,
                            .max_outputs = 1,
                            .infer = concat_infer,
                            .run = concat_run};

/* ---------------------------------------------------------------- Split */

/* Fills sizes[0..n_outputs) along the split axis of length `dim` (-1 when
 * unknown). *known is false when some size cannot be determined yet. */
static wq_status split_sizes(const wq_node *node, const wq_value *in, int64_t dim, int64_t *sizes,
                             bool *known, wq_error *err) {
  const int n = node->n_outputs;
  *known = dim >= 0;
  /* The sizes come from the 'split' attribute (opsets 2..12), the 'split'
   * input (opset 1 optionally, 13+), num_outputs (18+), or an equal split. */
  const wq_value *split_input = NULL;
  const int64_t *split_attr = NULL;
  size_t split_attr_n = 0;
  if ((node->opset < 2 || node->opset >= 13) && wq_tu_has_input(node, in, 1))
    split_input = &in[1];
  if (node->opset < 13)
    WQ_TRY(wq_attr_ints(node, "split", &split_attr, &split_attr_n, err));
  int64_t num_outputs = 0;
  if (node->opset >= 18)
    WQ_TRY(wq_attr_int(node, "num_outputs", 0, &num_outputs, err));

  if (split_input && split_input->rank == 1 && split_input->dims[0] == 0)
    split_input = NULL; /* an empty 'split' tensor means "not given" */
  if ((split_input || split_attr_n > 0) && num_outputs != 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "Split: 'split' and num_outputs are both given, only one is allowed");
  if (split_input || split_attr_n > 0) {
    int64_t len = (int64_t)split_attr_n;
    if (split_input) {
      WQ_TRY(wq_tu_int_list_len(node, split_input, "split", &len, err));
      if (split_input->data == NULL) {
        *known = false;
        for (int i = 0; i < n; i++)
          sizes[i] = -1;
        if (len >= 0 && len != n)
          return wq_fail(err, WQ_ERR_SHAPE, node->name,
                         "Split: 'split' has %lld entries for %d outputs", (long long)len, n);
        return WQ_OK;
      }
    }
    if (len != n)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Split: 'split' has %lld entries for %d outputs", (long long)len, n);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      sizes[i] = split_input ? wq_value_get_int(split_input, i) : split_attr[i];
      if (sizes[i] < 0)
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "Split: split[%d] = %lld is negative", i,
                       (long long)sizes[i]);
      if (sizes[i] > WQ_MAX_ELEMENTS)
        return wq_fail(err, WQ_ERR_SHAPE, node->name, "Split: split[%d] = %lld is too large", i,
                       (long long)sizes[i]);
      sum += sizes[i];
    }
    if (dim >= 0 && sum != dim)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Split: split sizes sum to %lld but the axis has %lld elements",
                     (long long)sum, (long long)dim);
    *known = true;
    return WQ_OK;
  }

  if (num_outputs != 0 && num_outputs != n)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Split: num_outputs=%lld but the node has %d",
                   (long long)num_outputs, n);
  for (int i = 0; i < n; i++)
    sizes[i] = -1;
  if (dim < 0)
    return WQ_OK;
  if (dim % n == 0) {
    for (int i = 0; i < n; i++)
      sizes[i] = dim / n;
    return WQ_OK;
  }
  if (num_outputs == 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Split: axis of %lld elements does not split evenly into %d outputs",
                   (long long)dim, n);
  /* num_outputs (opset 18): chunks of ceil(dim/n), the last one smaller. */
  int64_t chunk = (dim + n - 1) / n, last = dim - chunk * (n - 1);
  if (last < 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Split: axis of %lld elements cannot form %d chunks of %lld", (long long)dim, n,
                   (long long)chunk);
  for (int i = 0; i < n; i++)
    sizes[i] = i == n - 1 ? last : chunk;
  return WQ_OK;
}

static wq_status split_axis(const wq_node *node, int rank, int *axis, wq_error *err) {
  int64_t a = 0;
  WQ_TRY(wq_attr_int(node, "axis", 0, &a, err));
  return wq_tu_axis(node, a, rank, "axis", axis, err);
}

static wq_status split_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  for (int i = 0; i < node->n_outputs; i++)
    wq_tu_set_unknown(&out[i], in[0].dtype, in[0].rank);
  if (in[0].rank < 0)
    return WQ_OK;
  int axis = 0;
  WQ_TRY(split_axis(node, in[0].rank, &axis, err));
  int64_t *sizes = malloc((size_t)node->n_outputs * sizeof *sizes);
  if (!sizes)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "Split: out of memory");
  bool known = false;
  wq_status st = split_sizes(node, in, in[0].dims[axis], sizes, &known, err);
  if (st == WQ_OK)
    for (int i = 0; i < node->n_outputs; i++) {
      memcpy(out[i].dims, in[0].dims, sizeof out[i].dims);
      out[i].dims[axis] = sizes[i];
    }
  free(sizes);
  return st;
}

static wq_status split_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "input", &elem, err));
  int rank = in[0].rank, axis;
  WQ_TRY(split_axis(node, rank, &axis, err));
  int64_t outer = wq_tu_prod(in[0].dims, 0, axis);
  int64_t inner = wq_tu_prod(in[0].dims, axis + 1, rank);
  size_t in_block = (size_t)(in[0].dims[axis] * inner) * elem;
  size_t offset = 0; /* bytes into one outer block of the input */
  for (int i = 0; i < node->n_outputs; i++) {
    size_t block = (size_t)(out[i].dims[axis] * inner) * elem;
    if (offset + block > in_block)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Split: outputs exceed the input along axis %d",
                     axis);
    if (out[i].data && block > 0)
      for (int64_t o = 0; o < outer; o++)
        wq_tu_copy((unsigned char *)out[i].data + (size_t)o * block,
                   (const unsigned char *)in[0].data + (size_t)o * in_block + offset, block);
    offset += block;
  }
  return WQ_OK;
}

const wq_op wq_op_split = {.op_type = "Split",
                           .domain = "",
                           .min_opset = 1,
                           .min_inputs = 1,
                           .max_inputs = 2,
                           .min_outputs = 1,
                           .max_outputs = INT_MAX,
                           .infer = split_infer,
                           .run = split_run};

/* ---------------------------------------------------------------- Slice */

/* Per-dim view of the input that a slice selects: output dim i takes
 * input indices start[i] + k * step[i] for k < out_dims[i]. */
typedef struct {
  int64_t start[WQ_MAX_RANK];
  int64_t step[WQ_MAX_RANK];
} slice_plan;

/* Reads one of the list inputs of Slice (opset >= 10); *known false when
 * its data is not available. Absent optional inputs give *count = -2. */
static wq_status slice_list(const wq_node *node, const wq_value *in, int k, const char *what,
                            int64_t *vals, int *count, bool *known, wq_error *err) {
  if (!wq_tu_has_input(node, in, k)) {
    *count = -2;
    return WQ_OK;
  }
  if (in[k].data == NULL) {
    int64_t len = 0;
    WQ_TRY(wq_tu_int_list_len(node, &in[k], what, &len, err));
    *known = false;
    *count = -1;
    return WQ_OK;
  }
  return wq_tu_read_ints(node, &in[k], what, vals, WQ_MAX_RANK, count, err);
}

/* Output size of slicing a dim of length `dim` per the ONNX rules (negative
 * indices count from the back; positive steps clamp to [0, dim], negative
 * ones to [-1, dim-1]); *first is the first input index taken. */
static int64_t slice_dim(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first) {
  *first = 0;
  if (dim == 0)
    return 0;
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  int64_t n = 0;
  if (step > 0) {
    start = start < 0 ? 0 : (start > dim ? dim : start);
    end = end < 0 ? 0 : (end > dim ? dim : end);
    int64_t s = step > dim ? dim + 1 : step; /* larger steps take one element */
    n = end > start ? (end - start + s - 1) / s : 0;
  } else {
    start = start < 0 ? 0 : (start > dim - 1 ? dim - 1 : start);
    end = end < -1 ? -1 : (end > dim - 1 ? dim - 1 : end);
    int64_t s = step < -(dim + 1) ? dim + 1 : -step;
    n = start > end ? (start - end + s - 1) / s : 0;
  }
  *first = start;
  return n;
}

/* Computes the output shape into out (dims -1 where unknown) and, when
 * every parameter is known, the plan. */
static wq_status slice_prepare(const wq_node *node, const wq_value *in, wq_value *out,
                               slice_plan *plan, bool *known, wq_error *err) {
  int64_t starts[WQ_MAX_RANK], ends[WQ_MAX_RANK], axes[WQ_MAX_RANK], steps[WQ_MAX_RANK];
  int n_starts, n_ends, n_axes = -2, n_steps = -2;
  *known = true;
  if (node->opset < 10) {
    bool present = false;
    WQ_TRY(wq_tu_attr_ints(node, "starts", starts, WQ_MAX_RANK, &n_starts, &present, err));
    if (!present)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Slice: attribute 'starts' missing");
    WQ_TRY(wq_tu_attr_ints(node, "ends", ends, WQ_MAX_RANK, &n_ends, &present, err));
    if (!present)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Slice: attribute 'ends' missing");
    WQ_TRY(wq_tu_attr_ints(node, "axes", axes, WQ_MAX_RANK, &n_axes, &present, err));
    if (!present)
      n_axes = -2;
  } else {
    if (!wq_tu_has_input(node, in, 1) || !wq_tu_has_input(node, in, 2))
      return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name, "Slice: starts and ends are required");
    WQ_TRY(slice_list(node, in, 1, "starts", starts, &n_starts, known, err));
    WQ_TRY(slice_list(node, in, 2, "ends", ends, &n_ends, known, err));
    WQ_TRY(slice_list(node, in, 3, "axes", axes, &n_axes, known, err));
    WQ_TRY(slice_list(node, in, 4, "steps", steps, &n_steps, known, err));
  }
  int rank = in[0].rank;
  wq_tu_set_unknown(out, in[0].dtype, rank);
  if (rank < 0 || !*known) {
    *known = false;
    return WQ_OK;
  }
  if (n_ends != n_starts || (n_axes != -2 && n_axes != n_starts) ||
      (n_steps != -2 && n_steps != n_starts))
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "Slice: starts, ends, axes and steps have different lengths (%d, %d, %d, %d)",
                   n_starts, n_ends, n_axes == -2 ? n_starts : n_axes,
                   n_steps == -2 ? n_starts : n_steps);
  if (n_starts > rank)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Slice: %d starts for an input of rank %d",
                   n_starts, rank);
  if (n_axes == -2)
    for (int i = 0; i < n_starts; i++)
      axes[i] = i;
  WQ_TRY(wq_tu_unique_axes(node, axes, n_starts, rank, "axes", err));

  for (int d = 0; d < rank; d++) {
    out->dims[d] = in[0].dims[d];
    plan->start[d] = 0;
    plan->step[d] = 1;
  }
  for (int i = 0; i < n_starts; i++) {
    int a = (int)axes[i];
    int64_t step = n_steps == -2 ? 1 : steps[i];
    if (step == 0)
      return wq_fail(err, WQ_ERR_SHAPE, node->name, "Slice: step for axis %d is 0", a);
    plan->step[a] = step;
    if (in[0].dims[a] < 0) {
      out->dims[a] = -1;
      *known = false;
      continue;
    }
    out->dims[a] = slice_dim(in[0].dims[a], starts[i], ends[i], step, &plan->start[a]);
  }
  if (!wq_tu_shape_known(&in[0]))
    *known = false;
  return WQ_OK;
}

static wq_status slice_infer(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  slice_plan plan;
  bool known = false;
  return slice_prepare(node, in, &out[0], &plan, &known, err);
}

static wq_status slice_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  slice_plan plan;
  bool known = false;
  wq_value shape;
  WQ_TRY(slice_prepare(node, in, &shape, &plan, &known, err));
  int rank = in[0].rank;
  if (!known || shape.rank != out[0].rank ||
      memcmp(shape.dims, out[0].dims, (size_t)rank * sizeof shape.dims[0]) != 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Slice: output shape disagrees with the inputs");
  if (wq_value_numel(&out[0]) == 0)
    return WQ_OK;
  if (rank == 0) {
    wq_tu_copy(out[0].data, in[0].data, elem);
    return WQ_OK;
  }
  int64_t stride[WQ_MAX_RANK]; /* input strides in elements */
  stride[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; d--)
    stride[d] = stride[d + 1] * in[0].dims[d + 1];
  /* Walk the output rows (all dims but the last) with an odometer. */
  int64_t idx[WQ_MAX_RANK] = {0};
  int64_t rows = wq_tu_prod(out[0].dims, 0, rank - 1), row_len = out[0].dims[rank - 1];
  unsigned char *dst = out[0].data;
  const unsigned char *src = in[0].data;
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = plan.start[rank - 1];
    for (int d = 0; d < rank - 1; d++)
      off += (plan.start[d] + idx[d] * plan.step[d]) * stride[d];
    if (plan.step[rank - 1] == 1)
      memcpy(dst, src + (size_t)off * elem, (size_t)row_len * elem);
    else
      wq_ref_gather_strided(dst, src + (size_t)off * elem, row_len, plan.step[rank - 1], elem);
    dst += (size_t)row_len * elem;
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < out[0].dims[d])
        break;
      idx[d] = 0;
    }
  }
  return WQ_OK;
}

const wq_op wq_op_slice = {.int8 = WQ_INT8_MOVE,
                           .quant_role = WQ_QROLE_SHARED,
                           .op_type = "Slice",
                           .domain = "",
                           .min_opset = 1,
                           .min_inputs = 1,
                           .max_inputs = 5,
                           .min_outputs = 1,
                           .max_outputs = 1,
                           .infer = slice_infer,
                           .run = slice_run};

/* --------------------------------------------------------------- Gather */

static wq_status gather_axis(const wq_node *node, int rank, int *axis, wq_error *err) {
  int64_t a = 0;
  WQ_TRY(wq_attr_int(node, "axis", 0, &a, err));
  return wq_tu_axis(node, a, rank, "axis", axis, err);
}

/* Every index must lie in [-dim, dim-1]; names the first that does not. */
static wq_status gather_check_indices(const wq_node *node, const wq_value *indices, int64_t dim,
                                      int axis, wq_error *err) {
  int64_t n = wq_value_numel(indices);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = wq_value_get_int(indices, i);
    if (v < -dim || v >= dim)
      return wq_fail(err, WQ_ERR_SHAPE, node->name,
                     "Gather: index %lld (at position %lld) is out of range for axis %d of "
                     "size %lld",
                     (long long)v, (long long)i, axis, (long long)dim);
  }
  return WQ_OK;
}

static wq_status gather_infer(const wq_node *node, const wq_value *in, wq_value *out,
                              wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  if (in[1].dtype != WQ_DT_INT64 && in[1].dtype != WQ_DT_INT32)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Gather: indices must be int32 or int64, got %s",
                   wq_dtype_name(in[1].dtype));
  wq_tu_set_unknown(&out[0], in[0].dtype, -1);
  int r = in[0].rank, q = in[1].rank;
  if (r == 0)
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "Gather: data must have rank >= 1");
  if (r < 0 || q < 0)
    return WQ_OK;
  int axis = 0;
  WQ_TRY(gather_axis(node, r, &axis, err));
  if (r - 1 + q > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                   "Gather: output rank %d exceeds the maximum %d", r - 1 + q, WQ_MAX_RANK);
  out[0].rank = r - 1 + q;
  int k = 0;
  for (int d = 0; d < axis; d++)
    out[0].dims[k++] = in[0].dims[d];
  for (int d = 0; d < q; d++)
    out[0].dims[k++] = in[1].dims[d];
  for (int d = axis + 1; d < r; d++)
    out[0].dims[k++] = in[0].dims[d];
  if (in[1].data && wq_tu_shape_known(&in[1]) && in[0].dims[axis] >= 0)
    WQ_TRY(gather_check_indices(node, &in[1], in[0].dims[axis], axis, err));
  if (wq_tu_shape_known(&out[0]))
    WQ_TRY(wq_shape_check(out[0].dims, out[0].rank, node->name, "Gather output", err));
  return WQ_OK;
}

static wq_status gather_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  size_t elem = 0;
  WQ_TRY(wq_tu_elem_size(node, in[0].dtype, "data", &elem, err));
  int r = in[0].rank, axis;
  WQ_TRY(gather_axis(node, r, &axis, err));
  int64_t dim = in[0].dims[axis];
  WQ_TRY(gather_check_indices(node, &in[1], dim, axis, err));
  int64_t outer = wq_tu_prod(in[0].dims, 0, axis);
  size_t inner = (size_t)wq_tu_prod(in[0].dims, axis + 1, r) * elem;
  int64_t n = wq_value_numel(&in[1]);
  if (wq_value_numel(&out[0]) == 0)
    return WQ_OK;
  unsigned char *dst = out[0].data;
  const unsigned char *src = in[0].data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < n; i++) {
      int64_t v = wq_value_get_int(&in[1], i);
      if (v < 0)
        v += dim;
      wq_tu_copy(dst, src + (size_t)(o * dim + v) * inner, inner);
      dst += inner;
    }
  return WQ_OK;
}

const wq_op wq_op_gather = {.int8 = WQ_INT8_MOVE,
                            .quant_role = WQ_QROLE_SHARED,
                            .op_type = "Gather",
                            .domain = "",
                            .min_opset = 1,
                            .min_inputs = 2,
                            .max_inputs = 2,
                            .min_outputs = 1,
                            .max_outputs = 1,
                            .infer = gather_infer,
                            .run = gather_run};
