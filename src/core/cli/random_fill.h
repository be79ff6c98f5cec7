/* Seeded inputs for `run --input NAME=random:SEED` and `quantize --calib
 * random:N`: the same generator and element mapping as src/js/random.mjs,
 * so native and wasm runs see identical bytes. */
#ifndef WQ_CLI_RANDOM_FILL_H
#define WQ_CLI_RANDOM_FILL_H

#include <stdint.h>

#include "../ir/value.h"

/* Fills v->data (already allocated for v's shape) from mulberry32(seed):
 * float32 uniform in [0, 1), 8/16-bit integers over their full range, bool
 * 0/1, wider integers in [0, 10) (usually indices or sizes). Other dtypes are
 * left as they are. */
void wq_cli_fill_random(wq_value *v, uint32_t seed);

#endif
