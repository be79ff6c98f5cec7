#include "checked.h"

bool wq_product_within(const int64_t *v, int n, int64_t limit, int64_t *out) {
  /* Runs per node and run (wq_value_numel): with limit <= 2^31 every
   * partial product and factor tried is <= 2^31, so a plain multiply cannot
   * overflow and the checked one (a 128-bit multiply call in wasm32) is not
   * needed. */
  const bool plain = limit <= ((int64_t)1 << 31);
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    if (v[i] < 0)
      return false;
    if (plain) {
      if (p != 0 && v[i] > limit)
        return false;
      p *= v[i];
    } else if (!wq_mul_i64(p, v[i], &p)) {
      return false;
    }
    if (p > limit)
      return false;
  }
  *out = p;
  return true;
}
