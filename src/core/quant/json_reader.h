/* A small strict JSON reader (RFC 8259) for the quantizer's config file:
 * the whole document becomes a tree of wq_json values, each remembering
 * the line and column where it starts so that later checks (wrong type,
 * value out of range) can point at it. Strict: no comments, no trailing
 * commas, no duplicate keys, no NaN/Infinity, nothing after the value. */
#ifndef WQ_QUANT_JSON_READER_H
#define WQ_QUANT_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/status.h"

/* Nesting deeper than this is an error (the reader recurses per level). */
#define WQ_JSON_MAX_DEPTH 64

typedef enum wq_json_type {
  WQ_JSON_NULL = 0,
  WQ_JSON_BOOL,
  WQ_JSON_NUMBER,
  WQ_JSON_STRING,
  WQ_JSON_ARRAY,
  WQ_JSON_OBJECT,
} wq_json_type;

typedef struct wq_json {
  wq_json_type type;
  int line, column; /* 1-based position of the value's first character */
  bool boolean;
  double number;         /* finite */
  char *string;          /* STRING: UTF-8, NUL-terminated (a \u0000 escape is rejected) */
  struct wq_json *items; /* ARRAY elements, or OBJECT member values */
  char **keys;           /* OBJECT member keys, parallel to items */
  int count;
} wq_json;

/* Parses text[0..n) into *out (caller frees with wq_json_free). Errors are
 * WQ_ERR_PARSE with a message starting "LINE:COLUMN: ". On failure *out is
 * left empty (a null value owning nothing). */
wq_status wq_json_parse(const char *text, size_t n, wq_json *out, wq_error *err);
void wq_json_free(wq_json *v);

/* Member `key` of an object, or NULL (also when v is not an object). */
const wq_json *wq_json_member(const wq_json *v, const char *key);

/* "null", "boolean", "number", "string", "array", "object". */
const char *wq_json_type_name(wq_json_type type);

#endif
