/* libFuzzer target: bytes -> wq_model_load -> decision records (graph JSON)
 * -> plan -> one run on seeded
 * inputs (tests/c/seeded_run.h), under ASan + UBSan. Any crash, sanitizer
 * report, leak or timeout is a bug: bad input must end in a wq_error.
 *
 * Built three times (CMakeLists.txt, WQ_FUZZ): fuzz_load takes libFuzzer's
 * byte mutations; fuzz_structured adds fuzz_mutator.c (pb_mutator.h's
 * protobuf-aware mutator), which edits a valid model's attributes, dims,
 * initializers and qparams so inputs get past the parser into the kernels.
 * fuzz_export (WQ_FUZZ_EXPORT, with the same mutator) loads for export
 * (no lowering, no float fusion) and checks the ONNX writer's round trip:
 * a loaded graph exports (or is refused as WQ_ERR_UNSUPPORTED, e.g. a
 * subgraph), the export loads again, and from the second export on
 * writing back gives the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "onnx/onnx_export.h"
#include "seeded_run.h"

/* Bounded work per input: inputs up to 4096 elements, arenas up to 16 MiB,
 * everything a load and a run hold (weights, graph outputs, arena,
 * intermediates) up to 32 MiB: a model may legitimately ask for more (a
 * MaxPool padded by 10^7 has a 10^7-element output), but running it only
 * spends the fuzzer's time. */
#define FUZZ_MAX_INPUT_ELEMENTS (1 << 12)
#define FUZZ_MAX_ARENA_BYTES ((size_t)16 << 20)
#define FUZZ_MAX_MEMORY_BYTES ((size_t)32 << 20)

#ifdef WQ_FUZZ_EXPORT
/* Loads for export and exports: 0 when the model does not load or the
 * export is refused as unsupported; aborts on any other failure. */
static int load_and_export(const uint8_t *data, size_t size, uint8_t **out, size_t *n) {
  static const wq_load_options opts = {.no_lowering = 1, .no_float_fusion = 1};
  wq_model *m = NULL;
  wq_error err;
  if (wq_model_load(data, size, &opts, &m, &err) != WQ_OK)
    return 0;
  wq_status st = wq_onnx_export(wq_model_get_ir(m), out, n, &err);
  wq_model_free(m);
  if (st != WQ_OK && (st != WQ_ERR_UNSUPPORTED || err.message[0] == '\0' || *out))
    abort(); /* a loaded graph that cannot be written back, or a silent failure */
  return st == WQ_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *first = NULL, *second = NULL, *third = NULL;
  size_t first_n = 0, second_n = 0, third_n = 0;
  if (!load_and_export(data, size, &first, &first_n))
    return 0;
  /* The export loads and exports again. A graph output whose dtype nothing
   * tells is written without a type (ONNX forbids elem_type UNDEFINED), so
   * its declared shape is lost once and the second load may infer more: from
   * the second export on, writing back must give the same bytes. */
  if (!load_and_export(first, first_n, &second, &second_n) ||
      !load_and_export(second, second_n, &third, &third_n) || third_n != second_n ||
      memcmp(second, third, second_n) != 0)
    abort();
  free(first);
  free(second);
  free(third);
  return 0;
}
#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const wq_load_options opts = {.max_memory_bytes = FUZZ_MAX_MEMORY_BYTES};
  wq_model *m = NULL;
  wq_error err;
  if (wq_model_load(data, size, &opts, &m, &err) != WQ_OK) {
    if (m)
      abort(); /* a failed load must leave nothing behind */
    if (err.message[0] == '\0')
      abort(); /* every failure says why */
    return 0;
  }
  /* The decision records of every model that loads (layout records,
   * transitions' readers and producers included). */
  char *records = wq_model_graph_json(m);
  if (!records)
    abort();
  free(records);
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
#endif
