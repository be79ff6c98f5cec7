/* Recursive-descent JSON reader; see json_reader.h. */
#include "json_reader.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *text;
  size_t n, pos;
  int line, column; /* of text[pos]; columns count characters, not bytes */
  wq_error *err;
} json_cursor;

static wq_status fail_at(json_cursor *c, int line, int column, const char *what) {
  return wq_fail(c->err, WQ_ERR_PARSE, NULL, "%d:%d: %s", line, column, what);
}

static wq_status fail_here(json_cursor *c, const char *what) {
  return fail_at(c, c->line, c->column, what);
}

static int peek(const json_cursor *c) {
  return c->pos < c->n ? (unsigned char)c->text[c->pos] : -1;
}

static void advance(json_cursor *c) {
  unsigned char ch = (unsigned char)c->text[c->pos++];
  if (ch == '\n') {
    c->line++;
    c->column = 1;
  } else if ((ch & 0xC0) != 0x80) { /* not a UTF-8 continuation byte */
    c->column++;
  }
}

static void skip_space(json_cursor *c) {
  for (int ch = peek(c); ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; ch = peek(c))
    advance(c);
}

static bool take_literal(json_cursor *c, const char *word) {
  size_t len = strlen(word);
  if (c->n - c->pos < len || memcmp(c->text + c->pos, word, len) != 0)
    return false;
  for (size_t i = 0; i < len; i++)
    advance(c);
  return true;
}

/* Growable byte buffer for a string being decoded. */
typedef struct {
  char *data;
  size_t len, cap;
} byte_buf;

static bool buf_push(byte_buf *b, const char *bytes, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 32;
    while (b->len + n + 1 > cap)
      cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown)
      return false;
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, bytes, n);
  b->len += n;
  b->data[b->len] = '\0';
  return true;
}

static size_t utf8_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the well-formed UTF-8 sequence starting at s[0..avail), or 0. */
static size_t utf8_sequence_length(const unsigned char *s, size_t avail) {
  size_t len = s[0] >= 0xF0 && s[0] <= 0xF4   ? 4
               : s[0] >= 0xE0                 ? 3
               : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
                                              : 0;
  if (len == 0 || len > avail)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  /* Overlong 3/4-byte forms, UTF-16 surrogates and code points past U+10FFFF. */
  if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) ||
      (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))
    return 0;
  return len;
}

static int hex_digit(int ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* Four hex digits after "\u"; the cursor stands on the first. */
static wq_status read_hex4(json_cursor *c, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit(peek(c));
    if (d < 0)
      return fail_here(c, "\\u needs four hex digits");
    v = v * 16 + (uint32_t)d;
    advance(c);
  }
  *out = v;
  return WQ_OK;
}

