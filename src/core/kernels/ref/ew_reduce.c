#include <math.h>

#include "../../ir/value.h"
#include "ew_norm.h"

/* Input viewed as alternating groups of kept / reduced dims after dropping
 * size-1 dims and merging neighbours with the same role. */
typedef struct {
  int n_kept, n_red;
  int64_t kept_dims[WQ_MAX_RANK], kept_strides[WQ_MAX_RANK];
  int64_t red_dims[WQ_MAX_RANK], red_strides[WQ_MAX_RANK];
  int64_t red_count;
} reduce_plan;

static void plan_reduce(const int64_t *dims, int rank, const bool *reduce, reduce_plan *p) {
  p->n_kept = p->n_red = 0;
  p->red_count = 1;
  int64_t stride = 1;
  int last_role = -1; /* role of the previously added (inner) dim */
  /* Walk from the innermost dim outwards so strides are known as we go. */
  int64_t kd[WQ_MAX_RANK], ks[WQ_MAX_RANK], rd[WQ_MAX_RANK], rs[WQ_MAX_RANK];
  int nk = 0, nr = 0;
  for (int i = rank - 1; i >= 0; i--) {
    int64_t d = dims[i];
    int role = reduce[i] ? 1 : 0;
    if (role)
      p->red_count *= d;
    if (d != 1) {
      if (role == last_role) {
        /* contiguous with the group just added: widen it */
        if (role)
          rd[nr - 1] *= d;
        else
          kd[nk - 1] *= d;
      } else if (role) {
        rd[nr] = d;
        rs[nr++] = stride;
      } else {
        kd[nk] = d;
        ks[nk++] = stride;
      }
      last_role = role;
    }
    stride *= d;
  }
  /* Stored outermost first. */
  for (int i = 0; i < nk; i++) {
    p->kept_dims[i] = kd[nk - 1 - i];
    p->kept_strides[i] = ks[nk - 1 - i];
  }
  for (int i = 0; i < nr; i++) {
    p->red_dims[i] = rd[nr - 1 - i];
    p->red_strides[i] = rs[nr - 1 - i];
  }
  p->n_kept = nk;
  p->n_red = nr;
}

/* Odometer step over dims/strides; returns false after the last index. */
static bool advance(int n, const int64_t *dims, const int64_t *strides, int64_t *idx,
                    int64_t *offset) {
  for (int d = n - 1; d >= 0; d--) {
    *offset += strides[d];
    if (++idx[d] < dims[d])
      return true;
    *offset -= strides[d] * dims[d];
    idx[d] = 0;
  }
  return false;
}

#define EW_REDUCE_MEAN_LOOP(T, ACC, ADD, FINISH)                                                   \
  do {                                                                                             \
    const T *xs = x;                                                                               \
    T *ys = y;                                                                                     \
    int64_t kidx[WQ_MAX_RANK] = {0}, out = 0, base = 0;                                            \
    do {                                                                                           \
      ACC acc = 0;                                                                                 \
      if (p.red_count > 0) {                                                                       \
        int64_t ridx[WQ_MAX_RANK] = {0}, off = 0;                                                  \
        if (p.n_red == 0) {                                                                        \
          ADD(acc, xs[base]);                                                                      \
        } else {                                                                                   \
          int inner = p.n_red - 1;                                                                 \
          do {                                                                                     \
            const T *row = xs + base + off;                                                        \
            for (int64_t i = 0; i < p.red_dims[inner]; i++)                                        \
              ADD(acc, row[i * p.red_strides[inner]]);                                             \
          } while (advance(inner, p.red_dims, p.red_strides, ridx, &off));                         \
        }                                                                                          \
      }                                                                                            \
      ys[out++] = FINISH(acc, p.red_count);                                                        \
    } while (advance(p.n_kept, p.kept_dims, p.kept_strides, kidx, &base));                         \
  } while (0)

#define EW_ADD_DOUBLE(acc, v) ((acc) += (double)(v))
#define EW_ADD_WRAP(acc, v) ((acc) = (acc) + (uint64_t)(int64_t)(v))
#define EW_FINISH_FLOAT(acc, count) ((count) > 0 ? (float)((acc) / (double)(count)) : NAN)
#define EW_FINISH_INT(T, acc, count) ((count) > 0 ? (T)((int64_t)(acc) / (count)) : 0)
#define EW_FINISH_INT32(acc, count) EW_FINISH_INT(int32_t, acc, count)
#define EW_FINISH_INT64(acc, count) EW_FINISH_INT(int64_t, acc, count)

bool ew_reduce_mean(wq_dtype dtype, const void *x, const int64_t *dims, int rank,
                    const bool *reduce, void *y) {
  reduce_plan p;
  plan_reduce(dims, rank, reduce, &p);
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0 && !reduce[i])
      return true; /* empty output */
  switch (dtype) {
  case WQ_DT_FLOAT: EW_REDUCE_MEAN_LOOP(float, double, EW_ADD_DOUBLE, EW_FINISH_FLOAT); return true;
  case WQ_DT_INT32:
    EW_REDUCE_MEAN_LOOP(int32_t, uint64_t, EW_ADD_WRAP, EW_FINISH_INT32);
    return true;
  case WQ_DT_INT64:
    EW_REDUCE_MEAN_LOOP(int64_t, uint64_t, EW_ADD_WRAP, EW_FINISH_INT64);
    return true;
  default: return false;
  }
}
