#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "../../runtime/parallel.h"
#include "cold_loop.h"
#include "qgemm_simd.h"
#include "qgemm_ukernel.h"
#ifdef WQ_QGEMM_USDOT
#include "qgemm_usdot.h"
#endif

wq_status wq_simd_qgemm_pack(wq_qgemm_packed *p, const wq_qgemm_desc *d, const char *node,
                             wq_error *err) {
  const int64_t k_padded = (d->k + WQ_QGEMM_KR - 1) / WQ_QGEMM_KR * WQ_QGEMM_KR;
  const int64_t n_padded = (d->n + WQ_QGEMM_NR - 1) / WQ_QGEMM_NR * WQ_QGEMM_NR;
  WQ_TRY(wq_qgemm_packed_alloc(p, d, WQ_QGEMM_KR, WQ_QGEMM_NR, n_padded * k_padded, node, err));
  for (int64_t j = 0; j < d->n; j++) {
    int8_t *tile = p->w + (j / WQ_QGEMM_NR) * k_padded * WQ_QGEMM_NR;
    int64_t c = j % WQ_QGEMM_NR;
    for (int64_t k = 0; k < d->k; k++)
      tile[(k / WQ_QGEMM_KR) * WQ_QGEMM_KR * WQ_QGEMM_NR + c * WQ_QGEMM_KR + k % WQ_QGEMM_KR] =
          (int8_t)wq_qgemm_stored_weight(d, k, j);
  }
  return WQ_OK;
}

/* One output row of 8 columns (acc0: columns 0-3, acc1: 4-7) of tile
 * parameters t, stored as nr <= 8 bytes. */
static inline void store_row8(const wq_qgemm_packed *p, const wq_simd_requant *q,
                              const wq_simd_tile_params *t, int has_w_zero_point, int32_t row_sum,
                              v128_t acc0, v128_t acc1, uint8_t *y, int64_t nr) {
  if (p->y_dtype == WQ_DT_FLOAT) {
    v128_t row_sums = wasm_i32x4_splat(row_sum), acc[8] = {acc0, acc1};
    wq_simd_tile_store_float(t, has_w_zero_point, p->float_relu, row_sums, acc, (float *)y, 0, 1,
                             nr);
    return;
  }
  v128_t a0 = wasm_i32x4_add(acc0, t->bias[0]), a1 = wasm_i32x4_add(acc1, t->bias[1]);
  if (has_w_zero_point) {
    v128_t rs = wasm_i32x4_splat(row_sum);
    a0 = wasm_i32x4_sub(a0, wasm_i32x4_mul(t->w_zero_point[0], rs));
    a1 = wasm_i32x4_sub(a1, wasm_i32x4_mul(t->w_zero_point[1], rs));
  }
  v128_t o[2] = {a0, a1};
  wq_simd_requant_n(q, o, 2, t->multiplier);
  v128_t bytes = wq_simd_narrow16(q, o[0], o[1], o[0], o[1]);
  if (nr == 8) {
    wasm_v128_store64_lane(y, bytes, 0);
  } else {
    uint8_t tmp[16];
    wasm_v128_store(tmp, bytes);
    memcpy(y, tmp, (size_t)nr);
  }
}

/* Panels per row block: up to 16, widened into scratch that stays in L1
 * (~16 KB) while every column tile's weights pass over them once. */
static int64_t block_panels_of(const wq_qgemm_packed *p) {
  const int64_t panels = (16384 / 2) / (p->k_padded * WQ_QGEMM_MR);
  return panels < 1 ? 1 : (panels > 16 ? 16 : panels);
}

/* A row block's panels and 32 slots of slack: a panel fill may write up to
 * 7 K slots (4 pairs of 4 rows) past k_padded before the next panel's fill
 * overwrites them. */
static int64_t panels_bytes(const wq_qgemm_packed *p, int64_t block_panels) {
  return (p->k_padded * WQ_QGEMM_MR * block_panels + 32) * (int64_t)sizeof(int16_t);
}

/* The GEMV's widened row. */
static int64_t gemv_row_bytes(const wq_qgemm_packed *p) { return p->k_padded * 2; }

/* One of the two on one thread: a product of m == 1 widens the row, any
 * other takes one row block's panels per share. */
