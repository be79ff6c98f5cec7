#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
  const char *descr;
  wq_dtype dtype;
} npy_types[] = {
    {"f4", WQ_DT_FLOAT},  {"i1", WQ_DT_INT8},  {"u1", WQ_DT_UINT8},  {"i2", WQ_DT_INT16},
    {"u2", WQ_DT_UINT16}, {"i4", WQ_DT_INT32}, {"u4", WQ_DT_UINT32}, {"i8", WQ_DT_INT64},
    {"u8", WQ_DT_UINT64}, {"b1", WQ_DT_BOOL},
};

/* Finds `'key':` in the header dict and returns the text after the colon. */
static const char *header_field(const char *header, const char *key) {
  char pattern[32];
  snprintf(pattern, sizeof pattern, "'%s'", key);
  const char *p = strstr(header, pattern);
  if (!p)
    return NULL;
  p = strchr(p + strlen(pattern), ':');
  if (!p)
    return NULL;
  p++;
  while (*p == ' ')
    p++;
  return p;
}

wq_status wq_npy_parse(const uint8_t *bytes, size_t n, wq_value *out, wq_error *err) {
  memset(out, 0, sizeof *out);
  if (n < 10 || memcmp(bytes, npy_magic, 6) != 0)
    return wq_fail(err, WQ_ERR_PARSE, NULL, "not a .npy file (bad magic)");
  int major = bytes[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = bytes[8] | (size_t)bytes[9] << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12)
      return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy header is truncated");
    header_len =
        bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
    offset = 12;
  } else {
    return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy format version %d is not supported", major);
  }
  if (header_len > n - offset || header_len > 65536)
    return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy header is truncated");
  char header[65537];
  memcpy(header, bytes + offset, header_len);
  header[header_len] = '\0';
  offset += header_len;

  const char *descr = header_field(header, "descr");
  const char *fortran = header_field(header, "fortran_order");
  const char *shape = header_field(header, "shape");
  if (!descr || !fortran || !shape)
    return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy header lacks descr, fortran_order or shape");
  if (strncmp(fortran, "False", 5) != 0)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, ".npy arrays in Fortran order are not supported");
  if (descr[0] != '\'' || (descr[1] != '<' && descr[1] != '|'))
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                   ".npy dtype must be little-endian ('<' or '|'), got %.8s", descr);
  out->dtype = WQ_DT_UNDEFINED;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (strncmp(descr + 2, npy_types[i].descr, 2) == 0 && descr[4] == '\'')
      out->dtype = npy_types[i].dtype;
  if (out->dtype == WQ_DT_UNDEFINED)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, ".npy dtype %.8s is not supported", descr);

  if (*shape != '(')
    return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy shape is not a tuple");
  const char *p = shape + 1;
  out->rank = 0;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',')
      p++;
    if (*p == ')')
      break;
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p || out->rank >= WQ_MAX_RANK)
      return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy shape is malformed or has rank > %d",
                     WQ_MAX_RANK);
    out->dims[out->rank++] = d;
    p = end;
  }
  WQ_TRY(wq_shape_check(out->dims, out->rank, NULL, ".npy array", err));
  size_t nbytes = wq_value_nbytes(out);
  if (n - offset != nbytes)
    return wq_fail(err, WQ_ERR_PARSE, NULL, ".npy data is %zu bytes, its shape needs %zu",
                   n - offset, nbytes);
  out->data = malloc(nbytes ? nbytes : 1);
  if (!out->data)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory");
  memcpy(out->data, bytes + offset, nbytes);
  return WQ_OK;
}

wq_status wq_npy_write(const char *path, const wq_value *v, wq_error *err) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].dtype == v->dtype)
      descr = npy_types[i].descr;
  if (!descr)
    return wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "cannot write dtype %s to .npy",
                   wq_dtype_name(v->dtype));
  char header[512];
  int len = snprintf(
      header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
      (v->dtype == WQ_DT_INT8 || v->dtype == WQ_DT_UINT8 || v->dtype == WQ_DT_BOOL) ? '|' : '<',
      descr);
  for (int d = 0; d < v->rank; d++)
    len += snprintf(header + len, sizeof header - (size_t)len, "%lld%s", (long long)v->dims[d],
                    v->rank == 1 ? "," : (d + 1 < v->rank ? ", " : ""));
  len += snprintf(header + len, sizeof header - (size_t)len, "), }");
  /* Pad with spaces so the data starts on a 64-byte boundary, newline last. */
  int total = 10 + len + 1;
  int pad = (64 - total % 64) % 64;
  memset(header + len, ' ', (size_t)pad);
  len += pad;
  header[len++] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f)
    return wq_fail(err, WQ_ERR_IO, NULL, "cannot write %s", path);
  unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
  size_t nbytes = wq_value_nbytes(v);
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
           (nbytes == 0 || fwrite(v->data, 1, nbytes, f) == nbytes);
  ok = (fclose(f) == 0) && ok;
  return ok ? WQ_OK : wq_fail(err, WQ_ERR_IO, NULL, "failed writing %s", path);
}
