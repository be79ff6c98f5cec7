#include "qeltwise.h"

#include <string.h>

#include "../runtime/parallel.h"
#include "config.h"
#include "simd/cold_loop.h"

/* The build's variant (the family has no per-model choice). */
static const wq_qeltwise_config *eltwise(void) { return wq_kernel_set_default()->qeltwise; }

void wq_qbinary_row(const wq_qbinary_params *p, int64_t n, const void *a, int a_step, const void *b,
                    int b_step, void *y) {
  eltwise()->binary_row(p, n, a, a_step, b, b_step, y);
}

/* Short runs make per-call overhead dominate (a per-channel operand on
 * channels-last data with few channels): the repeating operand is then
 * tiled into a buffer of this many codes so one call covers several runs. */
enum { TILE_BYTES = 256, SHORT_RUN = 64 };

/* One run of a binary op cut into pieces across threads (threaded builds
 * only: behind wq_parallel_threads() > 1). Every code is computed the same
 * way in any piece, so results equal one thread's bit for bit. */
typedef struct {
  const wq_qbinary_params *p;
  const uint8_t *a8, *b8;
  uint8_t *y8;
  int a_step, b_step;
} qbinary_run_job;

static void qbinary_pieces(void *ctx, int64_t i0, int64_t i1) {
  const qbinary_run_job *j = ctx;
  wq_qbinary_row(j->p, i1 - i0, j->a8 + i0 * j->a_step, j->a_step, j->b8 + i0 * j->b_step,
                 j->b_step, j->y8 + i0);
}

/* A single run this long (~4.5 us) or more is split; pieces hold at least
 * QBINARY_PIECE_MIN codes (~1 us), at most 16 per op. Runs that repeat
 * along outer dims (broadcasts) stay on one thread. */
#define QBINARY_PARALLEL_MIN ((int64_t)1 << 13)
#define QBINARY_PIECE_MIN ((int64_t)1 << 11)

/* One run whose operands step by any stride: pieces of GATHER codes, the
 * operands that neither repeat one code nor walk contiguously gathered
 * first (an operand in another layout than the output's). */
enum { GATHER = 256 };

static void qbinary_gathered(const wq_qbinary_params *p, int64_t n, const uint8_t *a,
                             int64_t a_step, const uint8_t *b, int64_t b_step, uint8_t *y) {
  uint8_t ga[GATHER], gb[GATHER];
  for (int64_t i0 = 0; i0 < n; i0 += GATHER) {
    const int64_t m = n - i0 < GATHER ? n - i0 : GATHER;
    const uint8_t *pa = a + i0 * a_step, *pb = b + i0 * b_step;
    if (a_step > 1) {
      WQ_COLD_LOOP
      for (int64_t i = 0; i < m; i++)
        ga[i] = pa[i * a_step];
      pa = ga;
    }
    if (b_step > 1) {
      WQ_COLD_LOOP
      for (int64_t i = 0; i < m; i++)
        gb[i] = pb[i * b_step];
      pb = gb;
    }
    wq_qbinary_row(p, m, pa, a_step != 0, pb, b_step != 0, y + i0);
  }
}

