#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int wq_cli_read_file(const char *path, uint8_t **bytes, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap)
      break;
    uint8_t *grown = realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  int error = !buf ? ENOMEM : ferror(f) ? EIO : 0;
  fclose(f);
  if (error) {
    free(buf);
    errno = error;
    return -1;
  }
  *bytes = buf;
  *n = len;
  return 0;
}
