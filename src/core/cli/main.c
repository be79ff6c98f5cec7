/* The native `wasmq` command: info, run, inspect, check (one conformance
 * case), quantize and rewrite; `wasmq COMMAND --help` for each. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../api/wasmq.h"
#include "cli_error.h"
#include "cmd_quantize.h"
#include "cmd_rewrite.h"
#include "files.h"
#include "npy.h"
#include "progress.h"
#include "random_fill.h"
#include "shape_arg.h"

#define MAX_CLI_INPUTS 64

/* Each command's usage, printed by `wasmq COMMAND --help` (stdout, exit 0)
 * and after a usage error (stderr, exit 2). The npm CLI (src/js/cli.mjs)
 * prints the same text. */
static const char *const HELP[][2] = {
    {"info", "  wasmq info MODEL [--lowered] [--partition int|int+fp|fp]\n"
             "      inputs, outputs, opsets, ops, parameters, arena; --lowered: each node\n"
             "      after int8 lowering (int8 op and qparams, or why it stayed float)\n"},
    {"run",
     "  wasmq run MODEL [--input NAME=FILE.npy | --input NAME=random:SEED]...\n"
     "                  [--shape NAME=1x3x224x224]... [--out DIR] [--threads N]\n"
     "                  [--repeats N] [--max-memory BYTES] [--max-time S] [--partition MODE]\n"
     "      one line per output; its time on stderr (wall clock of run: one run,\n"
     "      or with --repeats N the median of N runs after one warm-up run);\n"
     "      --out DIR writes DIR/OUTPUT.npy; --max-memory: fail (out of memory)\n"
     "      rather than hold more than BYTES of weights, outputs and arena;\n"
     "      --max-time: stop a run past S seconds (checked between nodes\n"
     "      and, with threads, between blocks of long float GEMMs)\n"
     "  wasmq run MODEL --stream --chunk N [--state OUT=IN]... --input NAME=LONG.npy ...\n"
     "      the inputs cut into chunks of N along their last dim, run in turn, each\n"
     "      --state output fed to its input for the next chunk (starting from zeros,\n"
     "      or from --input IN=FILE.npy); a line per chunk and output, --out DIR\n"
     "      writes each output stacked over the chunks ([chunks, ...])\n"},
    {"inspect", "  wasmq inspect MODEL [--json] [--shape NAME=1x3x224x224]... [--partition MODE]\n"
                "      the decision records as JSON (docs/graph-json.md)\n"},
    {"check", "  wasmq check CASE_DIR\n"
              "      run one ONNX backend-test case folder (model.onnx, test_data_set_*)\n"},
    {"quantize",
     "  wasmq quantize MODEL -o OUT.onnx --calib DIR|random:N:LO..HI [--config FILE]\n"
     "                 [--report FILE.json] [--keep-float N] [--target-snr DB]\n"
     "                 [--target-cosine C] [--max-time S] [--timeout S]\n"
     "      float ONNX in, QDQ int8 ONNX out (docs/quantize.md)\n"
     "  wasmq quantize MODEL -o OUT.onnx --mode dynamic [--per-tensor] [--uint8-weights]\n"
     "      onnxruntime's dynamic int8 form (no calibration)\n"},
    {"rewrite", "  wasmq rewrite MODEL -o OUT.onnx [--prepare]\n"
                "      fold constants (and with --prepare BatchNorm/Mul/Add into linears),\n"
                "      write ONNX\n"},
};
#define N_HELP ((int)(sizeof HELP / sizeof HELP[0]))

static void print_usage(FILE *out) {
  fputs("usage:\n", out);
  for (int i = 0; i < N_HELP; i++)
    fputs(HELP[i][1], out);
  fputs("  run/info/inspect: --partition int|int+fp|fp (default int+fp),\n"
        "                    --no-lower (= fp), --strict-int8 (= int),\n"
        "                    --kernels auto|reference|simd128|relaxed (int8 kernels;\n"
        "                    this native build has the reference only)\n"
        "  wasmq COMMAND --help   one command's usage\n",
        out);
}