static wq_status read_escape(json_cursor *c, byte_buf *b, int line, int column) {
  int ch = peek(c);
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *hit = ch > 0 ? strchr(from, ch) : NULL;
  if (hit) {
    advance(c);
    return buf_push(b, &to[hit - from], 1)
               ? WQ_OK
               : wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
  }
  if (ch != 'u')
    return fail_at(c, line, column, "unknown escape in a string");
  advance(c);
  uint32_t cp;
  WQ_TRY(read_hex4(c, &cp));
  if (cp >= 0xDC00 && cp <= 0xDFFF)
    return fail_at(c, line, column, "unpaired low surrogate \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t low;
    if (!take_literal(c, "\\u"))
      return fail_at(c, line, column, "high surrogate \\u escape without its low half");
    WQ_TRY(read_hex4(c, &low));
    if (low < 0xDC00 || low > 0xDFFF)
      return fail_at(c, line, column, "high surrogate \\u escape without its low half");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  if (cp == 0)
    return fail_at(c, line, column, "\\u0000 is not allowed in a string");
  char utf8[4];
  return buf_push(b, utf8, utf8_encode(cp, utf8))
             ? WQ_OK
             : wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
}

/* A string; the cursor stands on the opening quote. *out is malloc'ed. */
static wq_status read_string(json_cursor *c, char **out) {
  byte_buf b = {0};
  wq_status st = WQ_OK;
  int start_line = c->line, start_column = c->column;
  advance(c);
  if (!buf_push(&b, "", 0))
    return wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
  for (;;) {
    int ch = peek(c);
    if (ch < 0) {
      st = fail_at(c, start_line, start_column, "unterminated string");
      break;
    }
    if (ch == '"') {
      advance(c);
      break;
    }
    if (ch < 0x20) {
      st = fail_here(c, "control character in a string (escape it)");
      break;
    }
    if (ch == '\\') {
      int line = c->line, column = c->column;
      advance(c);
      st = read_escape(c, &b, line, column);
      if (st != WQ_OK)
        break;
      continue;
    }
    size_t len = 1;
    if (ch >= 0x80) {
      len = utf8_sequence_length((const unsigned char *)c->text + c->pos, c->n - c->pos);
      if (len == 0) {
        st = fail_here(c, "invalid UTF-8 in a string");
        break;
      }
    }
    if (!buf_push(&b, c->text + c->pos, len)) {
      st = wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
      break;
    }
    for (size_t i = 0; i < len; i++)
      advance(c);
  }
  if (st != WQ_OK) {
    free(b.data);
    return st;
  }
  *out = b.data;
  return WQ_OK;
}

static bool is_digit(int ch) { return ch >= '0' && ch <= '9'; }

/* A number per the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static wq_status read_number(json_cursor *c, wq_json *v) {
  size_t start = c->pos;
  if (peek(c) == '-')
    advance(c);
  if (peek(c) == '0') {
    advance(c);
    if (is_digit(peek(c)))
      return fail_here(c, "numbers cannot have leading zeros");
  } else if (is_digit(peek(c))) {
    while (is_digit(peek(c)))
      advance(c);
  } else {
    return fail_here(c, "expected a digit");
  }
  if (peek(c) == '.') {
    advance(c);
    if (!is_digit(peek(c)))
      return fail_here(c, "expected a digit after the decimal point");
    while (is_digit(peek(c)))
      advance(c);
  }
  if (peek(c) == 'e' || peek(c) == 'E') {
    advance(c);
    if (peek(c) == '+' || peek(c) == '-')
      advance(c);
    if (!is_digit(peek(c)))
      return fail_here(c, "expected a digit in the exponent");
    while (is_digit(peek(c)))
      advance(c);
  }
  size_t len = c->pos - start;
  char *copy = malloc(len + 1); /* the text is not NUL-terminated */
  if (!copy)
    return wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
  memcpy(copy, c->text + start, len);
  copy[len] = '\0';
  v->number = strtod(copy, NULL);
  free(copy);
  if (!isfinite(v->number))
    return fail_at(c, v->line, v->column, "number out of range");
  v->type = WQ_JSON_NUMBER;
  return WQ_OK;
}

static wq_status read_value(json_cursor *c, wq_json *v, int depth);

/* Appends a zeroed slot to an array/object value; returns it or NULL. */
static wq_json *grow(wq_json *v, int *cap, bool with_key) {
  if (v->count == *cap) {
    int next = *cap ? *cap * 2 : 4;
    wq_json *items = realloc(v->items, (size_t)next * sizeof *items);
    if (!items)
      return NULL;
    v->items = items;
    if (with_key) {
      char **keys = realloc(v->keys, (size_t)next * sizeof *keys);
      if (!keys)
        return NULL;
      v->keys = keys;
    }
    *cap = next;
  }
  wq_json *slot = &v->items[v->count];
  memset(slot, 0, sizeof *slot);
  return slot;
}

static wq_status read_array(json_cursor *c, wq_json *v, int depth) {
  int cap = 0;
  v->type = WQ_JSON_ARRAY;
  advance(c);
  skip_space(c);
  if (peek(c) == ']') {
    advance(c);
    return WQ_OK;
  }
  for (;;) {
    wq_json *slot = grow(v, &cap, false);
    if (!slot)
      return wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
    v->count++;
    WQ_TRY(read_value(c, slot, depth + 1));
    skip_space(c);
    if (peek(c) == ']') {
      advance(c);
      return WQ_OK;
    }
    if (peek(c) != ',')
      return fail_here(c, "expected ',' or ']' in an array");
    advance(c);
  }
}

