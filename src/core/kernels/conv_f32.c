#include "conv_f32.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/checked.h"
#include "../runtime/parallel.h"
#include "config.h"
#include "sgemm.h"

/* im2col/col2im scratch is processed in column chunks of at most this many
 * floats (4 MiB), so a 224x224 image with 576-row columns never needs the
 * whole 100+ MiB matrix at once. */
#define COL_BUDGET_FLOATS ((int64_t)1 << 20)

/* Padded copies (small convs, depthwise planes) up to this many floats. */
#define SMALL_CONV_FLOATS ((int64_t)1 << 16)

/* A 1-D or 2-D geometry seen as 2-D (a 1-D axis becomes W with H = 1). */
typedef struct {
  int64_t in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, d_h, d_w, p_h, p_w;
} plane_geometry;

static bool as_plane(const wq_conv_geometry *g, plane_geometry *p) {
  if (g->n_spatial == 2) {
    *p = (plane_geometry){g->in[0],       g->in[1],       g->out[0],       g->out[1],
                          g->kernel[0],   g->kernel[1],   g->stride[0],    g->stride[1],
                          g->dilation[0], g->dilation[1], g->pad_begin[0], g->pad_begin[1]};
    return true;
  }
  if (g->n_spatial == 1) {
    *p = (plane_geometry){1, g->in[0],     1, g->out[0],      1, g->kernel[0],
                          1, g->stride[0], 1, g->dilation[0], 0, g->pad_begin[0]};
    return true;
  }
  return false;
}

static void im2col_plane(const plane_geometry *p, const float *x, int64_t channels,
                         int64_t col_begin, int64_t col_count, float *col) {
  int64_t in_plane = p->in_h * p->in_w;
  int64_t row = 0;
  for (int64_t c = 0; c < channels; c++) {
    const float *xc = x + c * in_plane;
    for (int64_t ki = 0; ki < p->k_h; ki++) {
      for (int64_t kj = 0; kj < p->k_w; kj++, row++) {
        float *dst = col + row * col_count;
        int64_t ih_off = ki * p->d_h - p->p_h, iw_off = kj * p->d_w - p->p_w;
        /* Output columns [in_lo, in_hi) read inside the input row: the same
         * for every row, so computed once (the divisions per row segment
         * made im2col cost more than the GEMM on mnist-8). */
        int64_t in_lo = iw_off >= 0 ? 0 : (-iw_off + p->s_w - 1) / p->s_w;
        int64_t in_hi = p->in_w - 1 - iw_off < 0 ? 0 : (p->in_w - 1 - iw_off) / p->s_w + 1;
        int64_t oh = col_begin / p->out_w, ow = col_begin % p->out_w;
        for (int64_t done = 0; done < col_count; oh++, ow = 0) {
          int64_t seg = p->out_w - ow;
          if (seg > col_count - done)
            seg = col_count - done;
          int64_t ih = oh * p->s_h + ih_off;
          if (ih < 0 || ih >= p->in_h) {
            memset(dst + done, 0, sizeof(float) * (size_t)seg);
          } else {
            /* Columns [ow, ow + seg) split into left padding, the run that
             * reads the input row, and right padding. */
            const float *src = xc + ih * p->in_w;
            int64_t lo = in_lo < ow ? ow : (in_lo > ow + seg ? ow + seg : in_lo);
            int64_t hi = in_hi < lo ? lo : (in_hi > ow + seg ? ow + seg : in_hi);
            int64_t at = done - ow; /* dst[at + c] holds output column c */
            for (int64_t c = ow; c < lo; c++)
              dst[at + c] = 0.0f;
            if (p->s_w == 1) {
              /* A loop, not memcpy: segments are a row of a small image. */
              float *d = dst + at;
              const float *sv = src + iw_off;
              for (int64_t c = lo; c < hi; c++)
                d[c] = sv[c];
            } else {
              for (int64_t c = lo; c < hi; c++)
                dst[at + c] = src[c * p->s_w + iw_off];
            }
            for (int64_t c = hi; c < ow + seg; c++)
              dst[at + c] = 0.0f;
          }
          done += seg;
        }
      }
    }
  }
}

