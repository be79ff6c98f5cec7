#include "ew_cast.h"

#include <math.h>
#include <string.h>

/* Every cast type: X(enum, name, storage type). bool is stored as one byte. */
#define EW_CAST_SRC_TYPES(X)                                                                       \
  X(WQ_DT_FLOAT, float, float)                                                                     \
  X(WQ_DT_INT8, int8, int8_t)                                                                      \
  X(WQ_DT_UINT8, uint8, uint8_t)                                                                   \
  X(WQ_DT_INT16, int16, int16_t)                                                                   \
  X(WQ_DT_UINT16, uint16, uint16_t)                                                                \
  X(WQ_DT_INT32, int32, int32_t)                                                                   \
  X(WQ_DT_UINT32, uint32, uint32_t)                                                                \
  X(WQ_DT_INT64, int64, int64_t)                                                                   \
  X(WQ_DT_UINT64, uint64, uint64_t)                                                                \
  X(WQ_DT_BOOL, boolean, uint8_t)
/* The same list again: the preprocessor does not expand a macro inside its
 * own expansion, so the nested (source x destination) stamping needs two. */
#define EW_CAST_DST_TYPES(X)                                                                       \
  X(WQ_DT_FLOAT, float, float)                                                                     \
  X(WQ_DT_INT8, int8, int8_t)                                                                      \
  X(WQ_DT_UINT8, uint8, uint8_t)                                                                   \
  X(WQ_DT_INT16, int16, int16_t)                                                                   \
  X(WQ_DT_UINT16, uint16, uint16_t)                                                                \
  X(WQ_DT_INT32, int32, int32_t)                                                                   \
  X(WQ_DT_UINT32, uint32, uint32_t)                                                                \
  X(WQ_DT_INT64, int64, int64_t)                                                                   \
  X(WQ_DT_UINT64, uint64, uint64_t)                                                                \
  X(WQ_DT_BOOL, boolean, uint8_t)

/* Float -> integer with saturation. `lo` is the type's minimum and `hi_excl`
 * 2^(bits) or 2^(bits-1), both exact in double, so the comparisons are exact
 * and the final C conversion is always in range. */
#define EW_SAT_TRUNC(name, T, lo, hi_excl, TMAX)                                                   \
  static inline T ew_float_to_##name(float f) {                                                    \
    double x = f;                                                                                  \
    if (isnan(x))                                                                                  \
      return 0;                                                                                    \
    if (x >= (hi_excl))                                                                            \
      return TMAX;                                                                                 \
    if (x <= (double)(lo))                                                                         \
      return (T)(lo);                                                                              \
    return (T)x;                                                                                   \
  }
EW_SAT_TRUNC(int8, int8_t, INT8_MIN, 128.0, INT8_MAX)
EW_SAT_TRUNC(uint8, uint8_t, 0, 256.0, UINT8_MAX)
EW_SAT_TRUNC(int16, int16_t, INT16_MIN, 32768.0, INT16_MAX)
EW_SAT_TRUNC(uint16, uint16_t, 0, 65536.0, UINT16_MAX)
EW_SAT_TRUNC(int32, int32_t, INT32_MIN, 2147483648.0, INT32_MAX)
EW_SAT_TRUNC(uint32, uint32_t, 0, 4294967296.0, UINT32_MAX)
EW_SAT_TRUNC(int64, int64_t, INT64_MIN, 9223372036854775808.0, INT64_MAX)
EW_SAT_TRUNC(uint64, uint64_t, 0, 18446744073709551616.0, UINT64_MAX)
static inline float ew_float_to_float(float f) { return f; }
static inline uint8_t ew_float_to_boolean(float f) { return f != 0.0f; } /* NaN != 0 */

/* Element conversion chosen by (source name, destination name): float
 * sources use the saturating helpers, bool destinations test non-zero, bool
 * sources normalise to 0/1, everything else is a plain C conversion (integer
 * narrowing wraps modulo 2^bits). */
#define EW_CONV_float(dname, DT, v) ew_float_to_##dname(v)
#define EW_CONV_INT(dname, DT, v) EW_CONV_INT_##dname(DT, v)
#define EW_CONV_int8 EW_CONV_INT
#define EW_CONV_uint8 EW_CONV_INT
#define EW_CONV_int16 EW_CONV_INT
#define EW_CONV_uint16 EW_CONV_INT
#define EW_CONV_int32 EW_CONV_INT
#define EW_CONV_uint32 EW_CONV_INT
#define EW_CONV_int64 EW_CONV_INT
#define EW_CONV_uint64 EW_CONV_INT
#define EW_CONV_boolean(dname, DT, v) ((DT)((v) != 0))
#define EW_CONV_INT_boolean(DT, v) ((DT)((v) != 0))
#define EW_CONV_INT_float(DT, v) ((DT)(v))
#define EW_CONV_INT_int8(DT, v) ((DT)(v))
#define EW_CONV_INT_uint8(DT, v) ((DT)(v))
#define EW_CONV_INT_int16(DT, v) ((DT)(v))
#define EW_CONV_INT_uint16(DT, v) ((DT)(v))
#define EW_CONV_INT_int32(DT, v) ((DT)(v))
#define EW_CONV_INT_uint32(DT, v) ((DT)(v))
#define EW_CONV_INT_int64(DT, v) ((DT)(v))
#define EW_CONV_INT_uint64(DT, v) ((DT)(v))

