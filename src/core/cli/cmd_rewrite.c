#define _POSIX_C_SOURCE 200809L
#include "cmd_rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/wasmq.h"
#include "../ir/topo.h"
#include "../onnx/onnx_export.h"
#include "../onnx/onnx_import.h"
#include "../ops/op.h"
#include "../quant/prepare.h"
#include "../runtime/executor.h"
#include "cli_error.h"
#include "files.h"

static int rewrite_usage_to(FILE *out, int rc) {
  fprintf(out, "usage: wasmq rewrite MODEL -o OUT.onnx [--prepare]\n"
               "  writes MODEL back as ONNX after constant folding (no int8 lowering);\n"
               "  int8 weights behind DequantizeLinear stay int8\n"
               "  --prepare  also fold BatchNormalization and constant Mul/Add into the\n"
               "             neighbouring Conv/Gemm/MatMul (the quantizer's preparation)\n");
  return rc;
}

static int rewrite_usage(void) { return rewrite_usage_to(stderr, 2); }

typedef struct {
  wq_model_ir *file; /* the model as imported, before folding (owned) */
  bool prepare;
  wq_quant_prepare_stats stats;
  int dequantize_kept;
} rewrite_ctx;

/* File node `fn`, a DequantizeLinear, went away at load as a constant: when
 * the float constant it left is still exactly what it computes (a
 * preparation fold may have changed it) and something reads it, the node is
 * moved into g, in front (its inputs are constants), so the written model
 * keeps its int8 weights. Returns WQ_OK also when the node stays folded. */
static wq_status restore_one(const wq_graph *file, wq_node *fn, wq_graph *g, bool *restored,
                             wq_error *err) {
  *restored = false;
  if (fn->n_outputs != 1 || fn->outputs[0] < 0 || fn->n_inputs > 8)
    return WQ_OK;
  int t = wq_graph_find_tensor(g, file->tensors[fn->outputs[0]].name);
  if (t < 0 || !g->tensors[t].is_constant || !g->tensors[t].data || !wq_graph_tensor_is_read(g, t))
    return WQ_OK;
  int inputs[8];
  wq_value in[8];
  for (int k = 0; k < fn->n_inputs; k++) {
    inputs[k] = fn->inputs[k] < 0 ? -1 : wq_graph_find_tensor(g, file->tensors[fn->inputs[k]].name);
    if (fn->inputs[k] >= 0 && (inputs[k] < 0 || !g->tensors[inputs[k]].is_constant))
      return WQ_OK;
    in[k] = inputs[k] < 0 ? (wq_value){.dtype = WQ_DT_UNDEFINED, .rank = -1}
                          : wq_tensor_value(&g->tensors[inputs[k]]);
  }
  const wq_op *op = wq_op_find(fn->domain, fn->op_type);
  if (!op)
    return WQ_OK;
  fn->op = op;
  if (op->prepare)
    WQ_TRY(op->prepare(fn, err));
  wq_value out[1];
  memset(out, 0, sizeof out);
  WQ_TRY(wq_run_node(fn, in, out, err));
  const wq_tensor *folded = &g->tensors[t];
  bool same = wq_value_nbytes(&out[0]) == folded->nbytes &&
              memcmp(out[0].data, folded->data, folded->nbytes) == 0;
  free(out[0].data);
  if (!same)
    return WQ_OK;
  if (!wq_graph_add_node(g))
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, fn->name, "out of memory");
  memmove(&g->nodes[1], &g->nodes[0], (size_t)(g->n_nodes - 1) * sizeof *g->nodes);
  g->nodes[0] = *fn; /* moved: the file's node keeps only its op type */
  memset(fn, 0, sizeof *fn);
  wq_node *n = &g->nodes[0];
  fn->op_type = wq_strdup(n->op_type);
  if (!fn->op_type)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, n->name, "out of memory");
  memcpy(n->inputs, inputs, (size_t)n->n_inputs * sizeof *inputs);
  n->outputs[0] = t;
  wq_tensor *tensor = &g->tensors[t];
  free(tensor->data);
  tensor->data = NULL;
  tensor->nbytes = 0;
  tensor->is_constant = false;
  *restored = true;
  return WQ_OK;
}

