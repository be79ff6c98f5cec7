#include "pb_reader.h"

#include <stdlib.h>
#include <string.h>

static const char *wire_name(int wire) {
  switch (wire) {
  case WQ_PB_VARINT: return "varint";
  case WQ_PB_FIXED64: return "fixed64";
  case WQ_PB_LEN: return "length-delimited";
  case WQ_PB_FIXED32: return "fixed32";
  case 3:
  case 4: return "group";
  default: return "invalid";
  }
}

void wq_pb_init(wq_pb_reader *r, const uint8_t *bytes, size_t n, const char *message) {
  r->pos = bytes;
  r->end = bytes ? bytes + n : bytes;
  r->depth = 0;
  r->message = message;
}

bool wq_pb_at_end(const wq_pb_reader *r) { return r->pos >= r->end; }

static size_t remaining(const wq_pb_reader *r) { return (size_t)(r->end - r->pos); }

wq_status wq_pb_read_varint(wq_pb_reader *r, uint64_t *out, wq_error *err) {
  uint64_t v = 0;
  for (int i = 0; i < 10; i++) {
    if (r->pos >= r->end)
      return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: data ends inside a varint", r->message);
    uint8_t b = *r->pos++;
    /* The 10th byte may only contribute bit 63. */
    if (i == 9 && (b & 0x7e))
      return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: varint overflows 64 bits", r->message);
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return WQ_OK;
    }
  }
  return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: varint is longer than 10 bytes", r->message);
}

wq_status wq_pb_read_fixed32(wq_pb_reader *r, uint32_t *out, wq_error *err) {
  if (remaining(r) < 4)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: data ends inside a fixed32 value", r->message);
  const uint8_t *p = r->pos;
  *out = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  r->pos += 4;
  return WQ_OK;
}

wq_status wq_pb_read_fixed64(wq_pb_reader *r, uint64_t *out, wq_error *err) {
  if (remaining(r) < 8)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: data ends inside a fixed64 value", r->message);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | r->pos[i];
  *out = v;
  r->pos += 8;
  return WQ_OK;
}

wq_status wq_pb_next_field(wq_pb_reader *r, wq_pb_field *f, wq_error *err) {
  uint64_t tag;
  WQ_TRY(wq_pb_read_varint(r, &tag, err));
  uint64_t number = tag >> 3;
  int wire = (int)(tag & 7);
  if (number == 0 || number > 0x1fffffff)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: invalid field number %llu", r->message,
                   (unsigned long long)number);
  if (wire != WQ_PB_VARINT && wire != WQ_PB_FIXED64 && wire != WQ_PB_LEN && wire != WQ_PB_FIXED32)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: field %llu has unsupported wire type %d (%s)",
                   r->message, (unsigned long long)number, wire, wire_name(wire));
  f->number = (uint32_t)number;
  f->wire = (wq_pb_wire)wire;
  return WQ_OK;
}

/* Reads a length prefix and checks the payload lies inside the message. */
static wq_status read_length(wq_pb_reader *r, const char *field, size_t *n, wq_error *err) {
  uint64_t len;
  WQ_TRY(wq_pb_read_varint(r, &len, err));
  if (len > remaining(r))
    return wq_fail(err, WQ_ERR_PARSE, NULL,
                   "%s.%s: length %llu runs past the end of the data (%zu bytes left)", r->message,
                   field, (unsigned long long)len, remaining(r));
  *n = (size_t)len;
  return WQ_OK;
}

wq_status wq_pb_skip(wq_pb_reader *r, const wq_pb_field *f, wq_error *err) {
  switch (f->wire) {
  case WQ_PB_VARINT: {
    uint64_t v;
    return wq_pb_read_varint(r, &v, err);
  }
  case WQ_PB_FIXED64: {
    uint64_t v;
    return wq_pb_read_fixed64(r, &v, err);
  }
  case WQ_PB_FIXED32: {
    uint32_t v;
    return wq_pb_read_fixed32(r, &v, err);
  }
  case WQ_PB_LEN: {
    size_t n;
    WQ_TRY(read_length(r, "(unknown field)", &n, err));
    r->pos += n;
    return WQ_OK;
  }
  }
  return wq_fail(err, WQ_ERR_PARSE, NULL, "%s: cannot skip wire type %d", r->message, (int)f->wire);
}

