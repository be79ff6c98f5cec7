/* wq_model_describe: the text behind `wasmq info`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "model_internal.h"

/* A growing string; every append keeps it NUL-terminated. */
typedef struct {
  char *buf;
  size_t len, cap;
  int failed;
} text_buffer;

static void append(text_buffer *tb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void append(text_buffer *tb, const char *fmt, ...) {
  if (tb->failed)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int need = wq_vformat(tb->buf + tb->len, tb->cap - tb->len, fmt, ap);
    va_end(ap);
    if (need < 0) {
      tb->failed = 1;
      return;
    }
    if (tb->len + (size_t)need < tb->cap) {
      tb->len += (size_t)need;
      return;
    }
    size_t cap = (tb->cap + (size_t)need + 1) * 2;
    char *grown = realloc(tb->buf, cap);
    if (!grown) {
      tb->failed = 1;
      return;
    }
    tb->buf = grown;
    tb->cap = cap;
  }
}

const char *wq_dtype_api_name(int dtype) {
  return dtype == WQ_DT_FLOAT ? "float32" : wq_dtype_name(dtype);
}

static void append_shape(text_buffer *tb, const wq_tensor *t) {
  if (t->rank < 0) {
    append(tb, "[?]");
    return;
  }
  append(tb, "[");
  for (int d = 0; d < t->rank; d++) {
    if (d)
      append(tb, ",");
    if (t->dims[d] >= 0)
      append(tb, "%lld", (long long)t->dims[d]);
    else
      append(tb, "%s", t->dim_params[d] ? t->dim_params[d] : "?");
  }
  append(tb, "]");
}

static void append_tensor_list(text_buffer *tb, const char *title, const wq_model *m, int count,
                               const wq_tensor *(*get)(const wq_model *, int)) {
  append(tb, "%s:\n", title);
  for (int i = 0; i < count; i++) {
    const wq_tensor *t = get(m, i);
    append(tb, "  %-24s %-8s ", t->name, wq_dtype_api_name(t->dtype));
    append_shape(tb, t);
    append(tb, "\n");
  }
}

static void append_bytes(text_buffer *tb, size_t bytes) {
  if (bytes >= (size_t)1 << 20)
    append(tb, "%.2f MB", (double)bytes / (1 << 20));
  else if (bytes >= 1024)
    append(tb, "%.1f KB", (double)bytes / 1024);
  else
    append(tb, "%zu B", bytes);
}

static void append_arena(text_buffer *tb, const wq_model *m) {
  wq_memory_info mem;
  wq_model_memory(m, &mem);
  if (!mem.planned) {
    append(tb, "arena: planned at the first run (shapes are not all static at load)\n");
    return;
  }
  append(tb, "arena: ");
  append_bytes(tb, mem.arena_bytes);
  append(tb, " planned, lower bound ");
  append_bytes(tb, mem.lower_bound_bytes);
  append(tb, " (%d intermediates, ", mem.n_tensors);
  append_bytes(tb, mem.unshared_bytes);
  append(tb, " without reuse)\n");
}

char *wq_model_describe(const wq_model *m) {
  text_buffer tb = {malloc(256), 0, 256, 0};
  if (!tb.buf)
    return NULL;
  tb.buf[0] = '\0';
  const wq_model_ir *ir = wq_model_get_ir(m);
  append(&tb, "producer: %s %s (ONNX IR version %lld)\n",
         ir->producer_name && ir->producer_name[0] ? ir->producer_name : "unknown",
         ir->producer_version ? ir->producer_version : "", (long long)ir->ir_version);
  append(&tb, "opsets:");
  for (int i = 0; i < ir->n_opsets; i++)
    append(&tb, " %s %lld",
           ir->opsets[i].domain && ir->opsets[i].domain[0] ? ir->opsets[i].domain : "ai.onnx",
           (long long)ir->opsets[i].version);
  append(&tb, "\n");
  append_tensor_list(&tb, "inputs", m, wq_model_input_count(m), wq_model_input);
  append_tensor_list(&tb, "outputs", m, wq_model_output_count(m), wq_model_output);
  append(&tb, "nodes: %d in the file, %d folded to constants at load, %d to run\n",
         m->nodes_in_file, m->nodes_folded, ir->graph->n_nodes);
  append(&tb, "ops:\n");
  for (int i = 0; i < m->n_histogram; i++)
    append(&tb, "  %-24s %d\n", m->histogram[i].op_type, m->histogram[i].count);
  append(&tb, "parameters: %lld in %d tensors (", (long long)m->param_count, m->n_param_tensors);
  append_bytes(&tb, m->param_bytes);
  append(&tb, ")\n");
  append_arena(&tb, m);
  char *summary = wq_model_partition_summary(m);
  append(&tb, "partition %s: %s\n", wq_partition_mode_name(m->mode), summary ? summary : "?");
  free(summary);
  append(&tb, "load passes:\n");
  for (int p = 0; p < wq_model_pass_count(m); p++) {
    const wq_pass_record *rec = wq_model_pass(m, p);
    append(&tb, "  %s%s", rec->name, rec->ran ? "" : " (off)");
    for (int k = 0; k < rec->n_stats; k++)
      append(&tb, " %s=%lld", rec->stats[k].name, (long long)rec->stats[k].value);
    append(&tb, "\n");
  }
  if (tb.failed) {
    free(tb.buf);
    return NULL;
  }
  return tb.buf;
}