int64_t wq_simd_qgemm_scratch_bytes(const wq_qgemm_packed *p) {
  const int64_t row = wq_scratch_round(gemv_row_bytes(p)),
                panels = wq_scratch_round(panels_bytes(p, block_panels_of(p)));
  return row > panels ? row : panels;
}

/* Products below this many multiply-adds run on one thread, and a share
 * holds at least a quarter of it (bench/pool_overhead.c: a region costs a few
 * us; 2^19 MACs take ~15 us at the measured 35 G MAC/s). */
#define QGEMM_PARALLEL_MIN_MACS ((int64_t)1 << 19)
#define QGEMM_SHARE_MIN_MACS ((int64_t)1 << 17)
/* Shares per product at most: enough that a thread arriving late still
 * finds work and two threads end within 1/16 of each other. */
#define QGEMM_MAX_SHARES 16

#ifndef WQ_QGEMM_USDOT
/* Batch-1 GEMV over column tiles [t, tiles): the widened row is broadcast
 * once per pair and feeds four column tiles (32 columns) at a time. */
static void gemv(const wq_qgemm_packed *p, const int16_t *a16, uint8_t *y, int64_t t,
                 int64_t tiles) {
  const wq_simd_requant q = wq_simd_requant_init(p);
  const int64_t kpairs = p->k_padded / 2, tile_bytes = p->k_padded * WQ_QGEMM_NR;
  const int64_t y_size = p->y_dtype == WQ_DT_FLOAT ? 4 : 1;
  int32_t row_sum = 0;
  if (p->has_w_zero_point) {
    uint32_t s = 0;
    for (int64_t k = 0; k < p->k_padded; k++)
      s += (uint32_t)(a16[k] - p->a_zero_point);
    row_sum = (int32_t)s;
  }
  for (; t + 4 <= tiles; t += 4) {
    const int8_t *w0 = p->w + t * tile_bytes, *w1 = w0 + tile_bytes, *w2 = w1 + tile_bytes,
                 *w3 = w2 + tile_bytes;
    v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int64_t kp = 0; kp < kpairs; kp++) {
      v128_t a = wasm_v128_load32_splat(a16 + 2 * kp);
      v128_t v0 = wasm_v128_load(w0 + 16 * kp), v1 = wasm_v128_load(w1 + 16 * kp);
      c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_low_i8x16(v0)));
      c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_high_i8x16(v0)));
      c2 = wasm_i32x4_add(c2, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_low_i8x16(v1)));
      c3 = wasm_i32x4_add(c3, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_high_i8x16(v1)));
      v128_t v2 = wasm_v128_load(w2 + 16 * kp), v3 = wasm_v128_load(w3 + 16 * kp);
      c4 = wasm_i32x4_add(c4, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_low_i8x16(v2)));
      c5 = wasm_i32x4_add(c5, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_high_i8x16(v2)));
      c6 = wasm_i32x4_add(c6, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_low_i8x16(v3)));
      c7 = wasm_i32x4_add(c7, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_high_i8x16(v3)));
    }
    v128_t acc[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
    for (int i = 0; i < 4; i++) {
      int64_t j0 = (t + i) * WQ_QGEMM_NR;
      int64_t nr = p->n - j0 < WQ_QGEMM_NR ? p->n - j0 : WQ_QGEMM_NR;
      wq_simd_tile_params tp = wq_simd_tile_params_load(&q, p, j0);
      store_row8(p, &q, &tp, p->has_w_zero_point, row_sum, acc[2 * i], acc[2 * i + 1],
                 y + j0 * y_size, nr);
    }
  }
  for (; t < tiles; t++) {
    const int8_t *w0 = p->w + t * tile_bytes;
    v128_t c0 = wasm_i32x4_splat(0), c1 = c0;
    for (int64_t kp = 0; kp < kpairs; kp++) {
      v128_t a = wasm_v128_load32_splat(a16 + 2 * kp);
      v128_t v0 = wasm_v128_load(w0 + 16 * kp);
      c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_low_i8x16(v0)));
      c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(a, wasm_i16x8_extend_high_i8x16(v0)));
    }
    int64_t j0 = t * WQ_QGEMM_NR;
    int64_t nr = p->n - j0 < WQ_QGEMM_NR ? p->n - j0 : WQ_QGEMM_NR;
    wq_simd_tile_params tp = wq_simd_tile_params_load(&q, p, j0);
    store_row8(p, &q, &tp, p->has_w_zero_point, row_sum, c0, c1, y + j0 * y_size, nr);
  }
}
#endif

