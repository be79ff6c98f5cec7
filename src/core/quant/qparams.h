/* wq_qparams: the one affine quantization-parameter form for every
 * granularity (DESIGN.md "The IR", seed 002).
 *
 * real = (q - zero_point) * scale, with (scale, zero_point) looked up per
 * element. scale and zero_point are tensors of the data's rank; their shape
 * encodes the blocks: along dim i, `block[i]` consecutive data elements share
 * one parameter, so scale_dims[i] == ceil(data_dims[i] / block[i]).
 *   per-tensor   scale_dims all 1           (block = data dims)
 *   per-channel  one scale dim > 1          (block 1 along that dim)
 *   per-group /  several dims > 1 or        (block > 1 along some dim)
 *   blockwise    blocks > 1
 * Lookups are explicit block arithmetic, never broadcasting: seed 002's bug
 * was a [K] factor broadcast against a [K,1] scale into a [K,K] product. */
#ifndef WQ_QUANT_QPARAMS_H
#define WQ_QUANT_QPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/value.h"

typedef struct wq_qparams {
  wq_dtype dtype; /* int8, uint8, int16, uint16, or int32 (biases) */
  int32_t qmin, qmax;
  int rank;                        /* rank of the quantized data */
  int64_t data_dims[WQ_MAX_RANK];  /* -1 allowed only where scale_dims is 1 */
  int64_t scale_dims[WQ_MAX_RANK]; /* shape of scale and zero_point */
  int64_t block[WQ_MAX_RANK];      /* data elements per parameter along each dim */
  int64_t scale_strides[WQ_MAX_RANK];
  int64_t count;       /* number of (scale, zero_point) pairs */
  float *scale;        /* owned, `count` values; NULL when only shapes are known */
  int32_t *zero_point; /* owned, `count` values; NULL when only shapes are known */
} wq_qparams;

/* The integer range of a quantized dtype. Fails (WQ_ERR_UNSUPPORTED, message
 * "dtype <name> is not supported as a quantized type") for other types. */
wq_status wq_qdtype_range(wq_dtype dtype, int32_t *qmin, int32_t *qmax, const char *node,
                          const char *what, wq_error *err);

/* The native form. scale_dims has `rank` entries. block may be NULL: then
 * block[i] = data_dims[i] / scale_dims[i], which must divide exactly. A given
 * block must satisfy scale_dims[i] == ceil(data_dims[i] / block[i]) (ONNX's
 * blocked quantization allows a shorter last block).
 * scale: float32 value with prod(scale_dims) elements (its own shape is not
 * used), or NULL for all-ones scales (zero-point-only ops such as
 * MatMulInteger). zero_point: same count and dtype == `dtype`, or NULL / an
 * omitted value for all zeros. A value whose data is NULL gives a qparams
 * with shapes only (scale/zero_point NULL) and skips value validation.
 * Validates everything (see wq_qparams_validate). `what` names the tensor in
 * errors ("QuantizeLinear: y_scale"). On failure *qp holds nothing. */
wq_status wq_qparams_init(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                          const int64_t *scale_dims, const int64_t *block, const wq_value *scale,
                          const wq_value *zero_point, const char *node, const char *what,
                          wq_error *err);

/* Same from plain arrays (zero_point may be NULL for zeros). */
wq_status wq_qparams_init_arrays(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                                 const int64_t *scale_dims, const int64_t *block,
                                 const float *scale, const int32_t *zero_point, const char *node,
                                 const char *what, wq_error *err);

/* One (scale, zero_point) for the whole tensor. */
wq_status wq_qparams_init_per_tensor(wq_qparams *qp, wq_dtype dtype, int rank,
                                     const int64_t *data_dims, float scale, int32_t zero_point,
                                     const char *node, const char *what, wq_error *err);

/* ONNX QuantizeLinear/DequantizeLinear form: scale (and zero_point, same
 * shape) is a scalar or 1-element tensor (per-tensor), a 1-D tensor of
 * data_dims[axis] elements (per-axis, block_size 0), or a tensor of the
 * data's rank equal to data_dims except along axis, where it has
 * ceil(data_dims[axis] / block_size) elements (opset 21 blocked). axis may be
 * negative (counted from the back). */
wq_status wq_qparams_from_onnx(wq_qparams *qp, wq_dtype dtype, int rank, const int64_t *data_dims,
                               const wq_value *scale, const wq_value *zero_point, int64_t axis,
                               int64_t block_size, const char *node, const char *what,
                               wq_error *err);

/* Checks the invariants: dtype range; scale_dims and blocks consistent with
 * the data shape; every scale finite, positive and not subnormal; every zero
 * point within [qmin, qmax]. Names `what` and the offending index/value. */
wq_status wq_qparams_validate(const wq_qparams *qp, const char *node, const char *what,
                              wq_error *err);

/* Releases the arrays; *qp is then empty (safe to free twice). */
void wq_qparams_free(wq_qparams *qp);

/* Deep copy into *dst (which must not hold arrays). */
wq_status wq_qparams_clone(wq_qparams *dst, const wq_qparams *src, wq_error *err);

bool wq_qparams_is_per_tensor(const wq_qparams *qp);

/* 0 when every scale dim is 1, the dim when exactly one scale dim is > 1,
 * otherwise -1 (no single channel axis: per-group or blockwise). */
int wq_qparams_channel_axis(const wq_qparams *qp);

/* Index into scale/zero_point of the data element at `coords`. */
int64_t wq_qparams_index_at(const wq_qparams *qp, const int64_t *coords);

/* Index into scale/zero_point of the data element with row-major linear
 * index `elem` over data_dims (every dim with scale_dims > 1, and every
 * dim after it, must be known). */
int64_t wq_qparams_index_of(const wq_qparams *qp, int64_t elem);

/* The (scale, zero_point) of data element `elem` (linear, row-major). */
void wq_qparams_at(const wq_qparams *qp, int64_t elem, float *scale, int32_t *zero_point);

/* Short description: "int8 per-tensor scale=0.05 zp=-3",
 * "uint8 per-channel axis 0 [16] ...", "int8 blockwise scale [4,2] block [1,16]". */
void wq_qparams_describe(const wq_qparams *qp, char *buf, size_t cap);

#endif
