/* e^x on four float lanes (wasm SIMD128: wq_exp4) or one (wq_exp1), to about 2
 * float ulp, for the loops that libm's scalar expf would dominate (the
 * recurrent cells' gates, Softmax): 2^n * e^r with n = round(x / ln 2),
 * r = x - n ln 2 (ln 2 split in two for an exact product) and a degree-7
 * polynomial for e^r (Cephes' coefficients). x is clamped to [-87, 88] so
 * 2^n stays a normal float; callers that need e^x -> 0 below that mask it. */
#ifndef WQ_KERNELS_VEXP_H
#define WQ_KERNELS_VEXP_H

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
v128_t wq_exp4(v128_t x);
#else
float wq_exp1(float x);
#endif

#endif
