/* Kernel timing entry points for benchmarks (exported from the wasm module
 * with EMSCRIPTEN_KEEPALIVE, callable from JS as Module._wqx_bench_*). Each
 * returns the wall-clock seconds of `iters` timed runs after one warm-up,
 * or a negative value when it could not run (bad sizes, no memory). */
#ifndef WQ_KERNELS_BENCH_BENCH_ENTRY_H
#define WQ_KERNELS_BENCH_BENCH_ENTRY_H

/* int8 GEMM m x n x k on prepacked weights (m == 1: the GEMV path), random
 * int8 data. Ops = 2 * m * n * k per run. */
double wqx_bench_qgemm(int m, int n, int k, int iters);

/* A register-resident i32x4.dot_i16x8_s + i32x4.add loop: the int8 peak a
 * GEMM could reach. Seconds for `iters` blocks; wqx_bench_dot_peak_ops
 * gives the ops (2 per multiply-add) those blocks perform. */
double wqx_bench_dot_peak(int iters);
double wqx_bench_dot_peak_ops(int iters);

/* int8 NHWC convolution, 1 x h x w x c -> m channels, k x k kernel, pads
 * (k - 1) / 2, given stride and group, uint8 activations, int8 weights.
 * Ops = 2 * out_pixels * m * (c / group) * k * k per run. */
double wqx_bench_qconv(int h, int w, int c, int m, int k, int stride, int group, int iters);

/* Float GEMM m x n x k (the f32x4 fallback kernel), 2 * m * n * k flops. */
double wqx_bench_sgemm(int m, int n, int k, int iters);

#endif
