#!/usr/bin/env bash
# Builds the wasm core: every src/core/**/*.c except the native CLI and the
# benchmark-only entry points, compiled with wasm SIMD128, linked into an ES
# module factory `createCore` plus its .wasm (wasm_build/out/wasmq.mjs +
# wasmq.wasm; not committed).
#
# Usage: bash wasm_build/build.sh [--force] [--bench] [--threads] [--quant] [--relaxed]
#   --bench    the benchmark variant: also links the kernel timing entry points
#              (wqx_bench_*, src/core/kernels/bench/bench_entry.c) and writes to
#              wasm_build/out/bench; the shipped .wasm never carries them.
#   --threads  the threaded variant (wasm threads, shared memory, a pthread
#              worker pool; wasm_build/out/mt: wasmq.mjs, .wasm, .worker.js),
#              which the JS loader picks for load(model, {threads: N > 1})
#              where SharedArrayBuffer is usable. Its own objects (-pthread).
#   --quant    the quantizer variant: the runtime plus the post-training
#              quantizer's entry points (wqx_quantizer_*,
#              src/core/api/wasm_quant_exports.c), written as
#              wasm_build/out/wasmq-quant.{mjs,wasm}; only the package's
#              quantize() loads it. The shipped runtime .wasm never carries
#              the quantizer (the linker drops it: nothing there calls it).
#   --relaxed  the relaxed-SIMD variant (wasmq-relaxed.{mjs,wasm}, with
#              --threads in mt/): the same objects except the int8 GEMM's
#              (wasm_build/relaxed.sh: clang-19 -mrelaxed-simd, npm binaryen),
#              which the JS loader picks only after its probe executed the
#              relaxed dot the kernels rely on (src/js/relaxed_probe.mjs).
#              With WQ_USDOT_EMULATE=1 those files are built by emcc with the
#              relaxed dot emulated in SIMD128 instead (same layout and
#              corrections, any engine): what the tests compare on engines
#              whose relaxed dot the kernels cannot use.
# Env:   EMCC (default emcc), WQ_WASM_OPT (one -O level for all files), WQ_WASM_OUT (default
#        wasm_build/out, or wasm_build/out/bench with --bench), WQ_WASM_OBJ (object dir, default
#        wasm_build/out/obj, or $WQ_WASM_OUT/obj when WQ_WASM_OUT is set), WQ_WASM_LDFLAGS (extra
#        link flags, e.g. --profiling-funcs to read function sizes), WQ_WASM_PACK=0 (leave the
#        data as linked, unpacked: wasm_build/pack_data.mjs), JOBS (default 2).
# Skips compiling an object newer than its source and every header, and skips
# the link when both outputs are newer than every source and this script.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
force=0
bench=0
threads=0
quant=0
relaxed=0
for arg in "$@"; do
  case "$arg" in
  --force) force=1 ;;
  --bench) bench=1 ;;
  --threads) threads=1 ;;
  --quant) quant=1 ;;
  --relaxed) relaxed=1 ;;
  *)
    echo "wasm_build: unknown option '$arg' (usage: build.sh [--force] [--bench] [--threads] [--quant] [--relaxed])" >&2
    exit 2
    ;;
  esac
done
if [[ -n "${WQ_WASM_OUT:-}" ]]; then
  out="$WQ_WASM_OUT"
  obj="${WQ_WASM_OBJ:-$out/obj}"
else
  # Both variants compile every file with the same flags: share the objects.
  out="$root/wasm_build/out"
  ((bench)) && out="$root/wasm_build/out/bench"
  obj="${WQ_WASM_OBJ:-$root/wasm_build/out/obj}"
  if ((threads)); then
    out="$root/wasm_build/out/mt"
    obj="${WQ_WASM_OBJ:-$root/wasm_build/out/mt/obj}"
  fi
fi
emcc="${EMCC:-emcc}"
jobs="${JOBS:-2}"
# Benchmark-only sources (kernel timing entry points called from bench/).
bench_sources=(src/core/kernels/bench/bench_entry.c)
# Quantizer-only entry points (the quant variant's exports).
quant_sources=(src/core/api/wasm_quant_exports.c)
# Output base name: wasmq.{mjs,wasm}, or wasmq-quant.{mjs,wasm}.
base=wasmq
((quant)) && base=wasmq-quant
((relaxed)) && base=wasmq-relaxed
if ((relaxed && (quant || bench))); then
  echo "wasm_build: --relaxed builds the runtime only (not with --quant or --bench)" >&2
  exit 2
fi

# emcc's JS optimizer needs acorn from Debian's node modules.
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"

