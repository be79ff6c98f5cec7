/* `wasmq rewrite`: load a model for export (no int8 lowering, no float
 * fusion, constants folded), optionally apply the quantizer's graph
 * preparation, and write the graph back as ONNX (src/core/onnx/onnx_export.h).
 * A DequantizeLinear of constant int8 weights, which the load folds like any
 * constant node, is put back when its float result is unchanged, so QDQ
 * models keep their int8 weights. */
#ifndef WQ_CLI_CMD_REWRITE_H
#define WQ_CLI_CMD_REWRITE_H

#include "../ir/status.h"

/* argv holds the arguments after "rewrite". Exit codes as the other
 * commands: 0 ok, 1 the model failed to load or export, 2 usage or file
 * error (unreadable model, unwritable output). */
int wq_cli_rewrite(int argc, char **argv);

#endif
