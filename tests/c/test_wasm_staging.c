/* The wasm entry points that take caller memory (wqx_set_input,
 * wqx_quantizer_set_input through wqx_staging_set): the byte count the
 * caller copied must be exactly what the dims and dtype need, checked before
 * any read, so no caller (the JS package or a page calling the exports
 * directly) can make a run read past what it copied. Built natively here;
 * the same C runs in wasm. */
#include <stdlib.h>
#include <string.h>

#include "api/wasm_exports.h"
#include "wq_test.h"

int main(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/models/mnist-8/model.onnx", wq_test_shared_dir());
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  if (!bytes)
    WQ_TEST_END();
  wqx_ctx *ctx = wqx_ctx_new();
  wqx_model *m = wqx_load(ctx, bytes, (int32_t)n, 0, NULL, NULL, NULL, 0, 0);
  free(bytes);
  CHECK_MSG(m != NULL, "%s", wqx_error_message(ctx));
  if (!m) {
    wqx_ctx_free(ctx);
    WQ_TEST_END();
  }
  const int32_t dims[4] = {1, 1, 28, 28};
  const int32_t need = 28 * 28 * 4;
  float *data = calloc(28 * 28, sizeof *data);
  CHECK(data != NULL);
  for (int i = 0; data && i < 28 * 28; i++)
    data[i] = (float)(i % 7);

  /* One byte short, one over, a quarter (a Uint8Array posing as floats),
   * negative: refused as WQ_ERR_SHAPE naming the input, nothing staged. */
  const int32_t wrong[] = {need - 1, need + 1, need / 4, 0, -1, INT32_MAX};
  for (size_t k = 0; k < sizeof wrong / sizeof *wrong; k++) {
    CHECK(wqx_set_input(ctx, m, 0, 1, 4, dims, data, wrong[k]) == WQ_ERR_SHAPE);
    CHECK_MSG(strstr(wqx_error_message(ctx), "input 'Input3' dims [1,1,28,28] of float need "
                                             "3136 bytes") != NULL,
              "%s", wqx_error_message(ctx));
    CHECK(wqx_run(ctx, m) == WQ_ERR_INVALID_ARG); /* not staged: the run reads nothing */
  }
  /* The same bytes declared as another dtype or shape: the count follows
   * the declared dims and dtype, so a larger claim is refused too. */
  const int32_t big[4] = {1, 1, 28, 56};
  CHECK(wqx_set_input(ctx, m, 0, 1, 4, big, data, need) == WQ_ERR_SHAPE);
  CHECK(wqx_set_input(ctx, m, 0, 11, 4, dims, data, need) == WQ_ERR_UNSUPPORTED); /* double */
  CHECK(wqx_set_input(ctx, m, 0, 7, 4, dims, data, need) == WQ_ERR_SHAPE);        /* int64 */

  /* Exactly the bytes needed: staged and run. */
  CHECK_MSG(wqx_set_input(ctx, m, 0, 1, 4, dims, data, need) == WQ_OK, "%s",
            wqx_error_message(ctx));
  CHECK_MSG(wqx_run(ctx, m) == WQ_OK, "%s", wqx_error_message(ctx));
  CHECK(wqx_result_rank(m, 0) == 2 && wqx_result_dim(m, 0, 1) == 10);

  free(data);
  wqx_model_free(m);
  wqx_ctx_free(ctx);
  WQ_TEST_END();
}
