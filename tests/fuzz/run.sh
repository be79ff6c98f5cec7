#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (tests/fuzz/README.md).
#   tests/fuzz/run.sh                 each target 45 s, fixed seed
#   tests/fuzz/run.sh --runs 200000   each target a fixed number of inputs (the CI run):
#                                     the same inputs on every machine, fast or slow
#   tests/fuzz/run.sh --time 3600     the long campaign: 1 h per target
#   tests/fuzz/run.sh --target fuzz_structured --time 60
#   tests/fuzz/run.sh --campaign 10000000
#                                     the targets side by side, each N inputs (its
#                                     stored corpus first); prints the table rows
#                                     for tests/fuzz/README.md (commit, executions,
#                                     time, CPU time, findings)
# Seeds are read in place: the small shared models, the ONNX conformance
# cases, tests/corpus and tests/models. What the fuzzer learns goes to
# build-fuzz/corpus-<target>, crashes to build-fuzz/artifacts. Ends with
# "fuzz: N passed, N failed" (a target passes with 0 crashes, sanitizer
# reports, leaks and timeouts) and prints each target's executions and coverage.
set -uo pipefail
cd "$(dirname "$0")/../.."
time_per_target=45
runs=0
campaign=0
seed=12
targets=(fuzz_load fuzz_structured fuzz_export)
while [ $# -gt 0 ]; do
  case $1 in
  --time) time_per_target=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --campaign) runs=$2; campaign=1; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --target) targets=("$2"); shift 2 ;;
  *) echo "usage: $0 [--time SECONDS | --runs N | --campaign N] [--seed N] [--target fuzz_load|fuzz_structured|fuzz_export]"; exit 2 ;;
  esac
done
if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found (apt-get install clang)"; echo "fuzz: 0 passed, 1 failed"; exit 1
fi
build=${WQ_FUZZ_BUILD:-build-fuzz}
{ cmake -S . -B $build -DCMAKE_C_COMPILER=clang -DWQ_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug &&
  cmake --build $build -j2 --target "${targets[@]}"; } >"$build.log" 2>&1 ||
  { tail -30 "$build.log"; echo "fuzz: 0 passed, ${#targets[@]} failed"; exit 1; }

# Seeds by symlink (never copied): models up to 64 KiB.
shared=${WQ_SHARED_DIR:-../shared}
seeds=$build/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
i=0
while IFS= read -r f; do
  ln -s "$(realpath "$f")" "$seeds/seed$((i++)).onnx"
done < <(find "$shared/models" "$shared/models-int8" "$shared/onnx-node-tests" tests/corpus tests/models \
           -name '*.onnx' -size -65k 2>/dev/null | sort)
mkdir -p $build/artifacts
# libFuzzer's entropic schedule keeps every feature hit up to 255 times in
# its rare-feature list and searches that list for each feature of each
# execution (clang 14): with threshold 1 the list stays near its 100 rarest
# features, which cut the time spent outside the target by about 6x. Scaling
# an input's energy by its execution time mutates the few slow inputs (a
# kws CNN at 10-30 ms) less often than the many fast ones.
schedule=(-entropic_feature_frequency_threshold=1 -entropic_scale_per_exec_time=1)
run_target() { # target log: runs one target, its exit status
  local t=$1 log=$2 limit
  # A run bounded by a count (not a time) and never re-reading its corpus
  # directory (-reload=0) tries the same inputs wherever it runs.
  if [ "$runs" -gt 0 ]; then
    limit=(-runs="$runs" -reload=0)
  else
    limit=(-max_total_time="$time_per_target")
  fi
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/$t" -seed="$seed" "${limit[@]}" "${schedule[@]}" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1536 -dict=tests/fuzz/onnx.dict -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "$build/corpus-$t" "$seeds" >"$log" 2>&1
}
findings() { # log: 0 when the run ended clean
  grep -cE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:' "$1"
}
if [ "$campaign" -eq 1 ]; then
  # The targets side by side (each one process), continuing from the stored
  # corpora; CPU time from each process's own accounting.
  commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src tests/fuzz || echo +changes)
  started=$SECONDS
  for t in "${targets[@]}"; do
    mkdir -p "$build/corpus-$t"
    ( TIMEFORMAT=%U+%S; { time run_target "$t" "$build/$t.log"; } 2>"$build/$t.cpu"; echo $? >"$build/$t.rc" ) &
  done
  wait
  wall=$((SECONDS - started))
  fail=0
  echo "| target | code | executions | time | CPU time | findings |"
  echo "|---|---|---|---|---|---|"
  for t in "${targets[@]}"; do
    execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$build/$t.log" | grep -oE '[0-9]+$')
    cpu=$(tail -1 "$build/$t.cpu" | awk -F+ '{printf "%.0f", $1 + $2}')
    n=$(findings "$build/$t.log")
    rc=$(cat "$build/$t.rc")
    [ "$rc" -ne 0 ] && [ "$n" -eq 0 ] && n="exit $rc"
    [ "$n" != 0 ] && fail=$((fail + 1))
    printf '| `%s` (`run.sh --campaign %s --seed %s`) | %s | %s | %s s | %s s | %s |\n' \
      "$t" "$runs" "$seed" "$commit" "$(echo "${execs:-0}" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')" "$wall" "$cpu" "$n"
  done
  for t in "${targets[@]}"; do
    [ "$(findings "$build/$t.log")" -eq 0 ] || { echo "$t log $build/$t.log:"; grep -E -A25 'ERROR: |runtime error:' "$build/$t.log" | head -60; }
  done
  echo "fuzz: $((${#targets[@]} - fail)) passed, $fail failed"
  [ $fail -eq 0 ]
  exit
fi
pass=0 fail=0
for t in "${targets[@]}"; do
  # Short runs start from the seeds alone, so a fixed seed repeats the run.
  { [ "$runs" -gt 0 ] || [ "$time_per_target" -le 60 ]; } && rm -rf "$build/corpus-$t"
  mkdir -p "$build/corpus-$t"
  log=$build/$t.log
  started=$SECONDS
  run_target "$t" "$log"
  rc=$?
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$')
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if [ $rc -eq 0 ] && [ "$(findings "$log")" -eq 0 ]; then
    pass=$((pass + 1)); echo "fuzz: $t ok: ${execs:-?} executions in $((SECONDS - started)) s, $cov, $i seeds"
  else
    fail=$((fail + 1)); echo "fuzz: $t FAILED (rc $rc), log $log:"
    grep -E -A25 'ERROR: |runtime error:' "$log" | head -60
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]
