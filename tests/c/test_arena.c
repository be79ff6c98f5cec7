/* Arena planner and its use by the runtime: hand-built lifetime sets with a
 * known optimal packing, invariants on random sets, real models (peak vs
 * lower bound, outputs identical to the malloc path), re-planning when the
 * input shapes change, and every conformance case with poisoned buffers (a
 * kernel that relies on zeroed output memory would differ). */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_internal.h"
#include "api/wasmq.h"
#include "runtime/arena.h"
#include "wq_test.h"

static const char *shared_dir(void) {
  const char *d = getenv("WQ_SHARED_DIR");
  return d ? d : "../shared";
}

/* --- the planner on hand-built lifetimes -------------------------------- */

typedef struct {
  size_t arena_bytes, lower_bound;
  bool valid;
} plan_result;

static plan_result plan(const wq_lifetime *t, int n, size_t *offsets) {
  wq_arena_summary s;
  wq_error err;
  plan_result r = {0, 0, false};
  wq_status st = wq_arena_plan(t, n, WQ_ARENA_ALIGN, offsets, &s, &err);
  CHECK_MSG(st == WQ_OK, "%s", err.message);
  if (st != WQ_OK)
    return r;
  r.arena_bytes = s.arena_bytes;
  r.lower_bound = s.lower_bound;
  r.valid = wq_arena_verify(t, n, offsets, WQ_ARENA_ALIGN, s.arena_bytes, &err);
  CHECK_MSG(r.valid, "%s", err.message);
  return r;
}

static void test_chain_reuses_every_other_buffer(void) {
  /* a -> b -> c -> d: each lives from its producer to its consumer; a and c
   * (and b and d) never meet, so two slots suffice. */
  wq_lifetime t[] = {{64, 0, 1}, {64, 1, 2}, {64, 2, 3}, {64, 3, 4}};
  size_t off[4];
  plan_result r = plan(t, 4, off);
  CHECK(r.lower_bound == 128);
  CHECK(r.arena_bytes == 128);
  CHECK(off[0] == off[2] && off[1] == off[3] && off[0] != off[1]);
}

static void test_all_alive_together_is_the_sum(void) {
  wq_lifetime t[] = {{32, 0, 5}, {48, 2, 3}, {16, 3, 3}};
  size_t off[3];
  plan_result r = plan(t, 3, off);
  CHECK(r.lower_bound == 96);
  CHECK(r.arena_bytes == 96);
}

static void test_disjoint_lifetimes_share_one_slot(void) {
  wq_lifetime t[] = {{96, 0, 0}, {208, 1, 1}, {48, 2, 2}};
  size_t off[3];
  plan_result r = plan(t, 3, off);
  CHECK(r.lower_bound == 208);
  CHECK(r.arena_bytes == 208);
  CHECK(off[0] == 0 && off[1] == 0 && off[2] == 0);
}

static void test_skip_connection(void) {
  /* A U-Net-like skip: x0 lives across the whole block while x1..x3 chain
   * beside it. Optimal: x0 | x1/x3 | x2 = 128 + 64 + 64. */
  wq_lifetime t[] = {{128, 0, 4}, {64, 1, 2}, {64, 2, 3}, {64, 3, 4}};
  size_t off[4];
  plan_result r = plan(t, 4, off);
  CHECK(r.lower_bound == 256);
  CHECK(r.arena_bytes == 256);
  CHECK(off[1] == off[3]);
}

static void test_small_tensor_fills_a_gap(void) {
  /* b lives through steps 0..2; c (128) at step 1 sits beside it; a (step
   * 0) and d (step 2) must both fit in c's bytes rather than grow the arena. */
  wq_lifetime t[] = {{64, 0, 0}, {64, 0, 2}, {128, 1, 1}, {64, 2, 2}};
  size_t off[4];
  plan_result r = plan(t, 4, off);
  CHECK(r.lower_bound == 192);
  CHECK(r.arena_bytes == 192);
}