if ! command -v "$emcc" > /dev/null; then
  echo "wasm_build: '$emcc' not found (apt-get install -y emscripten)" >&2
  exit 1
fi

cd "$root"
exclude=(-not -path 'src/core/cli/*')
if ((!bench)); then
  for b in "${bench_sources[@]}"; do exclude+=(-not -path "$b"); done
fi
if ((!quant)); then
  for b in "${quant_sources[@]}"; do exclude+=(-not -path "$b"); done
fi
mapfile -t sources < <(find src/core -name '*.c' "${exclude[@]}" | LC_ALL=C sort)
mapfile -t headers < <(find src/core -name '*.h' -o -name '*.inc' | LC_ALL=C sort)
if [[ ${#sources[@]} -eq 0 ]]; then
  echo "wasm_build: no sources under src/core" >&2
  exit 1
fi

# The C entry points JS calls (see src/core/api/wasm_exports.h). The wrappers
# are also EMSCRIPTEN_KEEPALIVE, so one missing here still links and exports;
# keep the list complete anyway as the documented surface.
exported_functions=(
  _malloc _free
  _wqx_malloc _wqx_free
  _wqx_ctx_new _wqx_ctx_free _wqx_ctx_clear
  _wqx_error_code _wqx_error_name _wqx_error_node _wqx_error_message
  _wqx_load _wqx_model_free
  _wqx_input_count _wqx_output_count
  _wqx_input_name _wqx_input_dtype _wqx_input_rank _wqx_input_dim _wqx_input_dim_param
  _wqx_output_name _wqx_output_dtype _wqx_output_rank _wqx_output_dim _wqx_output_dim_param
  _wqx_set_input _wqx_run
  _wqx_result_dtype _wqx_result_rank _wqx_result_dim _wqx_result_data _wqx_result_nbytes
  _wqx_describe _wqx_dtype_size _wqx_dtype_name
  _wqx_case_check _wqx_case_report _wqx_describe_lowered _wqx_graph_json
  _wqx_arena_planned _wqx_arena_bytes _wqx_arena_lower_bound _wqx_arena_unshared_bytes
  _wqx_arena_tensor_count
  _wqx_profile _wqx_time_limit _wqx_node_count _wqx_node_op _wqx_node_name _wqx_node_ms
  _wqx_set_threads _wqx_threads
  _wqx_capture _wqx_tensor_count _wqx_captured_dtype _wqx_captured_rank _wqx_captured_dim
  _wqx_captured_data
  _wqx_test_trap
)
if ((quant)); then
  exported_functions+=(
    _wqx_quantizer_new _wqx_quantizer_free _wqx_quantizer_input_count
    _wqx_quantizer_input_name _wqx_quantizer_input_dtype _wqx_quantizer_input_rank
    _wqx_quantizer_input_dim _wqx_quantizer_input_dim_param
    _wqx_quantizer_keep_float _wqx_quantizer_set_input _wqx_quantizer_observe _wqx_quantizer_samples
    _wqx_quantizer_finish _wqx_quantizer_onnx _wqx_quantizer_onnx_len
    _wqx_quantizer_report_json _wqx_quantizer_summary _wqx_quantizer_search _wqx_quantizer_time_limit _wqx_quantizer_note
    _wqx_quantize_dynamic
  )
fi
runtime_methods=(UTF8ToString stringToUTF8 lengthBytesUTF8 HEAPU8 HEAP32)

join() {
  local IFS=,
  echo "[$*]"
}

cflags=(-msimd128 -std=c11 -Wall -Wextra -Werror -Isrc/core)
((threads)) && cflags+=(-pthread -DWQ_THREADS)

# Size matters as much as speed in a browser: the hot kernels are built at
# -O3, everything else (parsing, passes, per-dtype reference ops whose -O3
# unrolling tripled the .wasm) at -Os. The auto-vectorized float loops
# (elementwise, pooling, batchnorm) are built at -O3 without compiler
# unrolling and interleaving: it bought nothing measurable on the float models
# and cost 24 KB. So are the int8 conv's im2col/depthwise loops and the NHWC
# transitions/pools (simd/qconv_wasmsimd.c, nhwc_wasmsimd.c: -4.8 KB;
# bench/profile_nodes.mjs A/B, 3 interleaved rounds: mobilenetv2-12-int8
# 10.86-10.93 ms before, 10.83-10.90 after, smallcnn_qdq 1.895-1.900 both).
# The float conv's im2col/depthwise (kernels/conv_f32.c) at -O2: -O3's loop
# unswitching doubled it (+3 KB) for nothing measurable (super-resolution-10
# Conv 167-168 ms, ppocr-mobile-v2-cls Conv 1.40 ms either way). The float
# pools (ref/ref_pool.c) too: -1.15 KB, which keeps the shipped .wasm under
# 350,000 B; ppocr's one MaxPool 0.055 -> 0.062 ms (0.3% of the model),
# smallcnn's GlobalAveragePool and mnist-8's pools unchanged. The GEMM
# kernels keep unrolling: without it qgemm 256^3 drops from 88% to 83% of the
# dot peak and small float GEMMs (openwakeword) run 60% slower. The int8
# GEMM/conv entry points (kernels/qgemm.c, qconv.c) only check, plan at load
# and dispatch through the variant's record: -Os.
# Prints the flags.
opt_level() {
  if [[ -n "${WQ_WASM_OPT:-}" ]]; then # one level for every file, for comparisons
    echo "$WQ_WASM_OPT"
    return
  fi
  case "$1" in # (case globs match '/', so the order matters)
  src/core/kernels/ref/ew_unary.c | src/core/kernels/ref/ew_binary_float.c | \
    src/core/kernels/ref/ew_norm*.c | \
    src/core/kernels/ref/ew_batchnorm.c | src/core/kernels/ref/ref_gemm_f32.c | \
    src/core/kernels/simd/nhwc_wasmsimd.c | src/core/kernels/simd/qconv_wasmsimd.c)
    echo -O3 -fno-unroll-loops
    ;;
  src/core/kernels/conv_f32.c | src/core/kernels/ref/ref_pool.c) echo -O2 -fno-unroll-loops ;;
  # Binary ops on the other dtypes (integers, double: index arithmetic, rare
  # in models) instantiate one loop per op and dtype: -Oz halves them.
  src/core/kernels/ref/ew_binary.c) echo -Oz ;;
  # Likewise Relu/Clip on the integer dtypes and the NCHW int8/uint8 MaxPool
  # (int8 models pool in NHWC): split from their -O3 float files, -Oz.
  src/core/kernels/ref/ew_unary_int.c | src/core/kernels/ref/ref_pool_int.c) echo -Oz ;;
  src/core/kernels/ref/* | src/core/kernels/qgemm.c | src/core/kernels/qconv.c) echo -Os ;;
  # What every variant shares (validation, geometry, packing helpers) and
  # the variant selection: load time only.
  # The vector exp of Softmax and the recurrent cells: hot.
  src/core/kernels/common/vexp.c) echo -O3 ;;
  src/core/kernels/common/* | src/core/kernels/config.c) echo -Os ;;
  # The recurrent cells' loops around the float GEMM (moved from ref/).
  src/core/kernels/rnn.c) echo -Os ;;
  src/core/kernels/*) echo -O3 ;;
  # Load-time only (import, IR, passes, API glue, reports): smallest code.
  src/core/onnx/* | src/core/ir/* | src/core/passes/* | src/core/api/* | src/core/quant/*) echo -Oz ;;
  # Shape plumbing and data movement (memcpy-bound), op lookup: -Oz too.
  src/core/ops/tensor_*.c | src/core/ops/registry.c | src/core/ops/quant_common.c) echo -Oz ;;
  # If's branch interpreter: a few nodes per run, rare in models.
  src/core/ops/control_if.c) echo -Oz ;;
  *) echo -Os ;;
  esac
}
# emmalloc instead of dlmalloc: 7 KB smaller; runs allocate little (arena).
# Link at -Os, not -Oz: -Oz saves 1.1 KB only by linking emscripten's
# byte-at-a-time memcpy/memset (mobilenetv2-12-int8 5% slower, its NHWC->NCHW
# output transition 10x).
ldflags=(
  -Os -msimd128
  -sMALLOC=emmalloc
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createCore
  -sENVIRONMENT=web,worker
  -sALLOW_MEMORY_GROWTH=1
  -sEXPORTED_FUNCTIONS="$(join "${exported_functions[@]}")"
  -sEXPORTED_RUNTIME_METHODS="$(join "${runtime_methods[@]}")"
)
# Threads: workers made once when the core starts (the loader sets
# wqPoolSize), so pthread_create never has to wait for the event loop; a
# model asking for more threads than are left gets fewer (strict pool).
((threads)) && ldflags+=(-pthread "-sPTHREAD_POOL_SIZE=Module['wqPoolSize']" -sPTHREAD_POOL_SIZE_STRICT=2)

mkdir -p "$out" "$obj"

# Newest modification time (seconds) among the given files.
newest() {
  local t=0 f m
  for f in "$@"; do
    m=$(stat -c %Y "$f")
    ((m > t)) && t=$m
  done
  echo "$t"
}

newest_header=$(newest "${headers[@]}" "${BASH_SOURCE[0]}")

((relaxed)) && source "$root/wasm_build/relaxed.sh"
emulate=0
((relaxed)) && [[ -n "${WQ_USDOT_EMULATE:-}" ]] && emulate=1
variant_suffix=relaxed
((emulate)) && variant_suffix=usdot
# Whether src is one of the relaxed variant's own files.
is_relaxed_source() {
  local r
  for r in "${relaxed_sources[@]}"; do [[ "$1" == "$r" ]] && return 0; done
  return 1
}

objects=()
stale=()
relaxed_objects=()
for src in "${sources[@]}"; do
  o="$obj/${src//\//__}.o"
  if ((relaxed)) && is_relaxed_source "$src"; then
    ro="${o%.o}.$variant_suffix.o"
    objects+=("$ro")
    if ((force)) || [[ ! -f "$ro" ]] || (($(stat -c %Y "$ro") < $(newest "$src"))) ||
      (($(stat -c %Y "$ro") < newest_header)); then
      relaxed_objects+=("$src")
    fi
    continue
  fi
  objects+=("$o")
  if ((force)) || [[ ! -f "$o" ]] || (($(stat -c %Y "$o") < $(newest "$src"))) ||
    (($(stat -c %Y "$o") < newest_header)); then
    stale+=("$src")
  fi
done

# Objects of deleted sources would otherwise linger; they are never linked.
wasm="$out/$base.wasm"
js="$out/$base.mjs"
newest_input=$(newest "${sources[@]}" "${headers[@]}" "${BASH_SOURCE[0]}" "$root/wasm_build/pack_data.mjs")
if ((!force)) && ((${#stale[@]} == 0)) && ((${#relaxed_objects[@]} == 0)) && [[ -f "$wasm" && -f "$js" ]] &&
  (($(stat -c %Y "$wasm") >= newest_input)) && (($(stat -c %Y "$js") >= newest_input)); then
  echo "wasm_build: up to date ($wasm, $(stat -c %s "$wasm") bytes)"
  exit 0
fi

if ((${#stale[@]} > 0)); then
  echo "wasm_build: compiling ${#stale[@]} of ${#sources[@]} sources"
  # Parallel compile; any failure fails the build.
  # Lines are "FLAGS|SOURCE" (the flags may be several words).
  for src in "${stale[@]}"; do echo "$(opt_level "$src")|$src"; done | xargs -P "$jobs" -I{} bash -c '
    read -r -a opt <<< "${1%%|*}"; src="${1#*|}"; o="$2/${src//\//__}.o"; shift 2
    "$@" "${opt[@]}" -c "$src" -o "$o.$$.tmp" && mv "$o.$$.tmp" "$o"
  ' _ {} "$obj" "$emcc" "${cflags[@]}"
fi

for src in "${relaxed_objects[@]}"; do
  read -r -a opt <<< "$(opt_level "$src")"
  ro="$obj/${src//\//__}.$variant_suffix.o"
  if ((emulate)); then
    echo "wasm_build: compiling $src with the relaxed dot emulated"
    # (`a && b` does not trip set -e when a fails: the link would take the stale object.)
    "$emcc" "${cflags[@]}" "${opt[@]}" -DWQ_USDOT_EMULATE -c "$src" -o "$ro.$$.tmp" || exit 1
    mv "$ro.$$.tmp" "$ro"
  else
    echo "wasm_build: compiling $src with relaxed SIMD"
    relaxed_compile "$src" "$ro.$$.tmp" "${cflags[@]}" "${opt[@]}" || exit 1
    mv "$ro.$$.tmp" "$ro"
  fi
done

echo "wasm_build: linking ${#objects[@]} objects"
read -r -a extra_ldflags <<< "${WQ_WASM_LDFLAGS:-}"
if ((relaxed && !emulate)); then
  relaxed_prepare "$root"
  extra_ldflags+=(-sWASM_BIGINT=1)
fi
"$emcc" "${ldflags[@]}" "${extra_ldflags[@]}" "${objects[@]}" -o "$js"
# The read-only data (mostly message text) packed, unpacked in place at
# startup by src/core/api/wasm_data_pack.c.
[[ "${WQ_WASM_PACK:-1}" == 0 ]] || node "$root/wasm_build/pack_data.mjs" "$wasm"
echo "wasm_build: wrote $js and $wasm ($(stat -c %s "$wasm") bytes)"
