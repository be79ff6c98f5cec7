/* Reading and writing NumPy .npy files (format versions 1.0-3.0, little
 * endian, C order) for the CLI's --input and --out. */
#ifndef WQ_CLI_NPY_H
#define WQ_CLI_NPY_H

#include "../ir/value.h"

/* Parses a whole .npy file held in memory into *out (data malloc'ed, owned
 * by the caller). Rejects Fortran order, big-endian and unknown dtypes. */
wq_status wq_npy_parse(const uint8_t *bytes, size_t n, wq_value *out, wq_error *err);

/* Writes v as a version 1.0 .npy file. */
wq_status wq_npy_write(const char *path, const wq_value *v, wq_error *err);

#endif
