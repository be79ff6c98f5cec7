#!/usr/bin/env bash
# wasm-opt for emcc 3.1.6 in relaxed-SIMD builds (wasm_build/relaxed.sh puts
# it first on PATH): npm's binaryen instead of Debian's 108, which corrupts
# relaxed opcodes. emcc reads the import/export minification map as
# "old => new" lines; binaryen 132 prints it as JSON, translated here.
set -euo pipefail
out=$("$WQ_NPM_BIN/wasm-opt" "$@")
if [[ "$out" != "{"* ]]; then
  [[ -z "$out" ]] || printf '%s\n' "$out"
  exit 0
fi
printf '%s' "$out" | node -e '
const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
for (const [, base, to] of m.imports || []) console.log(`${base} => ${to}`);
for (const [from, to] of m.exports || []) console.log(`${from} => ${to}`);'
