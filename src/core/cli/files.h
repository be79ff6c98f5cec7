/* Whole-file reading for the native CLI's commands. */
#ifndef WQ_CLI_FILES_H
#define WQ_CLI_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Reads the whole file into a malloc'ed buffer (*bytes, caller frees; an
 * empty file gives a non-NULL buffer and *n = 0). Returns 0, or -1 with
 * errno set (ENOMEM when the buffer cannot grow). */
int wq_cli_read_file(const char *path, uint8_t **bytes, size_t *n);

#endif
