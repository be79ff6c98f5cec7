/* The model record shared by the API's translation units (not public). */
#ifndef WQ_API_MODEL_INTERNAL_H
#define WQ_API_MODEL_INTERNAL_H

#include <stdbool.h>

#include "../kernels/config.h"
#include "../runtime/executor.h"
#include "../runtime/parallel.h"
#include "wasmq.h"

typedef struct {
  char *op_type;
  int count;
} op_count;

struct wq_model {
  wq_model_ir *ir;
  wq_exec_plan plan;
  wq_pool *pool;    /* the threads runs split kernels over (NULL: one thread) */
  wq_value *values; /* one per tensor, reused by every run */
  bool *owned;
  wq_value *results;  /* one per graph output */
  bool *result_owned; /* results[i].data is ours to free (else the plan's buffer) */
  int nodes_in_file;
  int nodes_folded;
  op_count *histogram; /* ops as written in the file */
  int n_histogram;
  int64_t param_count; /* elements of the file's initializers */
  size_t param_bytes;
  int n_param_tensors;
  /* wq_model_capture: per tensor, a copy of its value from the latest run
   * (data NULL when not captured); NULL while capture is off. */
  wq_value *captured;
  /* One record per load pass, in pipeline order (wq_model_pass). */
  wq_pass_record passes[WQ_MODEL_PASSES];
  wq_partition_mode mode; /* the partition mode it was loaded with */
  /* What the memory limit counts besides the arena and outputs: the
   * weights as loaded, what the kernels' plans hold (packed weights) and
   * the most scratch one node's kernels allocate on one thread (times the
   * threads a run uses). */
  size_t weights_bytes, kernel_bytes, scratch_bytes, float_scratch_bytes;
  /* The int8 kernels' scratch: one slice of scratch_bytes (a multiple of
   * 16) per thread of the pool, bound for every run (runtime/parallel.h);
   * the float kernels allocate float_scratch_bytes at most per thread. */
  void *scratch;
  /* The kernel variants its plans run (the graph points at it). */
  wq_kernel_set kernels;
};

/* The dtype names the JS API uses (float32 rather than ONNX's "float"). */
const char *wq_dtype_api_name(int dtype);

#endif
