#define _POSIX_C_SOURCE 200809L
#include "cmd_rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/wasmq.h"
#include "../onnx/onnx_export.h"
#include "../onnx/onnx_import.h"
#include "../quant/prepare.h"
#include "files.h"

static int rewrite_usage(void) {
  fprintf(stderr, "usage: wasmq rewrite MODEL -o OUT.onnx [--prepare]\n"
                  "  writes MODEL back as ONNX after constant folding (no int8 lowering)\n"
                  "  --prepare  also fold BatchNormalization and constant Mul/Add into the\n"
                  "             neighbouring Conv/Gemm/MatMul (the quantizer's preparation)\n");
  return 2;
}

static wq_status prepare_hook(void *ctx, wq_graph *g, wq_error *err) {
  return wq_quant_prepare(g, (wq_quant_prepare_stats *)ctx, err);
}

/* Prints, per op type, how many nodes of the file are gone from the
 * rewritten graph (folded to constants or prepared away). */
static void print_removed_ops(const uint8_t *bytes, size_t n, const wq_graph *after) {
  wq_model_ir *file = NULL;
  wq_error err;
  if (wq_onnx_import(bytes, n, &file, &err) != WQ_OK)
    return; /* it loaded once already: only out of memory gets here */
  const wq_graph *g = file->graph;
  const char *sep = "removed: ";
  for (int i = 0; i < g->n_nodes; i++) {
    const char *op = g->nodes[i].op_type;
    bool first = true;
    for (int j = 0; j < i && first; j++)
      first = strcmp(g->nodes[j].op_type, op) != 0;
    if (!first)
      continue;
    int before = 0, now = 0;
    for (int j = i; j < g->n_nodes; j++)
      before += strcmp(g->nodes[j].op_type, op) == 0;
    for (int j = 0; j < after->n_nodes; j++)
      now += strcmp(after->nodes[j].op_type, op) == 0;
    if (before > now) {
      printf("%s%s %d", sep, op, before - now);
      sep = ", ";
    }
  }
  printf("%s(%d nodes in the file, %d remain)\n", sep[0] == 'r' ? "removed: none " : " ",
         g->n_nodes, after->n_nodes);
  wq_model_ir_free(file);
}

int wq_cli_rewrite(int argc, char **argv) {
  const char *model = NULL, *out = NULL;
  bool prepare = false;
  for (int i = 0; i < argc; i++) {
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--prepare") == 0) {
      prepare = true;
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "wasmq: rewrite: unexpected argument '%s'\n", argv[i]);
      return rewrite_usage();
    } else {
      model = argv[i];
    }
  }
  if (!model || !out)
    return rewrite_usage();

  uint8_t *bytes;
  size_t n;
  if (wq_cli_read_file(model, &bytes, &n) != 0) {
    fprintf(stderr, "wasmq: cannot read %s: %s\n", model, strerror(errno));
    return 2;
  }
  wq_quant_prepare_stats stats;
  memset(&stats, 0, sizeof stats);
  wq_load_options opts = {.no_lowering = 1, .no_float_fusion = 1};
  if (prepare) {
    opts.rewrite = prepare_hook;
    opts.rewrite_ctx = &stats;
  }
  wq_model *m = NULL;
  wq_error err;
  uint8_t *onnx = NULL;
  size_t onnx_n = 0;
  int rc = 1;
  if (wq_model_load(bytes, n, &opts, &m, &err) != WQ_OK) {
    wq_cli_print_error(model, &err);
    goto done;
  }
  if (wq_onnx_export(wq_model_get_ir(m), &onnx, &onnx_n, &err) != WQ_OK) {
    wq_cli_print_error(model, &err);
    goto done;
  }
  if (wq_cli_write_file_atomic(out, onnx, onnx_n, &err) != WQ_OK) {
    wq_cli_print_error("rewrite", &err);
    rc = 2;
    goto done;
  }
  const wq_graph *g = wq_model_get_ir(m)->graph;
  int64_t folded = 0;
  for (int p = 0; p < wq_model_pass_count(m); p++) {
    const wq_pass_record *rec = wq_model_pass(m, p);
    for (int k = 0; strcmp(rec->name, "fold_constants") == 0 && k < rec->n_stats; k++)
      if (strcmp(rec->stats[k].name, "folded") == 0)
        folded = rec->stats[k].value;
  }
  printf("%s: %lld nodes folded to constants", model, (long long)folded);
  if (prepare)
    printf(", prepare: %d BatchNormalization, %d Mul after and %d Mul before a linear, "
           "%d Add after a linear folded; %d MatMul+Add bias pairs",
           stats.batchnorm_folded, stats.mul_folded_after, stats.mul_folded_before,
           stats.add_folded_after, stats.linear_bias_adds);
  printf("\n");
  print_removed_ops(bytes, n, g);
  printf("wrote %s (%zu bytes)\n", out, onnx_n);
  rc = 0;
done:
  free(onnx);
  wq_model_free(m);
  free(bytes);
  return rc;
}
