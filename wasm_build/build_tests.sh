#!/usr/bin/env bash
# Builds the wasm kernel tests (tests/wasm: SIMD kernels vs their scalar
# references, bit for bit) and the kernel timing harness into single-file
# node programs:
#   $WQ_WASM_OUT/kernel_tests.cjs   node kernel_tests.cjs [seed]  -> "N passed, M failed"
#   $WQ_WASM_OUT/kernel_bench.cjs   node kernel_bench.cjs          -> GOPS table
# Sources: src/core/{ir,quant,kernels} plus runtime/parallel.c (the kernels'
# thread split; one thread here), with -msimd128 so kernels/simd is in, and
# tests/wasm; -DWQ_KERNELS_WITH_REF links the reference variants into
# kernels/config.c's lists (the shipped runtime leaves them out), so every
# variant is checked against them. Objects are cached in $WQ_WASM_OUT/test-obj.
#
# Usage: bash wasm_build/build_tests.sh [--force] [--usdot-emulated | --relaxed]
#   --relaxed          also kernel_tests_relaxed.cjs / kernel_bench_relaxed.cjs:
#                      the relaxed-SIMD build's kernels (wasm_build/relaxed.sh;
#                      the files it lists by clang-19 -mrelaxed-simd). Runs only
#                      where the probe passes (src/js/relaxed_probe.mjs).
#   --usdot-emulated   also kernel_tests_usdot.cjs: the same kernels with the
#                      relaxed dot emulated in SIMD128 (-DWQ_USDOT_EMULATE), so
#                      their layout and corrections are checked on any engine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${WQ_WASM_OUT:-$root/wasm_build/out}"
obj="$out/test-obj"
emcc="${EMCC:-emcc}"
jobs="${JOBS:-2}"
force=0
variant=""
for arg in "$@"; do
  case "$arg" in
  --force) force=1 ;;
  --relaxed | --usdot-emulated) variant="${arg#--}" ;;
  *)
    echo "build_tests: unknown option '$arg'" >&2
    exit 2
    ;;
  esac
done
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"

if ! command -v "$emcc" > /dev/null; then
  echo "build_tests: '$emcc' not found (apt-get install -y emscripten)" >&2
  exit 1
fi

cd "$root"
mapfile -t core < <( (find src/core/ir src/core/quant src/core/kernels -name '*.c'; echo src/core/runtime/parallel.c) | LC_ALL=C sort)
mapfile -t tests < <(find tests/wasm -name 'test_*.c' | LC_ALL=C sort)
mapfile -t headers < <(find src/core tests/wasm -name '*.h' -o -name '*.inc' | LC_ALL=C sort)
cflags=(-O3 -msimd128 -DWQ_KERNELS_WITH_REF -std=c11 -Wall -Wextra -Werror -Isrc/core -Itests/wasm)
ldflags=(-O3 -msimd128 -sENVIRONMENT=node -sSINGLE_FILE=1 -sALLOW_MEMORY_GROWTH=1 -sEXIT_RUNTIME=1)
mkdir -p "$obj"

newest() {
  local t=0 f m
  for f in "$@"; do
    m=$(stat -c %Y "$f")
    ((m > t)) && t=$m
  done
  echo "$t"
}
newest_header=$(newest "${headers[@]}" "${BASH_SOURCE[0]}")

# Compiles every given source whose object is stale; prints the objects.
compile() {
  local src o stale=()
  for src in "$@"; do
    o="$obj/${src//\//__}.o"
    if ((force)) || [[ ! -f "$o" ]] || (($(stat -c %Y "$o") < $(stat -c %Y "$src"))) ||
      (($(stat -c %Y "$o") < newest_header)); then
      stale+=("$src")
    fi
  done
  if ((${#stale[@]} > 0)); then
    printf '%s\n' "${stale[@]}" | xargs -P "$jobs" -I{} bash -c '
      src="$1"; o="$2/${src//\//__}.o"; shift 2
      "$@" -c "$src" -o "$o.tmp" && mv "$o.tmp" "$o"
    ' _ {} "$obj" "$emcc" "${cflags[@]}" >&2
  fi
  for src in "$@"; do echo "$obj/${src//\//__}.o"; done
}

mapfile -t core_objs < <(compile "${core[@]}")
mapfile -t test_objs < <(compile tests/wasm/main.c tests/wasm/alloc_count.c "${tests[@]}")
mapfile -t bench_objs < <(compile tests/wasm/bench_main.c)

if [[ -z "$variant" ]]; then
  "$emcc" "${ldflags[@]}" "${core_objs[@]}" "${test_objs[@]}" -o "$out/kernel_tests.cjs"
  "$emcc" "${ldflags[@]}" "${core_objs[@]}" "${bench_objs[@]}" -o "$out/kernel_bench.cjs"
  echo "build_tests: wrote $out/kernel_tests.cjs and $out/kernel_bench.cjs"
  exit 0
fi

# A variant: the listed kernel files rebuilt, every other object shared.
source "$root/wasm_build/relaxed.sh"
vobjs=()
for o in "${core_objs[@]}"; do
  src=""
  for r in "${relaxed_sources[@]}"; do [[ "$o" == "$obj/${r//\//__}.o" ]] && src="$r"; done
  if [[ -z "$src" ]]; then
    vobjs+=("$o")
    continue
  fi
  vo="${o%.o}.$variant.o"
  if ((force)) || [[ ! -f "$vo" ]] || (($(stat -c %Y "$vo") < $(stat -c %Y "$src"))) ||
    (($(stat -c %Y "$vo") < newest_header)); then
    if [[ "$variant" == relaxed ]]; then
      relaxed_compile "$src" "$vo" "${cflags[@]}"
    else
      "$emcc" "${cflags[@]}" -DWQ_USDOT_EMULATE -c "$src" -o "$vo"
    fi
  fi
  vobjs+=("$vo")
done
if [[ "$variant" == relaxed ]]; then
  relaxed_prepare "$root"
  "$emcc" "${ldflags[@]}" -sWASM_BIGINT=1 "${vobjs[@]}" "${test_objs[@]}" -o "$out/kernel_tests_relaxed.cjs"
  "$emcc" "${ldflags[@]}" -sWASM_BIGINT=1 "${vobjs[@]}" "${bench_objs[@]}" -o "$out/kernel_bench_relaxed.cjs"
  echo "build_tests: wrote $out/kernel_tests_relaxed.cjs and $out/kernel_bench_relaxed.cjs"
else
  "$emcc" "${ldflags[@]}" "${vobjs[@]}" "${test_objs[@]}" -o "$out/kernel_tests_usdot.cjs"
  echo "build_tests: wrote $out/kernel_tests_usdot.cjs"
fi
