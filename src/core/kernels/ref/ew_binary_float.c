/* float32 binary loops: the elementwise work of float models, kept apart so
 * the wasm build can optimise them for speed and the rest for size. */
#include "ew_binary.h"
#include "ew_binary_loop.h"

EW_LOOP(ew_add_float, float, float, float, x + y)
EW_LOOP(ew_sub_float, float, float, float, x - y)
EW_LOOP(ew_mul_float, float, float, float, x *y)
EW_LOOP(ew_div_float, float, float, float, x / y)
EW_LOOP(ew_equal_float, float, float, uint8_t, (uint8_t)(x == y))

ew_binary_loop ew_binary_float_loop(ew_binary_kind kind) {
  switch (kind) {
  case EW_BINARY_ADD: return ew_add_float;
  case EW_BINARY_SUB: return ew_sub_float;
  case EW_BINARY_MUL: return ew_mul_float;
  case EW_BINARY_DIV: return ew_div_float;
  case EW_BINARY_EQUAL: return ew_equal_float;
  case EW_BINARY_POW: return NULL; /* float pow takes any exponent dtype: see ew_binary.c */
  case EW_BINARY_PRELU: return NULL; /* picked in ew_binary.c */
  }
  return NULL;
}