#ifdef WQ_QGEMM_USDOT
/* The relaxed GEMV: a16 holds the row as bytes A + off (widen_row below). */
static void gemv(const wq_qgemm_packed *p, const int16_t *a16, uint8_t *y, int64_t t,
                 int64_t tiles) {
  const wq_simd_requant q = wq_simd_requant_init(p);
  const uint8_t *a8 = (const uint8_t *)a16;
  const int64_t kquads = p->k_padded / 4, tile_bytes = p->k_padded * WQ_QGEMM_NR;
  const int64_t y_size = p->y_dtype == WQ_DT_FLOAT ? 4 : 1;
  int32_t row_sum = 0;
  if (p->has_w_zero_point) {
    uint32_t s = 0, zp = (uint32_t)(p->a_zero_point + wq_usdot_offset(p->a_dtype));
    for (int64_t k = 0; k < p->k_padded; k++)
      s += a8[k] - zp;
    row_sum = (int32_t)s;
  }
  for (; t < tiles; t += 4) {
    const int64_t group = tiles - t < 4 ? tiles - t : 4;
    const int8_t *w0 = p->w + t * tile_bytes;
    /* Past the group's last tile, w1..w3 repeat it (results dropped). */
    const int8_t *w1 = w0 + (group > 1 ? tile_bytes : 0),
                 *w2 = w0 + (group > 2 ? 2 : 0) * tile_bytes,
                 *w3 = w0 + (group > 3 ? 3 : 0) * tile_bytes;
    v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int64_t kq = 0; kq < kquads; kq++) {
      v128_t a = wasm_v128_load32_splat(a8 + 4 * kq);
      c0 = wq_usdot(wasm_v128_load(w0 + 32 * kq), a, c0);
      c1 = wq_usdot(wasm_v128_load(w0 + 32 * kq + 16), a, c1);
      c2 = wq_usdot(wasm_v128_load(w1 + 32 * kq), a, c2);
      c3 = wq_usdot(wasm_v128_load(w1 + 32 * kq + 16), a, c3);
      c4 = wq_usdot(wasm_v128_load(w2 + 32 * kq), a, c4);
      c5 = wq_usdot(wasm_v128_load(w2 + 32 * kq + 16), a, c5);
      c6 = wq_usdot(wasm_v128_load(w3 + 32 * kq), a, c6);
      c7 = wq_usdot(wasm_v128_load(w3 + 32 * kq + 16), a, c7);
    }
    v128_t acc[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
    for (int i = 0; i < group; i++) {
      int64_t j0 = (t + i) * WQ_QGEMM_NR;
      int64_t nr = p->n - j0 < WQ_QGEMM_NR ? p->n - j0 : WQ_QGEMM_NR;
      wq_simd_tile_params tp = wq_simd_tile_params_load(&q, p, j0);
      store_row8(p, &q, &tp, p->has_w_zero_point, row_sum, acc[2 * i], acc[2 * i + 1],
                 y + j0 * y_size, nr);
    }
  }
}

/* The GEMV's row as bytes A + off (k_padded slots, padding at the offset
 * zero point), in the int16 scratch. */
static void widen_row(const wq_qgemm_packed *p, const uint8_t *a, int16_t *a16) {
  uint8_t *a8 = (uint8_t *)a16;
  const uint8_t flip = (uint8_t)wq_usdot_offset(p->a_dtype);
  int64_t k = 0;
  const v128_t vflip = wasm_i8x16_splat((int8_t)flip);
  for (; k + 16 <= p->k; k += 16)
    wasm_v128_store(a8 + k, wasm_v128_xor(wasm_v128_load(a + k), vflip));
  WQ_COLD_LOOP
  for (; k < p->k; k++)
    a8[k] = a[k] ^ flip;
  WQ_COLD_LOOP
  for (; k < p->k_padded; k++)
    a8[k] = (uint8_t)(p->a_zero_point + wq_usdot_offset(p->a_dtype));
}
#else
/* Widens one row to int16 (k_padded slots, padding at the zero point). */
static void widen_row(const wq_qgemm_packed *p, const uint8_t *a, int16_t *a16) {
  int64_t k = 0;
  if (p->a_dtype == WQ_DT_UINT8) {
    for (; k + 8 <= p->k; k += 8)
      wasm_v128_store(a16 + k, wasm_u16x8_load8x8(a + k));
    WQ_COLD_LOOP
    for (; k < p->k; k++)
      a16[k] = a[k];
  } else {
    for (; k + 8 <= p->k; k += 8)
      wasm_v128_store(a16 + k, wasm_i16x8_load8x8(a + k));
    WQ_COLD_LOOP
    for (; k < p->k; k++)
      a16[k] = (int8_t)a[k];
  }
  WQ_COLD_LOOP
  for (; k < p->k_padded; k++)
    a16[k] = (int16_t)p->a_zero_point;
}
#endif

