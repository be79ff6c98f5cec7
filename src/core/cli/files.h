/* Whole-file reading for the native CLI's commands. */
#ifndef WQ_CLI_FILES_H
#define WQ_CLI_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/status.h"

/* Default cap on a file the CLI reads whole (2 GiB); WASMQ_MAX_FILE_BYTES
 * sets another. */
#define WQ_CLI_DEFAULT_MAX_FILE_BYTES ((size_t)1 << 31)

/* The cap in force: WASMQ_MAX_FILE_BYTES (a byte count >= 1) or the
 * default; fails (WQ_ERR_INVALID_ARG) for a malformed value. */
wq_status wq_cli_max_file_bytes(size_t *max, wq_error *err);

/* Reads a whole regular file into a malloc'ed buffer (*bytes, caller frees;
 * an empty file gives a non-NULL buffer and *n = 0). Devices, FIFOs and
 * folders are refused, and so is a file over wq_cli_max_file_bytes, before
 * a byte is read. Fails (WQ_ERR_IO, or WQ_ERR_OUT_OF_MEMORY) with the
 * message "cannot read PATH: why". */
wq_status wq_cli_read_file(const char *path, uint8_t **bytes, size_t *n, wq_error *err);

/* Writes bytes[0..n) to `path` atomically: into a temp file next to it,
 * flushed, then renamed over `path`, so readers see the old file or the
 * whole new one and a failure leaves no partial file. Fails (WQ_ERR_IO)
 * naming the path and the system's reason. */
wq_status wq_cli_write_file_atomic(const char *path, const uint8_t *bytes, size_t n, wq_error *err);

/* Whether a file can be created at `path`: its folder exists and is
 * writable, and `path` itself is not a folder. Checked before a command does
 * its work, so a typo in an output path fails at once. Returns 0, or -1
 * after printing "wasmq: cannot write PATH: reason" on stderr. */
int wq_cli_check_output(const char *path);

#endif
