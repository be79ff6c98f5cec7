#include "observer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

wq_status wq_observer_init(wq_observer *obs, wq_observer_kind kind, float averaging, int axis,
                           int64_t channels, wq_error *err) {
  *obs = (wq_observer){.kind = kind, .averaging = averaging, .axis = axis, .channels = channels};
  if (channels < 1 || (axis < 0 && channels != 1))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: %lld channels along axis %d",
                   (long long)channels, axis);
  if (kind != WQ_OBS_MINMAX && kind != WQ_OBS_MOVING_AVERAGE)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "observer: kind %d needs its own init (wq_observer_init_histogram)", (int)kind);
  if (kind == WQ_OBS_MOVING_AVERAGE && !(averaging > 0.0f && averaging <= 1.0f))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: averaging %g is not in (0, 1]",
                   (double)averaging);
  obs->lo = malloc((size_t)channels * sizeof *obs->lo);
  obs->hi = malloc((size_t)channels * sizeof *obs->hi);
  if (!obs->lo || !obs->hi) {
    wq_observer_free(obs);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "observer: %lld channels", (long long)channels);
  }
  return WQ_OK;
}

wq_status wq_observer_init_histogram(wq_observer *obs, int bins, wq_error *err) {
  *obs = (wq_observer){.kind = WQ_OBS_HISTOGRAM, .axis = -1, .channels = 1, .bins = bins};
  if (bins < 16 || bins > (1 << 24))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: %d histogram bins (16 to 2^24)", bins);
  obs->lo = malloc(sizeof *obs->lo);
  obs->hi = malloc(sizeof *obs->hi);
  obs->counts = calloc((size_t)bins, sizeof *obs->counts);
  if (!obs->lo || !obs->hi || !obs->counts) {
    wq_observer_free(obs);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "observer: %d histogram bins", bins);
  }
  return WQ_OK;
}

void wq_observer_free(wq_observer *obs) {
  free(obs->lo);
  free(obs->hi);
  free(obs->counts);
  obs->lo = obs->hi = NULL;
  obs->counts = NULL;
}

/* ---- histogram grid ------------------------------------------------------ */

/* floor(a / 2^k) for a grid index a (C's >> on negatives is not portable). */
static int64_t floor_shift(int64_t a, int k) {
  if (k >= 62)
    return a >= 0 ? 0 : -1;
  return a >= 0 ? a >> k : -((-a - 1) >> k) - 1;
}

/* Grid index of x for bins of width 2^width_exp (exact: scaling by a power
 * of two, and |x| / w <= 2^41 by the choice of w). */
static int64_t grid_index(double x, int width_exp) { return (int64_t)floor(ldexp(x, -width_exp)); }

/* The canonical grid for values in [a, b]: the smallest width 2^e >=
 * max(|a|, |b|) * 2^-40 (and >= 2^-120) whose window of `bins` bins holds
 * both ends; origin = grid index of a. A function of (a, b) alone, and
 * non-decreasing as [a, b] widens, so grids only ever merge bins. */
static void histogram_grid(double a, double b, int bins, int *width_exp, int64_t *origin) {
  int e;
  frexp(fmax(fabs(a), fabs(b)), &e);
  int we = e - 40 < -120 ? -120 : e - 40;
  while (grid_index(b, we) - grid_index(a, we) >= bins)
    we++;
  *width_exp = we;
  *origin = grid_index(a, we);
}

/* Adds a batch whose range is [blo, bhi] to the histogram. On allocation
 * failure nothing changes. */
static wq_status histogram_add(wq_observer *obs, const float *data, int64_t n, float blo, float bhi,
                               const char *name, wq_error *err) {
  double a = obs->batches ? fmin(obs->lo[0], blo) : blo;
  double b = obs->batches ? fmax(obs->hi[0], bhi) : bhi;
  int we;
  int64_t origin;
  histogram_grid(a, b, obs->bins, &we, &origin);
  if (obs->batches && (we != obs->width_exp || origin != obs->origin)) {
    int64_t *moved = calloc((size_t)obs->bins, sizeof *moved);
    if (!moved)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "%s: histogram", name);
    for (int j = 0; j < obs->bins; j++) {
      if (!obs->counts[j])
        continue;
      int64_t k = floor_shift(obs->origin + j, we - obs->width_exp) - origin;
      /* in range: a nonzero bin holds values within [a, b] */
      moved[k < 0 ? 0 : k >= obs->bins ? obs->bins - 1 : k] += obs->counts[j];
    }
    free(obs->counts);
    obs->counts = moved;
  }
  obs->width_exp = we;
  obs->origin = origin;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = grid_index(data[i], we) - origin;
    obs->counts[k < 0 ? 0 : k >= obs->bins ? obs->bins - 1 : k]++;
  }
  return WQ_OK;
}

