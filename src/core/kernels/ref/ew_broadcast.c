#include "ew_broadcast.h"

/* Shape after alignment and collapsing: dims[0..rank) with each operand's
 * element stride per dim (0 where it is broadcast). */
typedef struct {
  int rank;
  int64_t dims[WQ_MAX_RANK];
  int64_t a_stride[WQ_MAX_RANK];
  int64_t b_stride[WQ_MAX_RANK];
} ew_iter_shape;

/* Strides of `v` seen through the output's rank-`rank` shape. */
static void aligned_strides(const wq_value *v, const wq_value *out, int64_t *strides) {
  int offset = out->rank - v->rank;
  int64_t stride = 1;
  for (int i = out->rank - 1; i >= 0; i--) {
    int vi = i - offset;
    int64_t d = vi >= 0 ? v->dims[vi] : 1;
    strides[i] = (d == 1) ? 0 : stride;
    stride *= d;
  }
}

static void collapse(const wq_value *a, const wq_value *b, const wq_value *out, ew_iter_shape *s) {
  int64_t as[WQ_MAX_RANK], bs[WQ_MAX_RANK];
  aligned_strides(a, out, as);
  aligned_strides(b, out, bs);
  s->rank = 0;
  for (int i = 0; i < out->rank; i++) {
    int64_t d = out->dims[i];
    if (d == 1)
      continue; /* contributes nothing to iteration */
    if (s->rank > 0) {
      int k = s->rank - 1;
      /* Merge into the previous dim when, for both operands, stepping the
       * previous dim once equals stepping this dim across its full extent. */
      if (s->a_stride[k] == as[i] * d && s->b_stride[k] == bs[i] * d) {
        s->dims[k] *= d;
        s->a_stride[k] = as[i];
        s->b_stride[k] = bs[i];
        continue;
      }
    }
    s->dims[s->rank] = d;
    s->a_stride[s->rank] = as[i];
    s->b_stride[s->rank] = bs[i];
    s->rank++;
  }
}

void ew_broadcast_run(const wq_value *a, size_t a_size, const wq_value *b, size_t b_size,
                      wq_value *out, size_t out_size, ew_binary_loop loop) {
  if (wq_value_numel(out) <= 0)
    return;
  ew_iter_shape s;
  collapse(a, b, out, &s);
  const char *pa = a->data, *pb = b->data;
  char *po = out->data;
  if (s.rank == 0) {
    loop(pa, 0, pb, 0, po, 1);
    return;
  }
  /* The innermost collapsed dim is contiguous (stride 1) or broadcast (0)
   * for each operand; the outer dims are walked with an odometer. */
  int inner = s.rank - 1;
  int64_t run = s.dims[inner];
  int a_step = s.a_stride[inner] != 0, b_step = s.b_stride[inner] != 0;
  int64_t idx[WQ_MAX_RANK] = {0};
  int64_t a_off = 0, b_off = 0, o_off = 0;
  for (;;) {
    loop(pa + a_off * (int64_t)a_size, a_step, pb + b_off * (int64_t)b_size, b_step,
         po + o_off * (int64_t)out_size, run);
    o_off += run;
    int d = inner - 1;
    for (; d >= 0; d--) {
      a_off += s.a_stride[d];
      b_off += s.b_stride[d];
      if (++idx[d] < s.dims[d])
        break;
      a_off -= s.a_stride[d] * s.dims[d];
      b_off -= s.b_stride[d] * s.dims[d];
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}
