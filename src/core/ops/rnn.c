/* LSTM and GRU (ONNX semantics, opsets 7 and 14): forward, reverse or
 * bidirectional; optional bias, sequence_lens, initial_h (and LSTM's
 * initial_c and peepholes); activations Sigmoid, Tanh or Relu (defaults
 * Sigmoid, Tanh, Tanh for LSTM, Sigmoid, Tanh for GRU); clip; LSTM's
 * input_forget; GRU's linear_before_reset; layout 0 ([seq, batch, ...]) or
 * 1 ([batch, seq, ...]). Gates are stored i, o, f, c (LSTM) or z, r, h
 * (GRU) in W, R and B.
 * The input projection of every step is one GEMM per direction before the
 * recurrence; each step then adds H * R^T (kernels/rnn.c), on weights packed
 * once at plan time when they are constants. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/rnn.h"
#include "../kernels/sgemm.h"
#include "op.h"

typedef struct {
  wq_rnn_params p;
  float *wp[2], *rp[2], *rh[2]; /* constant W and R packed at plan time (kernels/rnn.h) */
  int64_t packed_bytes;
} lstm_state;

static wq_status lstm_prepare(wq_node *node, wq_error *err) {
  lstm_state *s = calloc(1, sizeof *s);
  if (!s)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "out of memory");
  node->op_state = s;
  wq_rnn_params *p = &s->p;
  const char *dir;
  int64_t hidden, layout, input_forget, lbr;
  const char *op = node->op_type;
  p->gru = op[0] == 'G';
  WQ_TRY(wq_attr_string(node, "direction", "forward", &dir, err));
  WQ_TRY(wq_attr_int(node, "hidden_size", 0, &hidden, err));
  WQ_TRY(wq_attr_int(node, "layout", 0, &layout, err));
  WQ_TRY(wq_attr_int(node, "input_forget", 0, &input_forget, err));
  WQ_TRY(wq_attr_int(node, "linear_before_reset", 0, &lbr, err));
  WQ_TRY(wq_attr_float(node, "clip", 0.0f, &p->clip, err));
  if ((strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional")) ||
      hidden < 0 || hidden > (1 << 20) || (layout != 0 && layout != 1) || p->clip < 0)
    return wq_fail(err, WQ_ERR_INVALID_MODEL, node->name,
                   "%s: direction '%s', hidden_size %lld, layout %lld or clip %g is not valid", op,
                   dir, (long long)hidden, (long long)layout, (double)p->clip);
  p->reverse = dir[0] == 'r';
  p->dirs = dir[0] == 'b' ? 2 : 1;
  p->hidden = hidden;
  p->layout = (int)layout;
  p->input_forget = input_forget != 0;
  p->linear_before_reset = lbr != 0;
  /* Activations without parameters: the default Sigmoid, Tanh, Tanh and
   * Relu (alpha/beta-taking ones are refused, naming them). */
  const wq_attr *an = wq_node_attr(node, "activations");
  size_t n_names = an && an->type == WQ_ATTR_STRINGS ? an->count : 0;
  static const char names[3][8] = {"Sigmoid", "Tanh", "Relu"};
  static const unsigned char kinds[3] = {EW_UNARY_SIGMOID, EW_UNARY_TANH, EW_UNARY_RELU};
  const int n_act = p->gru ? 2 : 3;
  for (int k = 0; k < n_act * p->dirs; k++) {
    const char *want = n_names > (size_t)k ? an->strings[k] : names[k % n_act != 0];
    int j = 0;
    while (j < 3 && strcmp(names[j], want) != 0)
      j++;
    if (j == 3 || (an && n_names != (size_t)(n_act * p->dirs)))
      return wq_fail(err, WQ_ERR_UNSUPPORTED, node->name,
                     "%s: activations must be %d of Sigmoid, Tanh, Relu (got '%s')", op,
                     n_act * p->dirs, want);
    p->act[k].kind = (ew_unary_kind)kinds[j];
  }
  return WQ_OK;
}

