/* `wasmq quantize`: float ONNX in, QDQ ONNX out (src/core/quant/quantizer.h). */
#ifndef WQ_CLI_CMD_QUANTIZE_H
#define WQ_CLI_CMD_QUANTIZE_H

#include "../ir/status.h"

/* argv holds the arguments after "quantize". Exit codes as the other
 * commands: 0 ok, 1 the model failed to quantize, 2 usage or file error. */
int wq_cli_quantize(int argc, char **argv);

#endif
