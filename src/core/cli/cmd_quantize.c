#define _POSIX_C_SOURCE 200809L
#include "cmd_quantize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../quant/dynamic.h"
#include "../quant/quantizer.h"
#include "calib_data.h"
#include "cli_error.h"
#include "files.h"
#include "progress.h"
#include "shape_arg.h"

#define MAX_QUANTIZE_SHAPES 64

static int quantize_usage_to(FILE *out, int rc) {
  fprintf(
      out,
      "usage: wasmq quantize MODEL -o OUT.onnx --calib DIR|random:N:LO..HI\n"
      "                      [--config FILE.json] [--report FILE.json]\n"
      "                      [--keep-float N] [--target-snr DB] [--target-cosine C]\n"
      "                      [--max-time S] [--timeout S] [--shape NAME=1x3x224x224]...\n"
      "  --calib       ONNX test_data_set_* folders or .npy files named by input;\n"
      "                random:N:LO..HI: N seeded samples uniform in [LO, HI) (a warning:\n"
      "                ranges then fit random data, not real inputs)\n"
      "  --keep-float  keep the N most sensitive nodes in float\n"
      "  --target-snr  keep nodes in float until the outputs reach DB dB SNR\n"
      "  --target-cosine  ... until every output's cosine to float reaches C\n"
      "  --max-time    stop the target search after S seconds\n"
      "  --timeout     give up after S seconds in all (exit 1, nothing written)\n"
      "  --shape       bind an input's symbolic dims for calibration (kept in OUT)\n"
      "       wasmq quantize MODEL -o OUT.onnx --mode dynamic [--per-tensor] [--uint8-weights]\n"
      "  --mode dynamic  onnxruntime's dynamic form, no calibration: MatMul/Gemm weights\n"
      "                int8 per column (--per-tensor: one scale; --uint8-weights: uint8\n"
      "                affine), activations quantized at run time\n");
  return rc;
}

static int quantize_usage(void) { return quantize_usage_to(stderr, 2); }

/* One line redrawn in place on a terminal; nothing when piped. */
static void progress(bool tty, int done, int total) {
  if (!tty || total <= 0)
    return;
  const int width = 30;
  int filled = (int)((long long)done * width / total);
  fprintf(stderr, "\rcalibrating %d/%d [", done, total);
  for (int k = 0; k < width; k++)
    fputc(k < filled ? '#' : ' ', stderr);
  fputc(']', stderr);
  if (done == total)
    fputc('\n', stderr);
  fflush(stderr);
}

typedef struct {
  const char *model, *out, *calib, *config, *report;
  int keep_float;
  double target_snr, target_cosine, max_time, timeout;
  wq_cli_shape shapes[MAX_QUANTIZE_SHAPES];
  int n_shapes;
  bool dynamic;
  wq_dynamic_options dyn;
} quantize_args;

/* A time limit option's value: seconds in (0, 1e6]; 1 (after saying why)
 * when it is not one. */
static int parse_seconds(const char *flag, const char *val, double *seconds) {
  char *end;
  *seconds = strtod(val, &end);
  if (*end || !(*seconds > 0 && *seconds <= 1e6)) {
    fprintf(stderr, "wasmq: %s takes seconds in (0, 1e6], got '%s'\n", flag, val);
    return 1;
  }
  return 0;
}