wq_status wq_observer_update(wq_observer *obs, const float *data, int rank, const int64_t *dims,
                             const char *name, wq_error *err) {
  int64_t outer = 1, inner = 1, channels = 1;
  if (obs->axis >= 0) {
    if (obs->axis >= rank || dims[obs->axis] != obs->channels)
      return wq_fail(err, WQ_ERR_SHAPE, NULL, "%s: expected %lld channels along axis %d", name,
                     (long long)obs->channels, obs->axis);
    channels = obs->channels;
    for (int i = 0; i < obs->axis; i++)
      outer *= dims[i];
    for (int i = obs->axis + 1; i < rank; i++)
      inner *= dims[i];
  } else {
    for (int i = 0; i < rank; i++)
      inner *= dims[i];
  }
  if (outer * inner == 0)
    return wq_fail(err, WQ_ERR_SHAPE, NULL, "%s: empty tensor", name);
  /* This batch's ranges first, so a failure leaves the observer unchanged. */
  float *lo = malloc((size_t)channels * sizeof *lo), *hi = malloc((size_t)channels * sizeof *hi);
  if (!lo || !hi) {
    free(lo);
    free(hi);
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "%s: observer", name);
  }
  for (int64_t c = 0; c < channels; c++) {
    lo[c] = INFINITY;
    hi[c] = -INFINITY;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < channels; c++) {
      const float *p = data + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; i++) {
        if (!isfinite(p[i])) {
          free(lo);
          free(hi);
          return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "%s: non-finite value %g at element %lld",
                         name, (double)p[i], (long long)((o * channels + c) * inner + i));
        }
        lo[c] = fminf(lo[c], p[i]);
        hi[c] = fmaxf(hi[c], p[i]);
      }
    }
  if (obs->kind == WQ_OBS_HISTOGRAM) {
    wq_status st = histogram_add(obs, data, inner, lo[0], hi[0], name, err);
    if (st != WQ_OK) {
      free(lo);
      free(hi);
      return st;
    }
  }
  for (int64_t c = 0; c < channels; c++) {
    if (obs->batches == 0) {
      obs->lo[c] = lo[c];
      obs->hi[c] = hi[c];
    } else if (obs->kind == WQ_OBS_MOVING_AVERAGE) {
      obs->lo[c] += obs->averaging * (lo[c] - obs->lo[c]);
      obs->hi[c] += obs->averaging * (hi[c] - obs->hi[c]);
    } else {
      obs->lo[c] = fminf(obs->lo[c], lo[c]);
      obs->hi[c] = fmaxf(obs->hi[c], hi[c]);
    }
  }
  free(lo);
  free(hi);
  obs->batches++;
  return WQ_OK;
}

void wq_range_to_qparams(float lo, float hi, int32_t qmin, int32_t qmax, bool symmetric,
                         float min_range, float *scale, int32_t *zero_point) {
  lo = fminf(lo, 0.0f);
  hi = fmaxf(hi, 0.0f);
  double levels = (double)qmax - (double)qmin;
  if (symmetric) {
    double m = fmax(fmax(-(double)lo, (double)hi), 0.5 * (double)min_range);
    int32_t mid = (int32_t)floor(((double)qmin + (double)qmax + 1.0) / 2.0);
    /* Codes on the short side of the middle bound the scale. */
    double half = fmin((double)qmax - mid, (double)mid - qmin);
    *scale = (float)(m / half);
    *zero_point = mid;
    return;
  }
  double span = fmax((double)hi - (double)lo, (double)min_range);
  double s = span / levels;
  double z = round((double)qmin - (double)lo / s);
  *scale = (float)s;
  *zero_point = (int32_t)fmin(fmax(z, (double)qmin), (double)qmax);
}

/* ---- range choice -------------------------------------------------------- */

static double bin_edge(const wq_observer *obs, int64_t j) {
  return ldexp((double)(obs->origin + j), obs->width_exp);
}

static int64_t histogram_total(const wq_observer *obs) {
  int64_t total = 0;
  for (int j = 0; j < obs->bins; j++)
    total += obs->counts[j];
  return total;
}

/* The value with `tail` counts below it (from_top: above it), linear within
 * its bin. */