/* Decodes a flat index over dims[0..n) into idx (row-major). */
static void unflatten(int64_t flat, const int64_t *dims, int n, int64_t *idx) {
  for (int d = n - 1; d >= 0; d--) {
    idx[d] = flat % dims[d];
    flat /= dims[d];
  }
}

static void odometer_next(int64_t *idx, const int64_t *dims, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return;
    idx[d] = 0;
  }
}

/* Offset into an input channel of the input element under kernel offset
 * kidx at output position opos, or -1 when it falls in the padding. */
static int64_t input_offset(const wq_conv_geometry *g, const int64_t *opos, const int64_t *kidx) {
  int64_t off = 0;
  for (int d = 0; d < g->n_spatial; d++) {
    int64_t i = opos[d] * g->stride[d] - g->pad_begin[d] + kidx[d] * g->dilation[d];
    if (i < 0 || i >= g->in[d])
      return -1;
    off = off * g->in[d] + i;
  }
  return off;
}

void wq_im2col_f32(const wq_conv_geometry *g, const float *x, int64_t channels, int64_t col_begin,
                   int64_t col_count, float *col) {
  plane_geometry p = {0};
  if (as_plane(g, &p)) {
    im2col_plane(&p, x, channels, col_begin, col_count, col);
    return;
  }
  int n = g->n_spatial;
  int64_t in_size = wq_conv_geometry_in_size(g), ksize = wq_conv_geometry_kernel_size(g);
  int64_t kidx[WQ_CONV_MAX_SPATIAL], opos[WQ_CONV_MAX_SPATIAL];
  for (int64_t c = 0; c < channels; c++) {
    for (int64_t kflat = 0; kflat < ksize; kflat++) {
      float *dst = col + (c * ksize + kflat) * col_count;
      unflatten(kflat, g->kernel, n, kidx);
      unflatten(col_begin, g->out, n, opos);
      for (int64_t j = 0; j < col_count; j++) {
        int64_t off = input_offset(g, opos, kidx);
        dst[j] = off >= 0 ? x[c * in_size + off] : 0.0f;
        odometer_next(opos, g->out, n);
      }
    }
  }
}

/* Depthwise (one input channel per group, any channel multiplier), 1-D/2-D:
 * a direct loop is far cheaper than a GEMM with a single reduction row. */
static void output_stage(float *y, int64_t rows, int64_t ld, int64_t j0, int64_t j1,
                         const float *bias, bool relu);

typedef struct {
  const plane_geometry *p;
  int64_t channels, multiplier;
  const float *x, *w, *bias;
  bool relu;
  float *y;
} depthwise_job;

/* Input planes [c0, c1) of the flattened (image, channel) space, each with
 * its `multiplier` output planes (and their relu): planes are independent,
 * so threads take shares of them. */
