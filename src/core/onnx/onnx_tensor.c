#include "onnx_tensor.h"
#include "../ir/format.h"

#include <stdlib.h>
#include <string.h>

/* raw_data is little-endian and is copied as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader assumes a little-endian host"
#endif

/* TensorProto field numbers (onnx.proto). */
enum {
  TP_DIMS = 1,
  TP_DATA_TYPE = 2,
  TP_SEGMENT = 3,
  TP_FLOAT_DATA = 4,
  TP_INT32_DATA = 5,
  TP_STRING_DATA = 6,
  TP_INT64_DATA = 7,
  TP_NAME = 8,
  TP_RAW_DATA = 9,
  TP_DOUBLE_DATA = 10,
  TP_UINT64_DATA = 11,
  TP_EXTERNAL_DATA = 13,
  TP_DATA_LOCATION = 14
};

enum { TP_LOCATION_EXTERNAL = 1 };

int wq_onnx_dtype_bits(int dtype) {
  switch (dtype) {
  case WQ_DT_UINT2:
  case WQ_DT_INT2: return 2;
  case WQ_DT_UINT4:
  case WQ_DT_INT4:
  case WQ_DT_FLOAT4E2M1: return 4;
  case WQ_DT_UINT8:
  case WQ_DT_INT8:
  case WQ_DT_BOOL:
  case WQ_DT_FLOAT8E4M3FN:
  case WQ_DT_FLOAT8E4M3FNUZ:
  case WQ_DT_FLOAT8E5M2:
  case WQ_DT_FLOAT8E5M2FNUZ:
  case WQ_DT_FLOAT8E8M0: return 8;
  case WQ_DT_UINT16:
  case WQ_DT_INT16:
  case WQ_DT_FLOAT16:
  case WQ_DT_BFLOAT16: return 16;
  case WQ_DT_FLOAT:
  case WQ_DT_INT32:
  case WQ_DT_UINT32: return 32;
  case WQ_DT_INT64:
  case WQ_DT_UINT64:
  case WQ_DT_DOUBLE:
  case WQ_DT_COMPLEX64: return 64;
  case WQ_DT_COMPLEX128: return 128;
  default: return 0;
  }
}

uint64_t wq_onnx_storage_bytes(int dtype, int64_t numel) {
  if (numel <= 0)
    return 0;
  return ((uint64_t)numel * (uint64_t)wq_onnx_dtype_bits(dtype) + 7) / 8;
}

/* Which typed field carries a dtype's values when raw_data is absent. */
static int typed_field_for(int dtype) {
  switch (dtype) {
  case WQ_DT_FLOAT:
  case WQ_DT_COMPLEX64: return TP_FLOAT_DATA;
  case WQ_DT_DOUBLE:
  case WQ_DT_COMPLEX128: return TP_DOUBLE_DATA;
  case WQ_DT_INT64: return TP_INT64_DATA;
  case WQ_DT_UINT32:
  case WQ_DT_UINT64: return TP_UINT64_DATA;
  case WQ_DT_STRING: return TP_STRING_DATA;
  default: return TP_INT32_DATA; /* every other type, sub-byte ones packed per entry */
  }
}

static const char *typed_field_name(int field) {
  switch (field) {
  case TP_FLOAT_DATA: return "float_data";
  case TP_INT32_DATA: return "int32_data";
  case TP_STRING_DATA: return "string_data";
  case TP_INT64_DATA: return "int64_data";
  case TP_DOUBLE_DATA: return "double_data";
  case TP_UINT64_DATA: return "uint64_data";
  default: return "?";
  }
}

/* The values a typed field must hold for `numel` elements: one per element,
 * two per complex element, one packed byte per entry for sub-byte types. */
static uint64_t typed_count_needed(int dtype, int64_t numel) {
  int bits = wq_onnx_dtype_bits(dtype);
  if (dtype == WQ_DT_COMPLEX64 || dtype == WQ_DT_COMPLEX128)
    return (uint64_t)numel * 2;
  if (bits < 8)
    return wq_onnx_storage_bytes(dtype, numel);
  return (uint64_t)numel;
}

typedef struct {
  const uint8_t *name;
  size_t name_len;
  int32_t data_type;
  bool has_data_type;
  wq_pb_array dims;    /* int64 */
  wq_pb_array floats;  /* float_data */
  wq_pb_array int32s;  /* int32_data */
  wq_pb_array int64s;  /* int64_data */
  wq_pb_array doubles; /* double_data */
  wq_pb_array uint64s; /* uint64_data */
  size_t n_strings;
  const uint8_t *raw;
  size_t raw_len;
  bool has_raw;
  bool external;
  bool segmented;
} tensor_fields;

static void fields_free(tensor_fields *tf) {
  wq_pb_array_free(&tf->dims);
  wq_pb_array_free(&tf->floats);
  wq_pb_array_free(&tf->int32s);
  wq_pb_array_free(&tf->int64s);
  wq_pb_array_free(&tf->doubles);
  wq_pb_array_free(&tf->uint64s);
}