static int parse_args(int argc, char **argv, quantize_args *a) {
  *a = (quantize_args){0};
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      quantize_usage_to(stdout, 0);
      return -1;
    }
    if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--out") == 0) && val) {
      a->out = val;
      i++;
    } else if (strcmp(arg, "--calib") == 0 && val) {
      a->calib = val;
      i++;
    } else if (strcmp(arg, "--mode") == 0 && val) {
      if (strcmp(val, "dynamic") && strcmp(val, "static")) {
        fprintf(stderr, "wasmq: --mode takes static or dynamic, got '%s'\n", val);
        return 2;
      }
      a->dynamic = strcmp(val, "dynamic") == 0;
      i++;
    } else if (strcmp(arg, "--per-tensor") == 0) {
      a->dyn.per_tensor = true;
    } else if (strcmp(arg, "--uint8-weights") == 0) {
      a->dyn.uint8_weights = true;
    } else if (strcmp(arg, "--config") == 0 && val) {
      a->config = val;
      i++;
    } else if (strcmp(arg, "--report") == 0 && val) {
      a->report = val;
      i++;
    } else if (strcmp(arg, "--keep-float") == 0 && val) {
      char *end;
      long n = strtol(val, &end, 10);
      if (*end || n < 0 || n > 100000) {
        fprintf(stderr, "wasmq: --keep-float takes a count >= 0, got '%s'\n", val);
        return 2;
      }
      a->keep_float = (int)n;
      i++;
    } else if (strcmp(arg, "--target-snr") == 0 && val) {
      char *end;
      a->target_snr = strtod(val, &end);
      if (*end || !(a->target_snr > 0 && a->target_snr < 200)) {
        fprintf(stderr, "wasmq: --target-snr takes dB in (0, 200), got '%s'\n", val);
        return 2;
      }
      i++;
    } else if (strcmp(arg, "--target-cosine") == 0 && val) {
      char *end;
      a->target_cosine = strtod(val, &end);
      if (*end || !(a->target_cosine > 0 && a->target_cosine < 1)) {
        fprintf(stderr, "wasmq: --target-cosine takes a cosine in (0, 1), got '%s'\n", val);
        return 2;
      }
      i++;
    } else if (strcmp(arg, "--max-time") == 0 && val) {
      if (parse_seconds(arg, val, &a->max_time))
        return 2;
      i++;
    } else if (strcmp(arg, "--timeout") == 0 && val) {
      if (parse_seconds(arg, val, &a->timeout))
        return 2;
      i++;
    } else if (strcmp(arg, "--shape") == 0 && val) {
      if (a->n_shapes == MAX_QUANTIZE_SHAPES || wq_cli_parse_shape(val, &a->shapes[a->n_shapes])) {
        fprintf(stderr, "wasmq: --shape expects NAME=D0xD1x..., got %s\n", val);
        return 2;
      }
      a->n_shapes++;
      i++;
    } else if (arg[0] == '-' || a->model) {
      fprintf(stderr, "wasmq: quantize: unexpected argument '%s'\n", arg);
      return quantize_usage();
    } else {
      a->model = arg;
    }
  }
  if (!a->model || !a->out)
    return quantize_usage();
  if ((a->dyn.per_tensor || a->dyn.uint8_weights) && !a->dynamic) {
    fprintf(stderr, "wasmq: --per-tensor and --uint8-weights go with --mode dynamic\n");
    return 2;
  }
  if (a->dynamic && (a->calib || a->config || a->report || a->n_shapes || a->keep_float ||
                     a->target_snr > 0 || a->target_cosine > 0 || a->max_time > 0)) {
    fprintf(stderr, "wasmq: --mode dynamic takes no calibration, config, report, shapes or "
                    "float-keeping options\n");
    return 2;
  }
  if (!a->calib && !a->dynamic) {
    fprintf(stderr, "wasmq: quantize needs --calib: a folder of real samples (DIR), or "
                    "random:N:LO..HI with the range the model's inputs take\n");
    return quantize_usage();
  }
  /* Where the results go is checked before the work. */
  if (wq_cli_check_output(a->out) != 0 || (a->report && wq_cli_check_output(a->report) != 0))
    return 2;
  return 0;
}

static int read_or_complain(const char *path, uint8_t **bytes, size_t *n) {
  wq_error err;
  if (wq_cli_read_file(path, bytes, n, &err) == WQ_OK)
    return 0;
  fprintf(stderr, "wasmq: %s\n", err.message);
  return 2;
}