/* Rows of a dense A (row stride lda) as panels. */
typedef struct {
  const wq_qgemm_packed *p;
  const uint8_t *a;
  int64_t lda;
} dense_rows;

static void fill_dense_panel(const void *ctx, int64_t row0, int64_t rows, int16_t *panel) {
  const dense_rows *d = ctx;
  const void *src[4];
  for (int r = 0; r < 4; r++)
    src[r] = d->a + (row0 + (r < rows ? r : rows - 1)) * d->lda;
  wq_simd_panel_pack(panel, 0, src, d->p->k, d->p->a_dtype, d->p->a_zero_point);
  wq_simd_panel_fill(panel, d->p->k + (d->p->k & 1), d->p->k_padded, d->p->a_zero_point);
}

typedef struct {
  const wq_qgemm_packed *p;
  const int16_t *a16;
  uint8_t *y;
} gemv_job;

static void gemv_share(void *ctx, int64_t t0, int64_t t1) {
  const gemv_job *job = ctx;
  gemv(job->p, job->a16, job->y, t0, t1);
}

typedef struct {
  const wq_qgemm_packed *p;
  dense_rows rows;
  void *y;
  int64_t ldy;
  wq_simd_qgemm_split split;
  atomic_int status;
} dense_job;

/* Output blocks [c0, c1) of a dense product (row block, column block). */
static void dense_share(void *ctx, int64_t c0, int64_t c1) {
  dense_job *job = ctx;
  const wq_simd_qgemm_split *s = &job->split;
  wq_error err;
  wq_error_clear(&err);
  const int64_t panels = (s->m + WQ_QGEMM_MR - 1) / WQ_QGEMM_MR;
  for (int64_t c = c0; c < c1; c++) {
    /* Balanced blocks: sizes differ by one panel (one tile) at most. */
    const int64_t rc = c / s->col_chunks, cc = c % s->col_chunks;
    const int64_t r0 = rc * panels / s->row_chunks * WQ_QGEMM_MR;
    const int64_t r_end = (rc + 1) * panels / s->row_chunks * WQ_QGEMM_MR;
    const int64_t r1 = r_end < s->m ? r_end : s->m;
    const int64_t t0 = cc * s->tiles / s->col_chunks, t1 = (cc + 1) * s->tiles / s->col_chunks;
    if (wq_simd_qgemm_run_block(job->p, r0, r1, t0, t1, fill_dense_panel, &job->rows, job->y,
                                job->ldy, &err) != WQ_OK)
      atomic_store(&job->status, (int)err.code);
  }
}

wq_status wq_simd_qgemv_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda,
                            void *y, int64_t ldy, wq_error *err) {
  (void)m;
  (void)lda;
  (void)ldy;
  int16_t *row = wq_scratch_take(gemv_row_bytes(p));
  if (!row)
    return wq_scratch_missing(err, "qgemm", gemv_row_bytes(p));
  widen_row(p, a, row);
  const int64_t tiles = p->n_padded / WQ_QGEMM_NR;
  if (wq_parallel_threads() > 1 && p->n * p->k >= QGEMM_PARALLEL_MIN_MACS) {
    /* Shares of whole 4-tile groups (32 columns), up to 8. */
    gemv_job job = {p, row, y};
    wq_parallel_for(tiles, (tiles / 8 + 3) / 4 * 4 < 4 ? 4 : (tiles / 8 + 3) / 4 * 4, gemv_share,
                    &job);
  } else {
    gemv(p, row, y, 0, tiles);
  }
  wq_scratch_give(row);
  return WQ_OK;
}

