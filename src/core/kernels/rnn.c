#include "rnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sgemm.h"
#include "common/vexp.h"

/* Sigmoid 1 / (1 + e^-x) and tanh 1 - 2 / (e^2x + 1) on wq_exp1/wq_exp4
 * (absolute error a few 1e-8); other activations through ew_unary_float.
 * Gate pre-activations are clipped to [-clip, clip] first. */
static void gate(const wq_rnn_activation *a, float clip, float *v, int64_t n) {
  for (int64_t i = 0; clip > 0.0f && i < n; i++)
    v[i] = v[i] < -clip ? -clip : (v[i] > clip ? clip : v[i]);
  if (a->kind != EW_UNARY_SIGMOID && a->kind != EW_UNARY_TANH) {
    ew_unary_float(a->kind, a->alpha, a->beta, v, v, n);
    return;
  }
  const bool sig = a->kind == EW_UNARY_SIGMOID;
  const float m = sig ? -1.0f : 2.0f, num = sig ? 1.0f : -2.0f, add = sig ? 0.0f : 1.0f;
#ifdef __wasm_simd128__
  for (int64_t i = 0; i < n; i += 4) {
    /* A last partial vector goes through a zeroed copy (no scalar twin). */
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f}, *q = n - i < 4 ? t : v + i;
    if (q == t)
      memcpy(t, v + i, (size_t)(n - i) * sizeof *t);
    v128_t e = wq_exp4(wasm_f32x4_mul(wasm_v128_load(q), wasm_f32x4_splat(m)));
    e = wasm_f32x4_div(wasm_f32x4_splat(num), wasm_f32x4_add(e, wasm_f32x4_splat(1.0f)));
    wasm_v128_store(q, wasm_f32x4_add(e, wasm_f32x4_splat(add)));
    if (q == t)
      memcpy(v + i, t, (size_t)(n - i) * sizeof *t);
  }
#else
  for (int64_t i = 0; i < n; i++)
    v[i] = num / (wq_exp1(v[i] * m) + 1.0f) + add;
#endif
}

float *wq_rnn_pack(const float *w, int64_t gates, int64_t cols) {
  return wq_sgemv_pack(gates, cols, w, 1, cols);
}

/* out[b] = h[b] * R^T for the `rows` gate rows of R: on R packed by
 * wq_rnn_pack (one GEMV per batch row) or on R itself. */
static wq_status rmul(const float *packed, const float *r, int64_t rows, int64_t H, int64_t N,
                      const float *h, float *out, int64_t ldo) {
  for (int64_t b = 0; packed && b < N; b++)
    wq_sgemv_packed(rows, H, h + b * H, 1, packed, out + b * ldo);
  return packed ? WQ_OK : wq_sgemm(N, rows, H, 1.0f, h, H, 1, r, 1, H, 0.0f, out, ldo);
}

/* One LSTM step of one batch row: gi/go/gf/gc are the i, o, f, c gate
 * pre-activations (X and H products summed), c the cell state. Writes h. */
static void lstm_cell(const wq_rnn_params *p, const wq_rnn_activation *f, const float *pi,
                      float *gi, float *c, float *hb) {
  const int64_t H = p->hidden;
  float *go = gi + H, *gf = go + H, *gc = gf + H;
  const float *po = pi ? pi + H : NULL, *pf = pi ? pi + 2 * H : NULL;
  for (int64_t j = 0; pi && j < H; j++) {
    gi[j] += pi[j] * c[j];
    gf[j] += pf[j] * c[j];
  }
  gate(f, p->clip, gi, H);
  if (p->input_forget)
    for (int64_t j = 0; j < H; j++)
      gf[j] = 1.0f - gi[j];
  else
    gate(f, p->clip, gf, H);
  gate(f + 1, p->clip, gc, H);
  for (int64_t j = 0; j < H; j++) {
    c[j] = gf[j] * c[j] + gi[j] * gc[j];
    gc[j] = c[j];
    go[j] += pi ? po[j] * c[j] : 0.0f;
  }
  gate(f, p->clip, go, H);
  gate(f + 2, 0.0f, gc, H);
  for (int64_t j = 0; j < H; j++)
    hb[j] = go[j] * gc[j];
}

