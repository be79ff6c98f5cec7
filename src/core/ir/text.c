#include "text.h"
#include "format.h"

#include <stdarg.h>
#include <stdlib.h>

void wq_text_put(wq_text *t, const char *fmt, ...) {
  while (!t->failed) {
    va_list ap;
    va_start(ap, fmt);
    /* An empty text has no buffer yet: measure into nothing (NULL + 0 is
     * undefined behaviour in C). */
    int need = wq_vformat(t->buf ? t->buf + t->len : NULL, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (need < 0) {
      t->failed = true;
      return;
    }
    if (t->len + (size_t)need < t->cap) {
      t->len += (size_t)need;
      return;
    }
    size_t cap = (t->cap + (size_t)need + 1) * 2;
    char *grown = realloc(t->buf, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->buf = grown;
    t->cap = cap;
  }
}

void wq_text_json_string(wq_text *t, const char *s) {
  wq_text_put(t, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      wq_text_put(t, "\\%c", *p);
    else if (*p < 0x20)
      wq_text_put(t, "\\u%04x", *p);
    else
      wq_text_put(t, "%c", *p);
  }
  wq_text_put(t, "\"");
}

char *wq_text_take(wq_text *t) {
  if (t->failed || !t->buf) {
    free(t->buf);
    *t = (wq_text){0};
    return NULL;
  }
  char *s = t->buf;
  *t = (wq_text){0};
  return s;
}
