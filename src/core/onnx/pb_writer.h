/* A growable encoder for the protobuf wire format (the counterpart of
 * pb_reader.h). Values are appended to one owned buffer; a nested message is
 * opened with wq_pb_begin (its tag is written and a one-byte length slot
 * reserved) and closed with wq_pb_end, which writes the length and moves the
 * payload forward when the length needs more than one byte. Every varint is
 * minimal; negative int64/int32 values take 10 bytes, as protobuf defines.
 *
 * Failure is sticky: the first failed write (out of memory, a message above
 * protobuf's 2 GiB limit, nesting past WQ_PB_MAX_DEPTH, an unbalanced end)
 * is remembered, later writes do nothing and return the same status, and
 * wq_pb_writer_finish reports it with a message. The writer holds no global
 * state; wq_pb_writer_free releases the buffer. */
#ifndef WQ_ONNX_PB_WRITER_H
#define WQ_ONNX_PB_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "pb_reader.h"

typedef struct {
  uint8_t *buf; /* owned */
  size_t len, cap;
  size_t open[WQ_PB_MAX_DEPTH]; /* offsets of the open messages' length slots */
  int depth;
  wq_status status;   /* WQ_OK until a write fails */
  const char *reason; /* what failed (static text), for wq_pb_writer_finish */
} wq_pb_writer;

void wq_pb_writer_init(wq_pb_writer *w);
void wq_pb_writer_free(wq_pb_writer *w);

/* Hands the encoded bytes to the caller (*out malloc'ed, caller frees; never
 * NULL on success, also for an empty message) and resets the writer. Fails
 * with the sticky status, or WQ_ERR_INVALID_ARG when messages are still open;
 * then *out is NULL and the writer is freed. */
wq_status wq_pb_writer_finish(wq_pb_writer *w, uint8_t **out, size_t *n, wq_error *err);

/* Bytes the minimal varint encoding of v takes (1..10). */
size_t wq_pb_varint_size(uint64_t v);
/* Encodes v minimally at p, which has room for 10 bytes; returns the bytes
 * written. */
size_t wq_pb_encode_varint(uint8_t *p, uint64_t v);

/* Raw primitives (no tag). */
wq_status wq_pb_write_varint_raw(wq_pb_writer *w, uint64_t v);
wq_status wq_pb_write_tag(wq_pb_writer *w, uint32_t field, wq_pb_wire wire);

/* Tagged fields. int32 values are sign-extended to 64 bits (protobuf's int32
 * encoding), so -1 takes 10 bytes like an int64. */
wq_status wq_pb_write_int64(wq_pb_writer *w, uint32_t field, int64_t v);
wq_status wq_pb_write_int32(wq_pb_writer *w, uint32_t field, int32_t v);
wq_status wq_pb_write_float(wq_pb_writer *w, uint32_t field, float v);      /* fixed32 */
wq_status wq_pb_write_fixed64(wq_pb_writer *w, uint32_t field, uint64_t v); /* fixed64 */
wq_status wq_pb_write_bytes(wq_pb_writer *w, uint32_t field, const void *p, size_t n);
/* A NUL-terminated string as bytes (s may be NULL: written as ""). */
wq_status wq_pb_write_string(wq_pb_writer *w, uint32_t field, const char *s);

/* Repeated scalars, one tag per element: what proto2 files such as
 * onnx.proto declare (no [packed=true]); readers accept both forms. */
wq_status wq_pb_write_repeated_int64(wq_pb_writer *w, uint32_t field, const int64_t *v, size_t n);
wq_status wq_pb_write_repeated_float(wq_pb_writer *w, uint32_t field, const float *v, size_t n);

/* Opens an embedded message in `field`; every begin needs its end. */
wq_status wq_pb_begin(wq_pb_writer *w, uint32_t field);
wq_status wq_pb_end(wq_pb_writer *w);

#endif
