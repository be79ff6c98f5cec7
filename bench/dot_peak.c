/* The int8 compute peak of this machine's wasm SIMD: register-resident
 * loops of i32x4.dot_i16x8_s + i32x4.add — the instruction pair an int8 GEMM
 * micro-kernel issues per 8 multiply-adds — with no loads or stores.
 *
 * Built by bench/run.mjs into a standalone wasm (no imports); JS times each
 * exported loop. dot_peak_XxW(iters) and dot_chain_N(iters) run `iters`
 * iterations of X*W (resp. N) dot+add pairs and return a checksum so nothing
 * is dead code. Ops = iters * dots * 16 (8 multiply-adds per dot, 1 MAC = 2
 * ops). The peak is the fastest of the shapes:
 *  - dot_peak: X activation vectors (bumped by one i16x8.add each per
 *    iteration, so the compiler cannot hoist the dots) times W weight
 *    vectors, X*W independent accumulators;
 *  - dot_chain: N accumulators that are also the multiplicands,
 *    c = c + dot(c, w): no extra instructions, latency hidden by N chains.
 * Operands derive from the argument so they live in locals (V8 would
 * re-materialise v128 constants inside the loop). */
#include <stdint.h>
#include <wasm_simd128.h>

#define EXPORT(name) __attribute__((export_name(name), used))

static int32_t reduce(v128_t v) {
  return wasm_i32x4_extract_lane(v, 0) ^ wasm_i32x4_extract_lane(v, 1) ^
         wasm_i32x4_extract_lane(v, 2) ^ wasm_i32x4_extract_lane(v, 3);
}

/* X activation vectors x W weight vectors = X*W dots per iteration, each
 * into its own accumulator. */
#define DOT_PEAK(X, W)                                                                             \
  EXPORT("dot_peak_" #X "x" #W) int32_t dot_peak_##X##x##W(int32_t iters) {                        \
    int16_t seed = (int16_t)(iters & 7);                                                           \
    v128_t step = wasm_i16x8_splat((int16_t)(1 + (iters & 1)));                                    \
    v128_t x[X], w[W], c[X * W];                                                                   \
    for (int a = 0; a < X; a++)                                                                    \
      x[a] = wasm_i16x8_make((int16_t)(seed + a), -2, 3, -4, 5, -6, 7, (int16_t)(-8 - a));         \
    for (int b = 0; b < W; b++)                                                                    \
      w[b] = wasm_i16x8_splat((int16_t)(seed + 3 + 2 * b));                                        \
    for (int j = 0; j < X * W; j++)                                                                \
      c[j] = wasm_i32x4_splat(0);                                                                  \
    for (int32_t i = 0; i < iters; i++) {                                                          \
      for (int a = 0; a < X; a++)                                                                  \
        for (int b = 0; b < W; b++)                                                                \
          c[a * W + b] = wasm_i32x4_add(c[a * W + b], wasm_i32x4_dot_i16x8(x[a], w[b]));           \
      for (int a = 0; a < X; a++)                                                                  \
        x[a] = wasm_i16x8_add(x[a], step);                                                         \
    }                                                                                              \
    v128_t s = c[0];                                                                               \
    for (int j = 1; j < X * W; j++)                                                                \
      s = wasm_i32x4_add(s, c[j]);                                                                 \
    return reduce(s);                                                                              \
  }

DOT_PEAK(3, 4)
DOT_PEAK(2, 6)

/* N accumulators that are also the multiplicands: c = c + dot(c, w). No
 * extra instructions, but each chain waits for its own dot's latency. */
#define DOT_CHAIN(N)                                                                               \
  EXPORT("dot_chain_" #N) int32_t dot_chain_##N(int32_t iters) {                                   \
    int16_t seed = (int16_t)(iters & 7);                                                           \
    v128_t w0 = wasm_i16x8_splat((int16_t)(seed + 3)), w1 = wasm_i16x8_splat((int16_t)(seed - 5)); \
    v128_t c[N];                                                                                   \
    for (int j = 0; j < N; j++)                                                                    \
      c[j] = wasm_i32x4_splat(seed + j);                                                           \
    for (int32_t i = 0; i < iters; i++)                                                            \
      for (int j = 0; j < N; j++)                                                                  \
        c[j] = wasm_i32x4_add(c[j], wasm_i32x4_dot_i16x8(c[j], (j & 1) ? w1 : w0));                \
    v128_t s = c[0];                                                                               \
    for (int j = 1; j < N; j++)                                                                    \
      s = wasm_i32x4_add(s, c[j]);                                                                 \
    return reduce(s);                                                                              \
  }

DOT_CHAIN(10)
DOT_CHAIN(12)
