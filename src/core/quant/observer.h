/* Calibration observers (issue #9 item 4): running ranges of a float tensor
 * over many batches, in constant memory, and the (scale, zero_point) a range
 * maps to. Kinds: plain min/max, moving-average min/max (each batch's own
 * min/max blended in with `averaging`), per-channel min/max along an axis
 * (weights), and a histogram (per tensor) from which a clipped range is
 * chosen: by percentile or by the least estimated quantization MSE. A
 * non-finite value is an error naming the tensor, never folded into a range.
 *
 * The histogram has a fixed number of bins of width w = 2^k on a grid
 * aligned at 0: bin j counts values in [(origin + j) * w, (origin + j + 1) * w).
 * w is the smallest power of two for which the window covers [min, max]
 * (and at least max|x| * 2^-40), origin = floor(min / w). When a batch
 * widens the range, the window moves and/or w doubles; old bins then nest
 * exactly in new ones, so the counts equal those of binning every value
 * directly on the final grid: the same data in one batch or in many gives
 * the same bytes. Memory: `bins` counts, whatever the number of batches. */
#ifndef WQ_QUANT_OBSERVER_H
#define WQ_QUANT_OBSERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/status.h"
#include "quant_config.h"

typedef enum wq_observer_kind {
  WQ_OBS_MINMAX = 0,
  WQ_OBS_MOVING_AVERAGE = 1,
  WQ_OBS_HISTOGRAM = 2, /* per tensor; also keeps the exact min/max */
} wq_observer_kind;

typedef struct wq_observer {
  wq_observer_kind kind;
  float averaging; /* moving average: weight of each new batch, in (0, 1] */
  int axis;        /* per-channel axis, or -1 for one range */
  int64_t channels;
  int64_t batches; /* batches observed so far */
  float *lo, *hi;  /* owned, `channels` entries */
  /* WQ_OBS_HISTOGRAM (see above) */
  int bins;
  int64_t *counts; /* owned, `bins` entries */
  int width_exp;   /* w = 2^width_exp */
  int64_t origin;  /* grid index of bin 0 */
} wq_observer;

/* channels: 1 for a per-tensor observer (axis -1), else the size of `axis`. */
wq_status wq_observer_init(wq_observer *obs, wq_observer_kind kind, float averaging, int axis,
                           int64_t channels, wq_error *err);
/* A per-tensor histogram observer with `bins` bins (at least 16). */
wq_status wq_observer_init_histogram(wq_observer *obs, int bins, wq_error *err);
void wq_observer_free(wq_observer *obs);

/* Folds one batch (float32 data of `rank` dims) into the ranges. `name`
 * names the tensor in errors (non-finite value, channel count mismatch). */
wq_status wq_observer_update(wq_observer *obs, const float *data, int rank, const int64_t *dims,
                             const char *name, wq_error *err);

/* The calibrated range of a per-tensor observer for codes [qmin, qmax]:
 *   WQ_CALIB_MINMAX, WQ_CALIB_MOVING_AVERAGE: the observer's own range.
 *   WQ_CALIB_PERCENTILE (histogram): each tail clipped on its own, lo at the
 *     (100 - percentile)-th and hi at the percentile-th percentile of the
 *     values (linear within a bin, kept inside [min, max]); a symmetric
 *     spec then uses max(|lo|, |hi|), as wq_range_to_qparams does.
 *   WQ_CALIB_MSE (histogram): the candidate range whose quantization grid
 *     (after wq_range_to_qparams: zero exact, symmetric or affine) gives the
 *     least estimated squared error over the histogram: clipping error of
 *     the bins outside the grid's range plus scale^2/12 for each value
 *     inside. Candidates are the bin edges within [min, max] plus min and
 *     max themselves (no clipping); for affine specs every (lo, hi) pair,
 *     searched on a subsampled grid, then refined around the best. Ties go
 *     to the first candidate: the narrowest range.
 * Fails (WQ_ERR_INVALID_ARG) before any data, for a per-channel observer,
 * for a histogram method on a min/max observer, or for a percentile
 * outside (0, 100]. */
wq_status wq_observer_range(const wq_observer *obs, wq_calib_method method, float percentile,
                            int32_t qmin, int32_t qmax, bool symmetric, float *lo, float *hi,
                            wq_error *err);

/* The quantization parameters of a range [lo, hi] for codes [qmin, qmax]:
 * the range is widened to contain 0 (so zero is exact) and to at least
 * `min_range` (a floor for constant tensors); symmetric puts zero_point at
 * the middle of the code range (0 for int8 [-127,127] and [-128,127]). */
void wq_range_to_qparams(float lo, float hi, int32_t qmin, int32_t qmax, bool symmetric,
                         float min_range, float *scale, int32_t *zero_point);

#endif