static void test_alignment_and_zero_sizes(void) {
  wq_lifetime t[] = {{1, 0, 1}, {1, 0, 1}, {0, 0, 1}, {17, 1, 1}};
  size_t off[4];
  plan_result r = plan(t, 4, off);
  CHECK(r.lower_bound == 19);
  /* Each starts on a 16-byte boundary: 16 + 16 + 32. */
  CHECK(r.arena_bytes == 64);
  for (int i = 0; i < 4; i++)
    CHECK(off[i] % WQ_ARENA_ALIGN == 0);
  wq_arena_summary s;
  wq_error err;
  CHECK(wq_arena_plan(NULL, 0, 16, NULL, &s, &err) == WQ_OK && s.arena_bytes == 0 &&
        s.lower_bound == 0);
}

static void test_bad_arguments(void) {
  size_t off[2];
  wq_arena_summary s;
  wq_error err;
  wq_lifetime backwards[] = {{16, 3, 2}};
  CHECK(wq_arena_plan(backwards, 1, 16, off, &s, &err) == WQ_ERR_INVALID_ARG);
  CHECK(strstr(err.message, "lifetime [3, 2]") != NULL);
  wq_lifetime ok[] = {{16, 0, 1}};
  CHECK(wq_arena_plan(ok, 1, 24, off, &s, &err) == WQ_ERR_INVALID_ARG);
  wq_lifetime huge[] = {{SIZE_MAX - 4, 0, 1}, {SIZE_MAX / 2, 0, 1}};
  CHECK(wq_arena_plan(huge, 2, 16, off, &s, &err) == WQ_ERR_OUT_OF_MEMORY);
  wq_lifetime big[] = {{SIZE_MAX / 2, 0, 1}, {SIZE_MAX / 2, 0, 1}};
  CHECK(wq_arena_plan(big, 2, 16, off, &s, &err) == WQ_ERR_OUT_OF_MEMORY);
  /* The checker catches overlapping placements and misalignment. */
  wq_lifetime two[] = {{32, 0, 1}, {32, 1, 2}};
  size_t clash[] = {0, 16};
  CHECK(!wq_arena_verify(two, 2, clash, 16, 64, &err));
  CHECK(strstr(err.message, "overlap") != NULL);
  size_t misaligned[] = {0, 40};
  CHECK(!wq_arena_verify(two, 2, misaligned, 16, 96, &err));
  size_t outside[] = {0, 48};
  CHECK(!wq_arena_verify(two, 2, outside, 16, 64, &err));
  size_t fine[] = {0, 32};
  CHECK(wq_arena_verify(two, 2, fine, 16, 64, &err));
}