static int usage(void) {
  print_usage(stderr);
  return 2;
}

/* `wasmq COMMAND --help` (or -h anywhere in its arguments): its usage on
 * stdout. 1 when asked (and printed). */
static int help_asked(const char *command, int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0)
      continue;
    for (int c = 0; c < N_HELP; c++)
      if (strcmp(HELP[c][0], command) == 0)
        printf("usage:\n%s", HELP[c][1]);
    return 1;
  }
  return 0;
}

/* An option the command does not take: named, with the command's usage. */
static int unknown_option(const char *command, const char *arg) {
  fprintf(stderr, "wasmq: %s: unknown or incomplete option %s\n", command, arg);
  for (int c = 0; c < N_HELP; c++)
    if (strcmp(HELP[c][0], command) == 0)
      fprintf(stderr, "usage:\n%s", HELP[c][1]);
  return 2;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void wq_cli_print_error(const char *what, const wq_error *err) {
  fprintf(stderr, "wasmq: %s: %s", what, err->message);
  if (err->node[0])
    fprintf(stderr, " (node '%s')", err->node);
  fprintf(stderr, " [%s]\n", wq_status_name(err->code));
}

/* Exit codes: 0 ok, 1 the model failed to load or run, 2 usage error
 * (bad option, unreadable file). */
static wq_model *load_model(const char *path, const wq_load_options *opts, int *rc) {
  uint8_t *bytes;
  size_t n;
  *rc = 1;
  wq_error err;
  if (wq_cli_read_file(path, &bytes, &n, &err) != WQ_OK) {
    fprintf(stderr, "wasmq: %s\n", err.message);
    *rc = 2;
    return NULL;
  }
  wq_model *m = NULL;
  wq_cli_step("loading %s", path);
  wq_status st = wq_model_load(bytes, n, opts, &m, &err);
  wq_cli_step_end();
  if (st != WQ_OK)
    wq_cli_print_error(path, &err);
  free(bytes);
  return m;
}

/* --partition MODE / --no-lower / --strict-int8 / --kernels K at argv[*i]:
 * the partition and kernel load options. 1 when taken (*i moves past MODE
 * or K), 0 for any other argument, -1 (after a message) for a bad value. A
 * kernel variant the build lacks fails the load, naming what it has. */
static int lowering_option(int argc, char **argv, int *i, wq_load_options *opts) {
  const char *arg = argv[*i];
  if (strcmp(arg, "--no-lower") == 0) {
    opts->no_lowering = 1;
  } else if (strcmp(arg, "--strict-int8") == 0) {
    opts->lower_strict = 1;
  } else if (strcmp(arg, "--partition") == 0) {
    int mode = *i + 1 < argc ? wq_partition_mode_parse(argv[*i + 1]) : -1;
    if (mode < 0) {
      fprintf(stderr, "wasmq: --partition expects int, int+fp or fp, got %s\n",
              *i + 1 < argc ? argv[*i + 1] : "nothing");
      return -1;
    }
    opts->partition = (wq_partition_mode)mode;
    (*i)++;
  } else if (strcmp(arg, "--kernels") == 0) {
    static const char *const names[] = {"auto", "reference", "simd128", "relaxed"};
    const char *k = *i + 1 < argc ? argv[*i + 1] : "";
    int at = 0;
    while (at < 4 && strcmp(k, names[at]) != 0)
      at++;
    if (at == 4) {
      fprintf(stderr, "wasmq: --kernels expects auto, reference, simd128 or relaxed, got %s\n",
              *k ? k : "nothing");
      return -1;
    }
    opts->kernels = at; /* 0 auto, else 1 + the wq_isa (wasmq.h) */
    (*i)++;
  } else {
    return 0;
  }
  return 1;
}

static int cmd_info(int argc, char **argv) {
  if (help_asked("info", argc, argv))
    return 0;
  int lowered = 0;
  const char *model = NULL;
  wq_load_options opts = {0};
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--lowered") == 0) {
      lowered = 1;
      continue;
    }
    int taken = lowering_option(argc, argv, &i, &opts);
    if (taken < 0)
      return 2;
    if (taken)
      continue;
    if (argv[i][0] == '-')
      return unknown_option("info", argv[i]);
    if (model) {
      fprintf(stderr, "wasmq: info expects exactly one MODEL, got %s and %s\n", model, argv[i]);
      return 2;
    }
    model = argv[i];
  }
  if (!model) {
    fprintf(stderr, "wasmq: info expects exactly one MODEL\n");
    return 2;
  }
  int rc;
  wq_model *m = load_model(model, &opts, &rc);
  if (!m)
    return rc;
  char *text = wq_model_describe(m);
  if (text)
    fputs(text, stdout);
  if (text && lowered) {
    free(text);
    text = wq_model_describe_lowered(m);
    if (text)
      fputs(text, stdout);
  }
  free(text);
  wq_model_free(m);
  return text ? 0 : 1;
}

