/* A growable text buffer for reports and JSON: appends never fail midway;
 * an allocation failure sets `failed` and later appends do nothing, so a
 * caller checks once at the end. */
#ifndef WQ_IR_TEXT_H
#define WQ_IR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char *buf; /* NUL-terminated once anything was written; owned */
  size_t len, cap;
  bool failed;
} wq_text;

void wq_text_put(wq_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Appends s as a JSON string literal (quotes, escapes). NULL is "". */
void wq_text_json_string(wq_text *t, const char *s);

/* The finished text (caller frees), or NULL after a failure (buffer freed). */
char *wq_text_take(wq_text *t);

#endif