wq_status wq_simd_qgemm_run(const wq_qgemm_packed *p, int64_t m, const void *a, int64_t lda,
                            void *y, int64_t ldy, wq_error *err) {
  if (m == 1)
    return wq_simd_qgemv_run(p, m, a, lda, y, ldy, err);
  dense_rows rows = {p, a, lda};
  dense_job job = {.p = p, .rows = rows, .y = y, .ldy = ldy};
  if (wq_parallel_threads() > 1 && wq_simd_qgemm_split_plan(p, m, 1, &job.split) > 1) {
    atomic_init(&job.status, (int)WQ_OK);
    wq_parallel_for(job.split.chunks, 1, dense_share, &job);
    wq_status st = (wq_status)atomic_load(&job.status);
    return st == WQ_OK ? WQ_OK : wq_fail(err, st, NULL, "qgemm: out of memory for scratch");
  }
  return wq_simd_qgemm_run_panels(p, m, fill_dense_panel, &rows, y, ldy, err);
}

wq_status wq_simd_qgemm_run_rows(const wq_qgemm_packed *p, int64_t r0, int64_t m,
                                 wq_simd_panel_fn fill, const void *ctx, void *y, int64_t ldy,
                                 wq_error *err) {
  return wq_simd_qgemm_run_block(p, r0, m, 0, p->n_padded / WQ_QGEMM_NR, fill, ctx, y, ldy, err);
}

wq_status wq_simd_qgemm_run_block(const wq_qgemm_packed *p, int64_t r0, int64_t m, int64_t t0,
                                  int64_t t1, wq_simd_panel_fn fill, const void *ctx, void *y,
                                  int64_t ldy, wq_error *err) {
  if (m <= r0 || t1 <= t0)
    return WQ_OK;
  const int64_t panel_elems = p->k_padded * WQ_QGEMM_MR;
  int64_t block_panels = block_panels_of(p);
  int64_t needed_panels = (m - r0 + WQ_QGEMM_MR - 1) / WQ_QGEMM_MR;
  if (block_panels > needed_panels)
    block_panels = needed_panels;
  int16_t *panels = wq_scratch_take(panels_bytes(p, block_panels));
  if (!panels)
    return wq_scratch_missing(err, "qgemm", panels_bytes(p, block_panels));
  uint8_t *y8 = y;
  const wq_simd_requant q = wq_simd_requant_init(p);
  const int64_t kpairs = p->k_padded / 2, tile_bytes = p->k_padded * WQ_QGEMM_NR;
  const int64_t block_rows = block_panels * WQ_QGEMM_MR;
  v128_t row_sums[16];
  for (int64_t b0 = r0; b0 < m; b0 += block_rows) {
    int64_t rows_here = m - b0 < block_rows ? m - b0 : block_rows;
    int64_t panels_here = (rows_here + WQ_QGEMM_MR - 1) / WQ_QGEMM_MR;
    for (int64_t pi = 0; pi < panels_here; pi++) {
      int64_t i0 = b0 + pi * WQ_QGEMM_MR;
      int64_t mr = m - i0 < WQ_QGEMM_MR ? m - i0 : WQ_QGEMM_MR;
      int16_t *panel = panels + pi * panel_elems;
      fill(ctx, i0, mr, panel);
      row_sums[pi] = p->has_w_zero_point
                         ? wq_simd_panel_centered_sums(panel, p->k_padded, p->a_zero_point)
                         : wasm_i32x4_splat(0);
#ifdef WQ_QGEMM_USDOT
      wq_usdot_panel_narrow(panel, p->k_padded, wq_usdot_offset(p->a_dtype));
#endif
    }
    for (int64_t t = t0; t < t1; t++) {
      int64_t j0 = t * WQ_QGEMM_NR;
      int64_t nr = p->n - j0 < WQ_QGEMM_NR ? p->n - j0 : WQ_QGEMM_NR;
      wq_simd_tile_params tp = wq_simd_tile_params_load(&q, p, j0);
#ifndef WQ_QGEMM_USDOT
      /* The micro-kernel starts from the bias; the stores add no more. */
      const v128_t init[2] = {tp.bias[0], tp.bias[1]};
      tp.bias[0] = tp.bias[1] = wasm_i32x4_splat(0);
#endif
      for (int64_t pi = 0; pi < panels_here; pi++) {
        int64_t i0 = b0 + pi * WQ_QGEMM_MR;
        int64_t mr = m - i0 < WQ_QGEMM_MR ? m - i0 : WQ_QGEMM_MR;
        v128_t acc[8];
#ifdef WQ_QGEMM_USDOT
        wq_usdot_ukernel_4x8(kpairs / 2, (const uint8_t *)(panels + pi * panel_elems),
                             p->w + t * tile_bytes, acc);
#else
        wq_simd_ukernel_4x8(kpairs, panels + pi * panel_elems, p->w + t * tile_bytes, init, acc);
#endif
        if (p->y_dtype == WQ_DT_FLOAT)
          wq_simd_tile_store_float(&tp, p->has_w_zero_point, p->float_relu, row_sums[pi], acc,
                                   (float *)y + i0 * ldy + j0, ldy, mr, nr);
        else
          wq_simd_tile_store(&q, &tp, p->has_w_zero_point, row_sums[pi], acc, y8 + i0 * ldy + j0,
                             ldy, mr, nr);
      }
    }
  }
  wq_scratch_give(panels);
  return WQ_OK;
}