static int name_matches(const char *arg, const char *name) {
  size_t len = strcspn(arg, "=");
  return strlen(name) == len && strncmp(arg, name, len) == 0;
}

static void print_result(const char *name, const wq_value *v) {
  char dims[128];
  wq_dims_format(v->dims, v->rank, dims, sizeof dims);
  printf("%s %s %s", name, v->dtype == WQ_DT_FLOAT ? "float32" : wq_dtype_name(v->dtype), dims);
  int64_t n = wq_value_numel(v), best = 0;
  printf(" [");
  for (int64_t i = 0; i < n && i < 6; i++)
    printf(i ? " %.6g" : "%.6g", wq_value_get_double(v, i));
  printf(n > 6 ? " ...]" : "]");
  for (int64_t i = 1; i < n; i++)
    if (wq_value_get_double(v, i) > wq_value_get_double(v, best))
      best = i;
  if (n > 0)
    printf(" argmax=%lld", (long long)best);
  printf("\n");
}

/* Writes `v` as DIR/NAME.npy, the name flattened ('/', '\\', ':' -> '_'). */
static int write_output(const char *out_dir, const char *name, const wq_value *v) {
  char path[4096], safe[256];
  snprintf(safe, sizeof safe, "%s", name);
  for (char *c = safe; *c; c++)
    if (*c == '/' || *c == '\\' || *c == ':')
      *c = '_';
  snprintf(path, sizeof path, "%s/%s.npy", out_dir, safe);
  wq_error err;
  if (wq_npy_write(path, v, &err) != WQ_OK) {
    wq_cli_print_error("writing output", &err);
    return 1;
  }
  return 0;
}

/* --stream: the inputs not fed by a --state binding are cut into chunks of
 * `chunk` along their last dim and run in turn; after each run a bound
 * output is copied into its state input. bound_in[i] / bound_out[o]: the
 * paired index or -1. Outputs not bound print a line per chunk and, with
 * out_dir, are written stacked over the chunks. */