static wq_status scan_fields(wq_pb_reader *r, tensor_fields *tf, wq_error *err) {
  while (!wq_pb_at_end(r)) {
    wq_pb_field f;
    WQ_TRY(wq_pb_next_field(r, &f, err));
    switch (f.number) {
    case TP_DIMS: WQ_TRY(wq_pb_get_repeated_int64(r, &f, "dims", &tf->dims, err)); break;
    case TP_DATA_TYPE:
      WQ_TRY(wq_pb_get_int32(r, &f, "data_type", &tf->data_type, err));
      tf->has_data_type = true;
      break;
    case TP_SEGMENT: {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(r, &f, "segment", "TensorProto.Segment", &sub, err));
      tf->segmented = true;
      break;
    }
    case TP_FLOAT_DATA:
      WQ_TRY(wq_pb_get_repeated_float(r, &f, "float_data", &tf->floats, err));
      break;
    case TP_INT32_DATA:
      WQ_TRY(wq_pb_get_repeated_int32(r, &f, "int32_data", &tf->int32s, err));
      break;
    case TP_STRING_DATA: {
      const uint8_t *p;
      size_t n;
      WQ_TRY(wq_pb_get_bytes(r, &f, "string_data", &p, &n, err));
      tf->n_strings++;
      break;
    }
    case TP_INT64_DATA:
      WQ_TRY(wq_pb_get_repeated_int64(r, &f, "int64_data", &tf->int64s, err));
      break;
    case TP_NAME: WQ_TRY(wq_pb_get_bytes(r, &f, "name", &tf->name, &tf->name_len, err)); break;
    case TP_RAW_DATA:
      WQ_TRY(wq_pb_get_bytes(r, &f, "raw_data", &tf->raw, &tf->raw_len, err));
      tf->has_raw = true;
      break;
    case TP_DOUBLE_DATA:
      WQ_TRY(wq_pb_get_repeated_double(r, &f, "double_data", &tf->doubles, err));
      break;
    case TP_UINT64_DATA:
      WQ_TRY(wq_pb_get_repeated_int64(r, &f, "uint64_data", &tf->uint64s, err));
      break;
    case TP_EXTERNAL_DATA: {
      wq_pb_reader sub;
      WQ_TRY(wq_pb_get_message(r, &f, "external_data", "StringStringEntryProto", &sub, err));
      tf->external = true;
      break;
    }
    case TP_DATA_LOCATION: {
      int32_t loc;
      WQ_TRY(wq_pb_get_int32(r, &f, "data_location", &loc, err));
      if (loc == TP_LOCATION_EXTERNAL)
        tf->external = true;
      break;
    }
    default: WQ_TRY(wq_pb_skip(r, &f, err)); break;
    }
  }
  return WQ_OK;
}

/* Copies the typed field's values into dst (storage_bytes long). */
static void convert_typed(const tensor_fields *tf, int dtype, uint8_t *dst, uint64_t count) {
  switch (typed_field_for(dtype)) {
  case TP_FLOAT_DATA: memcpy(dst, tf->floats.data, count * 4); return;
  case TP_DOUBLE_DATA: memcpy(dst, tf->doubles.data, count * 8); return;
  case TP_INT64_DATA: memcpy(dst, tf->int64s.data, count * 8); return;
  case TP_UINT64_DATA: {
    const uint64_t *src = tf->uint64s.data;
    if (dtype == WQ_DT_UINT64) {
      memcpy(dst, src, count * 8);
      return;
    }
    for (uint64_t i = 0; i < count; i++) {
      uint32_t v = (uint32_t)src[i];
      memcpy(dst + i * 4, &v, 4);
    }
    return;
  }
  default: break;
  }
  /* int32_data: 32-bit ints as is; 16-bit types keep their low 16 bits (the
   * float16/bfloat16 bit pattern); everything 8-bit or packed keeps one byte. */
  const int32_t *src = tf->int32s.data;
  int bits = wq_onnx_dtype_bits(dtype);
  for (uint64_t i = 0; i < count; i++) {
    if (bits == 32) {
      memcpy(dst + i * 4, &src[i], 4);
    } else if (bits == 16) {
      uint16_t v = (uint16_t)src[i];
      memcpy(dst + i * 2, &v, 2);
    } else if (dtype == WQ_DT_BOOL) {
      dst[i] = src[i] != 0;
    } else {
      dst[i] = (uint8_t)src[i];
    }
  }
}

static size_t typed_count_of(const tensor_fields *tf, int field) {
  switch (field) {
  case TP_FLOAT_DATA: return tf->floats.count;
  case TP_INT32_DATA: return tf->int32s.count;
  case TP_STRING_DATA: return tf->n_strings;
  case TP_INT64_DATA: return tf->int64s.count;
  case TP_DOUBLE_DATA: return tf->doubles.count;
  case TP_UINT64_DATA: return tf->uint64s.count;
  default: return 0;
  }
}

