#include "conv_geometry.h"

#include <string.h>

bool wq_auto_pad_parse(const char *name, wq_auto_pad *out) {
  if (strcmp(name, "NOTSET") == 0 || name[0] == '\0')
    *out = WQ_AUTO_PAD_NOTSET;
  else if (strcmp(name, "SAME_UPPER") == 0)
    *out = WQ_AUTO_PAD_SAME_UPPER;
  else if (strcmp(name, "SAME_LOWER") == 0)
    *out = WQ_AUTO_PAD_SAME_LOWER;
  else if (strcmp(name, "VALID") == 0)
    *out = WQ_AUTO_PAD_VALID;
  else
    return false;
  return true;
}

static int64_t div_floor_pos(int64_t a, int64_t b) { return a / b; }
/* Without a + b - 1, which overflows for a stride near INT64_MAX. */
static int64_t div_ceil_pos(int64_t a, int64_t b) { return a / b + (a % b != 0); }

int wq_conv_geometry_resolve(wq_conv_geometry *g, wq_auto_pad auto_pad, bool ceil_mode) {
  for (int i = 0; i < g->n_spatial; i++) {
    /* in and pads are at most WQ_MAX_DIM (checked before); the kernel
     * extent and the stride may be anything up to INT64_MAX. */
    int64_t keff;
    if (!wq_muladd_i64(g->kernel[i] - 1, g->dilation[i], 1, &keff) || keff > 3 * WQ_MAX_DIM) {
      g->out[i] = 0;
      return i; /* larger than any padded input */
    }
    int64_t s = g->stride[i];
    if (auto_pad == WQ_AUTO_PAD_SAME_UPPER || auto_pad == WQ_AUTO_PAD_SAME_LOWER) {
      int64_t out = div_ceil_pos(g->in[i], s);
      /* (out - 1) * s < in, so this cannot overflow. */
      int64_t total = (out - 1) * s + keff - g->in[i];
      if (total < 0)
        total = 0;
      int64_t small_half = total / 2;
      /* SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start. */
      g->pad_begin[i] = auto_pad == WQ_AUTO_PAD_SAME_UPPER ? small_half : total - small_half;
      g->pad_end[i] = total - g->pad_begin[i];
      g->out[i] = out;
    } else {
      if (auto_pad == WQ_AUTO_PAD_VALID)
        g->pad_begin[i] = g->pad_end[i] = 0;
      int64_t span = g->in[i] + g->pad_begin[i] + g->pad_end[i] - keff;
      if (span < 0) {
        g->out[i] = 0;
        return i;
      }
      int64_t out = (ceil_mode ? div_ceil_pos(span, s) : div_floor_pos(span, s)) + 1;
      if (ceil_mode && (out - 1) * s >= g->in[i] + g->pad_begin[i])
        out--; /* that window would start in the end padding */
      g->out[i] = out;
    }
    if (g->out[i] <= 0)
      return i;
    /* A stride along an axis with one output, or a dilation of a 1-tap
     * kernel, changes nothing: make it 1 so kernels never multiply by a
     * huge value (strides=[1, INT64_MAX] is valid ONNX). Afterwards every
     * product the kernels form stays below 4 * WQ_MAX_DIM. */
    if (g->out[i] == 1)
      g->stride[i] = 1;
    if (g->kernel[i] == 1)
      g->dilation[i] = 1;
  }
  return -1;
}

/* The sizes of a resolved geometry; past the element limit (a caller that
 * did not check) they read as WQ_MAX_ELEMENTS + 1 rather than wrap. */
static int64_t product(const int64_t *v, int n) {
  int64_t p;
  return wq_product_within(v, n, WQ_MAX_ELEMENTS, &p) ? p : WQ_MAX_ELEMENTS + 1;
}

int64_t wq_conv_geometry_out_size(const wq_conv_geometry *g) {
  return product(g->out, g->n_spatial);
}
int64_t wq_conv_geometry_in_size(const wq_conv_geometry *g) { return product(g->in, g->n_spatial); }
int64_t wq_conv_geometry_kernel_size(const wq_conv_geometry *g) {
  return product(g->kernel, g->n_spatial);
}
