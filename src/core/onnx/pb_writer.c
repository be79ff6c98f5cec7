#include "pb_writer.h"

#include <stdlib.h>
#include <string.h>

/* Protobuf parsers reject messages of 2 GiB and more. */
#define PB_MAX_MESSAGE ((size_t)INT32_MAX)
#define PB_MAX_FIELD 0x1fffffffu

void wq_pb_writer_init(wq_pb_writer *w) {
  memset(w, 0, sizeof *w);
  w->status = WQ_OK;
}

void wq_pb_writer_free(wq_pb_writer *w) {
  free(w->buf);
  wq_pb_writer_init(w);
}

static wq_status fail(wq_pb_writer *w, wq_status st, const char *reason) {
  if (w->status == WQ_OK) {
    w->status = st;
    w->reason = reason;
  }
  return w->status;
}

/* Makes room for `extra` more bytes. */
static wq_status reserve(wq_pb_writer *w, size_t extra) {
  if (w->status != WQ_OK)
    return w->status;
  if (extra <= w->cap - w->len)
    return WQ_OK;
  if (extra > PB_MAX_MESSAGE || w->len > PB_MAX_MESSAGE - extra)
    return fail(w, WQ_ERR_UNSUPPORTED, "the encoded model would exceed protobuf's 2 GiB limit");
  size_t want = w->len + extra;
  size_t cap = w->cap ? w->cap : 256;
  while (cap < want)
    cap *= 2; /* want < 2^31, so this cannot overflow */
  uint8_t *buf = realloc(w->buf, cap);
  if (!buf)
    return fail(w, WQ_ERR_OUT_OF_MEMORY, "out of memory while encoding");
  w->buf = buf;
  w->cap = cap;
  return WQ_OK;
}

size_t wq_pb_varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

size_t wq_pb_encode_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

wq_status wq_pb_write_varint_raw(wq_pb_writer *w, uint64_t v) {
  WQ_TRY(reserve(w, 10));
  w->len += wq_pb_encode_varint(w->buf + w->len, v);
  return WQ_OK;
}

static wq_status put_raw(wq_pb_writer *w, const void *p, size_t n) {
  WQ_TRY(reserve(w, n));
  if (n)
    memcpy(w->buf + w->len, p, n);
  w->len += n;
  return WQ_OK;
}

wq_status wq_pb_write_tag(wq_pb_writer *w, uint32_t field, wq_pb_wire wire) {
  if (field == 0 || field > PB_MAX_FIELD)
    return fail(w, WQ_ERR_INVALID_ARG, "invalid protobuf field number");
  return wq_pb_write_varint_raw(w, (uint64_t)field << 3 | (uint64_t)wire);
}

wq_status wq_pb_write_int64(wq_pb_writer *w, uint32_t field, int64_t v) {
  WQ_TRY(wq_pb_write_tag(w, field, WQ_PB_VARINT));
  return wq_pb_write_varint_raw(w, (uint64_t)v);
}

wq_status wq_pb_write_int32(wq_pb_writer *w, uint32_t field, int32_t v) {
  return wq_pb_write_int64(w, field, (int64_t)v);
}

wq_status wq_pb_write_float(wq_pb_writer *w, uint32_t field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
                   (uint8_t)(bits >> 24)};
  WQ_TRY(wq_pb_write_tag(w, field, WQ_PB_FIXED32));
  return put_raw(w, le, sizeof le);
}

wq_status wq_pb_write_fixed64(wq_pb_writer *w, uint32_t field, uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (uint8_t)(v >> (8 * i));
  WQ_TRY(wq_pb_write_tag(w, field, WQ_PB_FIXED64));
  return put_raw(w, le, sizeof le);
}

wq_status wq_pb_write_bytes(wq_pb_writer *w, uint32_t field, const void *p, size_t n) {
  if (n > PB_MAX_MESSAGE)
    return fail(w, WQ_ERR_UNSUPPORTED, "the encoded model would exceed protobuf's 2 GiB limit");
  WQ_TRY(wq_pb_write_tag(w, field, WQ_PB_LEN));
  WQ_TRY(wq_pb_write_varint_raw(w, (uint64_t)n));
  return put_raw(w, p, n);
}

wq_status wq_pb_write_string(wq_pb_writer *w, uint32_t field, const char *s) {
  return wq_pb_write_bytes(w, field, s ? s : "", s ? strlen(s) : 0);
}

wq_status wq_pb_write_repeated_int64(wq_pb_writer *w, uint32_t field, const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    WQ_TRY(wq_pb_write_int64(w, field, v[i]));
  return w->status;
}

wq_status wq_pb_write_repeated_float(wq_pb_writer *w, uint32_t field, const float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    WQ_TRY(wq_pb_write_float(w, field, v[i]));
  return w->status;
}

wq_status wq_pb_begin(wq_pb_writer *w, uint32_t field) {
  if (w->status != WQ_OK)
    return w->status;
  if (w->depth >= WQ_PB_MAX_DEPTH)
    return fail(w, WQ_ERR_UNSUPPORTED, "messages nested too deeply");
  WQ_TRY(wq_pb_write_tag(w, field, WQ_PB_LEN));
  WQ_TRY(reserve(w, 1));
  w->open[w->depth++] = w->len;
  w->buf[w->len++] = 0; /* length slot, filled by wq_pb_end */
  return WQ_OK;
}

wq_status wq_pb_end(wq_pb_writer *w) {
  if (w->status != WQ_OK)
    return w->status;
  if (w->depth == 0)
    return fail(w, WQ_ERR_INVALID_ARG, "wq_pb_end without an open message");
  size_t slot = w->open[--w->depth];
  size_t payload = w->len - slot - 1;
  if (payload > PB_MAX_MESSAGE)
    return fail(w, WQ_ERR_UNSUPPORTED, "the encoded model would exceed protobuf's 2 GiB limit");
  size_t width = wq_pb_varint_size(payload);
  if (width > 1) {
    /* The length needs more than its one reserved byte: shift the payload. */
    WQ_TRY(reserve(w, width - 1));
    memmove(w->buf + slot + width, w->buf + slot + 1, payload);
    w->len += width - 1;
  }
  wq_pb_encode_varint(w->buf + slot, (uint64_t)payload);
  return WQ_OK;
}

wq_status wq_pb_writer_finish(wq_pb_writer *w, uint8_t **out, size_t *n, wq_error *err) {
  *out = NULL;
  *n = 0;
  if (w->status == WQ_OK && w->depth != 0)
    fail(w, WQ_ERR_INVALID_ARG, "a nested message was not closed");
  if (w->status == WQ_OK && !w->buf)
    (void)reserve(w, 1); /* an empty message still gets a buffer (a failure is recorded) */
  if (w->status != WQ_OK) {
    wq_status st = w->status;
    wq_fail(err, st, NULL, "protobuf writer: %s", w->reason ? w->reason : "failed");
    wq_pb_writer_free(w);
    return st;
  }
  *out = w->buf;
  *n = w->len;
  w->buf = NULL;
  wq_pb_writer_free(w);
  return WQ_OK;
}
