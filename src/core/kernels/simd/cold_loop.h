/* WQ_COLD_LOOP, put before a loop of the -O3 kernels that runs a few
 * iterations per call (tails, edges, per-row setup) or cannot use SIMD
 * (strided gathers): clang keeps it rolled and scalar, where -O3's
 * vectorized and unrolled copies of such loops cost bytes of the .wasm for
 * no measurable time. Nothing for other compilers (native builds). */
#ifndef WQ_KERNELS_SIMD_COLD_LOOP_H
#define WQ_KERNELS_SIMD_COLD_LOOP_H

#ifdef __clang__
#define WQ_COLD_LOOP _Pragma("clang loop unroll(disable) vectorize(disable)")
#else
#define WQ_COLD_LOOP
#endif

#endif
