#include "shape_arg.h"

#include <stdlib.h>
#include <string.h>

int wq_cli_parse_shape(const char *arg, wq_cli_shape *s) {
  const char *eq = strchr(arg, '=');
  if (!eq)
    return -1;
  s->name = arg;
  s->rank = 0;
  const char *p = eq + 1;
  while (*p) {
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || s->rank >= WQ_MAX_RANK)
      return -1;
    s->dims[s->rank++] = d;
    p = end;
    if (*p == 'x' || *p == ',')
      p++;
    else if (*p)
      return -1;
  }
  return 0;
}