static int run_stream(wq_model *m, wq_value *values, int n_inputs, const int *bound_in,
                      const int *bound_out, long chunk, const char *out_dir) {
  const int n_out = wq_model_output_count(m);
  int64_t length = -1;
  for (int i = 0; i < n_inputs; i++) {
    const int64_t last = values[i].rank > 0 ? values[i].dims[values[i].rank - 1] : -1;
    if (bound_in[i] >= 0)
      continue;
    if (last < 1 || (length >= 0 && last != length)) {
      fprintf(stderr, "wasmq: --stream: the inputs that are not state need one last dim (%s)\n",
              wq_model_input(m, i)->name);
      return 2;
    }
    length = last;
  }
  const long count = length > 0 ? (long)(length / chunk) : 0;
  if (count < 1) {
    fprintf(stderr, "wasmq: --stream: %lld steps hold no chunk of %ld\n", (long long)length, chunk);
    return 2;
  }
  int rc = 1;
  wq_value part[MAX_CLI_INPUTS], stacked[MAX_CLI_INPUTS];
  memset(part, 0, sizeof part);
  memset(stacked, 0, sizeof stacked);
  for (int i = 0; i < n_inputs; i++) {
    part[i] = values[i];
    if (bound_in[i] >= 0)
      continue;
    part[i].dims[part[i].rank - 1] = chunk;
    if (!(part[i].data = malloc(wq_value_nbytes(&part[i]) + 1)))
      goto done;
  }
  wq_error err;
  for (long k = 0; k < count; k++) {
    for (int i = 0; i < n_inputs; i++) {
      if (bound_in[i] >= 0)
        continue;
      const size_t es = wq_dtype_size(values[i].dtype), row = (size_t)chunk * es;
      const int64_t rows = wq_value_numel(&values[i]) / length;
      for (int64_t r = 0; r < rows; r++)
        memcpy((char *)part[i].data + (size_t)r * row,
               (const char *)values[i].data + ((size_t)(r * length) + (size_t)(k * chunk)) * es,
               row);
    }
    if (wq_model_run(m, part, n_inputs, &err) != WQ_OK) {
      fprintf(stderr, "wasmq: chunk %ld: ", k);
      wq_cli_print_error("run failed", &err);
      goto done;
    }
    for (int o = 0; o < n_out; o++) {
      const wq_value *v = wq_model_result(m, o);
      if (bound_out[o] >= 0) {
        wq_value *to = &part[bound_out[o]];
        if (v->dtype != to->dtype || wq_value_numel(v) != wq_value_numel(to)) {
          fprintf(stderr, "wasmq: --state %s=%s: the output's dtype or size is not the input's\n",
                  wq_model_output(m, o)->name, wq_model_input(m, bound_out[o])->name);
          rc = 2;
          goto done;
        }
        memcpy(to->data, v->data, wq_value_nbytes(v));
        continue;
      }
      printf("chunk %ld: ", k);
      print_result(wq_model_output(m, o)->name, v);
      if (!out_dir)
        continue;
      if (k == 0) {
        stacked[o] = *v;
        stacked[o].rank = v->rank + 1;
        stacked[o].dims[0] = count;
        memcpy(stacked[o].dims + 1, v->dims, sizeof(int64_t) * (size_t)v->rank);
        if (v->rank + 1 > WQ_MAX_RANK ||
            !(stacked[o].data = malloc(wq_value_nbytes(v) * (size_t)count + 1)))
          goto done;
      }
      memcpy((char *)stacked[o].data + wq_value_nbytes(v) * (size_t)k, v->data, wq_value_nbytes(v));
    }
  }
  rc = 0;
  for (int o = 0; out_dir && o < n_out; o++)
    if (bound_out[o] < 0 && write_output(out_dir, wq_model_output(m, o)->name, &stacked[o]))
      rc = 1;
done:
  for (int i = 0; i < n_inputs; i++)
    if (bound_in[i] < 0)
      free(part[i].data);
  for (int o = 0; o < MAX_CLI_INPUTS; o++)
    free(stacked[o].data);
  return rc;
}