static wq_status wrong_wire(const wq_pb_reader *r, const wq_pb_field *f, const char *field,
                            const char *expected, wq_error *err) {
  return wq_fail(err, WQ_ERR_PARSE, NULL,
                 "%s.%s (field %u): wire type %d (%s) where %s was expected", r->message, field,
                 f->number, (int)f->wire, wire_name(f->wire), expected);
}

wq_status wq_pb_get_int64(wq_pb_reader *r, const wq_pb_field *f, const char *field, int64_t *out,
                          wq_error *err) {
  if (f->wire != WQ_PB_VARINT)
    return wrong_wire(r, f, field, "varint", err);
  uint64_t v;
  WQ_TRY(wq_pb_read_varint(r, &v, err));
  *out = (int64_t)v;
  return WQ_OK;
}

wq_status wq_pb_get_int32(wq_pb_reader *r, const wq_pb_field *f, const char *field, int32_t *out,
                          wq_error *err) {
  if (f->wire != WQ_PB_VARINT)
    return wrong_wire(r, f, field, "varint", err);
  uint64_t v;
  WQ_TRY(wq_pb_read_varint(r, &v, err));
  *out = (int32_t)(uint32_t)v;
  return WQ_OK;
}

wq_status wq_pb_get_float(wq_pb_reader *r, const wq_pb_field *f, const char *field, float *out,
                          wq_error *err) {
  if (f->wire != WQ_PB_FIXED32)
    return wrong_wire(r, f, field, "fixed32", err);
  uint32_t bits;
  WQ_TRY(wq_pb_read_fixed32(r, &bits, err));
  memcpy(out, &bits, sizeof *out);
  return WQ_OK;
}

wq_status wq_pb_get_bytes(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                          const uint8_t **out, size_t *n, wq_error *err) {
  if (f->wire != WQ_PB_LEN)
    return wrong_wire(r, f, field, "length-delimited", err);
  WQ_TRY(read_length(r, field, n, err));
  *out = r->pos;
  r->pos += *n;
  return WQ_OK;
}

wq_status wq_pb_get_message(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                            const char *sub_message, wq_pb_reader *sub, wq_error *err) {
  const uint8_t *p;
  size_t n;
  WQ_TRY(wq_pb_get_bytes(r, f, field, &p, &n, err));
  if (r->depth + 1 > WQ_PB_MAX_DEPTH)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "%s.%s: messages nested deeper than %d levels",
                   r->message, field, WQ_PB_MAX_DEPTH);
  wq_pb_init(sub, p, n, sub_message);
  sub->depth = r->depth + 1;
  return WQ_OK;
}

void wq_pb_array_init(wq_pb_array *a, size_t elem_size) {
  a->data = NULL;
  a->count = 0;
  a->cap = 0;
  a->elem_size = elem_size;
}

void wq_pb_array_free(wq_pb_array *a) {
  free(a->data);
  a->data = NULL;
  a->count = a->cap = 0;
}

/* Makes room for `extra` more elements. */
static wq_status array_reserve(wq_pb_array *a, size_t extra, wq_error *err) {
  if (extra <= a->cap - a->count)
    return WQ_OK;
  size_t want = a->count + extra;
  size_t cap = a->cap ? a->cap : 16;
  while (cap < want) {
    if (cap > SIZE_MAX / 2 / a->elem_size)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "repeated field too large");
    cap *= 2;
  }
  if (cap > SIZE_MAX / a->elem_size)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "repeated field too large");
  void *d = realloc(a->data, cap * a->elem_size);
  if (!d)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading a repeated field");
  a->data = d;
  a->cap = cap;
  return WQ_OK;
}