static void depthwise_planes(void *ctx, int64_t c0, int64_t c1) {
  const depthwise_job *j = ctx;
  const plane_geometry *p = j->p;
  const int64_t channels = j->channels, multiplier = j->multiplier;
  int64_t in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
  int64_t ksize = p->k_h * p->k_w;
  float *xp = NULL;
  const wq_sgemm_config *sg = wq_kernel_set_default()->sgemm;
  /* With the variant's plane kernel (dw_plane), strided and 3x3 stride-1:
   * each plane copied once with its zero padding, so the taps need no
   * bounds and accumulate in registers, one store per output (teams' 72-channel 3x3 stride-2 conv
   * on 48x80: 0.51 -> 0.25 ms; smallcnn's 32-channel 3x3 on 112x112: 0.87 -> 0.43 ms). Other
   * stride-1 kernels keep the passes below, which vectorize as they are (ppocr's 5x5 depthwise
   * convs ran 3x slower through the generic taps). One copy per share. */
  const int64_t ph = wq_conv_padded_extent(p->out_h, p->s_h, p->k_h, p->d_h, p->p_h, p->in_h);
  const int64_t pw = wq_conv_padded_extent(p->out_w, p->s_w, p->k_w, p->d_w, p->p_w, p->in_w);
  bool k3s1 = p->k_h == 3 && p->k_w == 3 && p->s_h == 1 && p->s_w == 1 && p->d_h == 1 &&
              p->d_w == 1 && p->out_w >= 4;
  if (sg->dw_plane && (p->s_w > 1 || k3s1) && ph * pw <= SMALL_CONV_FLOATS)
    xp = calloc((size_t)(ph * pw + 8), sizeof(float));
  for (int64_t nc = c0; nc < c1; nc++) {
    const int64_t n = nc / channels, c = nc % channels;
    const float *xc = j->x + nc * in_plane;
    if (xp) {
      for (int64_t ih = 0; ih < p->in_h; ih++)
        memcpy(xp + (ih + p->p_h) * pw + p->p_w, xc + ih * p->in_w,
               sizeof(float) * (size_t)p->in_w);
      for (int64_t mm = 0; mm < multiplier; mm++) {
        int64_t m = c * multiplier + mm;
        sg->dw_plane(xp, pw, p->out_h, p->out_w, p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w,
                     j->w + m * ksize, j->bias ? j->bias[m] : 0.0f,
                     j->y + (n * channels * multiplier + m) * out_plane);
      }
    }
    if (!xp) {
      for (int64_t mm = 0; mm < multiplier; mm++) {
        int64_t m = c * multiplier + mm;
        float *ym = j->y + (n * channels * multiplier + m) * out_plane;
        const float *wm = j->w + m * ksize;
        float b = j->bias ? j->bias[m] : 0.0f;
        for (int64_t i = 0; i < out_plane; i++)
          ym[i] = b;
        for (int64_t ki = 0; ki < p->k_h; ki++) {
          for (int64_t kj = 0; kj < p->k_w; kj++) {
            float wv = wm[ki * p->k_w + kj];
            int64_t iw_off = kj * p->d_w - p->p_w;
            /* Output columns whose input column iw = ow*s_w + iw_off is inside. */
            int64_t ow_lo = iw_off >= 0 ? 0 : (-iw_off + p->s_w - 1) / p->s_w;
            int64_t ow_hi = p->in_w - 1 - iw_off < 0 ? 0 : (p->in_w - 1 - iw_off) / p->s_w + 1;
            if (ow_hi > p->out_w)
              ow_hi = p->out_w;
            for (int64_t oh = 0; oh < p->out_h; oh++) {
              int64_t ih = oh * p->s_h + ki * p->d_h - p->p_h;
              if (ih < 0 || ih >= p->in_h)
                continue;
              const float *src = xc + ih * p->in_w;
              float *dst = ym + oh * p->out_w;
              if (p->s_w == 1) {
                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                  dst[ow] += wv * src[ow + iw_off];
              } else {
                for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                  dst[ow] += wv * src[ow * p->s_w + iw_off];
              }
            }
          }
        }
      }
    }
    if (j->relu)
      output_stage(j->y + nc * multiplier * out_plane, multiplier, out_plane, 0, out_plane, NULL,
                   true);
  }
  free(xp);
}

/* Rows [0, rows) x columns [j0, j1) of y (row stride ld): + bias[row]
 * (bias may be NULL), then max(y, 0) with relu, the Relu op's comparison. */
__attribute__((noinline)) static void output_stage(float *y, int64_t rows, int64_t ld, int64_t j0,
                                                   int64_t j1, const float *bias, bool relu) {
  for (int64_t r = 0; r < rows; r++) {
    float *row = y + r * ld;
    if (bias) {
      float b = bias[r];
      for (int64_t i = j0; i < j1; i++)
        row[i] += b;
    }
    if (relu)
      for (int64_t i = j0; i < j1; i++)
        row[i] = row[i] < 0.0f ? 0.0f : row[i];
  }
}

/* Bytes of a [rows, columns] float scratch matrix; false when the product
 * overflows or passes WQ_MAX_TENSOR_BYTES (a hostile geometry). */
static bool col_bytes(int64_t rows, int64_t columns, size_t *bytes) {
  int64_t floats;
  return wq_mul_i64(rows, columns, &floats) && wq_bytes_size(floats, (int64_t)sizeof(float), bytes);
}

