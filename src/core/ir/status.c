#include "status.h"
#include "format.h"

#include <stdarg.h>
#include <string.h>

const char *wq_status_name(wq_status code) {
  switch (code) {
  case WQ_OK: return "WQ_OK";
  case WQ_ERR_PARSE: return "WQ_ERR_PARSE";
  case WQ_ERR_INVALID_MODEL: return "WQ_ERR_INVALID_MODEL";
  case WQ_ERR_UNSUPPORTED: return "WQ_ERR_UNSUPPORTED";
  case WQ_ERR_SHAPE: return "WQ_ERR_SHAPE";
  case WQ_ERR_INVALID_ARG: return "WQ_ERR_INVALID_ARG";
  case WQ_ERR_OUT_OF_MEMORY: return "WQ_ERR_OUT_OF_MEMORY";
  case WQ_ERR_IO: return "WQ_ERR_IO";
  case WQ_ERR_TIMEOUT: return "WQ_ERR_TIMEOUT";
  }
  return "WQ_ERR_UNKNOWN";
}

void wq_error_clear(wq_error *err) {
  if (!err)
    return;
  err->code = WQ_OK;
  err->node[0] = '\0';
  err->message[0] = '\0';
}

int wq_fail_record(wq_error *err, wq_status code, const char *node, const char *fmt, ...) {
  if (!err)
    return 0;
  err->code = code;
  wq_format(err->node, sizeof err->node, "%s", node ? node : "");
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return 0;
}

void wq_error_set_node(wq_error *err, const char *node) {
  if (err && err->node[0] == '\0' && node)
    wq_format(err->node, sizeof err->node, "%s", node);
}
