#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang-14 into build-fuzz/ and runs each for a bounded
# time over a copy of its seed corpus (tests/fuzz/corpus/<target>/; the checked-in corpus is not
# changed). Any crash, sanitizer report, leak, timeout or out-of-memory fails the run; its input is left
# in build-fuzz/crashes/ and printed in hex, so that a CI log keeps it.
# usage: scripts/fuzz.sh [seconds-per-target, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
build=build-fuzz
fuzzers=(sort_request_fuzzer topk_request_fuzzer stream_request_fuzzer caller_text_fuzzer npy_reader_fuzzer
         text_reader_fuzzer wire_records_fuzzer)

# -g1 (line tables): a crash's stack keeps its files and lines, and the build takes less time.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
  -DCMAKE_CXX_COMPILER=clang++-14 \
  -DGPUSORT_ENABLE_CUDA=OFF -DGPUSORT_BUILD_TESTS=OFF -DGPUSORT_BUILD_BENCHMARKS=OFF -DGPUSORT_BUILD_FUZZERS=ON
cmake --build "$build" --target fuzzers

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crashes=$PWD/$build/crashes
mkdir -p "$crashes"
passed=0 failed=0
for fuzzer in "${fuzzers[@]}"; do
  cp -r "tests/fuzz/corpus/$fuzzer" "$work/$fuzzer"
  log=$work/$fuzzer.log
  # -timeout: one input may take 10 s (a sanitizer build on a loaded machine); -rss_limit_mb: the
  # server's limits here keep any input far below it.
  # A target's dictionary (tests/fuzz/<target>.dict), where it has one: tokens it cannot easily guess.
  dict=()
  [ -f "tests/fuzz/$fuzzer.dict" ] && dict=(-dict="tests/fuzz/$fuzzer.dict")
  status=0
  "$build/bin/$fuzzer" "$work/$fuzzer" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes/$fuzzer-" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz: $fuzzer: ${runs:-?} executions in ${seconds} s, no crash"
  else
    failed=$((failed + 1))
    echo "fuzz: $fuzzer: FAILED (exit $status) after ${runs:-?} executions; the end of its log:"
    tail -n 60 "$log"
    for input in "$crashes/$fuzzer"-*; do
      [ -f "$input" ] || continue
      echo "--- $input (first 512 bytes, hex):"
      od -A d -t x1 -N 512 "$input"
    done
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
