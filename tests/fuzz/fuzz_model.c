/* libFuzzer target: bytes -> wq_model_load -> plan -> one run on seeded
 * inputs (tests/c/seeded_run.h), under ASan + UBSan. Any crash, sanitizer
 * report, leak or timeout is a bug: bad input must end in a wq_error.
 *
 * Built twice by tests/fuzz/build.sh: fuzz_load takes libFuzzer's byte
 * mutations; fuzz_structured (WQ_FUZZ_STRUCTURED) adds pb_mutator.h's
 * protobuf-aware mutator, which edits a valid model's attributes, dims,
 * initializers and qparams so inputs get past the parser into the kernels. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "seeded_run.h"

#ifdef WQ_FUZZ_STRUCTURED
#include "pb_mutator.h"
#endif

/* Bounded work per input: inputs up to 4096 elements, arenas up to 16 MiB
 * (a model may legitimately ask for more; that is not what we look for). */
#define FUZZ_MAX_INPUT_ELEMENTS (1 << 12)
#define FUZZ_MAX_ARENA_BYTES ((size_t)16 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wq_model *m = NULL;
  wq_error err;
  if (wq_model_load(data, size, NULL, &m, &err) != WQ_OK) {
    if (m)
      abort(); /* a failed load must leave nothing behind */
    if (err.message[0] == '\0')
      abort(); /* every failure says why */
    return 0;
  }
  wq_memory_info mem;
  wq_model_memory(m, &mem);
  if (!mem.planned || mem.arena_bytes <= FUZZ_MAX_ARENA_BYTES) {
    int ran = 0;
    uint32_t seed = (uint32_t)size;
    wq_status st = wq_seeded_run(m, seed, FUZZ_MAX_INPUT_ELEMENTS, &ran, &err);
    if (ran && st != WQ_OK && err.message[0] == '\0')
      abort();
  }
  wq_model_free(m);
  return 0;
}

#ifdef WQ_FUZZ_STRUCTURED
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  /* One in eight: plain byte mutations (they find parser bugs). */
  if (seed % 8 == 0)
    return LLVMFuzzerMutate(data, size, max_size);
  size_t n = wq_pb_mutate(data, size, max_size, seed);
  return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
#endif