static wq_status build_tensor(const tensor_fields *tf, const char *what, wq_tensor *out,
                              wq_error *err) {
  if (tf->name_len && memchr(tf->name, '\0', tf->name_len))
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "%s name contains a NUL byte", what);
  out->name = malloc(tf->name_len + 1);
  if (!out->name)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  if (tf->name_len)
    memcpy(out->name, tf->name, tf->name_len);
  out->name[tf->name_len] = '\0';

  char label[160];
  if (tf->name_len)
    wq_format(label, sizeof label, "tensor '%s'", out->name);
  else
    wq_format(label, sizeof label, "unnamed %s", what);

  if (tf->external)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "%s uses external data, which is not supported",
                   label);
  if (tf->segmented)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "%s is segmented, which is not supported", label);
  int dtype = tf->data_type;
  if (!tf->has_data_type || dtype <= WQ_DT_UNDEFINED || dtype >= WQ_DT_COUNT_)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "%s has invalid data_type %d", label,
                   (int)tf->data_type);
  if (dtype == WQ_DT_STRING)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "%s: dtype string is not supported", label);
  out->dtype = (wq_dtype)dtype;

  if (tf->dims.count > WQ_MAX_RANK)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "%s has rank %zu, above the maximum %d", label,
                   tf->dims.count, WQ_MAX_RANK);
  const int64_t *dims = tf->dims.data;
  out->rank = (int)tf->dims.count;
  for (int i = 0; i < out->rank; i++)
    out->dims[i] = dims[i];
  WQ_TRY(wq_shape_check(out->dims, out->rank, NULL, label, err));
  int64_t numel = 1;
  for (int i = 0; i < out->rank; i++)
    numel *= out->dims[i];

  char shape[128];
  wq_dims_format(out->dims, out->rank, shape, sizeof shape);
  uint64_t need = wq_onnx_storage_bytes(dtype, numel);

  /* Exactly one source of data: raw_data, the dtype's typed field, or none
   * (then the tensor must be empty). */
  int field = typed_field_for(dtype);
  const int typed_fields[] = {TP_FLOAT_DATA, TP_INT32_DATA,  TP_STRING_DATA,
                              TP_INT64_DATA, TP_DOUBLE_DATA, TP_UINT64_DATA};
  for (size_t k = 0; k < sizeof typed_fields / sizeof typed_fields[0]; k++) {
    int other = typed_fields[k];
    if (typed_count_of(tf, other) == 0)
      continue;
    if (tf->has_raw)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL, "%s has both raw_data and %s", label,
                     typed_field_name(other));
    if (other != field)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                     "%s of dtype %s stores values in %s (expected %s)", label,
                     wq_dtype_name(dtype), typed_field_name(other), typed_field_name(field));
  }

  uint64_t have_count = typed_count_of(tf, field);
  if (tf->has_raw) {
    if ((uint64_t)tf->raw_len != need)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                     "%s: raw_data has %zu bytes but shape %s of %s needs %llu bytes", label,
                     tf->raw_len, shape, wq_dtype_name(dtype), (unsigned long long)need);
  } else {
    uint64_t want_count = typed_count_needed(dtype, numel);
    if (have_count != want_count)
      return wq_fail(err, WQ_ERR_INVALID_MODEL, NULL,
                     "%s: %s has %llu values but shape %s of %s needs %llu", label,
                     typed_field_name(field), (unsigned long long)have_count, shape,
                     wq_dtype_name(dtype), (unsigned long long)want_count);
  }

  if (need > SIZE_MAX - 1)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "%s is too large", label);
  /* Constant data is never NULL, even for an empty tensor. */
  out->data = malloc(need ? (size_t)need : 1);
  if (!out->data)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory for %s (%llu bytes)", label,
                   (unsigned long long)need);
  out->nbytes = (size_t)need;
  if (tf->has_raw) {
    if (need)
      memcpy(out->data, tf->raw, (size_t)need);
  } else if (have_count) {
    convert_typed(tf, dtype, out->data, have_count);
  }
  out->is_constant = true;
  return WQ_OK;
}

wq_status wq_onnx_read_tensor(wq_pb_reader *r, const char *what, wq_tensor *out, wq_error *err) {
  memset(out, 0, sizeof *out);
  out->rank = -1;
  tensor_fields tf;
  memset(&tf, 0, sizeof tf);
  wq_pb_array_init(&tf.dims, sizeof(int64_t));
  wq_pb_array_init(&tf.floats, sizeof(float));
  wq_pb_array_init(&tf.int32s, sizeof(int32_t));
  wq_pb_array_init(&tf.int64s, sizeof(int64_t));
  wq_pb_array_init(&tf.doubles, sizeof(double));
  wq_pb_array_init(&tf.uint64s, sizeof(uint64_t));
  wq_status st = scan_fields(r, &tf, err);
  if (st == WQ_OK)
    st = build_tensor(&tf, what, out, err);
  fields_free(&tf);
  if (st != WQ_OK)
    wq_tensor_clear(out);
  return st;
}