static double histogram_tail(const wq_observer *obs, double tail, bool from_top) {
  double w = ldexp(1.0, obs->width_exp), seen = 0;
  for (int i = 0; i < obs->bins; i++) {
    int j = from_top ? obs->bins - 1 - i : i;
    double n = (double)obs->counts[j];
    if (n > 0 && seen + n >= tail) {
      double frac = (tail - seen) / n;
      return from_top ? bin_edge(obs, j + 1) - frac * w : bin_edge(obs, j) + frac * w;
    }
    seen += n;
  }
  return from_top ? bin_edge(obs, 0) : bin_edge(obs, obs->bins);
}

/* Prefix sums over bins (values at bin centres) for O(1) error estimates. */
typedef struct {
  const wq_observer *obs;
  double *n, *s1, *s2; /* bins + 1 entries each: sums over bins [0, j) */
  int32_t qmin, qmax;
  bool symmetric;
} mse_table;

/* Estimated squared error of quantizing the histogram with the grid of
 * range [lo, hi]. */
static double mse_of(const mse_table *t, double lo, double hi) {
  float scale;
  int32_t zp;
  wq_range_to_qparams((float)lo, (float)hi, t->qmin, t->qmax, t->symmetric, 0.0f, &scale, &zp);
  double s = scale, r_lo = ((double)t->qmin - zp) * s, r_hi = ((double)t->qmax - zp) * s;
  const wq_observer *obs = t->obs;
  double inv_w = ldexp(1.0, -obs->width_exp), B = obs->bins;
  /* bins [0, jl) have centres below r_lo, bins [jh, bins) above r_hi */
  double jl = fmin(fmax(ceil(r_lo * inv_w - (double)obs->origin - 0.5), 0.0), B);
  double jh = fmin(fmax(floor(r_hi * inv_w - (double)obs->origin - 0.5) + 1.0, jl), B);
  int l = (int)jl, h = (int)jh, e = obs->bins;
  double below = t->s2[l] - 2.0 * r_lo * t->s1[l] + r_lo * r_lo * t->n[l];
  double above = (t->s2[e] - t->s2[h]) - 2.0 * r_hi * (t->s1[e] - t->s1[h]) +
                 r_hi * r_hi * (t->n[e] - t->n[h]);
  return fmax(below, 0.0) + fmax(above, 0.0) + (t->n[h] - t->n[l]) * s * s / 12.0;
}

/* Candidate clip points on one side of zero: the bin edges strictly
 * between 0 and `end` (the observed min or max), then `end` itself
 * (nothing clipped); ascending in distance from zero. */
static int side_candidates(const wq_observer *obs, double end, double *out) {
  int n = 0;
  if (end > 0) {
    for (int j = 1; j <= obs->bins; j++) {
      double e = bin_edge(obs, j);
      if (e > 0 && e < end)
        out[n++] = e;
    }
  } else if (end < 0) {
    for (int j = obs->bins - 1; j >= 0; j--) {
      double e = bin_edge(obs, j);
      if (e < 0 && e > end)
        out[n++] = e;
    }
  }
  out[n++] = end;
  return n;
}

/* Next index of a scan of [0, n) by `step` that always visits n - 1. */
static int scan_next(int i, int step, int n) {
  if (i >= n - 1)
    return n;
  return i + step < n - 1 ? i + step : n - 1;
}

/* Least-error pair over lo_c[0..nl) x hi_c[0..nh) (paired: lo_c[i] with
 * hi_c[i] only), each list ordered from zero outwards: first a grid
 * subsampled to about 256 per side (ends included), then every pair within
 * one stride of the best. Strict < keeps the first, narrowest, of equals. */
static void mse_search(const mse_table *t, const double *lo_c, int nl, const double *hi_c, int nh,
                       bool paired, double *best_lo, double *best_hi) {
  int sl = (nl + 255) / 256, sh = (nh + 255) / 256, bl = nl - 1, bh = nh - 1;
  double best = INFINITY;
  for (int pass = 0; pass < 2; pass++) {
    int l0 = pass ? bl - sl : 0, l1 = pass ? bl + sl + 1 : nl;
    int h0 = pass ? bh - sh : 0, h1 = pass ? bh + sh + 1 : nh;
    l0 = l0 < 0 ? 0 : l0;
    h0 = h0 < 0 ? 0 : h0;
    l1 = l1 > nl ? nl : l1;
    h1 = h1 > nh ? nh : h1;
    for (int i = l0; i < l1; i = pass ? i + 1 : scan_next(i, sl, l1))
      for (int k = paired ? i : h0; k < (paired ? i + 1 : h1);
           k = pass ? k + 1 : scan_next(k, sh, h1)) {
        double e = mse_of(t, lo_c[i], hi_c[k]);
        if (e < best) {
          best = e;
          bl = i;
          bh = k;
        }
      }
  }
  *best_lo = lo_c[bl];
  *best_hi = hi_c[bh];
}