static wq_status append(wq_pb_array *a, const void *v, wq_error *err) {
  WQ_TRY(array_reserve(a, 1, err));
  memcpy((uint8_t *)a->data + a->count * a->elem_size, v, a->elem_size);
  a->count++;
  return WQ_OK;
}

/* Shared by the varint-typed repeated readers; `as_int32` truncates. */
static wq_status repeated_varint(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                 wq_pb_array *a, bool as_int32, wq_error *err) {
  if (f->wire == WQ_PB_VARINT) {
    uint64_t v;
    WQ_TRY(wq_pb_read_varint(r, &v, err));
    int32_t v32 = (int32_t)(uint32_t)v;
    return append(a, as_int32 ? (const void *)&v32 : (const void *)&v, err);
  }
  if (f->wire != WQ_PB_LEN)
    return wrong_wire(r, f, field, "varint or packed varints", err);
  size_t n;
  WQ_TRY(read_length(r, field, &n, err));
  wq_pb_reader packed = *r;
  packed.end = r->pos + n;
  r->pos += n;
  /* Each packed varint takes at least one byte; reserving up front bounds the
   * allocation by the input size. */
  WQ_TRY(array_reserve(a, n, err));
  while (!wq_pb_at_end(&packed)) {
    uint64_t v;
    WQ_TRY(wq_pb_read_varint(&packed, &v, err));
    int32_t v32 = (int32_t)(uint32_t)v;
    WQ_TRY(append(a, as_int32 ? (const void *)&v32 : (const void *)&v, err));
  }
  return WQ_OK;
}

wq_status wq_pb_get_repeated_int64(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err) {
  return repeated_varint(r, f, field, a, false, err);
}

wq_status wq_pb_get_repeated_int32(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err) {
  return repeated_varint(r, f, field, a, true, err);
}

/* Fixed-width repeated values: `width` is 4 or 8 bytes, little-endian. */
static wq_status repeated_fixed(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                wq_pb_array *a, size_t width, wq_error *err) {
  wq_pb_wire single = width == 4 ? WQ_PB_FIXED32 : WQ_PB_FIXED64;
  if (f->wire == single) {
    if (width == 4) {
      uint32_t v;
      WQ_TRY(wq_pb_read_fixed32(r, &v, err));
      return append(a, &v, err);
    }
    uint64_t v;
    WQ_TRY(wq_pb_read_fixed64(r, &v, err));
    return append(a, &v, err);
  }
  if (f->wire != WQ_PB_LEN)
    return wrong_wire(r, f, field, width == 4 ? "fixed32 or packed" : "fixed64 or packed", err);
  size_t n;
  WQ_TRY(read_length(r, field, &n, err));
  if (n % width != 0)
    return wq_fail(err, WQ_ERR_PARSE, NULL,
                   "%s.%s: packed length %zu is not a multiple of the %zu-byte element size",
                   r->message, field, n, width);
  size_t count = n / width;
  if (count == 0)
    return WQ_OK; /* an empty run: nothing to append (a->data may be NULL) */
  WQ_TRY(array_reserve(a, count, err));
  uint8_t *dst = (uint8_t *)a->data + a->count * a->elem_size;
  /* The wire format is little-endian; assemble values byte by byte so the
   * reader works on any host. */
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = r->pos + i * width;
    if (width == 4) {
      uint32_t v =
          (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
      memcpy(dst + i * 4, &v, 4);
    } else {
      uint64_t v = 0;
      for (int k = 7; k >= 0; k--)
        v = v << 8 | p[k];
      memcpy(dst + i * 8, &v, 8);
    }
  }
  a->count += count;
  r->pos += n;
  return WQ_OK;
}

wq_status wq_pb_get_repeated_float(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                   wq_pb_array *a, wq_error *err) {
  return repeated_fixed(r, f, field, a, 4, err);
}

wq_status wq_pb_get_repeated_double(wq_pb_reader *r, const wq_pb_field *f, const char *field,
                                    wq_pb_array *a, wq_error *err) {
  return repeated_fixed(r, f, field, a, 8, err);
}