/* The name of the first input with a symbolic dim left, or NULL. */
static const char *symbolic_input(const wq_graph *g) {
  for (int i = 0; i < g->n_inputs; i++) {
    const wq_tensor *t = &g->tensors[g->inputs[i]];
    for (int d = 0; d < t->rank; d++)
      if (t->dims[d] < 0)
        return t->name;
  }
  return NULL;
}

static int calibrate(wq_quantizer *q, const char *spec, wq_error *err) {
  const wq_graph *g = wq_model_get_ir(wq_quantizer_float_model(q))->graph;
  wq_calib_data *data = NULL;
  if (wq_calib_open(spec, g, &data, err) != WQ_OK) {
    wq_cli_print_error(spec, err);
    return 2;
  }
  double lo, hi;
  if (wq_calib_random_range(data, &lo, &hi)) {
    char note[300];
    snprintf(note, sizeof note,
             "calibrated on random data (uniform [%g, %g)), not on real inputs: the ranges fit "
             "that distribution; give --calib DIR with real samples for accuracy",
             lo, hi);
    if (wq_quantizer_note(q, note, err) != WQ_OK) {
      wq_calib_close(data);
      wq_cli_print_error(spec, err);
      return 1;
    }
  }
  bool tty = isatty(STDERR_FILENO);
  int total = wq_calib_count(data), done = 0, rc = 0;
  /* A terminal has the redrawn bar; elsewhere a line every 2 s from 2 s on. */
  if (!tty)
    wq_cli_step("calibrating 0/%d", total);
  for (;;) {
    const wq_value *values;
    bool got;
    if (wq_calib_next(data, &values, &got, err) != WQ_OK) {
      if (tty)
        fputc('\n', stderr);
      wq_cli_print_error(spec, err);
      rc = 2;
      break;
    }
    if (!got)
      break;
    /* Observing may replace the float model (equalization): g afresh. */
    g = wq_model_get_ir(wq_quantizer_float_model(q))->graph;
    if (wq_quantizer_observe(q, values, g->n_inputs, err) != WQ_OK) {
      g = wq_model_get_ir(wq_quantizer_float_model(q))->graph;
      if (tty)
        fputc('\n', stderr);
      char what[600];
      snprintf(what, sizeof what, "calibration sample %s", wq_calib_sample_name(data));
      wq_cli_print_error(what, err);
      const char *sym = err->code == WQ_ERR_TIMEOUT ? NULL : symbolic_input(g);
      if (sym)
        fprintf(stderr,
                "wasmq: input '%s' has symbolic dims: if the sample's sizes are not what the "
                "model expects, bind them with --shape %s=D0xD1x...\n",
                sym, sym);
      rc = 1;
      break;
    }
    progress(tty, ++done, total);
    if (!tty)
      wq_cli_step_update("calibrating %d/%d", done, total);
  }
  wq_cli_step_end();
  wq_calib_close(data);
  return rc;
}

/* Search progress: one line each, terminal or not. */
static void print_line(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "wasmq: %s\n", line);
  fflush(stderr);
}

static void print_warnings(const char *lines) {
  while (*lines) {
    int n = (int)strcspn(lines, "\n");
    fprintf(stderr, "wasmq: warning: %.*s\n", n, lines);
    lines += n + (lines[n] == '\n');
  }
}

/* --mode dynamic: one call, no calibration. */
static int quantize_dynamic(const quantize_args *a, const uint8_t *model, size_t n) {
  uint8_t *onnx = NULL;
  size_t onnx_n = 0;
  wq_dynamic_stats stats;
  wq_error err;
  int rc = 0;
  if (wq_quantize_dynamic(model, n, &a->dyn, &onnx, &onnx_n, &stats, &err) != WQ_OK) {
    wq_cli_print_error(a->model, &err);
    rc = err.code == WQ_ERR_INVALID_ARG ? 2 : 1;
  } else if (wq_cli_write_file_atomic(a->out, onnx, onnx_n, &err) != WQ_OK) {
    wq_cli_print_error(a->out, &err);
    rc = 2;
  } else {
    printf("wrote %s (%zu bytes): %s\n", a->out, onnx_n, stats.summary);
  }
  free(onnx);
  return rc;
}

