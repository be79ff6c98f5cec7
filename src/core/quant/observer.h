/* Calibration observers (issue #9 item 4): running ranges of a float tensor
 * over many batches, in constant memory, and the (scale, zero_point) a range
 * maps to. Kinds: plain min/max, moving-average min/max (each batch's own
 * min/max blended in with `averaging`), and per-channel min/max along an axis
 * (weights). A non-finite value is an error naming the tensor, never folded
 * into a range. */
#ifndef WQ_QUANT_OBSERVER_H
#define WQ_QUANT_OBSERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/status.h"

typedef enum wq_observer_kind {
  WQ_OBS_MINMAX = 0,
  WQ_OBS_MOVING_AVERAGE = 1,
} wq_observer_kind;

typedef struct wq_observer {
  wq_observer_kind kind;
  float averaging; /* moving average: weight of each new batch, in (0, 1] */
  int axis;        /* per-channel axis, or -1 for one range */
  int64_t channels;
  int64_t batches; /* batches observed so far */
  float *lo, *hi;  /* owned, `channels` entries */
} wq_observer;

/* channels: 1 for a per-tensor observer (axis -1), else the size of `axis`. */
wq_status wq_observer_init(wq_observer *obs, wq_observer_kind kind, float averaging, int axis,
                           int64_t channels, wq_error *err);
void wq_observer_free(wq_observer *obs);

/* Folds one batch (float32 data of `rank` dims) into the ranges. `name`
 * names the tensor in errors (non-finite value, channel count mismatch). */
wq_status wq_observer_update(wq_observer *obs, const float *data, int rank, const int64_t *dims,
                             const char *name, wq_error *err);

/* The quantization parameters of a range [lo, hi] for codes [qmin, qmax]:
 * the range is widened to contain 0 (so zero is exact) and to at least
 * `min_range` (a floor for constant tensors); symmetric puts zero_point at
 * the middle of the code range (0 for int8 [-127,127] and [-128,127]). */
void wq_range_to_qparams(float lo, float hi, int32_t qmin, int32_t qmax, bool symmetric,
                         float min_range, float *scale, int32_t *zero_point);

#endif