void wq_qbinary(const wq_qbinary_params *p, const wq_value *a, const wq_value *b, wq_value *y) {
  const int rank = y->rank;
  const int64_t total = wq_value_numel(y);
  if (total <= 0)
    return;
  /* y's dims in its memory order, and the element strides of a and b
   * along them (0 along broadcast dims): each operand is read through its
   * own layout, which need not be y's. */
  int64_t dims[WQ_MAX_RANK], as[WQ_MAX_RANK], bs[WQ_MAX_RANK];
  int64_t a_strides[WQ_MAX_RANK], b_strides[WQ_MAX_RANK];
  wq_value_strides(a, a_strides);
  wq_value_strides(b, b_strides);
  for (int pos = 0; pos < rank; pos++) {
    const int d = wq_layout_logical_dim(y->layout, rank, pos);
    const int da = d - (rank - a->rank), db = d - (rank - b->rank);
    dims[pos] = y->dims[d];
    as[pos] = da >= 0 && a->dims[da] != 1 ? a_strides[da] : 0;
    bs[pos] = db >= 0 && b->dims[db] != 1 ? b_strides[db] : 0;
  }
  /* Fold inner dims into one run while both operands keep their step
   * (1: contiguous, 0: one code repeated, larger: gathered). */
  int64_t run = 1, a_step = 1, b_step = 1;
  int outer = rank;
  bool first = true;
  for (; outer > 0; outer--) {
    const int d = outer - 1;
    if (dims[d] == 1)
      continue;
    if (first) {
      a_step = as[d];
      b_step = bs[d];
      first = false;
    } else if (as[d] != a_step * run || bs[d] != b_step * run) {
      break;
    }
    run *= dims[d];
  }
  const bool gather = a_step > 1 || b_step > 1;
  /* Tile a short repeating run: dim d splits into k steps of the run (k
   * divides it) folded into one longer run, and dims[d] / k iterations;
   * the operand that restarts at every step reads k copies from `tile`. */
  int tiled = 0; /* 1: a is tiled, 2: b */
  const int64_t unit = run;
  if (outer > 0 && run < SHORT_RUN && !gather) {
    const int d = outer - 1;
    if (a_step == 1 && as[d] == 0 && bs[d] == b_step * run)
      tiled = 1;
    else if (b_step == 1 && bs[d] == 0 && as[d] == a_step * run)
      tiled = 2;
    int64_t k = TILE_BYTES / run;
    while (k > 1 && dims[d] % k != 0)
      k--;
    if (tiled && k > 1) {
      dims[d] /= k;
      as[d] *= k;
      bs[d] *= k;
      run *= k;
      if (dims[d] == 1)
        outer--;
    } else {
      tiled = 0;
    }
  }
  uint8_t tile[TILE_BYTES];
  int64_t tile_from = -1;
  const uint8_t *a8 = a->data, *b8 = b->data;
  uint8_t *y8 = y->data;
  int64_t coord[WQ_MAX_RANK] = {0};
  int64_t ai = 0, bi = 0;
  const int64_t rows = total / run;
  if (wq_parallel_threads() > 1 && rows == 1 && !tiled && !gather && run >= QBINARY_PARALLEL_MIN) {
    qbinary_run_job job = {p, a8, b8, y8, (int)a_step, (int)b_step};
    const int64_t piece = (run / 16 + 15) / 16 * 16;
    wq_parallel_for(run, piece > QBINARY_PIECE_MIN ? piece : QBINARY_PIECE_MIN, qbinary_pieces,
                    &job);
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    const uint8_t *pa = a8 + ai, *pb = b8 + bi;
    if (tiled) {
      const uint8_t *src = tiled == 1 ? pa : pb;
      const int64_t from = tiled == 1 ? ai : bi;
      if (from != tile_from) {
        for (int64_t at = 0; at < run; at += unit)
          memcpy(tile + at, src, (size_t)unit);
        tile_from = from;
      }
      if (tiled == 1)
        pa = tile;
      else
        pb = tile;
    }
    if (gather)
      qbinary_gathered(p, run, pa, a_step, pb, b_step, y8 + r * run);
    else
      wq_qbinary_row(p, run, pa, (int)a_step, pb, (int)b_step, y8 + r * run);
    for (int d = outer - 1; d >= 0; d--) {
      ai += as[d];
      bi += bs[d];
      if (++coord[d] < dims[d])
        break;
      ai -= as[d] * dims[d];
      bi -= bs[d] * dims[d];
      coord[d] = 0;
    }
  }
}

void wq_lookup_q8(const uint8_t *table, bool x_signed, int64_t n, const void *x, void *y) {
  eltwise()->lookup(table, x_signed, n, x, y);
}

void wq_copy_rows_q8(int64_t rows, int64_t row_len, int64_t x_stride, int64_t y_stride,
                     const uint8_t *table, bool x_signed, const void *x, void *y) {
  eltwise()->copy_rows(rows, row_len, x_stride, y_stride, table, x_signed, x, y);
}

void wq_resize_nearest_nhwc_q8(const wq_resize_nhwc *r, const void *x, void *y) {
  eltwise()->resize_nearest(r, x, y);
}

void wq_depth_to_space_nhwc_q8(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t block,
                               bool crd, const void *x, void *y) {
  eltwise()->depth_to_space(batch, h, w, c, block, crd, x, y);
}