static wq_status histogram_mse(const wq_observer *obs, int32_t qmin, int32_t qmax, bool symmetric,
                               double *lo, double *hi, wq_error *err) {
  int b = obs->bins;
  /* prefix sums (3 x (b + 1)), then three candidate lists of up to 2b + 4 */
  double *buf = malloc((size_t)(3 * (b + 1) + 3 * (2 * b + 4)) * sizeof *buf);
  if (!buf)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "observer: MSE search");
  mse_table t = {obs, buf, buf + (b + 1), buf + 2 * (b + 1), qmin, qmax, symmetric};
  double *lo_c = buf + 3 * (b + 1), *hi_c = lo_c + (2 * b + 4), *scratch = hi_c + (2 * b + 4);
  double w = ldexp(1.0, obs->width_exp);
  t.n[0] = t.s1[0] = t.s2[0] = 0;
  for (int j = 0; j < b; j++) {
    double n = (double)obs->counts[j], c = bin_edge(obs, j) + 0.5 * w;
    t.n[j + 1] = t.n[j] + n;
    t.s1[j + 1] = t.s1[j] + n * c;
    t.s2[j + 1] = t.s2[j] + n * c * c;
  }
  if (symmetric) {
    /* One magnitude m: the edges of both sides as |x|, merged ascending. */
    double m = fmax(-(double)obs->lo[0], (double)obs->hi[0]);
    int np = side_candidates(obs, m, scratch);
    int nn = side_candidates(obs, -m, lo_c);
    int i = 0, k = 0, n = 0;
    while (i < np || k < nn) {
      double v = k >= nn || (i < np && scratch[i] <= -lo_c[k]) ? scratch[i++] : -lo_c[k++];
      if (n == 0 || v > hi_c[n - 1])
        hi_c[n++] = v;
    }
    for (int j = 0; j < n; j++)
      lo_c[j] = -hi_c[j];
    mse_search(&t, lo_c, n, hi_c, n, true, lo, hi);
  } else {
    int nl = side_candidates(obs, fmin((double)obs->lo[0], 0.0), lo_c);
    int nh = side_candidates(obs, fmax((double)obs->hi[0], 0.0), hi_c);
    mse_search(&t, lo_c, nl, hi_c, nh, false, lo, hi);
  }
  free(buf);
  return WQ_OK;
}

wq_status wq_observer_range(const wq_observer *obs, wq_calib_method method, float percentile,
                            int32_t qmin, int32_t qmax, bool symmetric, float *lo, float *hi,
                            wq_error *err) {
  if (obs->channels != 1)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "observer: a per-channel observer has one range per channel (read lo/hi)");
  if (obs->batches == 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: no data observed");
  if (qmax <= qmin)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: empty code range [%d, %d]", qmin,
                   qmax);
  *lo = obs->lo[0];
  *hi = obs->hi[0];
  if (method == WQ_CALIB_MINMAX || method == WQ_CALIB_MOVING_AVERAGE)
    return WQ_OK;
  if (method != WQ_CALIB_PERCENTILE && method != WQ_CALIB_MSE)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: unknown calibration method %d",
                   (int)method);
  if (obs->kind != WQ_OBS_HISTOGRAM)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "observer: %s calibration needs a histogram observer",
                   method == WQ_CALIB_MSE ? "MSE" : "percentile");
  double a, b;
  if (method == WQ_CALIB_PERCENTILE) {
    if (!(percentile > 0.0f && percentile <= 100.0f))
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: percentile %g is not in (0, 100]",
                     (double)percentile);
    double tail = (double)histogram_total(obs) * (100.0 - (double)percentile) / 100.0;
    a = fmin(fmax(histogram_tail(obs, tail, false), (double)obs->lo[0]), (double)obs->hi[0]);
    b = fmin(fmax(histogram_tail(obs, tail, true), a), (double)obs->hi[0]);
  } else {
    WQ_TRY(histogram_mse(obs, qmin, qmax, symmetric, &a, &b, err));
  }
  *lo = (float)a;
  *hi = (float)b;
  return WQ_OK;
}