int wq_cli_quantize(int argc, char **argv) {
  const double started = wq_cli_now_ms();
  quantize_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc < 0 ? 0 : rc; /* -1: --help answered */
  if (a.dynamic) {
    uint8_t *bytes = NULL;
    size_t n = 0;
    if ((rc = read_or_complain(a.model, &bytes, &n)) == 0)
      rc = quantize_dynamic(&a, bytes, n);
    free(bytes);
    return rc;
  }
  uint8_t *model = NULL, *config = NULL, *onnx = NULL;
  size_t model_n = 0, config_n = 0, onnx_n = 0;
  if ((rc = read_or_complain(a.model, &model, &model_n)) != 0)
    return rc;
  if (a.config && (rc = read_or_complain(a.config, &config, &config_n)) != 0) {
    free(model);
    return rc;
  }
  wq_error err;
  wq_quantizer *q = NULL;
  char *report = NULL;
  char names[MAX_QUANTIZE_SHAPES][256];
  wq_input_shape shapes[MAX_QUANTIZE_SHAPES];
  for (int s = 0; s < a.n_shapes; s++) {
    snprintf(names[s], sizeof names[s], "%.*s", (int)strcspn(a.shapes[s].name, "="),
             a.shapes[s].name);
    shapes[s] = (wq_input_shape){names[s], a.shapes[s].rank, a.shapes[s].dims};
  }
  wq_cli_step("loading %s", a.model);
  wq_status loaded = wq_quantizer_new_shaped(model, model_n, (const char *)config, config_n, shapes,
                                             a.n_shapes, &q, &err);
  wq_cli_step_end();
  if (loaded != WQ_OK) {
    wq_cli_print_error(
        a.config && err.code == WQ_ERR_INVALID_ARG && !err.node[0] ? a.config : a.model, &err);
    rc = err.code == WQ_ERR_INVALID_ARG ? 2 : 1;
  }
  /* --timeout counts from the start; the quantizer checks it in every step
   * (a limit already passed: fails at the first). */
  if (!rc && a.timeout > 0)
    wq_quantizer_time_limit(q, wq_cli_now_ms, a.timeout * 1e3, started);
  if (!rc && (a.keep_float || a.target_snr > 0))
    wq_quantizer_keep_float(q, a.keep_float, (float)a.target_snr);
  if (!rc && (a.target_cosine > 0 || a.max_time > 0))
    wq_quantizer_search(q, (float)a.target_cosine, (float)a.max_time);
  if (!rc)
    wq_quantizer_on_progress(q, print_line, NULL);
  if (!rc)
    rc = calibrate(q, a.calib, &err);
  if (!rc)
    wq_cli_step("quantizing %s (ranges, int8 weights, the ONNX file)", a.model);
  if (!rc && wq_quantizer_finish(q, &onnx, &onnx_n, &err) != WQ_OK) {
    wq_cli_print_error(a.model, &err);
    rc = 1;
  }
  wq_cli_step_end();
  if (!rc && a.report) {
    report = wq_quantizer_report_json(q);
    if (!report) {
      fprintf(stderr, "wasmq: out of memory writing the report\n");
      rc = 1;
    } else if (wq_cli_write_file_atomic(a.report, (const uint8_t *)report, strlen(report), &err) !=
               WQ_OK) {
      wq_cli_print_error(a.report, &err);
      rc = 2;
    }
  }
  if (!rc && wq_cli_write_file_atomic(a.out, onnx, onnx_n, &err) != WQ_OK) {
    wq_cli_print_error(a.out, &err);
    rc = 2;
  }
  if (!rc) {
    print_warnings(wq_quantizer_warnings(q));
    printf("wrote %s (%zu bytes): %s\n", a.out, onnx_n, wq_quantizer_summary(q));
  }
  free(report);
  free(onnx);
  wq_quantizer_free(q);
  free(config);
  free(model);
  return rc;
}