static uint32_t next_random(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static void test_random_sets_keep_the_invariants(void) {
  uint32_t rng = 12345;
  double worst = 1.0, total_ratio = 0;
  int counted = 0;
  for (int trial = 0; trial < 300; trial++) {
    int n = 1 + (int)(next_random(&rng) % 60);
    int steps = 1 + (int)(next_random(&rng) % 40);
    wq_lifetime t[60];
    size_t off[60];
    size_t unaligned_sum = 0;
    for (int i = 0; i < n; i++) {
      int first = (int)(next_random(&rng) % (uint32_t)steps);
      int len = (int)(next_random(&rng) % 6);
      /* Mostly activation-like sizes, some tiny and some empty. */
      uint32_t kind = next_random(&rng) % 10;
      size_t size = kind == 0 ? 0 : kind < 3 ? next_random(&rng) % 40 : next_random(&rng) % 100000;
      t[i] = (wq_lifetime){size, first, first + len};
      unaligned_sum += size;
    }
    plan_result r = plan(t, n, off);
    CHECK(r.valid);
    CHECK(r.arena_bytes >= r.lower_bound);
    CHECK(r.lower_bound <= unaligned_sum);
    if (r.lower_bound > 4096) {
      double ratio = (double)r.arena_bytes / (double)r.lower_bound;
      total_ratio += ratio;
      counted++;
      if (ratio > worst)
        worst = ratio;
    }
  }
  printf("random lifetime sets: %d planned, mean peak/lower bound %.3f, worst %.3f\n", counted,
         total_ratio / (counted ? counted : 1), worst);
  CHECK(counted > 100);
  CHECK(total_ratio / counted < 1.15);
}

/* --- real models ----------------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *n = (size_t)len;
  return buf;
}

static wq_model *load_path(const char *path, const wq_load_options *opts) {
  size_t n;
  uint8_t *bytes = read_all(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    return NULL;
  wq_model *m = NULL;
  wq_error err;
  wq_status st = wq_model_load(bytes, n, opts, &m, &err);
  CHECK_MSG(st == WQ_OK, "%s: %s (node %s)", path, err.message, err.node);
  free(bytes);
  return m;
}

/* Seeded random inputs in [-1, 1) (never zeros) for every input of m, with
 * the given shape for input 0 when rank > 0. Caller frees each data. */
static int make_inputs(const wq_model *m, int rank, const int64_t *dims, uint32_t seed,
                       wq_value *in) {
  int n = wq_model_input_count(m);
  for (int i = 0; i < n; i++) {
    const wq_tensor *t = wq_model_input(m, i);
    memset(&in[i], 0, sizeof in[i]);
    in[i].dtype = t->dtype;
    in[i].rank = (i == 0 && rank > 0) ? rank : t->rank;
    for (int d = 0; d < in[i].rank; d++)
      in[i].dims[d] = (i == 0 && rank > 0) ? dims[d] : (t->dims[d] >= 0 ? t->dims[d] : 1);
    int64_t count = wq_value_numel(&in[i]);
    in[i].data = malloc(wq_value_nbytes(&in[i]) + 1);
    CHECK(t->dtype == WQ_DT_FLOAT && in[i].data);
    if (t->dtype != WQ_DT_FLOAT || !in[i].data)
      return i + 1;
    uint32_t state = seed + 7919u * (uint32_t)i;
    for (int64_t k = 0; k < count; k++)
      ((float *)in[i].data)[k] = (float)next_random(&state) / 8388608.0f - 1.0f;
  }
  return n;
}

static void free_inputs(wq_value *in, int n) {
  for (int i = 0; i < n; i++)
    free(in[i].data);
}

/* Bitwise equality of every result of a and b (same kernels, same inputs). */
static bool same_results(const wq_model *a, const wq_model *b, const char *what) {
  bool same = true;
  for (int i = 0; i < wq_model_output_count(a); i++) {
    const wq_value *x = wq_model_result(a, i), *y = wq_model_result(b, i);
    bool ok = x && y && x->dtype == y->dtype && x->rank == y->rank &&
              memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)x->rank) == 0 &&
              memcmp(x->data, y->data, wq_value_nbytes(x)) == 0;
    CHECK_MSG(ok, "%s: output %d differs between the arena and the malloc path", what, i);
    same = same && ok;
  }
  return same;
}

typedef struct {
  const char *path; /* under WQ_SHARED_DIR/models */
  const char *input;
  int rank;
  int64_t dims[4];
} model_case;

