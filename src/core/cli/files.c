#define _POSIX_C_SOURCE 200809L
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

wq_status wq_cli_max_file_bytes(size_t *max, wq_error *err) {
  *max = WQ_CLI_DEFAULT_MAX_FILE_BYTES;
  const char *env = getenv("WASMQ_MAX_FILE_BYTES");
  if (!env || !*env)
    return WQ_OK;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(env, &end, 10);
  if (errno || *end || v == 0 || env[0] == '-' || v > SIZE_MAX)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "WASMQ_MAX_FILE_BYTES must be a byte count >= 1, got '%s'", env);
  *max = (size_t)v;
  return WQ_OK;
}

static const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

wq_status wq_cli_read_file(const char *path, uint8_t **bytes, size_t *n, wq_error *err) {
  size_t max;
  WQ_TRY(wq_cli_max_file_bytes(&max, err));
  /* Non-blocking, so a FIFO without a writer is refused instead of waited on. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return wq_fail(err, WQ_ERR_IO, NULL, "cannot read %s: %s", path, strerror(errno));
  struct stat st;
  wq_status st_fail = WQ_OK;
  if (fstat(fd, &st) != 0)
    st_fail = wq_fail(err, WQ_ERR_IO, NULL, "cannot read %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) /* a device or FIFO can be read without end */
    st_fail = wq_fail(err, WQ_ERR_IO, NULL, "cannot read %s: not a regular file (%s)", path,
                      file_kind(st.st_mode));
  else if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)max)
    st_fail = wq_fail(err, WQ_ERR_IO, NULL,
                      "cannot read %s: the file is %lld bytes, more than the limit of %zu "
                      "(WASMQ_MAX_FILE_BYTES)",
                      path, (long long)st.st_size, max);
  if (st_fail != WQ_OK) {
    close(fd);
    return st_fail;
  }
  size_t size = (size_t)st.st_size, len = 0;
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf) {
    close(fd);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "cannot read %s: out of memory for %zu bytes",
                   path, size);
  }
  /* What fstat promised and no more: a file growing meanwhile stays capped. */
  while (len < size) {
    ssize_t got = read(fd, buf + len, size - len);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return wq_fail(err, WQ_ERR_IO, NULL, "cannot read %s: %s", path, strerror(e));
    }
    if (got == 0)
      break; /* truncated meanwhile */
    len += (size_t)got;
  }
  close(fd);
  *bytes = buf;
  *n = len;
  return WQ_OK;
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

int wq_cli_check_output(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "wasmq: cannot write %s: %s\n", path, strerror(EISDIR));
    return -1;
  }
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) : 1;
  char *dir = malloc(len + 2);
  if (!dir)
    return -1;
  if (slash)
    memcpy(dir, path, len);
  else
    dir[0] = '.';
  if (slash && len == 0)
    dir[len++] = '/';
  dir[len] = '\0';
  int rc = 0;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "wasmq: cannot write %s: %s (no folder %s)\n", path, strerror(ENOENT), dir);
    rc = -1;
  } else if (access(dir, W_OK) != 0) {
    fprintf(stderr, "wasmq: cannot write %s: %s (folder %s)\n", path, strerror(errno), dir);
    rc = -1;
  }
  free(dir);
  return rc;
}
