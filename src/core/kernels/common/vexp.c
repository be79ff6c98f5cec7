#include "vexp.h"

#include <math.h>
#include <stdint.h>

#define EXP_POLY(r, MUL, ADD)                                                                      \
  ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(K(1.9875691500e-4f), r), K(1.3981999507e-3f)),   \
                                          r),                                                      \
                                      K(8.3334519073e-3f)),                                        \
                                  r),                                                              \
                              K(4.1665795894e-2f)),                                                \
                          r),                                                                      \
                      K(1.6666665459e-1f)),                                                        \
                  r),                                                                              \
              K(5.0000001201e-1f)),                                                                \
          MUL(r, r)),                                                                              \
      ADD(r, K(1.0f)))
#ifdef __wasm_simd128__
#define K(c) wasm_f32x4_splat(c)
v128_t wq_exp4(v128_t x) {
  x = wasm_f32x4_pmax(wasm_f32x4_pmin(x, K(88.0f)), K(-87.0f));
  v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, K(1.44269504089f)));
  v128_t r = wasm_f32x4_sub(wasm_f32x4_sub(x, wasm_f32x4_mul(n, K(0.693359375f))),
                            wasm_f32x4_mul(n, K(-2.12194440e-4f)));
  v128_t p = EXP_POLY(r, wasm_f32x4_mul, wasm_f32x4_add);
  v128_t two_n =
      wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
  return wasm_f32x4_mul(p, two_n);
}
#undef K
#else
#define K(c) (c)
#define MULS(a, b) ((a) * (b))
#define ADDS(a, b) ((a) + (b))
float wq_exp1(float x) {
  x = x > 88.0f ? 88.0f : (x < -87.0f ? -87.0f : x);
  float n = nearbyintf(x * 1.44269504089f);
  float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  union {
    int32_t i;
    float f;
  } two_n = {.i = ((int32_t)n + 127) * (1 << 23)};
  return EXP_POLY(r, MULS, ADDS) * two_n.f;
}
#undef K
#endif
