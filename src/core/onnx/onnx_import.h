/* ONNX ModelProto -> graph IR (src/core/ir/graph.h). */
#ifndef WQ_ONNX_IMPORT_H
#define WQ_ONNX_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/graph.h"

/* Lowest and highest ai.onnx opset versions the importer accepts. 25 is the
 * opset of ONNX 1.20+, which a quarter of the conformance cases use. */
#define WQ_ONNX_MIN_OPSET 7
#define WQ_ONNX_MAX_OPSET 25

/* Parses a serialized ModelProto and builds a validated graph: one tensor
 * per distinct name, initializers as constants, graph inputs (minus
 * initializers) with declared dtype/shape, outputs, value_info hints, nodes
 * in topological order with their domain's opset. Rejects malformed bytes
 * (WQ_ERR_PARSE), inconsistent graphs (WQ_ERR_INVALID_MODEL: dangling or
 * doubly produced tensors, cycles, bad data sizes) and features we do not
 * implement (WQ_ERR_UNSUPPORTED: external data, sparse initializers, opset
 * outside WQ_ONNX_MIN_OPSET..WQ_ONNX_MAX_OPSET, string tensors). Op types
 * are not resolved here (wq_graph_resolve_ops does that). On failure *out
 * is NULL and nothing is leaked. */
wq_status wq_onnx_import(const uint8_t *bytes, size_t n, wq_model_ir **out, wq_error *err);

#endif