static int64_t chunk_columns(int64_t rows, int64_t total) {
  int64_t chunk = COL_BUDGET_FLOATS / (rows > 0 ? rows : 1);
  if (chunk < 64)
    chunk = 64;
  return chunk < total ? chunk : total;
}

/* Conv column chunks: within the scratch budget and at most about a
 * sixteenth of the output (whole 64-column blocks), so threads get balanced
 * shares even when one starts late (super-resolution's 1->64 5x5 conv made
 * 2 chunks of 41943 and 8233 columns; eighths left one thread 5 of 8).
 * Depends on the shape alone. */
static int64_t conv_chunk_columns(int64_t rows, int64_t total) {
  int64_t chunk = chunk_columns(rows, total);
  int64_t share = ((total + 15) / 16 + 63) / 64 * 64;
  return chunk > share ? share : chunk;
}

/* Convolutions below this many multiply-adds run on one thread (as
 * kernels/sgemm.c's products: mnist-8's 5x5 convs, 0.16M and 0.63M MACs,
 * ran slower on 2 threads). */
#define CONV_PARALLEL_MIN_MACS ((int64_t)1 << 21)
/* Depthwise planes: a direct loop, slower per multiply-add than the GEMM. */
#define DW_PARALLEL_MIN_MACS ((int64_t)1 << 20)

typedef struct {
  const wq_conv_geometry *g;
  int64_t in_channels, out_channels, cg, mg, kdim, in_size, out_size;
  const float *x, *w, *bias;
  bool relu;
  float *y;
  int64_t chunk;    /* output columns per im2col chunk */
  size_t col_bytes; /* its scratch: kdim x chunk floats */
  atomic_int status;
} conv_job;

/* Columns [j0, j0 + cnt) of plane c (image, group) through `col`. */
static void conv_columns(conv_job *job, int64_t c, int64_t j0, int64_t cnt, float *col) {
  int64_t group = job->in_channels / job->cg;
  int64_t n = c / group, gi = c % group;
  const float *xg = job->x + (n * job->in_channels + gi * job->cg) * job->in_size;
  float *yg = job->y + (n * job->out_channels + gi * job->mg) * job->out_size;
  wq_im2col_f32(job->g, xg, job->cg, j0, cnt, col);
  wq_status st = wq_sgemm(job->mg, cnt, job->kdim, 1.0f, job->w + gi * job->mg * job->kdim,
                          job->kdim, 1, col, cnt, 1, 0.0f, yg + j0, job->out_size);
  if (st != WQ_OK)
    atomic_store(&job->status, (int)st);
  else
    output_stage(yg, job->mg, job->out_size, j0, j0 + cnt,
                 job->bias ? job->bias + gi * job->mg : NULL, job->relu);
}

/* Chunks [c0, c1) of the flattened (image, group, column chunk) space. */
static void conv_chunks(void *ctx, int64_t c0, int64_t c1) {
  conv_job *job = ctx;
  int64_t per_plane = (job->out_size + job->chunk - 1) / job->chunk;
  float *col = malloc(job->col_bytes);
  if (!col) {
    atomic_store(&job->status, (int)WQ_ERR_OUT_OF_MEMORY);
    return;
  }
  for (int64_t c = c0; c < c1; c++) {
    int64_t j0 = c % per_plane * job->chunk;
    conv_columns(job, c / per_plane, j0,
                 job->out_size - j0 < job->chunk ? job->out_size - j0 : job->chunk, col);
  }
  free(col);
}

/* Threaded builds: each plane's columns as whole chunks up to three
 * quarters of it, then pieces of a quarter chunk (whole 64-column blocks),
 * so the thread that finishes first waits at most for a short piece (with
 * 28 chunks of 3.5 ms in super-resolution's 64->64 conv, the other thread
 * was often left with a whole chunk). A column's products and their order
 * are the same in any piece: the same bits. */
static int64_t conv_big_chunks(const conv_job *job) { return job->out_size * 3 / 4 / job->chunk; }

static int64_t conv_piece_columns(const conv_job *job) {
  int64_t piece = (job->chunk / 4 + 63) / 64 * 64;
  return piece < job->chunk ? piece : job->chunk;
}

