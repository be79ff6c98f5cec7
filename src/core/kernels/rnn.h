/* Reference kernel of the float LSTM (ops/rnn.c has the ONNX contract). */
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
  int dirs;     /* 1 or 2 (bidirectional: forward first) */
  bool reverse; /* the one direction runs backwards */
  int layout;   /* 0: X [seq, batch, input]; 1: [batch, seq, input] */
  bool input_forget;
  float clip; /* 0: none */
  /* f, g, h per direction: gates, cell input, cell output. */
  wq_rnn_activation act[6];
} wq_rnn_params;

/* Inputs as ONNX lays them out (optional ones NULL) and the outputs
 * (NULL when not wanted). */
typedef struct {
  const float *x, *w, *r, *b;
  const int32_t *lens;
  const float *h0, *c0, *peep;
  float *out[3]; /* Y, Y_h, Y_c */
  /* Per direction, W and R packed by wq_sgemv_pack (NULL: not packed):
   * the per-step products then stream the constant weights once instead of
   * packing them for a GEMM at every step. */
  const float *wp[2], *rp[2];
} wq_rnn_io;

/* W and R of direction d packed for wq_lstm_ref's GEMV path (NULL when out
 * of memory); `gates` rows of `cols` floats each. */
float *wq_rnn_pack(const float *w, int64_t gates, int64_t cols);

/* WQ_OK, or WQ_ERR_OUT_OF_MEMORY for its scratch. */
wq_status wq_lstm_ref(const wq_rnn_params *p, const wq_rnn_io *io);

#endif