#define EW_CAST_FN(sname, ST, dname, DT)                                                           \
  static void ew_cast_##sname##_to_##dname(const void *src, void *dst, int64_t n) {                \
    const ST *s = src;                                                                             \
    DT *d = dst;                                                                                   \
    for (int64_t i = 0; i < n; i++)                                                                \
      d[i] = EW_CONV_##sname(dname, DT, s[i]);                                                     \
  }

typedef void (*ew_cast_fn)(const void *src, void *dst, int64_t n);

/* Stamp every (source, destination) function, then a table indexed by dtype. */
#define EW_DEFINE_FROM(SE, sname, ST) EW_CAST_DST_TYPES(EW_DEFINE_PAIR_##sname)
#define EW_DEFINE_PAIR(sname, ST, DE, dname, DT) EW_CAST_FN(sname, ST, dname, DT)
#define EW_DEFINE_PAIR_float(DE, dname, DT) EW_DEFINE_PAIR(float, float, DE, dname, DT)
#define EW_DEFINE_PAIR_int8(DE, dname, DT) EW_DEFINE_PAIR(int8, int8_t, DE, dname, DT)
#define EW_DEFINE_PAIR_uint8(DE, dname, DT) EW_DEFINE_PAIR(uint8, uint8_t, DE, dname, DT)
#define EW_DEFINE_PAIR_int16(DE, dname, DT) EW_DEFINE_PAIR(int16, int16_t, DE, dname, DT)
#define EW_DEFINE_PAIR_uint16(DE, dname, DT) EW_DEFINE_PAIR(uint16, uint16_t, DE, dname, DT)
#define EW_DEFINE_PAIR_int32(DE, dname, DT) EW_DEFINE_PAIR(int32, int32_t, DE, dname, DT)
#define EW_DEFINE_PAIR_uint32(DE, dname, DT) EW_DEFINE_PAIR(uint32, uint32_t, DE, dname, DT)
#define EW_DEFINE_PAIR_int64(DE, dname, DT) EW_DEFINE_PAIR(int64, int64_t, DE, dname, DT)
#define EW_DEFINE_PAIR_uint64(DE, dname, DT) EW_DEFINE_PAIR(uint64, uint64_t, DE, dname, DT)
#define EW_DEFINE_PAIR_boolean(DE, dname, DT) EW_DEFINE_PAIR(boolean, uint8_t, DE, dname, DT)
EW_CAST_SRC_TYPES(EW_DEFINE_FROM)

#define EW_DST_CASE_ENTRY(sname, DE, dname)                                                        \
  case DE:                                                                                         \
    return ew_cast_##sname##_to_##dname;
#define EW_DST_CASE_float(DE, dname, DT) EW_DST_CASE_ENTRY(float, DE, dname)
#define EW_DST_CASE_int8(DE, dname, DT) EW_DST_CASE_ENTRY(int8, DE, dname)
#define EW_DST_CASE_uint8(DE, dname, DT) EW_DST_CASE_ENTRY(uint8, DE, dname)
#define EW_DST_CASE_int16(DE, dname, DT) EW_DST_CASE_ENTRY(int16, DE, dname)
#define EW_DST_CASE_uint16(DE, dname, DT) EW_DST_CASE_ENTRY(uint16, DE, dname)
#define EW_DST_CASE_int32(DE, dname, DT) EW_DST_CASE_ENTRY(int32, DE, dname)
#define EW_DST_CASE_uint32(DE, dname, DT) EW_DST_CASE_ENTRY(uint32, DE, dname)
#define EW_DST_CASE_int64(DE, dname, DT) EW_DST_CASE_ENTRY(int64, DE, dname)
#define EW_DST_CASE_uint64(DE, dname, DT) EW_DST_CASE_ENTRY(uint64, DE, dname)
#define EW_DST_CASE_boolean(DE, dname, DT) EW_DST_CASE_ENTRY(boolean, DE, dname)

#define EW_SRC_CASE(SE, sname, ST)                                                                 \
  case SE:                                                                                         \
    switch (to) {                                                                                  \
      EW_CAST_DST_TYPES(EW_DST_CASE_##sname)                                                       \
    default: return NULL;                                                                          \
    }

static ew_cast_fn cast_fn_for(wq_dtype from, wq_dtype to) {
  switch (from) {
    EW_CAST_SRC_TYPES(EW_SRC_CASE)
  default: return NULL;
  }
}

bool ew_cast_supported(wq_dtype from, wq_dtype to) { return cast_fn_for(from, to) != NULL; }

bool ew_cast(wq_dtype from, const void *src, wq_dtype to, void *dst, int64_t n) {
  ew_cast_fn fn = cast_fn_for(from, to);
  if (!fn)
    return false;
  if (from == to && from != WQ_DT_BOOL) {
    if (src != dst && n > 0)
      memmove(dst, src, (size_t)n * wq_dtype_size(from));
    return true;
  }
  fn(src, dst, n);
  return true;
}
