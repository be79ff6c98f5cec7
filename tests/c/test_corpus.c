/* Loads every model of the malformed-model corpus (tests/corpus, written by
 * make_corpus.py) and checks the status and message that expected.txt lists
 * for it: bad files fail cleanly with a message naming the defect, valid
 * ones load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wasmq.h"
#include "seeded_run.h"
#include "wq_test.h"

/* Outputs of the `run` cases, kept for `same-as` comparisons. */
#define MAX_RUNS 64
typedef struct {
  char file[256];
  size_t nbytes;
  int rank;
  int64_t dims[WQ_MAX_RANK];
  void *data;
} run_record;

/* Loads, runs once on seeded inputs (the run must succeed) and records
 * output 0; with `same_as`, its output must equal that file's bit for bit. */
static void run_case(const char *file, const unsigned char *bytes, size_t n, const char *same_as,
                     run_record *runs, int *n_runs) {
  wq_model *m = NULL;
  wq_error err;
  if (wq_model_load(bytes, n, NULL, &m, &err) != WQ_OK) {
    CHECK_MSG(0, "%s: load failed: %s", file, err.message);
    return;
  }
  int ran = 0;
  wq_status st = wq_seeded_run(m, 7, 1 << 20, &ran, &err);
  CHECK_MSG(st == WQ_OK && ran, "%s: run failed: %s (ran %d)", file, err.message, ran);
  const wq_value *y = st == WQ_OK && ran ? wq_model_result(m, 0) : NULL;
  if (y && *n_runs < MAX_RUNS) {
    run_record *r = &runs[(*n_runs)++];
    snprintf(r->file, sizeof r->file, "%s", file);
    r->nbytes = wq_value_nbytes(y);
    r->rank = y->rank;
    memcpy(r->dims, y->dims, sizeof r->dims);
    r->data = malloc(r->nbytes ? r->nbytes : 1);
    memcpy(r->data, y->data, r->nbytes);
    if (same_as) {
      const run_record *o = NULL;
      for (int i = 0; i < *n_runs - 1; i++)
        if (strcmp(runs[i].file, same_as) == 0)
          o = &runs[i];
      CHECK_MSG(o != NULL, "%s: same-as %s, which has not run", file, same_as);
      if (o) {
        CHECK_MSG(o->rank == r->rank && memcmp(o->dims, r->dims, sizeof(int64_t) * r->rank) == 0,
                  "%s: output shape differs from %s", file, same_as);
        CHECK_MSG(o->nbytes == r->nbytes && memcmp(o->data, r->data, r->nbytes) == 0,
                  "%s: output differs from %s", file, same_as);
      }
    }
  }
  wq_model_free(m);
}

/* The full public load: import, op resolution, dtype checks, folding. */
static wq_status load(const unsigned char *bytes, size_t n, wq_error *err) {
  wq_model *m = NULL;
  wq_status st = wq_model_load(bytes, n, NULL, &m, err);
  if (st == WQ_OK) {
    CHECK(m != NULL && wq_model_get_ir(m) != NULL);
    wq_model_free(m);
  } else {
    CHECK_MSG(m == NULL, "failed load left a model behind");
  }
  return st;
}

int main(void) {
  const char *src = getenv("WQ_SOURCE_DIR");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/corpus", src ? src : ".");
  char path[1400];
  snprintf(path, sizeof path, "%s/expected.txt", dir);
  FILE *list = fopen(path, "r");
  CHECK_MSG(list != NULL, "cannot open %s", path);
  if (!list)
    WQ_TEST_END();

  char line[1024];
  int files = 0;
  run_record runs[MAX_RUNS];
  int n_runs = 0;
  while (fgets(line, sizeof line, list)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0')
      continue;
    char file[256], status_name[64];
    int used = 0;
    if (sscanf(line, "%255s %63s %n", file, status_name, &used) < 2) {
      CHECK_MSG(0, "bad line in expected.txt: %s", line);
      continue;
    }
    const char *substring = line + used;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t n = 0;
    unsigned char *bytes = wq_test_read_file(path, &n);
    CHECK_MSG(bytes != NULL || n == 0, "cannot read %s", path);
    wq_error err;
    wq_error_clear(&err);
    wq_status st = load(bytes, n, &err);
    files++;
    CHECK_MSG(strcmp(wq_status_name(st), status_name) == 0, "%s: expected %s, got %s (%s)", file,
              status_name, wq_status_name(st), err.message);
    if (st != WQ_OK) {
      CHECK_MSG(err.code == st, "%s: err.code %d vs status %d", file, err.code, st);
      CHECK_MSG(err.message[0] != '\0', "%s: empty error message", file);
    }
    CHECK_MSG(st == WQ_OK || strstr(err.message, substring) != NULL, "%s: message '%s' lacks '%s'",
              file, err.message, substring);
    /* An unknown op names the op in the message and the node in err.node. */
    if (strcmp(file, "unknown_op.onnx") == 0)
      CHECK_MSG(strcmp(err.node, "fancy_node") == 0, "unknown op: err.node is '%s'", err.node);
    if (strcmp(file, "cycle.onnx") == 0)
      CHECK_MSG(strcmp(err.node, "first") == 0 || strcmp(err.node, "second") == 0,
                "cycle: err.node '%s' is not on the cycle", err.node);
    if (strcmp(file, "dangling_tensor.onnx") == 0)
      CHECK_MSG(strcmp(err.node, "add") == 0, "dangling: err.node is '%s'", err.node);
    if (st == WQ_OK && strncmp(substring, "run", 3) == 0) {
      const char *same = strstr(substring, "same-as ");
      run_case(file, bytes, n, same ? same + 8 : NULL, runs, &n_runs);
    }
    printf("%-28s %-22s %s\n", file, wq_status_name(st), err.message);
    free(bytes);
  }
  fclose(list);
  for (int i = 0; i < n_runs; i++)
    free(runs[i].data);
  CHECK_MSG(files >= 16, "only %d corpus files listed", files);
  WQ_TEST_END();
}
