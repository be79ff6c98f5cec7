/* The strided inner loop every binary elementwise kernel is stamped from
 * (private to ew_binary*.c). */
#ifndef WQ_KERNELS_REF_EW_BINARY_LOOP_H
#define WQ_KERNELS_REF_EW_BINARY_LOOP_H

#include <stdint.h>

/* Stamps one inner loop computing out = EXPR from x (an element of a) and y
 * (an element of b). The four branches let the compiler vectorise the common
 * cases: both contiguous, or one operand held fixed along the run. */
#define EW_LOOP(fn, TA, TB, TO, EXPR)                                                              \
  static void fn(const void *a_, int a_step, const void *b_, int b_step, void *out_, int64_t n) {  \
    const TA *a = a_;                                                                              \
    const TB *b = b_;                                                                              \
    TO *out = out_;                                                                                \
    if (a_step && b_step) {                                                                        \
      for (int64_t i = 0; i < n; i++) {                                                            \
        TA x = a[i];                                                                               \
        TB y = b[i];                                                                               \
        out[i] = (EXPR);                                                                           \
      }                                                                                            \
    } else if (b_step) {                                                                           \
      const TA x = a[0];                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                            \
        TB y = b[i];                                                                               \
        out[i] = (EXPR);                                                                           \
      }                                                                                            \
    } else if (a_step) {                                                                           \
      const TB y = b[0];                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                            \
        TA x = a[i];                                                                               \
        out[i] = (EXPR);                                                                           \
      }                                                                                            \
    } else {                                                                                       \
      const TA x = a[0];                                                                           \
      const TB y = b[0];                                                                           \
      const TO v = (EXPR);                                                                         \
      for (int64_t i = 0; i < n; i++)                                                              \
        out[i] = v;                                                                                \
    }                                                                                              \
  }

/* The same loop with one strided walk (a step of 0 holds that operand
 * fixed), for the file built for size: where nothing is vectorised the four
 * branches above only cost bytes (7.8 KB of the .wasm over ew_binary.c). */
#define EW_LOOP_SMALL(fn, TA, TB, TO, EXPR)                                                        \
  static void fn(const void *a_, int a_step, const void *b_, int b_step, void *out_, int64_t n) {  \
    const TA *a = a_;                                                                              \
    const TB *b = b_;                                                                              \
    TO *out = out_;                                                                                \
    for (int64_t i = 0; i < n; i++, a += a_step, b += b_step) {                                    \
      TA x = *a;                                                                                   \
      TB y = *b;                                                                                   \
      out[i] = (EXPR);                                                                             \
    }                                                                                              \
  }

#endif
