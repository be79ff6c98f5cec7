/* wq_tensor_decode (declared in api/wasmq.h): one standalone TensorProto,
 * as stored in the conformance cases' test_data_set_N/{input,output}_K.pb. */
#include <string.h>

#include "../api/wasmq.h"
#include "../ir/format.h"
#include "onnx_tensor.h"
#include "pb_reader.h"

wq_status wq_tensor_decode(const uint8_t *bytes, size_t n, wq_value *out, char *name_buf,
                           size_t name_cap, wq_error *err) {
  if (!out)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_tensor_decode: out is NULL");
  memset(out, 0, sizeof *out);
  out->rank = -1;
  if (name_buf && name_cap)
    name_buf[0] = '\0';
  if (!bytes && n)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_tensor_decode: bytes is NULL");
  wq_pb_reader r;
  wq_pb_init(&r, bytes, n, "TensorProto");
  wq_tensor t;
  WQ_TRY(wq_onnx_read_tensor(&r, "tensor", &t, err));
  if (name_buf && name_cap)
    wq_format(name_buf, name_cap, "%s", t.name);
  if (!wq_dtype_supported(t.dtype)) {
    wq_status st = wq_fail(err, WQ_ERR_UNSUPPORTED, NULL, "tensor '%s': dtype %s is not supported",
                           t.name, wq_dtype_name(t.dtype));
    wq_tensor_clear(&t);
    return st;
  }
  out->dtype = t.dtype;
  out->rank = t.rank;
  for (int i = 0; i < t.rank; i++)
    out->dims[i] = t.dims[i];
  out->data = t.data; /* ownership passes to the caller */
  t.data = NULL;
  wq_tensor_clear(&t);
  return WQ_OK;
}