static wq_status read_object(json_cursor *c, wq_json *v, int depth) {
  int cap = 0;
  v->type = WQ_JSON_OBJECT;
  advance(c);
  skip_space(c);
  if (peek(c) == '}') {
    advance(c);
    return WQ_OK;
  }
  for (;;) {
    skip_space(c);
    if (peek(c) != '"')
      return fail_here(c, "expected a string key in an object");
    int key_line = c->line, key_column = c->column;
    wq_json *slot = grow(v, &cap, true);
    if (!slot)
      return wq_fail(c->err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading JSON");
    char *key;
    WQ_TRY(read_string(c, &key));
    if (wq_json_member(v, key)) {
      wq_status st = wq_fail(c->err, WQ_ERR_PARSE, NULL, "%d:%d: duplicate key \"%s\"", key_line,
                             key_column, key);
      free(key);
      return st;
    }
    v->keys[v->count] = key;
    v->count++; /* owned from here on, even if its value fails */
    skip_space(c);
    if (peek(c) != ':')
      return fail_here(c, "expected ':' after an object key");
    advance(c);
    WQ_TRY(read_value(c, slot, depth + 1));
    skip_space(c);
    if (peek(c) == '}') {
      advance(c);
      return WQ_OK;
    }
    if (peek(c) != ',')
      return fail_here(c, "expected ',' or '}' in an object");
    advance(c);
  }
}

static wq_status read_value(json_cursor *c, wq_json *v, int depth) {
  skip_space(c);
  v->line = c->line;
  v->column = c->column;
  if (depth > WQ_JSON_MAX_DEPTH)
    return fail_here(c, "nested deeper than 64 levels");
  int ch = peek(c);
  switch (ch) {
  case '{': return read_object(c, v, depth);
  case '[': return read_array(c, v, depth);
  case '"': v->type = WQ_JSON_STRING; return read_string(c, &v->string);
  case 't':
  case 'f':
    if (take_literal(c, ch == 't' ? "true" : "false")) {
      v->type = WQ_JSON_BOOL;
      v->boolean = ch == 't';
      return WQ_OK;
    }
    break;
  case 'n':
    if (take_literal(c, "null"))
      return WQ_OK;
    break;
  default:
    if (ch == '-' || is_digit(ch))
      return read_number(c, v);
  }
  return fail_here(c, ch < 0 ? "unexpected end of input, expected a value" : "expected a value");
}

wq_status wq_json_parse(const char *text, size_t n, wq_json *out, wq_error *err) {
  memset(out, 0, sizeof *out);
  if (!text && n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_json_parse: text is NULL");
  json_cursor c = {text, n, 0, 1, 1, err};
  wq_status st = read_value(&c, out, 1);
  if (st == WQ_OK) {
    skip_space(&c);
    if (c.pos < c.n)
      st = fail_here(&c, "unexpected text after the JSON value");
  }
  if (st != WQ_OK) {
    wq_json_free(out);
    out->line = out->column = 0;
  }
  return st;
}

void wq_json_free(wq_json *v) {
  if (!v)
    return;
  for (int i = 0; i < v->count; i++) {
    wq_json_free(&v->items[i]);
    if (v->keys)
      free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
  v->items = NULL;
  v->keys = NULL;
  v->string = NULL;
  v->count = 0;
  v->type = WQ_JSON_NULL;
}

const wq_json *wq_json_member(const wq_json *v, const char *key) {
  if (!v || v->type != WQ_JSON_OBJECT)
    return NULL;
  for (int i = 0; i < v->count; i++)
    if (v->keys[i] && strcmp(v->keys[i], key) == 0)
      return &v->items[i];
  return NULL;
}

const char *wq_json_type_name(wq_json_type type) {
  switch (type) {
  case WQ_JSON_NULL: return "null";
  case WQ_JSON_BOOL: return "boolean";
  case WQ_JSON_NUMBER: return "number";
  case WQ_JSON_STRING: return "string";
  case WQ_JSON_ARRAY: return "array";
  case WQ_JSON_OBJECT: return "object";
  }
  return "?";
}