static void lstm_unpack(lstm_state *s) {
  for (int d = 0; d < 2; d++) {
    free(s->wp[d]);
    free(s->rp[d]);
    free(s->rh[d]);
    s->wp[d] = s->rp[d] = s->rh[d] = NULL;
  }
  s->packed_bytes = 0;
}

static void lstm_free(void *state) {
  if (state)
    lstm_unpack(state);
  free(state);
}

/* Constant float W [D, G, I] and R [D, G, H] are packed once for the
 * batch-1 GEMV of every step (kernels/rnn.c); a GRU's R in two blocks, its
 * z, r rows and its h rows. */
static wq_status lstm_plan(wq_node *node, const wq_graph *g, wq_op_kernel *kernel, wq_error *err) {
  (void)kernel;
  lstm_state *s = node->op_state;
  lstm_unpack(s);
  for (int k = 1; k <= 2; k++) {
    const wq_tensor *t = &g->tensors[node->inputs[k]];
    if (!t->is_constant || !t->data || t->dtype != WQ_DT_FLOAT || t->rank != 3 ||
        t->dims[0] != s->p.dirs)
      continue;
    const int64_t G = t->dims[1], C = t->dims[2], split = k == 2 && s->p.gru ? G / 3 * 2 : G;
    for (int d = 0; d < s->p.dirs; d++) {
      const float *at = (const float *)t->data + d * G * C;
      float *pk = wq_rnn_pack(at, split, C),
            *pk2 = split < G ? wq_rnn_pack(at + split * C, G - split, C) : NULL;
      (k == 1 ? s->wp : s->rp)[d] = pk;
      s->rh[d] = k == 2 ? pk2 : s->rh[d];
      if (!pk || (split < G && !pk2)) {
        free(pk2);
        lstm_unpack(s);
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, node->name, "%s: out of memory packing weights",
                       node->op_type);
      }
      s->packed_bytes +=
          ((split + WQ_SGEMV_NR - 1) / WQ_SGEMV_NR + (G - split + WQ_SGEMV_NR - 1) / WQ_SGEMV_NR) *
          WQ_SGEMV_NR * C * 4;
    }
  }
  return WQ_OK;
}

static int64_t lstm_memory(const wq_node *node, const wq_graph *g, int64_t *scratch) {
  (void)g;
  *scratch = 0;
  return ((const lstm_state *)node->op_state)->packed_bytes;
}

/* Input k of an LSTM/GRU: the dtype and dims (-1: any) it must have. */
static wq_status need(const wq_node *node, const wq_value *v, int k, int rank, const int64_t *dims,
                      wq_error *err) {
  if (k >= node->n_inputs || !wq_value_present(v))
    return WQ_OK;
  bool ok = v->dtype == (k == 4 ? WQ_DT_INT32 : WQ_DT_FLOAT) && (v->rank < 0 || v->rank == rank);
  for (int d = 0; ok && v->rank >= 0 && d < rank; d++)
    ok = v->dims[d] < 0 || dims[d] < 0 || v->dims[d] == dims[d];
  if (!ok)
    return wq_fail(err, WQ_ERR_SHAPE, node->name,
                   "%s: input %d (%s, rank %d) does not have the dtype or dims the others give it",
                   node->op_type, k, wq_dtype_name(v->dtype), v->rank);
  return WQ_OK;
}

