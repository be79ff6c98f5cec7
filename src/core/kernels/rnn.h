/* The float LSTM and GRU (ops/rnn.c has the ONNX contract). */
#ifndef WQ_KERNELS_RNN_H
#define WQ_KERNELS_RNN_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/status.h"
#include "ref/ew_unary.h"

/* An activation of the gates: one of the unary kernels with its alpha and
 * beta (ew_unary.h). */
typedef struct {
  ew_unary_kind kind;
  float alpha, beta;
} wq_rnn_activation;

typedef struct {
  int64_t seq, batch, input, hidden;
  bool gru;                 /* GRU (gates z, r, h) rather than LSTM (i, o, f, c) */
  bool linear_before_reset; /* GRU: r scales (H R_h^T + Rb_h) rather than H */
  int dirs;                 /* 1 or 2 (bidirectional: forward first) */
  bool reverse;             /* the one direction runs backwards */
  int layout;               /* 0: X [seq, batch, input]; 1: [batch, seq, input] */
  bool input_forget;
  float clip; /* 0: none */
  /* Per direction, LSTM: f, g, h (gates, cell input, cell output); GRU:
   * f, g (gates, hidden). */
  wq_rnn_activation act[6];
} wq_rnn_params;

/* Inputs as ONNX lays them out (optional ones NULL) and the outputs
 * (NULL when not wanted). */
typedef struct {
  const float *x, *w, *r, *b;
  const int32_t *lens;
  const float *h0, *c0, *peep;
  float *out[3]; /* Y, Y_h, Y_c */
  /* Per direction, W and R packed by wq_rnn_pack (NULL: not packed): the
   * per-step products then stream the constant weights once instead of
   * packing them for a GEMM at every step. A GRU's R is packed as its z, r
   * rows (rp) and its h rows (rh). */
  const float *wp[2], *rp[2], *rh[2];
} wq_rnn_io;

/* `gates` rows of W or R (`cols` floats each) packed for wq_rnn_ref's
 * GEMV path (NULL when out of memory; free() it). */
float *wq_rnn_pack(const float *w, int64_t gates, int64_t cols);

/* WQ_OK, or WQ_ERR_OUT_OF_MEMORY for its scratch. */
wq_status wq_rnn_ref(const wq_rnn_params *p, const wq_rnn_io *io);

#endif
