/* --shape NAME=D0xD1x... arguments of the native CLI (run, quantize). */
#ifndef WQ_CLI_SHAPE_ARG_H
#define WQ_CLI_SHAPE_ARG_H

#include <stdint.h>

#include "../ir/value.h"

typedef struct {
  const char *name; /* points into the argument: the name ends at '=' */
  int rank;
  int64_t dims[WQ_MAX_RANK];
} wq_cli_shape;

/* Parses "NAME=1x3x224x224" (',' also separates dims). 0, or -1 when the
 * argument is malformed. */
int wq_cli_parse_shape(const char *arg, wq_cli_shape *s);

#endif
