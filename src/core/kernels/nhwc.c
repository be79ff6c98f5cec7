#include "nhwc.h"

void wq_nchw_to_nhwc_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
#ifdef __wasm_simd128__
  wq_simd_nchw_to_nhwc_u8(n, c, s, x, y);
#else
  wq_ref_nchw_to_nhwc(n, c, s, 1, x, y);
#endif
}

void wq_nhwc_to_nchw_u8(int64_t n, int64_t c, int64_t s, const void *x, void *y) {
#ifdef __wasm_simd128__
  wq_simd_nhwc_to_nchw_u8(n, c, s, x, y);
#else
  wq_ref_nhwc_to_nchw(n, c, s, 1, x, y);
#endif
}

void wq_qgap_nhwc(int64_t batch, int64_t pixels, int64_t channels, const wq_int8_pool_quant *q,
                  const void *x, void *y) {
#ifdef __wasm_simd128__
  wq_simd_qgap_nhwc(batch, pixels, channels, q, x, y);
#else
  wq_ref_qgap_nhwc(batch, pixels, channels, q, x, y);
#endif
}

void wq_qavgpool_nhwc(const wq_pool2d *p, bool count_include_pad, const wq_int8_pool_quant *q,
                      const void *x, void *y) {
#ifdef __wasm_simd128__
  wq_simd_qavgpool_nhwc(p, count_include_pad, q, x, y);
#else
  wq_ref_qavgpool_nhwc(p, count_include_pad, q, x, y);
#endif
}

void wq_maxpool_nhwc_q8(const wq_pool2d *p, bool is_unsigned, const void *x, void *y) {
#ifdef __wasm_simd128__
  wq_simd_maxpool_nhwc_q8(p, is_unsigned, x, y);
#else
  wq_ref_maxpool_nhwc_q8(p, is_unsigned, x, y);
#endif
}