static wq_status rewrite_hook(void *ctx, wq_graph *g, wq_error *err) {
  rewrite_ctx *c = ctx;
  if (c->prepare)
    WQ_TRY(wq_quant_prepare(g, &c->stats, err));
  wq_graph *file = c->file->graph;
  for (int i = 0; i < file->n_nodes; i++) {
    wq_node *fn = &file->nodes[i];
    if (!fn->op_type || strcmp(fn->op_type, "DequantizeLinear") != 0)
      continue;
    bool restored;
    WQ_TRY(restore_one(file, fn, g, &restored, err));
    c->dequantize_kept += restored;
  }
  return WQ_OK;
}

/* Prints, per op type, how many nodes of the file are gone from the
 * rewritten graph (folded to constants or prepared away). */
static void print_removed_ops(const wq_graph *file, const wq_graph *after) {
  const char *sep = "removed: ";
  for (int i = 0; i < file->n_nodes; i++) {
    const char *op = file->nodes[i].op_type;
    bool first = true;
    for (int j = 0; j < i && first; j++)
      first = strcmp(file->nodes[j].op_type, op) != 0;
    if (!first)
      continue;
    int before = 0, now = 0;
    for (int j = i; j < file->n_nodes; j++)
      before += strcmp(file->nodes[j].op_type, op) == 0;
    for (int j = 0; j < after->n_nodes; j++)
      now += strcmp(after->nodes[j].op_type, op) == 0;
    if (before > now) {
      printf("%s%s %d", sep, op, before - now);
      sep = ", ";
    }
  }
  printf("%s(%d nodes in the file, %d remain)\n", sep[0] == 'r' ? "removed: none " : " ",
         file->n_nodes, after->n_nodes);
}

int wq_cli_rewrite(int argc, char **argv) {
  const char *model = NULL, *out = NULL;
  rewrite_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return rewrite_usage_to(stdout, 0);
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--prepare") == 0) {
      ctx.prepare = true;
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "wasmq: rewrite: unexpected argument '%s'\n", argv[i]);
      return rewrite_usage();
    } else {
      model = argv[i];
    }
  }
  if (!model || !out)
    return rewrite_usage();
  if (wq_cli_check_output(out) != 0)
    return 2;

  uint8_t *bytes;
  size_t n;
  wq_error read_err;
  if (wq_cli_read_file(model, &bytes, &n, &read_err) != WQ_OK) {
    fprintf(stderr, "wasmq: %s\n", read_err.message);
    return 2;
  }
  wq_load_options opts = {.no_lowering = 1, .no_float_fusion = 1};
  opts.rewrite = rewrite_hook;
  opts.rewrite_ctx = &ctx;
  wq_model *m = NULL;
  wq_error err;
  uint8_t *onnx = NULL;
  size_t onnx_n = 0;
  int rc = 1;
  if (wq_onnx_import(bytes, n, &ctx.file, &err) != WQ_OK ||
      wq_model_load(bytes, n, &opts, &m, &err) != WQ_OK) {
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
  printf("%s: %lld nodes folded to constants", model, (long long)(folded - ctx.dequantize_kept));
  if (ctx.dequantize_kept)
    printf(" (%d DequantizeLinear of int8 weights kept)", ctx.dequantize_kept);
  if (ctx.prepare)
    printf(", prepare: %d BatchNormalization, %d Mul after and %d Mul before a linear, "
           "%d Add after a linear folded; %d MatMul+Add bias pairs",
           ctx.stats.batchnorm_folded, ctx.stats.mul_folded_after, ctx.stats.mul_folded_before,
           ctx.stats.add_folded_after, ctx.stats.linear_bias_adds);
  printf("\n");
  print_removed_ops(ctx.file->graph, g);
  printf("wrote %s (%zu bytes)\n", out, onnx_n);
  rc = 0;
done:
  free(onnx);
  wq_model_free(m);
  wq_model_ir_free(ctx.file);
  free(bytes);
  return rc;
}
