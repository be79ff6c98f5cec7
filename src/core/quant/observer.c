#include "observer.h"

#include <math.h>
#include <stdlib.h>

wq_status wq_observer_init(wq_observer *obs, wq_observer_kind kind, float averaging, int axis,
                           int64_t channels, wq_error *err) {
  *obs = (wq_observer){.kind = kind, .averaging = averaging, .axis = axis, .channels = channels};
  if (channels < 1 || (axis < 0 && channels != 1))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "observer: %lld channels along axis %d",
                   (long long)channels, axis);
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

void wq_observer_free(wq_observer *obs) {
  free(obs->lo);
  free(obs->hi);
  obs->lo = obs->hi = NULL;
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