static void test_real_models(void) {
  static const model_case cases[] = {
      {"mnist-8/model.onnx", NULL, 0, {0}},
      {"mnist-8-dynamic-int8/model.onnx", NULL, 0, {0}},
      {"super-resolution-10/model.onnx", "input", 4, {1, 1, 224, 224}},
      {"pytorch-super-resolution-depthtospace/model.onnx", "input", 4, {1, 1, 224, 224}},
      {"teams-segmentation-msra190729/model.onnx", "bgrm", 4, {1, 4, 96, 160}},
      {"ppocr-mobile-v2-cls/model.onnx", "x", 4, {1, 3, 48, 192}},
      {"openwakeword-hello-deepa-mlp/model.onnx", NULL, 0, {0}},
      {"synthetic/smallcnn_f32.onnx", NULL, 0, {0}},
      {"synthetic/smallcnn_qdq.onnx", NULL, 0, {0}},
      {"synthetic/matmul_256x256x256_qdq.onnx", NULL, 0, {0}},
      {"synthetic/matmul_1x1024x1024_qlinear.onnx", NULL, 0, {0}},
  };
  printf("%-52s %12s %12s %7s %12s %s\n", "model", "arena", "lower bound", "ratio", "no reuse",
         "tensors");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const model_case *mc = &cases[c];
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", shared_dir(), mc->path);
    wq_input_shape shape = {mc->input, mc->rank, mc->dims};
    wq_load_options opts = {.input_shapes = &shape, .n_input_shapes = mc->input ? 1 : 0};
    wq_model *arena_model = load_path(path, &opts);
    wq_model *malloc_model = load_path(path, &opts);
    if (!arena_model || !malloc_model) {
      wq_model_free(arena_model);
      wq_model_free(malloc_model);
      continue;
    }
    malloc_model->plan.use_arena = false;
    arena_model->plan.poison = true;
    wq_memory_info mem;
    wq_model_memory(arena_model, &mem);
    CHECK_MSG(mem.planned && mem.planned_at_load, "%s: static shapes but no plan at load",
              mc->path);
    double ratio =
        mem.lower_bound_bytes ? (double)mem.arena_bytes / (double)mem.lower_bound_bytes : 1.0;
    printf("%-52s %12zu %12zu %7.3f %12zu %d\n", mc->path, mem.arena_bytes, mem.lower_bound_bytes,
           ratio, mem.unshared_bytes, mem.n_tensors);
    CHECK(mem.arena_bytes >= mem.lower_bound_bytes);
    CHECK_MSG(ratio <= 1.3, "%s: arena %zu is %.3fx the lower bound %zu", mc->path, mem.arena_bytes,
              ratio, mem.lower_bound_bytes);
    CHECK(mem.arena_bytes <= mem.unshared_bytes);

    wq_value in[4];
    int n_in = make_inputs(arena_model, mc->rank, mc->dims, 2024u + (uint32_t)c, in);
    wq_error err;
    for (int run = 0; run < 2; run++) {
      wq_status a = wq_model_run(arena_model, in, n_in, &err);
      CHECK_MSG(a == WQ_OK, "%s (arena): %s (node %s)", mc->path, err.message, err.node);
      wq_status b = wq_model_run(malloc_model, in, n_in, &err);
      CHECK_MSG(b == WQ_OK, "%s (malloc): %s (node %s)", mc->path, err.message, err.node);
      if (a == WQ_OK && b == WQ_OK)
        same_results(arena_model, malloc_model, mc->path);
    }
    wq_arena_stats stats = wq_exec_arena_stats(&arena_model->plan);
    CHECK_MSG(stats.arena_runs == 2 && stats.recording_runs == 0 && stats.plans_built == 1,
              "%s: %d arena runs, %d recording runs, %d plans", mc->path, stats.arena_runs,
              stats.recording_runs, stats.plans_built);
    free_inputs(in, n_in);
    wq_model_free(arena_model);
    wq_model_free(malloc_model);
  }
}

/* teams-segmentation has symbolic batch/height/width: nothing can be planned
 * at load; each new input shape records once, then runs in its cached plan. */
static void test_replanning_by_input_shape(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/models/teams-segmentation-msra190729/model.onnx", shared_dir());
  wq_model *m = load_path(path, NULL);
  wq_model *reference = load_path(path, NULL);
  if (!m || !reference) {
    wq_model_free(m);
    wq_model_free(reference);
    return;
  }
  reference->plan.use_arena = false;
  wq_memory_info mem;
  wq_model_memory(m, &mem);
  CHECK(!mem.planned && mem.arena_bytes == 0);

  static const int64_t shapes[][4] = {{1, 4, 32, 48}, {1, 4, 64, 64}, {1, 4, 32, 48},
                                      {2, 4, 16, 32}, {1, 4, 64, 64}, {1, 4, 32, 48}};
  /* What each run must be: a recording run (new shape) or an arena run. */
  static const bool records[] = {true, true, false, true, false, false};
  static const int reruns[] = {1, 0, 1, 0, 0, 0};
  size_t arena_small = 0;
  wq_error err;
  for (int s = 0; s < 6; s++) {
    for (int again = 0; again <= reruns[s]; again++) {
      wq_arena_stats before = wq_exec_arena_stats(&m->plan);
      wq_value in[1];
      int n_in = make_inputs(m, 4, shapes[s], 99u + (uint32_t)s, in);
      CHECK_MSG(wq_model_run(m, in, n_in, &err) == WQ_OK, "%s", err.message);
      CHECK_MSG(wq_model_run(reference, in, n_in, &err) == WQ_OK, "%s", err.message);
      same_results(m, reference, "teams-segmentation");
      free_inputs(in, n_in);
      wq_arena_stats after = wq_exec_arena_stats(&m->plan);
      bool recorded = after.recording_runs == before.recording_runs + 1;
      bool expect_record = records[s] && again == 0;
      CHECK_MSG(recorded == expect_record, "shape %d run %d: recorded %d, expected %d", s, again,
                recorded, expect_record);
      CHECK(after.planned && !after.planned_at_load);
      CHECK(after.arena_bytes >= after.lower_bound);
      CHECK((double)after.arena_bytes <= 1.3 * (double)after.lower_bound);
      if (s == 0)
        arena_small = after.arena_bytes;
      if (s == 2 || s == 5)
        CHECK(after.arena_bytes == arena_small); /* the cached plan of the first shape */
      if (s == 1)
        CHECK(after.arena_bytes > arena_small);
    }
  }
  wq_arena_stats final = wq_exec_arena_stats(&m->plan);
  CHECK(final.plans_built == 3);
  CHECK(final.recording_runs == 3);
  wq_model_free(m);
  wq_model_free(reference);
}

