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
  WQ_ERR_IO = 7,
  WQ_ERR_TIMEOUT = 8 /* a time limit the caller set was reached (the model stays usable) */
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

/* Records an error; `err` may be NULL, `node` may be NULL. Returns 0. */
int wq_fail_record(wq_error *err, wq_status code, const char *node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Records an error and evaluates to `code`, so callers can
 * `return wq_fail(...)`. The status passes through an inline function so the
 * optimiser sees that failure paths return non-WQ_OK (otherwise gcc -O3 warns
 * about outputs a failed call leaves unset). `code` is evaluated twice: pass
 * a constant or a plain variable. */
#define wq_fail(err, code, node, ...)                                                              \
  wq_status_after_record(wq_fail_record((err), (code), (node), __VA_ARGS__), (code))

static inline wq_status wq_status_after_record(int recorded, wq_status code) {
  (void)recorded;
  return code;
}

/* Names `node` as the culprit of an error recorded without one. */
void wq_error_set_node(wq_error *err, const char *node);

#define WQ_TRY(expr)                                                                               \
  do {                                                                                             \
    wq_status wq_try_status_ = (expr);                                                             \
    if (wq_try_status_ != WQ_OK)                                                                   \
      return wq_try_status_;                                                                       \
  } while (0)

#endif