wq_status wq_rnn_ref(const wq_rnn_params *p, const wq_rnn_io *io) {
  const bool gru = p->gru;
  const int64_t S = p->seq, N = p->batch, H = p->hidden, G = (gru ? 3 : 4) * H, I = p->input;
  const int D = p->dirs, n_act = gru ? 2 : 3;
  /* gx: every step's X product (+ bias); gates: the step's H product; h, c
   * the state (c: a GRU's r * h); t2: a GRU's (r * h) R_h^T. */
  float *gx = malloc(((size_t)(S * N * G) + (size_t)(N * G) + 2 * (size_t)(N * H) + (size_t)H) * 4);
  if (!gx)
    return WQ_ERR_OUT_OF_MEMORY;
  float *gates = gx + S * N * G, *h = gates + N * G, *c = h + N * H, *t2 = c + N * H;
  float *y = io->out[0];
  if (y)
    memset(y, 0, (size_t)(S * D * N * H) * sizeof *y);
  wq_status st = WQ_OK;
  for (int d = 0; d < D && st == WQ_OK; d++) {
    const bool rev = p->reverse || d == 1;
    const float *w = io->w + d * G * I, *r = io->r + d * G * H, *rh = r + 2 * H * H;
    const float *wb = io->b ? io->b + d * 2 * G : NULL, *rb = wb ? wb + G : NULL;
    const wq_rnn_activation *f = &p->act[n_act * d];
    /* Rows of gx in X's memory order: (t, b) for layout 0, (b, t) for 1. */
    if (io->wp[d] && S * N <= 16)
      for (int64_t row = 0; row < S * N; row++)
        wq_sgemv_packed(G, I, io->x + row * I, 1, io->wp[d], gx + row * G);
    else
      st = wq_sgemm(S * N, G, I, 1.0f, io->x, I, 1, w, 1, I, 0.0f, gx, G);
    /* Both biases of every gate, but a GRU's recurrent one of h (which r
     * scales when linear_before_reset): added per step. */
    for (int64_t row = 0; wb && row < S * N; row++)
      for (int64_t j = 0; j < G; j++)
        gx[row * G + j] += wb[j] + (gru && j >= 2 * H ? 0.0f : rb[j]);
    for (int64_t b = 0; b < N; b++) {
      int64_t at = p->layout ? (b * D + d) * H : (d * N + b) * H;
      for (int64_t j = 0; j < H; j++) {
        h[b * H + j] = io->h0 ? io->h0[at + j] : 0.0f;
        c[b * H + j] = io->c0 ? io->c0[at + j] : 0.0f;
      }
    }
    for (int64_t s = 0; s < S && st == WQ_OK; s++) {
      /* LSTM: all gates; GRU: z and r, and h unless r scales h first. */
      st = rmul(io->rp[d], r, gru ? 2 * H : G, H, N, h, gates, G);
      if (st == WQ_OK && gru && p->linear_before_reset)
        st = rmul(io->rh[d], rh, H, H, N, h, gates + 2 * H, G);
      for (int64_t b = 0; b < N && st == WQ_OK; b++) {
        const int64_t len = io->lens ? io->lens[b] : S;
        if (s >= len)
          continue;
        const int64_t t = rev ? len - 1 - s : s;
        const float *xg = gx + (p->layout ? b * S + t : t * N + b) * G;
        float *g0 = gates + b * G, *hb = h + b * H;
        for (int64_t j = 0; j < (gru ? 2 * H : G); j++)
          g0[j] += xg[j];
        if (!gru) {
          lstm_cell(p, f, io->peep ? io->peep + d * 3 * H : NULL, g0, c + b * H, hb);
        } else {
          float *gz = g0, *gr = gz + H, *gh = gr + H, *rhb = c;
          gate(f, p->clip, gz, 2 * H);
          if (p->linear_before_reset) {
            for (int64_t j = 0; j < H; j++)
              gh[j] = xg[2 * H + j] + gr[j] * (gh[j] + (rb ? rb[2 * H + j] : 0.0f));
          } else {
            for (int64_t j = 0; j < H; j++)
              rhb[j] = gr[j] * hb[j];
            st = rmul(io->rh[d], rh, H, H, 1, rhb, t2, H);
            for (int64_t j = 0; j < H; j++)
              gh[j] = xg[2 * H + j] + t2[j] + (rb ? rb[2 * H + j] : 0.0f);
          }
          gate(f + 1, p->clip, gh, H);
          for (int64_t j = 0; j < H; j++)
            hb[j] = (1.0f - gz[j]) * gh[j] + gz[j] * hb[j];
        }
        float *yt = y ? y + (p->layout ? (b * S + t) * D + d : (t * D + d) * N + b) * H : NULL;
        if (yt)
          memcpy(yt, hb, (size_t)H * sizeof *hb);
      }
    }
    for (int64_t b = 0; b < N; b++) {
      int64_t at = p->layout ? (b * D + d) * H : (d * N + b) * H;
      if (io->out[1])
        memcpy(io->out[1] + at, h + b * H, (size_t)H * sizeof *h);
      if (io->out[2] && !gru)
        memcpy(io->out[2] + at, c + b * H, (size_t)H * sizeof *c);
    }
  }
  free(gx);
  return st;
}
