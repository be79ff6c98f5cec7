#include "rnn.h"

#include <stdlib.h>
#include <string.h>

#include "sgemm.h"

/* Gate pre-activations are clipped to [-clip, clip] before activation. */
static void gate(const wq_rnn_activation *a, float clip, float *v, int64_t n) {
  for (int64_t i = 0; clip > 0.0f && i < n; i++)
    v[i] = v[i] < -clip ? -clip : (v[i] > clip ? clip : v[i]);
  ew_unary_float(a->kind, a->alpha, a->beta, v, v, n);
}

wq_status wq_lstm_ref(const wq_rnn_params *p, const wq_rnn_io *io) {
  const int64_t S = p->seq, N = p->batch, H = p->hidden, G = 4 * H, I = p->input;
  const int D = p->dirs;
  float *gx = malloc(((size_t)(S * N * G) + (size_t)(N * G) + 2 * (size_t)(N * H) + 1) * 4);
  if (!gx)
    return WQ_ERR_OUT_OF_MEMORY;
  float *gates = gx + S * N * G, *h = gates + N * G, *c = h + N * H;
  float *y = io->out[0];
  if (y)
    memset(y, 0, (size_t)(S * D * N * H) * sizeof *y);
  wq_status st = WQ_OK;
  for (int d = 0; d < D && st == WQ_OK; d++) {
    const bool rev = p->reverse || d == 1;
    const float *w = io->w + d * G * I, *r = io->r + d * G * H;
    const wq_rnn_activation *f = &p->act[3 * d], *g = f + 1, *ha = f + 2;
    /* Rows of gx in X's memory order: (t, b) for layout 0, (b, t) for 1. */
    st = wq_sgemm(S * N, G, I, 1.0f, io->x, I, 1, w, 1, I, 0.0f, gx, G);
    for (int64_t row = 0; io->b && row < S * N; row++)
      for (int64_t j = 0; j < G; j++)
        gx[row * G + j] += io->b[d * 2 * G + j] + io->b[d * 2 * G + G + j];
    for (int64_t b = 0; b < N; b++) {
      int64_t at = p->layout ? (b * D + d) * H : (d * N + b) * H;
      for (int64_t j = 0; j < H; j++) {
        h[b * H + j] = io->h0 ? io->h0[at + j] : 0.0f;
        c[b * H + j] = io->c0 ? io->c0[at + j] : 0.0f;
      }
    }
    const float *pi = io->peep ? io->peep + d * 3 * H : NULL, *po = pi ? pi + H : NULL,
                *pf = pi ? pi + 2 * H : NULL;
    for (int64_t s = 0; s < S && st == WQ_OK; s++) {
      st = wq_sgemm(N, G, H, 1.0f, h, H, 1, r, 1, H, 0.0f, gates, G);
      for (int64_t b = 0; b < N && st == WQ_OK; b++) {
        const int64_t len = io->lens ? io->lens[b] : S;
        if (s >= len)
          continue;
        const int64_t t = rev ? len - 1 - s : s;
        const float *xg = gx + (p->layout ? b * S + t : t * N + b) * G;
        float *gi = gates + b * G, *go = gi + H, *gf = go + H, *gc = gf + H;
        float *hb = h + b * H, *cb = c + b * H;
        for (int64_t j = 0; j < G; j++)
          gi[j] += xg[j];
        for (int64_t j = 0; pi && j < H; j++) {
          gi[j] += pi[j] * cb[j];
          gf[j] += pf[j] * cb[j];
        }
        gate(f, p->clip, gi, H);
        if (p->input_forget)
          for (int64_t j = 0; j < H; j++)
            gf[j] = 1.0f - gi[j];
        else
          gate(f, p->clip, gf, H);
        gate(g, p->clip, gc, H);
        for (int64_t j = 0; j < H; j++) {
          cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
          gc[j] = cb[j];
          go[j] += pi ? po[j] * cb[j] : 0.0f;
        }
        gate(f, p->clip, go, H);
        gate(ha, 0.0f, gc, H);
        float *yt = y ? y + (p->layout ? (b * S + t) * D + d : (t * D + d) * N + b) * H : NULL;
        for (int64_t j = 0; j < H; j++) {
          hb[j] = go[j] * gc[j];
          if (yt)
            yt[j] = hb[j];
        }
      }
    }
    for (int64_t b = 0; b < N; b++) {
      int64_t at = p->layout ? (b * D + d) * H : (d * N + b) * H;
      if (io->out[1])
        memcpy(io->out[1] + at, h + b * H, (size_t)H * sizeof *h);
      if (io->out[2])
        memcpy(io->out[2] + at, c + b * H, (size_t)H * sizeof *c);
    }
  }
  free(gx);
  return st;
}
