#include "random_fill.h"

/* mulberry32: one 32-bit draw per element. */
static uint32_t mulberry32_next(uint32_t *state) {
  uint32_t z = (*state += 0x6D2B79F5u);
  z = (z ^ (z >> 15)) * (z | 1u);
  z ^= z + (z ^ (z >> 7)) * (z | 61u);
  return z ^ (z >> 14);
}

void wq_cli_fill_random(wq_value *v, uint32_t seed) {
  uint32_t state = seed;
  int64_t n = wq_value_numel(v);
  for (int64_t i = 0; i < n; i++) {
    uint32_t r = mulberry32_next(&state);
    switch (v->dtype) {
    case WQ_DT_FLOAT: ((float *)v->data)[i] = (float)(r >> 8) / 16777216.0f; break;
    case WQ_DT_INT8: ((int8_t *)v->data)[i] = (int8_t)(r & 0xff); break;
    case WQ_DT_UINT8: ((uint8_t *)v->data)[i] = (uint8_t)(r & 0xff); break;
    case WQ_DT_BOOL: ((uint8_t *)v->data)[i] = (uint8_t)(r & 1); break;
    case WQ_DT_INT16: ((int16_t *)v->data)[i] = (int16_t)(r & 0xffff); break;
    case WQ_DT_UINT16: ((uint16_t *)v->data)[i] = (uint16_t)(r & 0xffff); break;
    /* Wider integer inputs are usually indices or sizes: keep them small. */
    case WQ_DT_INT32: ((int32_t *)v->data)[i] = (int32_t)(r % 10); break;
    case WQ_DT_UINT32: ((uint32_t *)v->data)[i] = r % 10; break;
    case WQ_DT_INT64: ((int64_t *)v->data)[i] = (int64_t)(r % 10); break;
    case WQ_DT_UINT64: ((uint64_t *)v->data)[i] = r % 10; break;
    default: break;
    }
  }
}