static int cmd_run(int argc, char **argv) {
  if (help_asked("run", argc, argv))
    return 0;
  if (argc < 1 || argv[0][0] == '-') {
    fprintf(stderr, "wasmq: run: missing MODEL\n");
    return 2;
  }
  const char *model_path = argv[0], *out_dir = NULL;
  long repeats = 1;
  const char *input_args[MAX_CLI_INPUTS];
  wq_cli_shape shapes[MAX_CLI_INPUTS];
  int n_input_args = 0, n_shapes = 0;
  wq_load_options lower_flags = {0};
  long threads = 1;
  unsigned long long max_memory = 0;
  double max_time = 0;
  int stream = 0, n_states = 0;
  long chunk = 0;
  const char *state_args[MAX_CLI_INPUTS];
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--input") == 0 && i + 1 < argc && n_input_args < MAX_CLI_INPUTS) {
      input_args[n_input_args++] = argv[++i];
      if (!strchr(input_args[n_input_args - 1], '=')) {
        fprintf(stderr, "wasmq: --input expects NAME=FILE.npy or NAME=random:SEED\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && n_shapes < MAX_CLI_INPUTS) {
      if (wq_cli_parse_shape(argv[++i], &shapes[n_shapes]) != 0) {
        fprintf(stderr, "wasmq: --shape expects NAME=D0xD1x..., got %s\n", argv[i]);
        return 2;
      }
      n_shapes++;
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (strcmp(argv[i], "--stream") == 0) {
      stream = 1;
    } else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) {
      char *end;
      chunk = strtol(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || chunk < 1) {
        fprintf(stderr, "wasmq: --chunk expects a step count >= 1, got %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--state") == 0 && i + 1 < argc && n_states < MAX_CLI_INPUTS) {
      state_args[n_states++] = argv[++i];
      if (!strchr(argv[i], '=')) {
        fprintf(stderr, "wasmq: --state expects OUTPUT=INPUT, got %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      char *end;
      threads = strtol(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || threads < 1 || threads > 256) {
        fprintf(stderr, "wasmq: --threads expects an integer in 1..256, got %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      char *end;
      repeats = strtol(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || repeats < 1 || repeats > 100000) {
        fprintf(stderr, "wasmq: --repeats expects an integer in 1..100000, got %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--max-time") == 0 && i + 1 < argc) {
      char *end;
      max_time = strtod(argv[++i], &end);
      if (*end != '\0' || end == argv[i] || !(max_time > 0 && max_time <= 1e6)) {
        fprintf(stderr, "wasmq: --max-time expects seconds in (0, 1e6], got %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--max-memory") == 0 && i + 1 < argc) {
      char *end;
      errno = 0;
      max_memory = strtoull(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || argv[i][0] == '-' || errno != 0 || max_memory == 0 ||
          max_memory > SIZE_MAX) {
        fprintf(stderr, "wasmq: --max-memory expects a byte count >= 1, got %s\n", argv[i]);
        return 2;
      }
    } else {
      int taken = lowering_option(argc, argv, &i, &lower_flags);
      if (taken < 0)
        return 2;
      if (taken)
        continue;
      return unknown_option("run", argv[i]);
    }
  }
  if ((chunk || n_states) && !stream) {
    fprintf(stderr, "wasmq: --chunk and --state go with --stream\n");
    return 2;
  }
  if (stream && (!chunk || repeats > 1)) {
    fprintf(stderr, "wasmq: --stream needs --chunk N (and takes no --repeats)\n");
    return 2;
  }
  /* The output folder is made before the work, so a bad path fails at once. */
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "wasmq: cannot create %s: %s\n", out_dir, strerror(errno));
    return 2;
  }

  /* Shapes come from --shape, else from .npy files, else the declaration. */
  wq_value values[MAX_CLI_INPUTS];
  memset(values, 0, sizeof values);
  uint32_t seeds[MAX_CLI_INPUTS] = {0};
  int is_random[MAX_CLI_INPUTS];
  int rc = 1;
  wq_model *m = NULL;
  wq_input_shape load_shapes[MAX_CLI_INPUTS];
  int n_load_shapes = 0;
  char names[MAX_CLI_INPUTS][128];
  for (int s = 0; s < n_shapes; s++) {
    size_t len = strcspn(shapes[s].name, "=");
    snprintf(names[s], sizeof names[s], "%.*s", (int)len, shapes[s].name);
    load_shapes[n_load_shapes++] = (wq_input_shape){names[s], shapes[s].rank, shapes[s].dims};
  }
  wq_load_options opts = {.input_shapes = load_shapes,
                          .n_input_shapes = n_load_shapes,
                          .partition = lower_flags.partition,
                          .no_lowering = lower_flags.no_lowering,
                          .lower_strict = lower_flags.lower_strict,
                          .max_memory_bytes = (size_t)max_memory,
                          .kernels = lower_flags.kernels};
  m = load_model(model_path, &opts, &rc);
  if (!m)
    return rc;
  rc = 1;
  wq_model_time_limit(m, wq_cli_now_ms, max_time * 1e3);
  int n_inputs = wq_model_input_count(m);
  if (n_inputs > MAX_CLI_INPUTS) {
    fprintf(stderr, "wasmq: models with more than %d inputs are not supported by the CLI\n",
            MAX_CLI_INPUTS);
    goto done;
  }
  int bound_in[MAX_CLI_INPUTS], bound_out[MAX_CLI_INPUTS];
  for (int k = 0; k < MAX_CLI_INPUTS; k++)
    bound_in[k] = bound_out[k] = -1;
  for (int a = 0; a < n_states; a++) {
    const char *eq = strchr(state_args[a], '=');
    int o = 0, i = 0;
    while (o < wq_model_output_count(m) && o < MAX_CLI_INPUTS &&
           !name_matches(state_args[a], wq_model_output(m, o)->name))
      o++;
    while (i < n_inputs && strcmp(eq + 1, wq_model_input(m, i)->name) != 0)
      i++;
    if (o >= wq_model_output_count(m) || o >= MAX_CLI_INPUTS || i >= n_inputs || bound_in[i] >= 0 ||
        bound_out[o] >= 0) {
      fprintf(stderr, "wasmq: --state %s: no such output and input, or bound twice\n",
              state_args[a]);
      rc = 2;
      goto done;
    }
    bound_in[i] = o;
    bound_out[o] = i;
  }
  for (int a = 0; a < n_input_args; a++) {
    int found = 0;
    for (int i = 0; i < n_inputs; i++)
      found |= name_matches(input_args[a], wq_model_input(m, i)->name);
    if (!found) {
      fprintf(stderr, "wasmq: the model has no input named %.*s\n",
              (int)strcspn(input_args[a], "="), input_args[a]);
      rc = 2;
      goto done;
    }
  }
  for (int i = 0; i < n_inputs; i++) {
    const wq_tensor *decl = wq_model_input(m, i);
    const char *spec = "random:0";
    for (int a = 0; a < n_input_args; a++)
      if (name_matches(input_args[a], decl->name))
        spec = strchr(input_args[a], '=') + 1;
    is_random[i] = strncmp(spec, "random:", 7) == 0;
    if (is_random[i]) {
      char *end;
      unsigned long seed = strtoul(spec + 7, &end, 10);
      if (end == spec + 7 || *end != '\0' || seed > 0xffffffffUL) {
        fprintf(stderr, "wasmq: bad seed in --input %s=%s (want random:N, N in 0..4294967295)\n",
                decl->name, spec);
        rc = 2;
        goto done;
      }
      seeds[i] = (uint32_t)seed;
      values[i].dtype = decl->dtype;
      values[i].rank = decl->rank;
      for (int d = 0; d < decl->rank; d++) {
        values[i].dims[d] = decl->dims[d];
        if (decl->dims[d] < 0) {
          fprintf(stderr, "wasmq: input %s has a symbolic dim (%s): give --shape %s=...\n",
                  decl->name, decl->dim_params[d] ? decl->dim_params[d] : "?", decl->name);
          rc = 2;
          goto done;
        }
      }
      wq_error err;
      if (decl->rank < 0 ||
          wq_shape_check(values[i].dims, values[i].rank, NULL, decl->name, &err) != WQ_OK) {
        fprintf(stderr, "wasmq: input %s has no usable declared shape: give --shape\n", decl->name);
        rc = 2;
        goto done;
      }
      size_t nbytes = wq_value_nbytes(&values[i]);
      values[i].data = calloc(nbytes ? nbytes : 1, 1);
      if (!values[i].data)
        goto done;
      wq_cli_fill_random(&values[i], seeds[i]);
    } else {
      uint8_t *bytes;
      size_t n;
      wq_error err;
      if (wq_cli_read_file(spec, &bytes, &n, &err) != WQ_OK) {
        fprintf(stderr, "wasmq: %s\n", err.message);
        rc = 2;
        goto done;
      }
      wq_status st = wq_npy_parse(bytes, n, &values[i], &err);
      free(bytes);
      if (st != WQ_OK) {
        wq_cli_print_error(spec, &err);
        rc = 2;
        goto done;
      }
    }
  }
  wq_error err;
  if (threads > 1 && wq_model_set_threads(m, (int)threads, &err) != WQ_OK) {
    wq_cli_print_error("threads", &err);
    goto done;
  }
  if (stream) {
    /* A state input starts from zeros unless --input gave it. */
    for (int i = 0; i < n_inputs; i++)
      if (bound_in[i] >= 0 && is_random[i])
        memset(values[i].data, 0, wq_value_nbytes(&values[i]));
    rc = run_stream(m, values, n_inputs, bound_in, bound_out, chunk, out_dir);
    goto done;
  }
  /* One run, or a warm-up run and `repeats` timed ones (their median). */
  double *ms = calloc((size_t)repeats, sizeof *ms);
  if (!ms)
    goto done;
  wq_cli_step("running %s", model_path);
  for (long r = repeats > 1 ? -1 : 0; r < repeats; r++) {
    if (repeats > 1)
      wq_cli_step_update("running %s: %s %ld of %ld", model_path, r < 0 ? "warm-up," : "run",
                         r < 0 ? 0 : r + 1, repeats);
    double t0 = wq_cli_now_ms();
    if (wq_model_run(m, values, n_inputs, &err) != WQ_OK) {
      wq_cli_step_end();
      wq_cli_print_error("run failed", &err);
      free(ms);
      goto done;
    }
    if (r >= 0)
      ms[r] = wq_cli_now_ms() - t0;
  }
  wq_cli_step_end();
  qsort(ms, (size_t)repeats, sizeof *ms, compare_doubles);
  if (repeats > 1)
    fprintf(stderr, "run: %.3f ms (median of %ld runs after a warm-up run, wall clock)\n",
            ms[(repeats - 1) / 2], repeats);
  else
    fprintf(stderr, "run: %.3f ms (one run, wall clock)\n", ms[0]);
  free(ms);
  rc = 0;
  for (int i = 0; i < wq_model_output_count(m); i++) {
    const char *name = wq_model_output(m, i)->name;
    const wq_value *v = wq_model_result(m, i);
    print_result(name, v);
    if (out_dir && write_output(out_dir, name, v))
      rc = 1;
  }
done:
  for (int i = 0; i < MAX_CLI_INPUTS; i++)
    free(values[i].data);
  wq_model_free(m);
  return rc;
}

/* Collects `prefix_N.pb` files of a data set folder in N order. */
static int collect_pb(const char *dir, const char *prefix, uint8_t **bytes, size_t *lens, int cap) {
  int n = 0;
  wq_error err; /* the first file missing ends the list */
  for (; n < cap; n++) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n) >= sizeof path ||
        wq_cli_read_file(path, &bytes[n], &lens[n], &err) != WQ_OK)
      break;
  }
  return n;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* inspect MODEL [--json] [--shape NAME=DIMS]... [--partition MODE]: the
 * decision records, byte for byte what npm's model.graphJson() returns. */
static int cmd_inspect(int argc, char **argv) {
  if (help_asked("inspect", argc, argv))
    return 0;
  if (argc < 1 || argv[0][0] == '-') {
    fprintf(stderr, "wasmq: inspect: missing MODEL\n");
    return 2;
  }
  wq_cli_shape shapes[MAX_CLI_INPUTS];
  wq_input_shape load_shapes[MAX_CLI_INPUTS];
  char names[MAX_CLI_INPUTS][128];
  wq_load_options opts = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      continue;
    if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && opts.n_input_shapes < MAX_CLI_INPUTS) {
      wq_cli_shape *s = &shapes[opts.n_input_shapes];
      if (wq_cli_parse_shape(argv[++i], s) != 0) {
        fprintf(stderr, "wasmq: --shape expects NAME=D0xD1x..., got %s\n", argv[i]);
        return 2;
      }
      char *name = names[opts.n_input_shapes];
      snprintf(name, sizeof names[0], "%.*s", (int)strcspn(s->name, "="), s->name);
      load_shapes[opts.n_input_shapes++] = (wq_input_shape){name, s->rank, s->dims};
      continue;
    }
    int taken = lowering_option(argc, argv, &i, &opts);
    if (taken <= 0)
      return taken < 0 ? 2 : unknown_option("inspect", argv[i]);
  }
  opts.input_shapes = load_shapes;
  int rc;
  wq_model *m = load_model(argv[0], &opts, &rc);
  if (!m)
    return rc;
  char *json = wq_model_graph_json(m);
  if (json)
    fputs(json, stdout);
  else
    fprintf(stderr, "wasmq: inspect: out of memory\n");
  free(json);
  wq_model_free(m);
  return json ? 0 : 1;
}

static int cmd_check(int argc, char **argv) {
  if (help_asked("check", argc, argv))
    return 0;
  if (argc != 1 || argv[0][0] == '-') {
    if (argc >= 1 && argv[0][0] == '-')
      return unknown_option("check", argv[0]);
    fprintf(stderr, "wasmq: check expects exactly one CASE_DIR\n");
    return 2;
  }
  const char *case_dir = argv[0];
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", case_dir);
  uint8_t *model;
  size_t model_n;
  wq_error read_err;
  if (wq_cli_read_file(path, &model, &model_n, &read_err) != WQ_OK) {
    fprintf(stderr, "wasmq: %s\n", read_err.message);
    return 2;
  }
  DIR *d = opendir(case_dir);
  char *sets[64];
  int n_sets = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) && n_sets < 64)
    if (strncmp(e->d_name, "test_data_set_", 14) == 0)
      sets[n_sets++] = strdup(e->d_name);
  if (d)
    closedir(d);
  qsort(sets, (size_t)n_sets, sizeof sets[0], compare_names);
  int failed = 0;
  if (n_sets == 0) {
    printf("FAIL no test_data_set_* folder in %s\n", case_dir);
    failed = 1;
  }
  for (int s = 0; s < n_sets; s++) {
    uint8_t *in[64], *out[64];
    size_t in_n[64], out_n[64];
    snprintf(path, sizeof path, "%s/%s", case_dir, sets[s]);
    int ni = collect_pb(path, "input", in, in_n, 64);
    int no = collect_pb(path, "output", out, out_n, 64);
    char report[1024];
    wq_case_result r = wq_case_check(model, model_n, (const uint8_t *const *)in, in_n, ni,
                                     (const uint8_t *const *)out, out_n, no, report, sizeof report);
    printf("%s %s%s%s\n",
           r == WQ_CASE_PASS   ? "PASS"
           : r == WQ_CASE_SKIP ? "SKIP"
                               : "FAIL",
           n_sets > 1 ? sets[s] : "", n_sets > 1 ? ": " : "", report);
    failed |= r == WQ_CASE_FAIL;
    for (int i = 0; i < ni; i++)
      free(in[i]);
    for (int i = 0; i < no; i++)
      free(out[i]);
    free(sets[s]);
  }
  free(model);
  return failed;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  if (strcmp(argv[1], "info") == 0)
    return cmd_info(argc - 2, argv + 2);
  if (strcmp(argv[1], "inspect") == 0)
    return cmd_inspect(argc - 2, argv + 2);
  if (strcmp(argv[1], "run") == 0)
    return cmd_run(argc - 2, argv + 2);
  if (strcmp(argv[1], "check") == 0)
    return cmd_check(argc - 2, argv + 2);
  if (strcmp(argv[1], "quantize") == 0)
    return wq_cli_quantize(argc - 2, argv + 2);
  if (strcmp(argv[1], "rewrite") == 0)
    return wq_cli_rewrite(argc - 2, argv + 2);
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage(stdout);
    return 0;
  }
  fprintf(stderr, "wasmq: unknown command %s\n", argv[1]);
  return usage();
}
