/* A strict reader for the protobuf wire format. It never trusts a length:
 * every read is bounds-checked against the enclosing message, varints longer
 * than 10 bytes (or overflowing 64 bits) are rejected and nested messages
 * carry a depth so recursive schemas (graphs inside attributes) cannot
 * exhaust the stack. Errors name the message and field being read
 * ("GraphProto.node: ..."), so callers pass those names in. */
#ifndef WQ_ONNX_PB_READER_H
#define WQ_ONNX_PB_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/status.h"

/* Deepest message nesting accepted (ModelProto is depth 0). A graph inside
 * a node attribute sits 3 levels below its parent graph. */
#define WQ_PB_MAX_DEPTH 64

typedef enum { WQ_PB_VARINT = 0, WQ_PB_FIXED64 = 1, WQ_PB_LEN = 2, WQ_PB_FIXED32 = 5 } wq_pb_wire;

typedef struct {
  const uint8_t *pos;
  const uint8_t *end;
  int depth;
  const char *message; /* message type being read, for error messages */
} wq_pb_reader;

typedef struct {
  uint32_t number;
  wq_pb_wire wire;
} wq_pb_field;

/* A growable array of fixed-size elements, filled by the repeated readers. */
typedef struct {
  void *data;
  size_t count;
  size_t cap;
  size_t elem_size;
} wq_pb_array;

void wq_pb_init(wq_pb_reader *r, const uint8_t *bytes, size_t n, const char *message);
bool wq_pb_at_end(const wq_pb_reader *r);

/* Reads the next field's tag. Field number 0, numbers above 2^29-1 and the
 * wire types 3, 4 (deprecated groups), 6 and 7 are parse errors. */
wq_status wq_pb_next_field(wq_pb_reader *r, wq_pb_field *f, wq_error *err);
/* Skips the value of a field whose tag was just read (unknown fields). */
wq_status wq_pb_skip(wq_pb_reader *r, const wq_pb_field *f, wq_error *err);

/* Raw primitives (no wire-type check). */
wq_status wq_pb_read_varint(wq_pb_reader *r, uint64_t *out, wq_error *err);
wq_status wq_pb_read_fixed32(wq_pb_reader *r, uint32_t *out, wq_error *err);
wq_status wq_pb_read_fixed64(wq_pb_reader *r, uint64_t *out, wq_error *err);

/* Typed readers for a field whose tag was just read. Each checks the wire
 * type and fails with WQ_ERR_PARSE naming "<message>.<field>" otherwise. */
wq_status wq_pb_get_int64(wq_pb_reader *r, const wq_pb_field *f, const char *field, int64_t *out,
                          wq_error *err);
/* int32 fields are varints truncated to 32 bits, as protobuf defines. */
wq_status wq_pb_get_int32(wq_pb_reader *r, const wq_pb_field *f, const char *field, int32_t *out,
                          wq_error *err);
wq_status wq_pb_get_float(wq_pb_reader *r, const wq_pb_field *f, const char *field, float *out,
                          wq_error *err);
/* Length-delimited bytes: *out points into the input buffer. */
wq_status wq_pb_get_bytes(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                          const uint8_t **out, size_t *n, wq_error *err);
/* Length-delimited embedded message: *sub reads it, one level deeper. */
wq_status wq_pb_get_message(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                            const char *sub_message, wq_pb_reader *sub, wq_error *err);

/* Repeated scalars, accepted both packed (one length-delimited run) and
 * unpacked (one tag per element); values are appended to `a`, whose
 * elem_size must be set (8 for int64/uint64/double, 4 for int32/float). */
wq_status wq_pb_get_repeated_int64(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err);
wq_status wq_pb_get_repeated_int32(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err);
wq_status wq_pb_get_repeated_float(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err);
wq_status wq_pb_get_repeated_double(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                    wq_pb_array *a, wq_error *err);

void wq_pb_array_init(wq_pb_array *a, size_t elem_size);
void wq_pb_array_free(wq_pb_array *a);

#endif
