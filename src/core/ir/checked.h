/* The size limits of the core, stated once, and the checked integer
 * arithmetic that every size, shape and geometry computation uses: int64
 * multiply/add that report overflow instead of wrapping (signed overflow is
 * undefined in C, and a wrapped size turns into a heap overrun), and
 * narrowing to the types kernels index with (size_t is 32 bits in wasm). */
#ifndef WQ_IR_CHECKED_H
#define WQ_IR_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest rank of any tensor. */
#define WQ_MAX_RANK 8
/* Largest element count of one tensor; also bounds every dim and every
 * geometry attribute that is a length (pads, kernel sizes, block sizes):
 * none can usefully exceed the tensor it applies to. */
#define WQ_MAX_ELEMENTS ((int64_t)1 << 28)
#define WQ_MAX_DIM WQ_MAX_ELEMENTS
/* Largest byte size of one tensor or scratch buffer (8-byte elements at the
 * element limit): well inside wasm32's 4 GiB, so size_t never wraps. */
#define WQ_MAX_TENSOR_BYTES (WQ_MAX_ELEMENTS * 8)

/* *out = a * b; false (and *out unspecified) when it overflows int64. */
static inline bool wq_mul_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/* *out = a + b; false when it overflows int64. */
static inline bool wq_add_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* *out = a * b + c; false on any overflow. */
static inline bool wq_muladd_i64(int64_t a, int64_t b, int64_t c, int64_t *out) {
  int64_t p;
  return wq_mul_i64(a, b, &p) && wq_add_i64(p, c, out);
}

/* Product of n values >= 0; false when it exceeds `limit`. Out of line:
 * its callers are plan-time checks, and inlined copies cost wasm size. */
bool wq_product_within(const int64_t *v, int n, int64_t limit, int64_t *out);

/* Byte size count * elem_size as size_t; false when negative, past
 * WQ_MAX_TENSOR_BYTES or past size_t. */
static inline bool wq_bytes_size(int64_t count, int64_t elem_size, size_t *out) {
  int64_t b;
  if (count < 0 || elem_size < 0 || !wq_mul_i64(count, elem_size, &b) || b > WQ_MAX_TENSOR_BYTES ||
      (uint64_t)b > (uint64_t)SIZE_MAX)
    return false;
  *out = (size_t)b;
  return true;
}

/* A computed length (e.g. Resize's scale * dim), truncated toward zero, as a
 * dim; false when it is NaN, negative or past WQ_MAX_DIM (converting such a
 * double to int64 is undefined behaviour in C). */
static inline bool wq_double_to_dim(double v, int64_t *out) {
  if (!(v >= 0.0 && v < (double)WQ_MAX_DIM + 1.0))
    return false;
  *out = (int64_t)v;
  return true;
}

/* v as int32; false when out of range. */
static inline bool wq_to_i32(int64_t v, int32_t *out) {
  if (v < INT32_MIN || v > INT32_MAX)
    return false;
  *out = (int32_t)v;
  return true;
}

#endif
