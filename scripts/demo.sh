#!/usr/bin/env bash
# The README's main job: install what is missing, build the wasm core, and run
# the embedded mnist-8 model on the bundled digits, quantize it to int8 in
# wasm and run the int8 model beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
NODE_PATH=/usr/share/nodejs bash wasm_build/build.sh >/dev/null
NODE_PATH=/usr/share/nodejs bash wasm_build/build.sh --quant >/dev/null
exec node demo/run.mjs "$@"
