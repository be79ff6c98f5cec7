#include "checked.h"

bool wq_product_within(const int64_t *v, int n, int64_t limit, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (v[i] < 0 || !wq_mul_i64(p, v[i], &p) || p > limit)
      return false;
  *out = p;
  return true;
}
