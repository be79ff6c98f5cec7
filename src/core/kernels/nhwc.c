#include "nhwc.h"

#include "config.h"

/* The build's variant (the family has no per-model choice). */
static const wq_nhwc_config *nhwc(void) { return wq_kernel_set_default()->nhwc; }

void wq_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  nhwc()->nchw_to_nhwc(n, c, s, x, y);
}

void wq_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
  nhwc()->nhwc_to_nchw(n, c, s, x, y);
}

void wq_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                  const void *x, void *y) {
  nhwc()->qgap(batch, pixels, channels, q, x, y);
}

void wq_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                      const void *x, void *y) {
  nhwc()->qavgpool(p, count_include_pad, q, x, y);
}

void wq_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y) {
  nhwc()->maxpool(p, is_unsigned, x, y);
}
