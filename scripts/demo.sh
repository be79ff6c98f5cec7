#!/usr/bin/env bash
# The README's main job: install what is missing, build the wasm core, and run
# the embedded mnist-8 model on the bundled digits.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
NODE_PATH=/usr/share/nodejs bash wasm_build/build.sh >/dev/null
exec node demo/run.mjs "$@"
