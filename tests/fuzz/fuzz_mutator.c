/* The structured targets' mutator (fuzz_structured, fuzz_export): one in
 * eight mutations are libFuzzer's byte mutations, the rest pb_mutator.h's
 * protobuf-aware ones. Built without coverage instrumentation: what the
 * mutator itself executes says nothing about the input; tracing its
 * parse/write loops would only slow every execution. */
#include <stddef.h>
#include <stdint.h>

#include "pb_mutator.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  /* Plain byte mutations find parser bugs. */
  if (seed % 8 == 0)
    return LLVMFuzzerMutate(data, size, max_size);
  size_t n = wq_pb_mutate(data, size, max_size, seed);
  return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
