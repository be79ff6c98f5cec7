/* Status codes and the error record every fallible core function fills.
 * There is no global "last error": callers own a wq_error and pass it down. */
#ifndef WQ_IR_STATUS_H
#define WQ_IR_STATUS_H

#include <stddef.h>

typedef enum {
  WQ_OK = 0,
  WQ_ERR_PARSE = 1,         /* bytes are not a well-formed protobuf/ONNX/npy */
  WQ_ERR_INVALID_MODEL = 2, /* well-formed but inconsistent (dangling name, cycle...) */
  WQ_ERR_UNSUPPORTED = 3,   /* valid ONNX we do not implement (op, opset, dtype) */
  WQ_ERR_SHAPE = 4,         /* shapes or dtypes do not agree */
  WQ_ERR_INVALID_ARG = 5,   /* caller passed a bad argument or option */
  WQ_ERR_OUT_OF_MEMORY = 6,
  WQ_ERR_IO = 7
} wq_status;

#define WQ_ERROR_MSG_MAX 512
#define WQ_ERROR_NODE_MAX 128

typedef struct {
  wq_status code;
  char node[WQ_ERROR_NODE_MAX]; /* name of the node at fault, "" if none */
  char message[WQ_ERROR_MSG_MAX];
} wq_error;

/* Short stable identifier of a status ("WQ_ERR_SHAPE"...). */
const char *wq_status_name(wq_status code);

void wq_error_clear(wq_error *err);

/* Records an error and returns `code` so callers can `return wq_fail(...)`.
 * `err` may be NULL (the error is then only returned). `node` may be NULL. */
wq_status wq_fail(wq_error *err, wq_status code, const char *node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define WQ_TRY(expr)                                                                               \
  do {                                                                                             \
    wq_status wq_try_status_ = (expr);                                                             \
    if (wq_try_status_ != WQ_OK)                                                                   \
      return wq_try_status_;                                                                       \
  } while (0)

#endif
