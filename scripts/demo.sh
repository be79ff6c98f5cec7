#!/usr/bin/env bash
# The README's main job: install what is missing, build the wasm core, and run
# the embedded mnist-8 model on the bundled digits, quantize it to int8 in
# wasm and run the int8 model beside it. Says what it is doing at each step
# and, while a core compiles (minutes on a fresh clone), how far along it is.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "demo: [1/4] checking the tools and npm packages (installs what is missing)"
bash scripts/setup.sh

# Builds one wasm core, printing "compiled N of about M sources" at most every
# 10 s while it compiles; an up-to-date core takes seconds and prints no count.
build_core() { # step what build.sh-options...
  local step=$1 what=$2
  shift 2
  local obj=wasm_build/out/obj log marker total start pid last=-1 said=0 done_count
  log=$(mktemp)
  marker=$(mktemp)
  total=$(find src/core -name '*.c' -not -path 'src/core/cli/*' -not -path 'src/core/kernels/simd/bench_entry.c' | wc -l)
  echo "demo: [$step/4] building $what (wasm_build/build.sh${*:+ $*})"
  start=$SECONDS
  NODE_PATH=/usr/share/nodejs bash wasm_build/build.sh "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    done_count=$(find "$obj" -name '*.o' -newer "$marker" 2>/dev/null | wc -l)
    if [ "$done_count" -ne "$last" ] && [ $((SECONDS - said)) -ge 10 ] && grep -q 'compiling' "$log"; then
      echo "demo:       compiled $done_count of about $total sources ($((SECONDS - start)) s)"
      last=$done_count
      said=$SECONDS
    fi
  done
  if ! wait "$pid"; then
    cat "$log"
    rm -f "$log" "$marker"
    echo "demo: building $what failed" >&2
    exit 1
  fi
  echo "demo:       $(tail -1 "$log") ($((SECONDS - start)) s)"
  rm -f "$log" "$marker"
}
build_core 2 "the wasm core"
build_core 3 "the quantizer core" --quant

echo "demo: [4/4] running mnist-8 float, quantizing it to int8, running both"
exec node demo/run.mjs "$@"
