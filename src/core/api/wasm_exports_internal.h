/* What the wasm export files share (wasm_exports.c: the runtime;
 * wasm_quant_exports.c: the quantizer, linked only into the quant variant):
 * the error context and the staging of a run's inputs. */
#ifndef WQ_API_WASM_EXPORTS_INTERNAL_H
#define WQ_API_WASM_EXPORTS_INTERNAL_H

#include <stdint.h>

#include "wasm_exports.h"

#if defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
#define WQX_EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define WQX_EXPORT
#endif

#define WQX_REPORT_MAX 1024

struct wqx_ctx {
  wq_error err;
  char report[WQX_REPORT_MAX]; /* reason of the last wqx_case_check */
};

/* Inputs staged for the next run of a model: views of caller memory. */
typedef struct wqx_staging {
  int n;
  wq_value *values;   /* n, owned */
  unsigned char *set; /* n flags, owned */
} wqx_staging;

/* n staging slots, none set. */
wq_status wqx_staging_init(wqx_staging *s, int n, wq_error *err);
void wqx_staging_free(wqx_staging *s);
/* Stages input i of `m`: checks index, rank, dims, dtype, and that the
 * nbytes the caller copied to `data` are exactly what dims x dtype need. */
wq_status wqx_staging_set(wqx_staging *s, const wq_model *m, int32_t i, int32_t dtype, int32_t rank,
                          const int32_t *dims, void *data, int32_t nbytes, wq_error *err);
/* Fails naming the first input of `m` not staged ("WHAT: input 'x' was not set"). */
wq_status wqx_staging_check(const wqx_staging *s, const wq_model *m, const char *what,
                            wq_error *err);
/* Unsets every slot (the views die with the caller's buffers). */
void wqx_staging_clear(wqx_staging *s);

/* Input-shape overrides passed from JS (wqx_load, wqx_quantizer_new): entry
 * k names names[k] with rank ranks[k]; the dims of all entries follow each
 * other in dims. */
typedef struct wqx_input_shapes {
  int n;
  wq_input_shape *shapes; /* n, owned; names point into the caller's strings */
  int64_t *dims;          /* owned */
} wqx_input_shapes;

/* Reads n_shapes entries into *s (empty when n_shapes is 0); fails naming
 * `what` ("load: input shape 1 has rank 9 ..."), leaving *s empty. */
wq_status wqx_input_shapes_read(wqx_input_shapes *s, int32_t n_shapes, const char *const *names,
                                const int32_t *ranks, const int32_t *dims, const char *what,
                                wq_error *err);
void wqx_input_shapes_free(wqx_input_shapes *s);

/* Input i of `m` (NULL out of range). A tensor's name (NULL), dtype and
 * rank (-1), dim d (-1 when symbolic or out of range) and its symbolic
 * name (NULL); each also for t == NULL (the values in brackets). */
const wq_tensor *wqx_model_input_tensor(const wq_model *m, int32_t i);

/* Milliseconds on the engine's monotonic clock (time limits, profiling). */
double wqx_clock_ms(void);

static inline const char *wqx_tensor_name(const wq_tensor *t) { return t ? t->name : NULL; }

static inline int32_t wqx_tensor_dtype(const wq_tensor *t) { return t ? (int32_t)t->dtype : -1; }

static inline int32_t wqx_tensor_rank(const wq_tensor *t) { return t ? t->rank : -1; }

static inline int32_t wqx_tensor_dim(const wq_tensor *t, int32_t d) {
  if (!t || d < 0 || d >= t->rank)
    return -1;
  return t->dims[d] < 0 || t->dims[d] > INT32_MAX ? -1 : (int32_t)t->dims[d];
}

static inline const char *wqx_tensor_dim_param(const wq_tensor *t, int32_t d) {
  if (!t || d < 0 || d >= t->rank)
    return NULL;
  return t->dim_params[d];
}

#endif