static void conv_pieces(void *ctx, int64_t c0, int64_t c1) {
  conv_job *job = ctx;
  const int64_t big = conv_big_chunks(job), piece = conv_piece_columns(job);
  const int64_t tail = job->out_size - big * job->chunk;
  const int64_t per_plane = big + (tail + piece - 1) / piece;
  float *col = malloc(job->col_bytes);
  if (!col) {
    atomic_store(&job->status, (int)WQ_ERR_OUT_OF_MEMORY);
    return;
  }
  for (int64_t c = c0; c < c1; c++) {
    int64_t q = c % per_plane, j0, cnt;
    if (q < big) {
      j0 = q * job->chunk;
      cnt = job->chunk;
    } else {
      j0 = big * job->chunk + (q - big) * piece;
      cnt = job->out_size - j0 < piece ? job->out_size - j0 : piece;
    }
    conv_columns(job, c / per_plane, j0, cnt, col);
  }
  free(col);
}

static void copy_floats(float *d, const float *s, int64_t n) {
  memcpy(d, s, sizeof(float) * (size_t)n);
}

/* Stride-1 convs whose zero-padded group input fits SMALL_CONV_FLOATS run on
 * a padded copy with "virtual" output rows pw wide (out_w real columns,
 * then kw - 1 that are computed and dropped): every im2col row is then one
 * contiguous run of the padded input, where per-row segments with bounds and
 * zero runs cost more than the GEMM on small images (mnist-8's 8->16 5x5
 * conv on 14x14: 71 -> 52 us). Same products in the same order: same bits. */
static wq_status conv_small(const plane_geometry *p, const conv_job *job, int64_t batch, int64_t ph,
                            int64_t pw) {
  const int64_t cg = job->cg, mg = job->mg, nv = p->out_h * pw, in_plane = p->in_h * p->in_w;
  /* pw floats of slack: the last row's run reads kw - 1 past the plane. */
  float *xp = calloc((size_t)(cg * ph * pw + pw), sizeof(float));
  /* The cg x ph x pw gate still lets kdim x nv near 2^30 floats (a 128x128
   * kernel on a 256x256 plane): checked sizes, as every scratch here. */
  size_t col_size, yv_size;
  float *col = col_bytes(job->kdim, nv, &col_size) ? malloc(col_size) : NULL;
  float *yv = col_bytes(mg, nv, &yv_size) ? malloc(yv_size) : NULL;
  wq_status st = xp && col && yv ? WQ_OK : WQ_ERR_OUT_OF_MEMORY;
  const int64_t rows = p->in_h < ph - p->p_h ? p->in_h : ph - p->p_h;
  const int64_t cols = p->in_w < pw - p->p_w ? p->in_w : pw - p->p_w;
  for (int64_t n = 0; n < batch && st == WQ_OK; n++)
    for (int64_t gi = 0; gi < job->in_channels / cg && st == WQ_OK; gi++) {
      const float *xg = job->x + (n * job->in_channels + gi * cg) * in_plane;
      /* A pad past the padded extent (the whole input lies in windows no
       * output reads) leaves no rows or columns to copy. */
      for (int64_t c = 0; c < cg && cols > 0; c++)
        for (int64_t ih = 0; ih < rows; ih++)
          copy_floats(xp + (c * ph + ih + p->p_h) * pw + p->p_w, xg + c * in_plane + ih * p->in_w,
                      cols);
      float *row = col;
      for (int64_t c = 0; c < cg; c++)
        for (int64_t ki = 0; ki < p->k_h; ki++)
          for (int64_t kj = 0; kj < p->k_w; kj++, row += nv)
            copy_floats(row, xp + (c * ph + ki * p->d_h) * pw + kj * p->d_w, nv);
      st = wq_sgemm(mg, nv, job->kdim, 1.0f, job->w + gi * mg * job->kdim, job->kdim, 1, col, nv, 1,
                    0.0f, yv, nv);
      float *yg = job->y + (n * job->out_channels + gi * mg) * job->out_size;
      for (int64_t m = 0; m < mg && st == WQ_OK; m++)
        for (int64_t oh = 0; oh < p->out_h; oh++)
          copy_floats(yg + m * job->out_size + oh * p->out_w, yv + m * nv + oh * pw, p->out_w);
      if (st == WQ_OK)
        output_stage(yg, mg, job->out_size, 0, job->out_size,
                     job->bias ? job->bias + gi * mg : NULL, job->relu);
    }
  free(xp);
  free(col);
  free(yv);
  return st;
}

