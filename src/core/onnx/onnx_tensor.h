/* TensorProto decoding shared by the model importer and wq_tensor_decode. */
#ifndef WQ_ONNX_TENSOR_H
#define WQ_ONNX_TENSOR_H

#include <stdint.h>

#include "../ir/graph.h"
#include "pb_reader.h"

/* Bits one element of `dtype` occupies in ONNX's packed storage (4 for
 * int4, 2 for int2, 128 for complex128); 0 for string/undefined/invalid. */
int wq_onnx_dtype_bits(int dtype);

/* Bytes that `numel` elements of `dtype` take (sub-byte types packed, last
 * byte padded). */
uint64_t wq_onnx_storage_bytes(int dtype, int64_t numel);

/* Parses the TensorProto that `r` spans into *out (zeroed first): name,
 * dtype, rank/dims and data (owned, little-endian, never NULL; nbytes is
 * the exact packed size). `what` prefixes error messages ("initializer",
 * "attribute tensor"...). Rejects external data, segments and strings
 * (WQ_ERR_UNSUPPORTED), negative or overflowing dims and data whose length
 * disagrees with the shape. On failure *out is cleared. */
wq_status wq_onnx_read_tensor(wq_pb_reader *r, const char *what, wq_tensor *out, wq_error *err);

#endif
