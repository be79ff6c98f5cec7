/* Reference kernels of the normalisation and reduction ops (float32 unless
 * noted): Softmax, BatchNormalization, ReduceMean. */
#ifndef WQ_KERNELS_REF_EW_NORM_H
#define WQ_KERNELS_REF_EW_NORM_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/dtype.h"

/* Softmax over the middle index of x viewed as [outer, n, inner]:
 * y = exp(x - max) / sum(exp(x - max)), max and sum taken along n. */
void ew_softmax_float(const float *x, float *y, int64_t outer, int64_t n, int64_t inner);

/* BatchNormalization with given statistics on x viewed as [batch, channels,
 * inner]: y = (x - mean) / sqrt(var + eps) * scale + bias. The four
 * parameter arrays have `channels` entries, or channels * inner entries
 * when per_element (opset < 9 spatial = 0). */
void ew_batchnorm_float(const float *x, float *y, int64_t batch, int64_t channels, int64_t inner,
                        const float *scale, const float *bias, const float *mean, const float *var,
                        float eps, bool per_element);

/* Training-mode BatchNormalization (opset 14+): normalises with the batch
 * statistics (mean and population variance over batch and inner) and, when
 * the pointers are non-NULL, writes the updated running statistics
 * running = input * momentum + batch_stat * (1 - momentum). */
void ew_batchnorm_train_float(const float *x, float *y, int64_t batch, int64_t channels,
                              int64_t inner, const float *scale, const float *bias,
                              const float *input_mean, const float *input_var, float eps,
                              float momentum, float *running_mean, float *running_var);

/* Mean of x (dims[0..rank)) over the dims with reduce[d] set, written in the
 * order of the kept dims. float32 averages in double; int32 / int64 sum with
 * wrap-around and divide truncating toward zero. An empty reduction gives NaN
 * (float) or 0 (integers). False for another dtype. */
bool ew_reduce_mean(wq_dtype dtype, const void *x, const int64_t *dims, int rank,
                    const bool *reduce, void *y);

#endif
