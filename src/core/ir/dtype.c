#include "dtype.h"

static const char *const dtype_names[WQ_DT_COUNT_] = {
    "undefined",      "float",    "uint8",        "int8",           "uint16",
    "int16",          "int32",    "int64",        "string",         "bool",
    "float16",        "double",   "uint32",       "uint64",         "complex64",
    "complex128",     "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
    "float8e5m2fnuz", "uint4",    "int4",         "float4e2m1",     "float8e8m0",
    "uint2",          "int2"};

const char *wq_dtype_name(int dtype) {
  if (dtype < 0 || dtype >= WQ_DT_COUNT_)
    return "invalid";
  return dtype_names[dtype];
}

size_t wq_dtype_size(int dtype) {
  switch (dtype) {
  case WQ_DT_FLOAT:
  case WQ_DT_INT32:
  case WQ_DT_UINT32: return 4;
  case WQ_DT_UINT8:
  case WQ_DT_INT8:
  case WQ_DT_BOOL: return 1;
  case WQ_DT_UINT16:
  case WQ_DT_INT16:
  case WQ_DT_FLOAT16:
  case WQ_DT_BFLOAT16: return 2;
  case WQ_DT_INT64:
  case WQ_DT_UINT64:
  case WQ_DT_DOUBLE: return 8;
  default: return 0;
  }
}

bool wq_dtype_supported(int dtype) {
  switch (dtype) {
  case WQ_DT_FLOAT:
  case WQ_DT_INT8:
  case WQ_DT_UINT8:
  case WQ_DT_INT16:
  case WQ_DT_UINT16:
  case WQ_DT_INT32:
  case WQ_DT_INT64:
  case WQ_DT_UINT32:
  case WQ_DT_UINT64:
  case WQ_DT_BOOL: return true;
  default: return false;
  }
}

bool wq_dtype_is_integer(int dtype) {
  switch (dtype) {
  case WQ_DT_INT8:
  case WQ_DT_UINT8:
  case WQ_DT_INT16:
  case WQ_DT_UINT16:
  case WQ_DT_INT32:
  case WQ_DT_INT64:
  case WQ_DT_UINT32:
  case WQ_DT_UINT64: return true;
  default: return false;
  }
}

bool wq_dtype_is_signed(int dtype) {
  return dtype == WQ_DT_INT8 || dtype == WQ_DT_INT16 || dtype == WQ_DT_INT32 ||
         dtype == WQ_DT_INT64 || dtype == WQ_DT_FLOAT || dtype == WQ_DT_DOUBLE;
}