int64_t wq_conv_f32_scratch_bytes(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                                  int64_t out_channels, int64_t group) {
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t ksize = wq_conv_geometry_kernel_size(g), out_size = wq_conv_geometry_out_size(g);
  int64_t kdim;
  if (!wq_mul_i64(cg, ksize, &kdim) || batch == 0 || out_channels == 0 || out_size == 0)
    return 0;
  plane_geometry p = {0};
  /* The paths of wq_conv_f32, each with what it allocates. */
  if (cg == 1 && mg < 4 && as_plane(g, &p)) { /* depthwise_planes: one padded plane */
    if (!wq_kernel_set_default()->sgemm->dw_plane)
      return 0;
    const int64_t ph = wq_conv_padded_extent(p.out_h, p.s_h, p.k_h, p.d_h, p.p_h, p.in_h);
    const int64_t pw = wq_conv_padded_extent(p.out_w, p.s_w, p.k_w, p.d_w, p.p_w, p.in_w);
    const bool k3s1 = p.k_h == 3 && p.k_w == 3 && p.s_h == 1 && p.s_w == 1 && p.d_h == 1 &&
                      p.d_w == 1 && p.out_w >= 4;
    if ((p.s_w > 1 || k3s1) && ph * pw <= SMALL_CONV_FLOATS)
      return (ph * pw + 8) * (int64_t)sizeof(float);
    return 0;
  }
  bool pointwise = true;
  for (int d = 0; d < g->n_spatial; d++)
    if (g->kernel[d] != 1 || g->stride[d] != 1 || g->pad_begin[d] != 0 || g->pad_end[d] != 0)
      pointwise = false;
  if (pointwise)
    return wq_sgemm_scratch_bytes(mg, out_size, kdim);
  /* Column chunks: one chunk's columns and its product per share. */
  const int64_t chunk = conv_chunk_columns(kdim, out_size);
  size_t col;
  if (!col_bytes(kdim, chunk, &col))
    return 0; /* the run fails before allocating */
  int64_t bytes = (int64_t)col + wq_sgemm_scratch_bytes(mg, chunk, kdim);
  /* conv_small (one thread or a small product): the padded input, all
   * columns and the product's output at once. */
  const bool small = as_plane(g, &p) && p.s_h == 1 && p.s_w == 1;
  const int64_t ph = small ? p.out_h + (p.k_h - 1) * p.d_h : 0;
  const int64_t pw = small ? p.out_w + (p.k_w - 1) * p.d_w : 0;
  const int64_t padded[3] = {cg, ph, pw};
  int64_t small_floats;
  size_t cols, outs;
  if (small && wq_product_within(padded, 3, SMALL_CONV_FLOATS, &small_floats) &&
      col_bytes(kdim, p.out_h * pw, &cols) && col_bytes(mg, p.out_h * pw, &outs)) {
    const int64_t conv_small_bytes = (small_floats + pw) * (int64_t)sizeof(float) +
                                     (int64_t)(cols + outs) +
                                     wq_sgemm_scratch_bytes(mg, p.out_h * pw, kdim);
    if (conv_small_bytes > bytes)
      bytes = conv_small_bytes;
  }
  return bytes;
}

