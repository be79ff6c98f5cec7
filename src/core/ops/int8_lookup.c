/* QLookup (domain "wasmq"): y = table[x] for int8/uint8 x, where table is
 * a constant 256-entry int8/uint8 tensor indexed by the code (q + 128 for
 * int8, q for uint8) and y takes the table's dtype. The lowering pass builds
 * the table for any int8 → int8 elementwise map — relu, clip, sigmoid,
 * hardswish, tanh, a pure requantization — by running the float op on all
 * 256 dequantized codes and quantizing the results, so the lookup equals
 * DequantizeLinear → op → QuantizeLinear exactly. */
#include <string.h>

#include "../kernels/qeltwise.h"
#include "int8_common.h"

static wq_status qlookup_infer(const wq_node *node, const wq_value *in, wq_value *out,
                               wq_error *err) {
  WQ_TRY(wq_int8_expect_8bit(node, "x", in[0].dtype, err));
  WQ_TRY(wq_int8_expect_8bit(node, "table", in[1].dtype, err));
  if (in[1].rank >= 0 && (in[1].rank != 1 || in[1].dims[0] != 256))
    return wq_fail(err, WQ_ERR_SHAPE, node->name, "QLookup: table must have shape [256]");
  out[0] = in[0];
  out[0].data = NULL;
  out[0].dtype = in[1].dtype;
  return WQ_OK;
}

static wq_status qlookup_run(const wq_node *node, const wq_value *in, wq_value *out,
                             wq_error *err) {
  (void)node;
  (void)err;
  wq_lookup_q8(in[1].data, in[0].dtype == WQ_DT_INT8, wq_value_numel(&in[0]), in[0].data,
               out[0].data);
  return WQ_OK;
}

const wq_op wq_op_int8_lookup = {.int8 = WQ_INT8_KERNEL,
                                 .layout = WQ_LCAP_AGNOSTIC,
                                 .op_type = "QLookup",
                                 .domain = WQ_INT8_DOMAIN,
                                 .min_opset = 1,
                                 .min_inputs = 2,
                                 .max_inputs = 2,
                                 .min_outputs = 1,
                                 .max_outputs = 1,
                                 .infer = qlookup_infer,
                                 .run = qlookup_run};
