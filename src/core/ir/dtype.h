/* Element types. The numeric values are ONNX's TensorProto.DataType so the
 * reader can map them without a table. */
#ifndef WQ_IR_DTYPE_H
#define WQ_IR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
  WQ_DT_UNDEFINED = 0,
  WQ_DT_FLOAT = 1,
  WQ_DT_UINT8 = 2,
  WQ_DT_INT8 = 3,
  WQ_DT_UINT16 = 4,
  WQ_DT_INT16 = 5,
  WQ_DT_INT32 = 6,
  WQ_DT_INT64 = 7,
  WQ_DT_STRING = 8,
  WQ_DT_BOOL = 9,
  WQ_DT_FLOAT16 = 10,
  WQ_DT_DOUBLE = 11,
  WQ_DT_UINT32 = 12,
  WQ_DT_UINT64 = 13,
  WQ_DT_COMPLEX64 = 14,
  WQ_DT_COMPLEX128 = 15,
  WQ_DT_BFLOAT16 = 16,
  WQ_DT_FLOAT8E4M3FN = 17,
  WQ_DT_FLOAT8E4M3FNUZ = 18,
  WQ_DT_FLOAT8E5M2 = 19,
  WQ_DT_FLOAT8E5M2FNUZ = 20,
  WQ_DT_UINT4 = 21,
  WQ_DT_INT4 = 22,
  WQ_DT_FLOAT4E2M1 = 23,
  WQ_DT_FLOAT8E8M0 = 24,
  WQ_DT_UINT2 = 25,
  WQ_DT_INT2 = 26,
  WQ_DT_COUNT_ = 27
} wq_dtype;

/* ONNX's name for the type ("float", "int8", ...); "unknown(N)" style never
 * happens: out-of-range values give "invalid". */
const char *wq_dtype_name(int dtype);

/* Bytes per element for the types we can hold in memory, 0 otherwise
 * (string, sub-byte and unknown types). */
size_t wq_dtype_size(int dtype);

/* True for the types the runtime executes: float32, int8, uint8, int16,
 * uint16, int32, int64, uint32, uint64, bool. */
bool wq_dtype_supported(int dtype);

bool wq_dtype_is_integer(int dtype); /* signed or unsigned integer, not bool */
bool wq_dtype_is_signed(int dtype);

#endif
