/* Whole-file reading for the native CLI's commands. */
#ifndef WQ_CLI_FILES_H
#define WQ_CLI_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/status.h"

/* Reads the whole file into a malloc'ed buffer (*bytes, caller frees; an
 * empty file gives a non-NULL buffer and *n = 0). Returns 0, or -1 with
 * errno set (ENOMEM when the buffer cannot grow). */
int wq_cli_read_file(const char *path, uint8_t **bytes, size_t *n);

/* Writes bytes[0..n) to `path` atomically: into a temp file next to it,
 * flushed, then renamed over `path`, so readers see the old file or the
 * whole new one and a failure leaves no partial file. Fails (WQ_ERR_IO)
 * naming the path and the system's reason. */
wq_status wq_cli_write_file_atomic(const char *path, const uint8_t *bytes, size_t n, wq_error *err);

#endif
