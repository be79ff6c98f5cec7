/* Graph IR -> serialized ONNX ModelProto (the counterpart of onnx_import.h),
 * for graphs the toolkit rewrote: the quantizer's QDQ graph, `wasmq rewrite`.
 *
 * Writes ir_version (the model's, at least 7, so initializers need not be
 * listed as graph inputs), producer_name "wasmq", the model's opset imports
 * and one graph: its name, the nodes in a topological order (name, op_type,
 * domain, inputs and outputs by tensor name with "" for omitted optional
 * ones, attributes of every type but GRAPH/GRAPHS), as initializers every
 * constant with data that a node reads or that is a graph output (raw_data,
 * little-endian, dims and dtype; constants nobody reads are left out), the
 * graph inputs (dtype and dims, symbolic dims as dim_param) and outputs
 * (dtype and shape where known). No value_info is written.
 *
 * Attributes named "wasmq.*" (the lowering's notes) stay out of the file.
 * Refused, naming the node: subgraph attributes (If/Loop/Scan) and nodes of
 * the internal "wasmq" domain (WQ_ERR_UNSUPPORTED), a node of a domain the
 * model imports no opset for, a tensor read but never defined, a constant
 * that a node also writes, a tensor produced twice or a cycle
 * (WQ_ERR_INVALID_MODEL). The graph is meant to come from a load with
 * no_lowering and no_float_fusion (after constant folding: folded values are
 * constants and are written as initializers). */
#ifndef WQ_ONNX_EXPORT_H
#define WQ_ONNX_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/graph.h"

/* The lowest ir_version written. */
#define WQ_ONNX_EXPORT_MIN_IR_VERSION 7

/* On success *out is malloc'ed (the caller frees it) and *out_len is its
 * size; on failure *out is NULL and err names the node and the reason. */
wq_status wq_onnx_export(const wq_model_ir *ir, uint8_t **out, size_t *out_len, wq_error *err);

#endif
