# Sourced by build.sh and build_tests.sh: what a relaxed-SIMD build needs.
#
# Emscripten 3.1.6's clang 14 knows no relaxed SIMD, so the files listed in
# relaxed_sources are compiled by Debian's clang-19 for the same target and
# sysroot, with the relaxed-SIMD feature on (their kernels test
# __wasm_relaxed_simd__); every other object is the SIMD128 build's. emcc
# links them. After a link emcc runs the first wasm-opt on PATH, and
# Debian's binaryen 108 silently corrupts relaxed opcodes (so do its
# wasm-metadce and the other tools emcc calls): a shim directory puts npm's
# binaryen (package.json devDependency) first on PATH, and
# -sWASM_BIGINT=1 keeps the (108) finalize step from rewriting the module.

relaxed_sources=(src/core/kernels/config.c src/core/kernels/simd/qconv_wasmsimd.c
  src/core/kernels/simd/qgemm_wasmsimd.c)
relaxed_clang="${CLANG19:-clang-19}"

# Prints the sysroot emcc compiles against.
relaxed_sysroot() {
  local cache
  cache=$(em-config CACHE 2> /dev/null || true)
  echo "${cache:-/usr/share/emscripten/cache}/sysroot"
}

# Checks the tools and prepares the PATH shim; call once before linking.
relaxed_prepare() {
  local root="$1" shim="$1/wasm_build/out/relaxed-shim"
  if ! command -v "$relaxed_clang" > /dev/null; then
    echo "wasm_build: '$relaxed_clang' not found (apt-get install -y clang-19 lld-19; scripts/setup.sh)" >&2
    return 1
  fi
  if [[ ! -x "$root/node_modules/.bin/wasm-opt" ]]; then
    echo "wasm_build: npm binaryen missing (node_modules/.bin/wasm-opt; run scripts/setup.sh)" >&2
    return 1
  fi
  mkdir -p "$shim"
  local tool
  for tool in wasm-metadce wasm-ctor-eval wasm-as wasm-dis wasm2js; do
    ln -sf "$root/node_modules/.bin/$tool" "$shim/$tool"
  done
  ln -sf "$root/wasm_build/wasm-opt-shim.sh" "$shim/wasm-opt"
  export WQ_NPM_BIN="$root/node_modules/.bin"
  export PATH="$shim:$PATH"
}

# relaxed_compile SRC OBJ OPT... [-pthread]: one relaxed object. The flags
# mirror what emcc gives clang 14 (target, sysroot, defines, the CPU's
# feature set: MVP plus sign-ext and mutable-globals, as clang 14's default).
relaxed_compile() {
  local src="$1" o="$2"
  shift 2
  local extra=()
  for f in "$@"; do
    [[ "$f" == -pthread ]] && extra+=(-matomics -mbulk-memory)
  done
  "$relaxed_clang" --target=wasm32-unknown-emscripten --sysroot="$(relaxed_sysroot)" \
    -Xclang -iwithsysroot/include/compat -DEMSCRIPTEN -D__EMSCRIPTEN_major__=3 \
    -D__EMSCRIPTEN_minor__=1 -D__EMSCRIPTEN_tiny__=6 -fvisibility=default \
    -mcpu=mvp -msign-ext -mmutable-globals -msimd128 -mrelaxed-simd "${extra[@]}" \
    "$@" -c "$src" -o "$o"
}