wq_status wq_conv_f32(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                      int64_t out_channels, int64_t group, const float *x, const float *w,
                      const float *bias, bool relu, float *y) {
  int64_t cg = in_channels / group, mg = out_channels / group;
  int64_t ksize = wq_conv_geometry_kernel_size(g);
  int64_t in_size = wq_conv_geometry_in_size(g), out_size = wq_conv_geometry_out_size(g);
  int64_t kdim;
  if (!wq_mul_i64(cg, ksize, &kdim))
    return WQ_ERR_OUT_OF_MEMORY;
  if (batch == 0 || out_channels == 0 || out_size == 0)
    return WQ_OK;
  plane_geometry p = {0};
  /* A direct loop wins for true depthwise convs; with many outputs per input
   * channel (e.g. a first layer on 1-channel images: mnist-8's 1->8 5x5
   * conv 62 -> ~15 us) the GEMM is faster. */
  if (cg == 1 && mg < 4 && as_plane(g, &p)) {
    depthwise_job job = {&p, in_channels, mg, x, w, bias, relu, y};
    if (wq_parallel_threads() > 1 &&
        batch * out_channels * ksize * out_size >= DW_PARALLEL_MIN_MACS)
      wq_parallel_for(batch * in_channels, (batch * in_channels + 15) / 16, depthwise_planes, &job);
    else
      depthwise_planes(&job, 0, batch * in_channels);
    return WQ_OK;
  }
  bool pointwise = true;
  for (int d = 0; d < g->n_spatial; d++)
    if (g->kernel[d] != 1 || g->stride[d] != 1 || g->pad_begin[d] != 0 || g->pad_end[d] != 0)
      pointwise = false;
  if (pointwise) {
    wq_status st = WQ_OK;
    for (int64_t n = 0; n < batch && st == WQ_OK; n++)
      for (int64_t gi = 0; gi < group && st == WQ_OK; gi++)
        st = wq_sgemm(mg, out_size, kdim, 1.0f, w + gi * mg * kdim, kdim, 1,
                      x + (n * in_channels + gi * cg) * in_size, in_size, 1, 0.0f,
                      y + (n * out_channels + gi * mg) * out_size, out_size);
    for (int64_t n = 0; n < batch && st == WQ_OK; n++)
      output_stage(y + n * out_channels * out_size, out_channels, out_size, 0, out_size, bias,
                   relu);
    return st;
  }
  int64_t macs, small_floats;
  bool big = !wq_mul_i64(batch * out_channels, kdim, &macs) || !wq_mul_i64(macs, out_size, &macs) ||
             macs >= CONV_PARALLEL_MIN_MACS;
  bool small = as_plane(g, &p) && p.s_h == 1 && p.s_w == 1;
  int64_t ph = small ? p.out_h + (p.k_h - 1) * p.d_h : 0;
  int64_t pw = small ? p.out_w + (p.k_w - 1) * p.d_w : 0;
  /* One thread: with more, products that go parallel keep the chunk split.
   * cg x ph x pw (checked) bounds every buffer conv_small sizes. */
  const int64_t padded[3] = {cg, ph, pw};
  small = small && wq_product_within(padded, 3, SMALL_CONV_FLOATS, &small_floats) &&
          (wq_parallel_threads() == 1 || !big);
  /* Column chunks (im2col, then their GEMM) are independent: with threads
   * each takes whole chunks with its own scratch, so im2col is split too. */
  conv_job job = {.g = g,
                  .in_channels = in_channels,
                  .out_channels = out_channels,
                  .cg = cg,
                  .mg = mg,
                  .kdim = kdim,
                  .in_size = in_size,
                  .out_size = out_size,
                  .x = x,
                  .w = w,
                  .bias = bias,
                  .relu = relu,
                  .y = y,
                  .chunk = conv_chunk_columns(kdim, out_size)};
  if (small)
    return conv_small(&p, &job, batch, ph, pw);
  /* Checked before any work: a huge geometry fails here, not in malloc. */
  if (!col_bytes(kdim, job.chunk, &job.col_bytes))
    return WQ_ERR_OUT_OF_MEMORY;
  atomic_init(&job.status, (int)WQ_OK);
  if (wq_parallel_threads() > 1 && big) {
    const int64_t piece = conv_piece_columns(&job);
    const int64_t tail = out_size - conv_big_chunks(&job) * job.chunk;
    wq_parallel_for(batch * group * (conv_big_chunks(&job) + (tail + piece - 1) / piece), 1,
                    conv_pieces, &job);
  } else {
    conv_chunks(&job, 0, batch * group * ((out_size + job.chunk - 1) / job.chunk));
  }
  return (wq_status)atomic_load(&job.status);
}

/* Scatter-adds col[channels * kernel_size, col_count] (columns = input
 * positions [col_begin, col_begin + col_count)) into y[channels, out...]. */
