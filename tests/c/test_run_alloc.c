/* No int8 kernel allocates while it runs: every node of the int8 backend
 * (domain "wasmq"), and the ONNX int8 ops that run as themselves when
 * lowering is off (QLinearConv, ConvInteger: WQ_OP_FLAG_INT8 with a memory
 * hook), takes its scratch from the block its plan declared
 * (runtime/parallel.h), on one thread and on three. malloc and its
 * relatives are wrapped at link time (CMakeLists.txt: -Wl,--wrap) and
 * counted while such a node runs; a kernel that allocates again fails here.
 * Natively the int8 kernels are the scalar references; the SIMD and relaxed
 * variants get the same check in tests/wasm (alloc_count.c). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_internal.h"
#include "ops/int8_common.h"
#include "ops/op.h"
#include "seeded_run.h"
#include "wq_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t alignment, size_t n);
int __real_posix_memalign(void **out, size_t alignment, size_t n);

static atomic_int watching;     /* > 0 while a watched node runs */
static atomic_long allocations; /* made while watching, on any thread */

static void count(void) {
  if (atomic_load(&watching) > 0)
    atomic_fetch_add(&allocations, 1);
}
void *__wrap_malloc(size_t n) {
  count();
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
  count();
  return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
  count();
  return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t alignment, size_t n) {
  count();
  return __real_aligned_alloc(alignment, n);
}
int __wrap_posix_memalign(void **out, size_t alignment, size_t n) {
  count();
  return __real_posix_memalign(out, alignment, n);
}

/* The watched graph: each int8 node runs through a copy of its op whose run
 * counts around the original's. */
enum { MAX_NODES = 4096 };
static const wq_graph *watched;
static const wq_op *original[MAX_NODES];
static wq_op wrapped[MAX_NODES];
static long node_allocations[MAX_NODES];
static int node_runs[MAX_NODES];

static wq_status watched_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  const int i = (int)(node - watched->nodes);
  const long before = atomic_load(&allocations);
  atomic_fetch_add(&watching, 1);
  wq_status st = original[i]->run(node, in, out, err);
  atomic_fetch_sub(&watching, 1);
  node_allocations[i] += atomic_load(&allocations) - before;
  node_runs[i]++;
  return st;
}

/* The ops that take their scratch from the run's block (model.c). */
static bool takes_from_block(const wq_op *op) {
  return (op->domain && strcmp(op->domain, WQ_INT8_DOMAIN) == 0) ||
         ((op->flags & WQ_OP_FLAG_INT8) && op->memory);
}

static void check_model(const char *rel, int threads, const wq_load_options *opts) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", wq_test_shared_dir(), rel);
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return;
  wq_model *m = NULL;
  wq_error err;
  wq_status st = wq_model_load(bytes, n, opts, &m, &err);
  free(bytes);
  CHECK_MSG(st == WQ_OK, "%s: %s", rel, err.message);
  if (st == WQ_OK && threads > 1)
    CHECK(wq_model_set_threads(m, threads, &err) == WQ_OK);
  wq_graph *g = st == WQ_OK ? m->ir->graph : NULL;
  int int8_nodes = 0;
  for (int i = 0; g && i < g->n_nodes && i < MAX_NODES; i++) {
    wq_node *node = &g->nodes[i];
    original[i] = NULL;
    node_allocations[i] = node_runs[i] = 0;
    if (!node->op || !takes_from_block(node->op))
      continue;
    original[i] = node->op;
    wrapped[i] = *node->op;
    wrapped[i].run = watched_run;
    node->op = &wrapped[i];
    int8_nodes++;
  }
  watched = g;
  CHECK_MSG(!g || int8_nodes > 0, "%s: no int8 node to watch", rel);
  int ran = 0;
  for (uint32_t seed = 1; g && seed <= 2; seed++) {
    st = wq_seeded_run(m, seed, 1 << 22, &ran, &err);
    CHECK_MSG(st == WQ_OK && ran, "%s: run %u: %s", rel, seed, err.message);
  }
  for (int i = 0; g && i < g->n_nodes && i < MAX_NODES; i++) {
    if (!original[i])
      continue;
    CHECK_MSG(node_runs[i] == 2, "%s: node %s ran %d times", rel, g->nodes[i].name, node_runs[i]);
    CHECK_MSG(node_allocations[i] == 0, "%s (%d threads): %s (%s, kernel %s) allocated %ld times",
              rel, threads, g->nodes[i].name, g->nodes[i].op_type,
              g->nodes[i].rec.kernel ? g->nodes[i].rec.kernel : "-", node_allocations[i]);
    g->nodes[i].op = original[i];
  }
  watched = NULL;
  wq_model_free(m);
}

int main(void) {
  static const char *const models[] = {
      "models/synthetic/smallcnn_qdq.onnx",
      "models/synthetic/matmul_1x1024x1024_qdq_pertensor.onnx",
      "models/synthetic/matmul_256x256x256_qlinear.onnx",
      "models/mnist-8-dynamic-int8/model.onnx",
      "models-int8/mlperftiny-kws-dscnn-int8/model.onnx",
  };
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    check_model(models[i], 1, NULL);
    check_model(models[i], 3, NULL);
  }
  /* Lowering off: QLinearConv (kws) and ConvInteger (mnist dynamic) run as
   * the ONNX reference ops. */
  static const wq_load_options unlowered = {.no_lowering = 1};
  check_model("models-int8/mlperftiny-kws-dscnn-int8/model.onnx", 1, &unlowered);
  check_model("models/mnist-8-dynamic-int8/model.onnx", 1, &unlowered);
  /* The watch itself: an allocation inside a watched node is counted. */
  static void *volatile held;
  atomic_fetch_add(&watching, 1);
  const long before = atomic_load(&allocations);
  held = malloc(8);
  free(held);
  atomic_fetch_sub(&watching, 1);
  CHECK(atomic_load(&allocations) == before + 1);
  WQ_TEST_END();
}
