/* Runs a loaded model once on deterministic inputs derived from a seed:
 * symbolic dims become 1, floats lie in [-2, 2), integers are small (so they
 * work as indices, shapes and codes alike). Shared by the corpus test and
 * the fuzz targets; inputs past max_elements are not run (bounded work). */
#ifndef WQ_TEST_SEEDED_RUN_H
#define WQ_TEST_SEEDED_RUN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"

#define WQ_SEEDED_MAX_INPUTS 16

static inline uint32_t wq_seeded_next(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static inline void wq_seeded_fill(wq_value *v, int64_t n, uint32_t *s) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t r = wq_seeded_next(s);
    int64_t small = (int64_t)(r % 4); /* 0..3 */
    switch (v->dtype) {
    case WQ_DT_FLOAT: ((float *)v->data)[i] = (float)(r % 4096) / 1024.0f - 2.0f; break;
    case WQ_DT_DOUBLE: ((double *)v->data)[i] = (double)(r % 4096) / 1024.0 - 2.0; break;
    case WQ_DT_INT8: ((int8_t *)v->data)[i] = (int8_t)(r & 0xff); break;
    case WQ_DT_UINT8: ((uint8_t *)v->data)[i] = (uint8_t)(r & 0xff); break;
    case WQ_DT_BOOL: ((uint8_t *)v->data)[i] = (uint8_t)(r & 1); break;
    case WQ_DT_INT16: ((int16_t *)v->data)[i] = (int16_t)small; break;
    case WQ_DT_UINT16: ((uint16_t *)v->data)[i] = (uint16_t)small; break;
    case WQ_DT_INT32: ((int32_t *)v->data)[i] = (int32_t)small; break;
    case WQ_DT_UINT32: ((uint32_t *)v->data)[i] = (uint32_t)small; break;
    case WQ_DT_INT64: ((int64_t *)v->data)[i] = small; break;
    case WQ_DT_UINT64: ((uint64_t *)v->data)[i] = (uint64_t)small; break;
    default:
      memset((char *)v->data + (size_t)i * wq_dtype_size(v->dtype), 0, wq_dtype_size(v->dtype));
    }
  }
}

/* *ran is 0 when the inputs were not runnable (unknown rank, too large,
 * too many); then WQ_OK is returned without running. */
static inline wq_status wq_seeded_run(wq_model *m, uint32_t seed, int64_t max_elements, int *ran,
                                      wq_error *err) {
  *ran = 0;
  int n = wq_model_input_count(m);
  if (n > WQ_SEEDED_MAX_INPUTS)
    return WQ_OK;
  wq_value in[WQ_SEEDED_MAX_INPUTS];
  memset(in, 0, sizeof in);
  uint32_t s = seed;
  int ok = 1, filled = 0;
  for (int i = 0; i < n && ok; i++) {
    const wq_tensor *t = wq_model_input(m, i);
    if (t->rank < 0 || wq_dtype_size(t->dtype) == 0) {
      ok = 0;
      break;
    }
    in[i].dtype = t->dtype;
    in[i].rank = t->rank;
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++) {
      in[i].dims[d] = t->dims[d] < 0 ? 1 : t->dims[d];
      if (in[i].dims[d] > max_elements || (numel *= in[i].dims[d]) > max_elements)
        ok = 0;
    }
    if (!ok)
      break;
    in[i].data = calloc((size_t)(numel ? numel : 1), wq_dtype_size(t->dtype));
    filled = i + 1;
    if (!in[i].data) {
      ok = 0;
      break;
    }
    wq_seeded_fill(&in[i], numel, &s);
  }
  wq_status st = WQ_OK;
  if (ok) {
    *ran = 1;
    st = wq_model_run(m, in, n, err);
  }
  for (int i = 0; i < filled; i++)
    free(in[i].data);
  return st;
}

#endif
