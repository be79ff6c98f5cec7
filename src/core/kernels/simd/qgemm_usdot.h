/* The int8 GEMM's relaxed-SIMD pieces (internal to qgemm_wasmsimd.c, which
 * includes this only when WQ_QGEMM_USDOT is set, see qgemm_simd.h).
 *
 * i32x4.relaxed_dot_i8x16_i7x16_add_s(w, u, acc) multiplies signed bytes
 * w by bytes u and adds each group of four products to acc's lane. The
 * instruction is only fully specified for u in 0..127; these kernels rely
 * on the "usdot" reading (u unsigned 0..255, products summed exactly, no
 * 16-bit saturation: x86 VNNI's vpdpbusd, which V8 uses where the CPU has
 * it). The loader runs this build only after a known-answer probe has seen
 * exactly that behaviour (src/js/relaxed_probe.mjs).
 *
 * Exact scheme: the unsigned operand is the activation plus an offset
 * (128 for int8, i.e. a XOR 0x80; 0 for uint8), so
 *   sum (A - a_zp) W' = dot(W', A + off) - (a_zp + off) * column_sum(W'),
 * the second term folded into the tile's bias like the SIMD128 kernels'
 * a_zp correction.
 *
 * Packed weights: column tiles of WQ_QGEMM_NR = 8 columns, each
 * k_padded / 4 blocks of 32 bytes; block kq holds W'(4kq .. 4kq + 3, c) for
 * c = 0..7, i.e. two vectors whose i32 lanes are columns 0-3 and 4-7.
 * Activation panels are first filled in the SIMD128 int16 layout (every
 * fill routine is shared) and then narrowed in place to bytes
 * panel8[(kq * MR + r) * 4 + (k & 3)] = A(r, k) + off. */
#ifndef WQ_KERNELS_SIMD_QGEMM_USDOT_H
#define WQ_KERNELS_SIMD_QGEMM_USDOT_H

#include <stdint.h>
#include <wasm_simd128.h>

#include "qgemm_simd.h"

#ifdef __wasm_relaxed_simd__
#define wq_usdot(w, u, acc) wasm_i32x4_relaxed_dot_i8x16_i7x16_add(w, u, acc)
#else
/* The same arithmetic in SIMD128 (WQ_USDOT_EMULATE: lets the kernel tests
 * check this layout and its corrections on engines whose relaxed dot has
 * other semantics). */
static inline v128_t wq_usdot(v128_t w, v128_t u, v128_t acc) {
  v128_t lo = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), wasm_u16x8_extend_low_u8x16(u));
  v128_t hi =
      wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), wasm_u16x8_extend_high_u8x16(u));
  return wasm_i32x4_add(acc, wasm_i32x4_add(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6),
                                            wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7)));
}
#endif

/* The offset added to activations of this dtype to make them unsigned. */
static inline int32_t wq_usdot_offset(wq_dtype a_dtype) { return a_dtype == WQ_DT_UINT8 ? 0 : 128; }

/* Narrows a filled int16 panel (k_padded slots, a multiple of 4) to the
 * byte layout above, in place: block kq's 16 bytes land at or below the
 * 32 bytes just read. */
static inline void wq_usdot_panel_narrow(int16_t *panel, int64_t k_padded, int32_t off) {
  uint8_t *dst = (uint8_t *)panel;
  const v128_t voff = wasm_i16x8_splat((int16_t)off);
  for (int64_t kq = 0; kq < k_padded / 4; kq++) {
    v128_t v0 = wasm_v128_load(panel + kq * 16), v1 = wasm_v128_load(panel + kq * 16 + 8);
    v128_t rows01 = wasm_i16x8_add(wasm_i32x4_shuffle(v0, v1, 0, 4, 1, 5), voff);
    v128_t rows23 = wasm_i16x8_add(wasm_i32x4_shuffle(v0, v1, 2, 6, 3, 7), voff);
    wasm_v128_store(dst + kq * 16, wasm_u8x16_narrow_i16x8(rows01, rows23));
  }
}

/* acc[2r], acc[2r + 1] = row r x columns 0-3, 4-7 of one column tile over
 * kquads groups of four. */
static inline void wq_usdot_ukernel_4x8(int64_t kquads, const uint8_t *restrict panel,
                                        const int8_t *restrict w, v128_t acc[8]) {
  v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c10 = c00, c11 = c00;
  v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
#pragma clang loop unroll(disable)
  for (int64_t kq = 0; kq < kquads; kq++) {
    v128_t wl = wasm_v128_load(w), wh = wasm_v128_load(w + 16);
    v128_t a0 = wasm_v128_load32_splat(panel);
    c00 = wq_usdot(wl, a0, c00);
    c01 = wq_usdot(wh, a0, c01);
    v128_t a1 = wasm_v128_load32_splat(panel + 4);
    c10 = wq_usdot(wl, a1, c10);
    c11 = wq_usdot(wh, a1, c11);
    v128_t a2 = wasm_v128_load32_splat(panel + 8);
    c20 = wq_usdot(wl, a2, c20);
    c21 = wq_usdot(wh, a2, c21);
    v128_t a3 = wasm_v128_load32_splat(panel + 12);
    c30 = wq_usdot(wl, a3, c30);
    c31 = wq_usdot(wh, a3, c31);
    w += 32;
    panel += 16;
  }
  acc[0] = c00;
  acc[1] = c01;
  acc[2] = c10;
  acc[3] = c11;
  acc[4] = c20;
  acc[5] = c21;
  acc[6] = c30;
  acc[7] = c31;
}

#endif
