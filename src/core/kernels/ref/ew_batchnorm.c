#include <math.h>

#include "ew_norm.h"

void ew_batchnorm_float(const float *x, float *y, int64_t batch, int64_t channels, int64_t inner,
                        const float *scale, const float *bias, const float *mean, const float *var,
                        float eps, bool per_element) {
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t c = 0; c < channels; c++) {
      const float *xs = x + (b * channels + c) * inner;
      float *ys = y + (b * channels + c) * inner;
      if (per_element) {
        for (int64_t j = 0; j < inner; j++) {
          int64_t p = c * inner + j;
          float a = scale[p] / sqrtf(var[p] + eps);
          ys[j] = (xs[j] - mean[p]) * a + bias[p];
        }
      } else {
        /* Folded to one multiply-add per element. */
        float a = scale[c] / sqrtf(var[c] + eps);
        float shift = bias[c] - mean[c] * a;
        for (int64_t j = 0; j < inner; j++)
          ys[j] = xs[j] * a + shift;
      }
    }
  }
}

void ew_batchnorm_train_float(const float *x, float *y, int64_t batch, int64_t channels,
                              int64_t inner, const float *scale, const float *bias,
                              const float *input_mean, const float *input_var, float eps,
                              float momentum, float *running_mean, float *running_var) {
  int64_t count = batch * inner;
  for (int64_t c = 0; c < channels; c++) {
    /* Two passes in double: mean, then the population variance around it. */
    double sum = 0.0;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t j = 0; j < inner; j++)
        sum += x[(b * channels + c) * inner + j];
    double mean = count > 0 ? sum / (double)count : 0.0;
    double sq = 0.0;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t j = 0; j < inner; j++) {
        double d = x[(b * channels + c) * inner + j] - mean;
        sq += d * d;
      }
    double var = count > 0 ? sq / (double)count : 0.0;
    double a = scale[c] / sqrt(var + eps);
    for (int64_t b = 0; b < batch; b++)
      for (int64_t j = 0; j < inner; j++) {
        int64_t k = (b * channels + c) * inner + j;
        y[k] = (float)((x[k] - mean) * a + bias[c]);
      }
    if (running_mean)
      running_mean[c] = (float)(input_mean[c] * (double)momentum + mean * (1.0 - momentum));
    if (running_var)
      running_var[c] = (float)(input_var[c] * (double)momentum + var * (1.0 - momentum));
  }
}
