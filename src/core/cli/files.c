#define _POSIX_C_SOURCE 200809L
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

wq_status wq_cli_write_file_atomic(const char *path, const uint8_t *bytes, size_t n,
                                   wq_error *err) {
  size_t len = strlen(path);
  char *temp = malloc(len + sizeof ".tmp-XXXXXX");
  if (!temp)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "writing %s: out of memory", path);
  memcpy(temp, path, len);
  memcpy(temp + len, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
  int fd = mkstemp(temp); /* same folder as path: rename stays on one filesystem */
  if (fd < 0) {
    wq_status st = wq_fail(err, WQ_ERR_IO, NULL, "cannot write %s: %s", path, strerror(errno));
    free(temp);
    return st;
  }
  /* mkstemp makes the file 0600; give it the mode a plain fopen would. */
  mode_t mask = umask(0);
  umask(mask);
  int error = fchmod(fd, 0666 & ~mask) != 0 ? errno : 0;
  FILE *f = error ? NULL : fdopen(fd, "wb");
  if (!f && !error)
    error = errno;
  if (f && n && fwrite(bytes, 1, n, f) != n)
    error = errno ? errno : EIO;
  if (f && fflush(f) != 0 && !error)
    error = errno;
  if (f && fsync(fileno(f)) != 0 && !error)
    error = errno;
  if (f ? fclose(f) != 0 : close(fd) != 0)
    error = error ? error : errno;
  if (!error && rename(temp, path) != 0)
    error = errno;
  if (error) {
    unlink(temp);
    free(temp);
    return wq_fail(err, WQ_ERR_IO, NULL, "cannot write %s: %s", path, strerror(error));
  }
  free(temp);
  return WQ_OK;
}
