/* f32x4 QuantizeLinear / DequantizeLinear (kernels/quantize.h). */
#include <wasm_simd128.h>

#include "../ref/ref_quantize.h"
#include "quantize_simd.h"

static void simd_quantize(const float *x, int64_t n, float scale, int32_t zero_point,
                          wq_dtype dtype, int32_t qmin, int32_t qmax, void *y) {
  /* Clamp x / scale to [qmin - zp, qmax - zp] first (pmax maps NaN to the
   * low end, like the reference), then round half to even by adding
   * 1.5 * 2^23, exact once |v| < 2^22. */
  const v128_t vscale = wasm_f32x4_splat(scale);
  const v128_t lo = wasm_f32x4_splat((float)(qmin - zero_point));
  const v128_t hi = wasm_f32x4_splat((float)(qmax - zero_point));
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  const v128_t magic_less_zp = wasm_i32x4_splat(0x4B400000 - zero_point);
  const int is_unsigned = dtype == WQ_DT_UINT8;
  uint8_t *out = y;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v128_t q[4];
    for (int j = 0; j < 4; j++) {
      v128_t v = wasm_f32x4_div(wasm_v128_load(x + i + 4 * j), vscale);
      v = wasm_f32x4_pmin(hi, wasm_f32x4_pmax(lo, v));
      q[j] = wasm_i32x4_sub(wasm_f32x4_add(v, magic), magic_less_zp);
    }
    v128_t a = wasm_i16x8_narrow_i32x4(q[0], q[1]), b = wasm_i16x8_narrow_i32x4(q[2], q[3]);
    wasm_v128_store(out + i,
                    is_unsigned ? wasm_u8x16_narrow_i16x8(a, b) : wasm_i8x16_narrow_i16x8(a, b));
  }
  wq_ref_quantize_f32_q8(x + i, n - i, scale, zero_point, dtype, qmin, qmax, out + i);
}

static void simd_dequantize(const void *x, int64_t n, float scale, int32_t zero_point,
                            wq_dtype dtype, float *y) {
  const uint8_t *in = x;
  const v128_t vscale = wasm_f32x4_splat(scale), zp = wasm_i32x4_splat(zero_point);
  const int is_unsigned = dtype == WQ_DT_UINT8;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t w = is_unsigned ? wasm_u16x8_load8x8(in + i) : wasm_i16x8_load8x8(in + i);
    v128_t lo = is_unsigned ? wasm_u32x4_extend_low_u16x8(w) : wasm_i32x4_extend_low_i16x8(w);
    v128_t hi = is_unsigned ? wasm_u32x4_extend_high_u16x8(w) : wasm_i32x4_extend_high_i16x8(w);
    wasm_v128_store(y + i,
                    wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_sub(lo, zp)), vscale));
    wasm_v128_store(y + i + 4,
                    wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_sub(hi, zp)), vscale));
  }
  wq_ref_dequantize_q8_f32(in + i, n - i, scale, zero_point, dtype, y + i);
}

const wq_quantize_config wq_quantize_config_simd128 = {
    .name = "simd128",
    .isa = WQ_ISA_SIMD128,
    .quantize = simd_quantize,
    .dequantize = simd_dequantize,
};