wq_status wq_simd_qgemm_run_panels(const wq_qgemm_packed *p, int64_t m, wq_simd_panel_fn fill,
                                   const void *ctx, void *y, int64_t ldy, wq_error *err) {
  return wq_simd_qgemm_run_rows(p, 0, m, fill, ctx, y, ldy, err);
}

int64_t wq_simd_qgemm_split_plan(const wq_qgemm_packed *p, int64_t m, int columns,
                                 wq_simd_qgemm_split *s) {
  const int64_t macs = m * p->n * p->k, tiles = p->n_padded / WQ_QGEMM_NR;
  const int64_t panels = (m + WQ_QGEMM_MR - 1) / WQ_QGEMM_MR;
  *s = (wq_simd_qgemm_split){
      .m = m, .tiles = tiles, .row_grain = m, .row_chunks = 1, .col_chunks = 1, .chunks = 1};
  if (macs < QGEMM_PARALLEL_MIN_MACS)
    return 1;
  int64_t target = macs / QGEMM_SHARE_MIN_MACS;
  target = target > QGEMM_MAX_SHARES ? QGEMM_MAX_SHARES : target & ~(int64_t)1;
  /* Whole panels of rows while there are two or more per share (or column
   * splitting is not allowed: im2col rows cost their packing once only). */
  int64_t row_chunks = panels >= 2 * target || !columns ? target : panels / 2;
  row_chunks = row_chunks < 1 ? 1 : (row_chunks > panels ? panels : row_chunks);
  /* A dense product's shares are row_chunks x col_chunks balanced blocks
   * (dense_share): with whole-grain blocks, 49 panels (a 14x14 map) in
   * blocks of 4 made 13 shares, 7 of them on one of 2 threads. */
  s->row_grain = (panels + row_chunks - 1) / row_chunks * WQ_QGEMM_MR;
  s->row_chunks = row_chunks;
  if (columns && s->row_chunks < target) {
    /* Few rows (7x7, 14x14 feature maps, small batches): column tiles too,
     * each share packing its rows' panels itself. */
    int64_t col_chunks = (target + s->row_chunks - 1) / s->row_chunks;
    /* An even share count where the tiles allow (two threads end together). */
    col_chunks += s->row_chunks * col_chunks % 2;
    col_chunks = col_chunks > tiles ? tiles : col_chunks;
    s->col_chunks = col_chunks;
  }
  s->chunks = s->row_chunks * s->col_chunks;
  return s->chunks;
}

#ifdef WQ_QGEMM_USDOT
/* The relaxed-SIMD build's record, listed by kernels/config.c in place of
 * the SIMD128 one (whose code this build does not contain). */
const wq_qgemm_config wq_qgemm_config_relaxed = {
#ifdef __wasm_relaxed_simd__
    .name = "relaxed_usdot_4x8",
#else
    .name = "usdot_emulated_4x8",
#endif
    .isa = WQ_ISA_RELAXED,
#else
const wq_qgemm_config wq_qgemm_config_simd128 = {
    .name = "simd128_4x8",
    .isa = WQ_ISA_SIMD128,
#endif
    .mr = WQ_QGEMM_MR,
    .nr = WQ_QGEMM_NR,
    .kr = WQ_QGEMM_KR,
    .pack = wq_simd_qgemm_pack,
    .run = wq_simd_qgemm_run,
    .gemv = wq_simd_qgemv_run,
    .scratch_bytes = wq_simd_qgemm_scratch_bytes,
};