static wq_status lstm_infer(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const wq_rnn_params *p = &((const lstm_state *)node->op_state)->p;
  const wq_value *x = &in[0], *w = &in[1], *r = &in[2];
  for (int k = 0; k < node->n_outputs; k++) {
    out[k].dtype = WQ_DT_FLOAT;
    out[k].rank = -1;
  }
  const bool known = x->rank == 3;
  const int64_t seq = known ? x->dims[p->layout] : -1, batch = known ? x->dims[!p->layout] : -1;
  int64_t hd = p->hidden;
  if (hd <= 0 && r->rank == 3)
    hd = r->dims[2];
  if (hd <= 0 && w->rank == 3 && w->dims[1] > 0)
    hd = w->dims[1] / (p->gru ? 3 : 4);
  const int64_t D = p->dirs, H = hd > 0 ? hd : -1, G = hd > 0 ? (p->gru ? 3 : 4) * hd : -1;
  const int64_t hdims[3] = {p->layout ? batch : D, p->layout ? D : batch, H};
  /* X, W, R, B, sequence_lens, initial_h, initial_c, P */
  const int64_t dims[8][3] = {{-1, -1, -1},
                              {D, G, known ? x->dims[2] : -1},
                              {D, G, H},
                              {D, hd > 0 ? 2 * G : -1},
                              {batch},
                              {hdims[0], hdims[1], H},
                              {hdims[0], hdims[1], H},
                              {D, hd > 0 ? 3 * hd : -1}};
  static const unsigned char rank[8] = {3, 3, 3, 2, 1, 3, 3, 2};
  for (int k = 0; k < 8; k++)
    WQ_TRY(need(node, &in[k], k, rank[k], dims[k], err));
  if (!known || hd <= 0)
    return WQ_OK;
  out[0].rank = 4;
  const int64_t y[4] = {p->layout ? batch : seq, p->layout ? seq : D, p->layout ? D : batch, hd};
  memcpy(out[0].dims, y, sizeof y);
  for (int k = 1; k < node->n_outputs; k++) {
    out[k].rank = 3;
    memcpy(out[k].dims, hdims, sizeof hdims);
  }
  for (int k = 0; k < node->n_outputs; k++)
    WQ_TRY(wq_shape_check(out[k].dims, out[k].rank, node->name, "recurrent output", err));
  return WQ_OK;
}

static const void *opt(const wq_node *node, const wq_value *in, int k) {
  return k < node->n_inputs && wq_value_present(&in[k]) ? in[k].data : NULL;
}

static wq_status lstm_run(const wq_node *node, const wq_value *in, wq_value *out, wq_error *err) {
  const lstm_state *s = node->op_state;
  wq_rnn_params p = s->p;
  p.seq = in[0].dims[p.layout ? 1 : 0];
  p.batch = in[0].dims[p.layout ? 0 : 1];
  p.input = in[0].dims[2];
  p.hidden = in[2].dims[2];
  const int32_t *lens = opt(node, in, 4);
  wq_status st = WQ_OK;
  for (int64_t b = 0; lens && b < p.batch; b++)
    if (lens[b] < 0 || lens[b] > p.seq)
      st = WQ_ERR_INVALID_MODEL;
  wq_rnn_io io = {in[0].data,
                  in[1].data,
                  in[2].data,
                  opt(node, in, 3),
                  lens,
                  opt(node, in, 5),
                  opt(node, in, 6),
                  opt(node, in, 7),
                  {NULL, NULL, NULL},
                  {s->wp[0], s->wp[1]},
                  {s->rp[0], s->rp[1]},
                  {s->rh[0], s->rh[1]}};
  for (int k = 0; k < node->n_outputs; k++)
    io.out[k] = out[k].data;
  if (st == WQ_OK)
    st = wq_rnn_ref(&p, &io);
  return st == WQ_OK
             ? WQ_OK
             : wq_fail(err, st, node->name, "%s: %s", node->op_type,
                       st == WQ_ERR_OUT_OF_MEMORY ? "out of memory"
                                                  : "a sequence_lens is outside 0..seq_length");
}

const wq_op wq_op_lstm = {.op_type = "LSTM",
                          .domain = "",
                          .min_opset = 7,
                          .min_inputs = 3,
                          .max_inputs = 8,
                          .min_outputs = 0,
                          .max_outputs = 3,
                          .prepare = lstm_prepare,
                          .free_state = lstm_free,
                          .infer = lstm_infer,
                          .run = lstm_run,
                          .plan = lstm_plan,
                          .memory = lstm_memory};
const wq_op wq_op_gru = {.op_type = "GRU",
                         .domain = "",
                         .min_opset = 7,
                         .min_inputs = 3,
                         .max_inputs = 6,
                         .min_outputs = 0,
                         .max_outputs = 2,
                         .prepare = lstm_prepare,
                         .free_state = lstm_free,
                         .infer = lstm_infer,
                         .run = lstm_run,
                         .plan = lstm_plan,
                         .memory = lstm_memory};