static void col2im_add(const wq_conv_geometry *g, const float *col, int64_t channels,
                       int64_t col_begin, int64_t col_count, float *y) {
  int n = g->n_spatial;
  int64_t out_size = wq_conv_geometry_out_size(g), ksize = wq_conv_geometry_kernel_size(g);
  int64_t kidx[WQ_CONV_MAX_SPATIAL], ipos[WQ_CONV_MAX_SPATIAL];
  for (int64_t c = 0; c < channels; c++) {
    float *yc = y + c * out_size;
    for (int64_t kflat = 0; kflat < ksize; kflat++) {
      const float *src = col + (c * ksize + kflat) * col_count;
      unflatten(kflat, g->kernel, n, kidx);
      unflatten(col_begin, g->in, n, ipos);
      for (int64_t j = 0; j < col_count; j++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < n; d++) {
          int64_t o = ipos[d] * g->stride[d] - g->pad_begin[d] + kidx[d] * g->dilation[d];
          if (o < 0 || o >= g->out[d]) {
            inside = false;
            break;
          }
          off = off * g->out[d] + o;
        }
        if (inside)
          yc[off] += src[j];
        odometer_next(ipos, g->in, n);
      }
    }
  }
}

int64_t wq_conv_transpose_f32_scratch_bytes(const wq_conv_geometry *g, int64_t in_channels,
                                            int64_t out_channels, int64_t group) {
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = wq_conv_geometry_in_size(g);
  int64_t rows;
  size_t bytes;
  if (!wq_mul_i64(mg, wq_conv_geometry_kernel_size(g), &rows) || in_size == 0)
    return 0;
  const int64_t chunk = chunk_columns(rows, in_size);
  return col_bytes(rows, chunk, &bytes) ? (int64_t)bytes + wq_sgemm_scratch_bytes(rows, chunk, cg)
                                        : 0;
}

wq_status wq_conv_transpose_f32(const wq_conv_geometry *g, int64_t batch, int64_t in_channels,
                                int64_t out_channels, int64_t group, const float *x, const float *w,
                                const float *bias, float *y) {
  int64_t cg = in_channels / group, mg = out_channels / group;
  int64_t ksize = wq_conv_geometry_kernel_size(g);
  int64_t in_size = wq_conv_geometry_in_size(g), out_size = wq_conv_geometry_out_size(g);
  int64_t rows; /* col rows: (output channel, kernel offset) */
  if (!wq_mul_i64(mg, ksize, &rows))
    return WQ_ERR_OUT_OF_MEMORY;
  int64_t total = batch * out_channels * out_size;
  for (int64_t i = 0; i < batch * out_channels; i++) {
    float b = bias ? bias[i % out_channels] : 0.0f;
    float *ym = y + i * out_size;
    for (int64_t j = 0; j < out_size; j++)
      ym[j] = b;
  }
  if (total == 0 || in_size == 0)
    return WQ_OK;
  int64_t chunk = chunk_columns(rows, in_size);
  size_t bytes;
  float *col = col_bytes(rows, chunk, &bytes) ? malloc(bytes) : NULL;
  if (!col)
    return WQ_ERR_OUT_OF_MEMORY;
  wq_status st = WQ_OK;
  for (int64_t n = 0; n < batch && st == WQ_OK; n++) {
    for (int64_t gi = 0; gi < group && st == WQ_OK; gi++) {
      const float *xg = x + (n * in_channels + gi * cg) * in_size;
      const float *wg = w + gi * cg * rows; /* [cg, rows] */
      float *yg = y + (n * out_channels + gi * mg) * out_size;
      for (int64_t j0 = 0; j0 < in_size && st == WQ_OK; j0 += chunk) {
        int64_t cnt = in_size - j0 < chunk ? in_size - j0 : chunk;
        /* col[rows, cnt] = Wg^T * Xg[:, j0:j0+cnt] */
        st = wq_sgemm(rows, cnt, cg, 1.0f, wg, 1, rows, xg + j0, in_size, 1, 0.0f, col, cnt);
        if (st == WQ_OK)
          col2im_add(g, col, mg, j0, cnt, yg);
      }
    }
  }
  free(col);
  return st;
}