/* --- every conformance case with poisoned buffers ------------------------ */

static bool bitwise_equal(const wq_value *x, const wq_value *y) {
  return x && y && x->dtype == y->dtype && x->rank == y->rank &&
         memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)x->rank) == 0 &&
         memcmp(x->data, y->data, wq_value_nbytes(x)) == 0;
}

static void run_case_poisoned(const char *dir, int *compared, int *skipped) {
  char path[1200];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  size_t n;
  uint8_t *bytes = read_all(path, &n);
  if (!bytes)
    return;
  wq_error err;
  wq_model *clean = NULL, *poisoned = NULL;
  bool loaded = wq_model_load(bytes, n, NULL, &clean, &err) == WQ_OK &&
                wq_model_load(bytes, n, NULL, &poisoned, &err) == WQ_OK;
  free(bytes);
  wq_value in[16];
  int n_in = 0;
  if (!loaded || wq_model_input_count(clean) > 16)
    goto skip;
  for (; n_in < wq_model_input_count(clean); n_in++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, n_in);
    bytes = read_all(path, &n);
    wq_status st = bytes ? wq_tensor_decode(bytes, n, &in[n_in], NULL, 0, &err) : WQ_ERR_IO;
    free(bytes);
    if (st != WQ_OK)
      goto skip;
  }
  poisoned->plan.poison = true;
  /* Twice: the second poisoned run executes in the arena planned by the first. */
  if (wq_model_run(clean, in, n_in, &err) != WQ_OK)
    goto skip;
  for (int run = 0; run < 2; run++) {
    wq_status st = wq_model_run(poisoned, in, n_in, &err);
    CHECK_MSG(st == WQ_OK, "%s: poisoned run failed: %s", dir, err.message);
    for (int o = 0; st == WQ_OK && o < wq_model_output_count(clean); o++)
      CHECK_MSG(bitwise_equal(wq_model_result(clean, o), wq_model_result(poisoned, o)),
                "%s: output %d depends on the initial contents of its buffer", dir, o);
  }
  (*compared)++;
  goto done;
skip:
  (*skipped)++;
done:
  for (int i = 0; i < n_in; i++)
    free(in[i].data);
  wq_model_free(clean);
  wq_model_free(poisoned);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_conformance_cases_with_poisoned_buffers(void) {
  char root[1024];
  snprintf(root, sizeof root, "%s/onnx-node-tests", shared_dir());
  DIR *d = opendir(root);
  CHECK_MSG(d != NULL, "cannot open %s", root);
  if (!d)
    return;
  char *names[4096];
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && count < 4096)
    if (e->d_name[0] != '.')
      names[count++] = wq_strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)count, sizeof *names, compare_names);
  int compared = 0, skipped = 0;
  for (int i = 0; i < count; i++) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    run_case_poisoned(dir, &compared, &skipped);
    free(names[i]);
  }
  printf("conformance cases with poisoned buffers: %d compared, %d skipped (not runnable)\n",
         compared, skipped);
  CHECK(compared > 100);
}

int main(void) {
  test_chain_reuses_every_other_buffer();
  test_all_alive_together_is_the_sum();
  test_disjoint_lifetimes_share_one_slot();
  test_skip_connection();
  test_small_tensor_fills_a_gap();
  test_alignment_and_zero_sizes();
  test_bad_arguments();
  test_random_sets_keep_the_invariants();
  test_real_models();
  test_replanning_by_input_shape();
  test_conformance_cases_with_poisoned_buffers();
  WQ_TEST_END();
}
