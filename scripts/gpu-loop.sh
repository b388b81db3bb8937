#!/usr/bin/env bash
# The GPU loop. This machine has nvcc but no GPU; the GPU machine has the driver, nvcc and python3 with
# torch but no gRPC or GoogleTest. So: build here, bundle the executables with their shared libraries,
# carry the bundle, and run everything there in one command.
#
#   here:            scripts/gpu-loop.sh bundle            # build (CUDA on) + bundle into build/device
#   GPU machine:     scripts/gpu-loop.sh device "$OUT"     # tests, e2e, benchmarks; logs under $OUT
#                    (with the device tool: run(command='scripts/gpu-loop.sh device $OUT', carry=['build/device']))
#   options for device: --quick (benchmarks at 1M and 16M only), --skip-bench, --only-bench,
#                       --service [sizes] [chunks] [small] (scripts/service-bench.sh only; kernel times
#                       for its table come from a kernel_bench run's kernel.json)
#                       --comparison (comparison_bench, comparison_anchor.py, comparison_report.py only)
#                       --topk (top_k_bench, top_k_anchor.py, top_k_report.py only; issue 7)
#                       --kernels (the kernel tests, cuda_backend_test and the fault tests
#                       gpu_oom_test and gpu_fault_test only)
#                       --sanitize (the kernel tests under compute-sanitizer: memcheck, racecheck, synccheck)
#
# What comes back from the GPU machine is at most 8 files: summary.txt (one line per step, pass/fail),
# logs.tar.gz (every step's full log), and the benchmark JSON files.
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  set -e
  scripts/build.sh -DCMAKE_BUILD_TYPE=Release
  rm -rf build/device
  local exes=()
  # Everything fits no longer in the 64 MiB a device call carries (working tree included): GPUSORT_BUNDLE
  # names a subset, and the device steps skip what is not there. kernels: the kernel tests with
  # cuda_backend_test, sort_ingest_test and the fault tests gpu_oom_test and
  # gpu_fault_test (in-process servers, which bring gRPC's libraries along: ~61 MiB, near the limit);
  # service: the server, CLI, service and client tests, which the e2e scripts also use (~55 MiB); bench:
  # the benchmarks.
  local kernels="merge_sort_test bitonic_sort_test odd_even_sort_test quicksort_test top_k_radix_select_test
                 top_k_small_test top_k_thread_lists_test cuda_backend_test sort_ingest_test gpu_job_source_test
                 stream_memory_test event_wait_test gpu_oom_test gpu_fault_test"
  local service="service_tests client_tests"
  local benches="kernel_bench sort_rpc_bench backend_crossover_bench comparison_bench top_k_bench"
  local chosen="$kernels $service $benches" base="gpusort-server gpusort"
  case ${GPUSORT_BUNDLE:-all} in
    kernels) chosen=$kernels; base="" ;; service) chosen=$service ;; bench) chosen=$benches ;;
    all) ;; *) echo "GPUSORT_BUNDLE: kernels, service, bench or all" >&2; return 2 ;;
  esac
  for exe in $base $chosen; do
    if [ -x "build/bin/$exe" ]; then exes+=("build/bin/$exe"); else echo "not built, left out: $exe" >&2; fi
  done
  ../shared/tools/device-bundle.sh build/device "${exes[@]}"
}

device() {
  local out=$1; shift
  local quick="" skip_bench="" only_bench="" service="" service_parts="" comparison="" topk="" kernels_only=""
  local sanitize=""
  for a in "$@"; do
    case $a in
      --quick) quick=1 ;; --skip-bench) skip_bench=1 ;; --only-bench) only_bench=1 ;;
      --kernels) kernels_only=1; skip_bench=1 ;;
      --sanitize) sanitize=1 ;;
      --service) service=1; only_bench=1 ;; --comparison) comparison=1; only_bench=1 ;; --topk) topk=1; only_bench=1 ;; sizes|chunks|small|stream16|split) service_parts="$service_parts $a" ;;
      *) echo "unknown option $a" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$out"
  local logs; logs=$(mktemp -d)
  export LD_LIBRARY_PATH="$PWD/build/device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHON=python3 PYTHONUNBUFFERED=1
  local bin=build/device
  step() {  # step NAME COMMAND...: full log to $logs/NAME.log, one line to summary.txt
    local name=$1; shift
    if [[ $1 == "$bin/"* && ! -x $1 ]]; then echo "$name: not in this bundle, skipped" | tee -a "$out/summary.txt"; return; fi
    local t0=$SECONDS
    "$@" >"$logs/$name.log" 2>&1
    local rc=$?
    printf '%-28s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$logs/$name.log" | cut -c1-120)" \
      | tee -a "$out/summary.txt"
  }
  nvidia-smi >"$logs/nvidia-smi.log" 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$out/summary.txt"

  if [ -n "$sanitize" ]; then
    sanitize_steps
    tar -czf "$out/logs.tar.gz" -C "$logs" .
    return
  fi
  if [ -z "$only_bench" ]; then
    for t in merge_sort_test bitonic_sort_test odd_even_sort_test quicksort_test \
             top_k_radix_select_test top_k_small_test top_k_thread_lists_test; do
      step "$t" "$bin/$t" --gtest_brief=1
    done
    step cuda_backend_test "$bin/cuda_backend_test" --gtest_brief=1
    step gpu_job_source_test "$bin/gpu_job_source_test" --gtest_brief=1
    step stream_memory_test "$bin/stream_memory_test" --gtest_brief=1
    step event_wait_test "$bin/event_wait_test" --gtest_brief=1
    # The fault tests (issue 14), each alone: gpu_oom_test takes all but 256 MiB of the GPU, and
    # gpu_fault_test ruins its own process's CUDA context on purpose.
    step gpu_oom_test "$bin/gpu_oom_test" --gtest_brief=1
    step gpu_fault_test "$bin/gpu_fault_test" --gtest_brief=1
  fi
  if [ -z "$only_bench" ] && [ -z "$kernels_only" ]; then
    step sort_ingest_test "$bin/sort_ingest_test" --gtest_brief=1
    step service_tests_cuda env GPUSORT_TEST_BACKEND=cuda "$bin/service_tests" --gtest_brief=1
    step service_tests_cpu env GPUSORT_TEST_BACKEND=cpu "$bin/service_tests" --gtest_brief=1
    step client_tests_cuda env GPUSORT_TEST_BACKEND=cuda "$bin/client_tests" --gtest_brief=1
    step e2e_cli_cuda env GPUSORT_E2E_BACKEND=cuda tests/e2e/cli_test.sh "$bin"
    step e2e_large_sort_cuda env GPUSORT_E2E_BACKEND=cuda tests/e2e/large_sort_cli_test.sh "$bin"
    step metrics_cuda metrics_check "$bin" "$logs"
  fi
  if [ -n "$service" ]; then  # service benchmarks only (parts: sizes chunks small), JSON into $out
    # shellcheck disable=SC2086
    step service_bench scripts/service-bench.sh "$bin" "$out" ${quick:+--quick} $service_parts
    rm -rf "$out/json"  # service-json.tar.gz holds them
  elif [ -n "$topk" ]; then  # the top-k kernels (issue 7) beside a full sort, a copy and torch.topk, JSON into $out
    step top_k_bench "$bin/top_k_bench" ${quick:+--quick} --json "$out/topk.json"
    step top_k_anchor python3 bench/top_k_anchor.py ${quick:+--quick} --json "$out/topk_torch.json"
    step top_k_report python3 bench/top_k_report.py --bench "$out/topk.json" --torch "$out/topk_torch.json"
    cp "$logs/top_k_report.log" "$out/topk.md"
  elif [ -n "$comparison" ]; then  # the comparison sorts (issue 6) beside CUB and torch, JSON into $out
    step comparison_bench "$bin/comparison_bench" ${quick:+--quick} --json "$out/comparison.json"
    step comparison_anchor python3 bench/comparison_anchor.py ${quick:+--quick} --json "$out/comparison_torch.json"
    step comparison_report python3 bench/comparison_report.py --bench "$out/comparison.json" \
      --torch "$out/comparison_torch.json"
    cp "$logs/comparison_report.log" "$out/comparison.md"
  elif [ -z "$skip_bench" ]; then
    local max=""; [ -n "$quick" ] && max="--quick"
    step kernel_bench "$bin/kernel_bench" $max --json "$out/kernel.json"
    step torch_anchor python3 bench/torch_anchor.py ${quick:+--max-keys 16777216} --json "$out/torch.json"
    step kernel_report python3 bench/kernel_report.py --kernel "$out/kernel.json" --torch "$out/torch.json"
    step backend_crossover "$bin/backend_crossover_bench" --json "$out/crossover.json"
    step sort_rpc_bench_cuda sort_rpc_bench "$bin" "$out/service.json" ${quick:+--max-keys 16777216}
  fi
  tar -czf "$out/logs.tar.gz" -C "$logs" .
}

# compute-sanitizer over the kernel tests (issue 14), one step per tool, test and shard: memcheck
# (accesses out of bounds or misaligned, device memory leaked), racecheck (shared-memory races) and
# synccheck (barriers and warp collectives not every thread reaches); any error the tool finds fails the
# step. The tools run kernels 10-1000 times slower (racecheck most), so:
#   - GPUSORT_TEST_MAX_KEYS leaves out the largest inputs (tests/gpu/test_max_keys.h; racecheck and
#     synccheck look inside a block, where 16K keys already take every path of the block kernels and
#     several blocks of the grid ones);
#   - the slow tests are split into gtest shards, and steps run side by side, GPUSORT_SANITIZE_JOBS at a
#     time (default 12 of the 16 cores: the tools are bound by the host more than by the GPU), the
#     slowest first (sanitize_plan, from the H100's times of 2026-11-24);
#   - no step starts, or runs, past SANITIZE_SECONDS, so that the whole fits one device call;
#     summary.txt names what did not run, and each step's log shows every test's time (line-buffered,
#     so a step cut short still shows how far it got).
# GPUSORT_SANITIZE_TOOLS and GPUSORT_SANITIZE_TESTS narrow a run. The engine's tests (cuda_backend_test,
# sort_ingest_test, gpu_job_source_test: the job pipeline, its sources and sinks) have memcheck lines
# too, run only when GPUSORT_SANITIZE_TESTS names them (they take the whole device call). Never the fault tests: their faults are
# on purpose. quicksort_test gets memcheck only: racecheck and synccheck do not support dynamic
# parallelism ("CUDA Dynamic Parallelism is not supported by the selected tool").
SANITIZE_SECONDS=${SANITIZE_SECONDS:-540}

# TOOL TEST MAX_KEYS SHARDS, slowest first; no more shards than the test has tests (a shard of none
# makes compute-sanitizer fail: "terminated before first instrumented API call"). Seconds seen on the
# H100, 14 steps side by side (2026-11-24, stop 22): racecheck batch 12-358 per shard of 6, radix-select
# 21-331 of 4, small-k 170-220 of 2, merge 107-223 of 2, bitonic 139, thread-lists 116-121 of 2,
# odd-even 4-73 of 3; memcheck quicksort 19-58 of 4, the rest 3-57; synccheck 4-39. Racecheck odd-even
# at 2049 keys did not end in 540 s: each of its n rounds has every thread touch shared memory, which
# racecheck tracks access by access; 257 keys still take five warps and the odd tail.
sanitize_plan() {
  cat <<'PLAN'
racecheck odd_even_sort_test 257 3
memcheck quicksort_test 1048576 4
racecheck top_k_radix_select_test 16385 4
racecheck top_k_small_test 16385 2
racecheck merge_sort_test 16385 2
memcheck top_k_radix_select_test 4194304 2
memcheck top_k_thread_lists_test 4194304 2
racecheck top_k_thread_lists_test 16385 2
racecheck bitonic_sort_test 16385 1
memcheck top_k_small_test 4194304 1
memcheck odd_even_sort_test 4194304 1
memcheck bitonic_sort_test 4194304 1
memcheck merge_sort_test 4194304 1
synccheck odd_even_sort_test 16385 1
synccheck top_k_small_test 16385 1
synccheck top_k_thread_lists_test 16385 1
synccheck quicksort_test - 0
racecheck quicksort_test - 0
synccheck bitonic_sort_test 16385 1
synccheck merge_sort_test 16385 1
synccheck top_k_radix_select_test 16385 1
memcheck cuda_backend_test 65536 12
memcheck sort_ingest_test - 4
memcheck gpu_job_source_test - 1
PLAN
}

sanitize_steps() {
  local cs; cs=$(command -v compute-sanitizer || true)
  for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -z "$cs" ] && [ -x "$c" ] && cs=$c
  done
  if [ -z "$cs" ]; then echo "compute-sanitizer: not found" | tee -a "$out/summary.txt"; return 1; fi
  "$cs" --version | tail -n 1 | tee -a "$out/summary.txt"
  local tools=${GPUSORT_SANITIZE_TOOLS:-"memcheck racecheck synccheck"}
  local tests=${GPUSORT_SANITIZE_TESTS:-"merge_sort_test bitonic_sort_test odd_even_sort_test quicksort_test
               top_k_radix_select_test top_k_small_test top_k_thread_lists_test"}
  local deadline=$((SECONDS + SANITIZE_SECONDS)) jobs=${GPUSORT_SANITIZE_JOBS:-12}
  local tool t keys shards shard args
  while read -r tool t keys shards; do
    [[ " $(echo $tools) " == *" $tool "* && " $(echo $tests) " == *" $t "* ]] || continue
    if [ "$shards" = 0 ]; then
      echo "${tool}_$t: not run, $tool does not support dynamic parallelism" | tee -a "$out/summary.txt"
      continue
    fi
    case $tool in
      memcheck) args=(--tool memcheck --leak-check full) ;;
      racecheck) args=(--tool racecheck --racecheck-report all) ;;
      synccheck) args=(--tool synccheck) ;;
    esac
    for ((shard = 0; shard < shards; shard++)); do
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
      sanitized "$tool" "$keys" "$t" "$shard" "$shards" "${args[@]}" &
    done
  done < <(sanitize_plan)
  wait
}

# sanitized TOOL MAX_KEYS TEST SHARD SHARDS TOOL_ARGS...: shard SHARD of TEST under compute-sanitizer
# (sanitize_steps' $cs), as the step TOOL_TEST[_SHARD], until sanitize_steps' $deadline at the latest.
sanitized() {
  local tool=$1 keys=$2 t=$3 shard=$4 shards=$5; shift 5
  local name="${tool}_$t"
  [ "$shards" -gt 1 ] && name="${name}_$shard"
  if [ ! -x "$bin/$t" ]; then echo "$name: not in this bundle, skipped" | tee -a "$out/summary.txt"; return; fi
  local seconds=$((deadline - SECONDS))
  if [ "$seconds" -lt 10 ]; then
    echo "$name: not run, past the ${SANITIZE_SECONDS} s of --sanitize" | tee -a "$out/summary.txt"
    return
  fi
  step "$name" env GPUSORT_TEST_MAX_KEYS="$keys" GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$shard" \
    timeout "$seconds" stdbuf -oL -eL "$cs" "$@" --error-exitcode 1 "$bin/$t"
}

# A server on the CUDA backend: one sort and one top-k through the CLI, then /metrics must show the
# device memory gauge and the h2d / kernel / d2h stage histograms.
metrics_check() {
  local bin=$1 logs=$2 work; work=$(mktemp -d)
  "$bin/gpusort-server" --backend cuda --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --port-file "$work/ports" >"$work/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do [ -s "$work/ports" ] && break; sleep 0.1; done
  . "$work/ports"
  # 16 MB of keys: the client streams arrays from 4 MiB, so the sort arrives as SortStream.
  "$bin/gpusort" gen --dtype f32 --count 4000000 --out "$work/k.npy"
  "$bin/gpusort" sort --server "127.0.0.1:$grpc_port" --in "$work/k.npy" --out "$work/s.npy" --verbose \
    2>&1 | tee "$work/sort.txt"
  # AUTO answers a top-100 on the CPU (auto_policy.h); ask for the GPU's radix top-k by name as well.
  "$bin/gpusort" topk --server "127.0.0.1:$grpc_port" --in "$work/k.npy" --out "$work/t.npy" -k 100 --verbose
  "$bin/gpusort" topk --server "127.0.0.1:$grpc_port" --in "$work/k.npy" --out "$work/t2.npy" -k 100 \
    --algorithm radix --verbose 2>&1 | tee "$work/topk.txt"
  python3 -c "import numpy as np; a=np.load('$work/t.npy'); b=np.load('$work/t2.npy'); assert (a==b).all(), 'cpu and gpu top-k differ'; print('top-k: CPU and GPU answers agree')"
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode())" \
    >"$logs/metrics.txt"
  kill -TERM $pid; wait $pid
  cat "$work/server.log"
  local ok=0
  grep -q "backend BACKEND_CUDA" "$work/sort.txt" || { echo "the sort did not run on the GPU"; ok=1; }
  grep -q "backend BACKEND_CUDA" "$work/topk.txt" || { echo "the radix top-k did not run on the GPU"; ok=1; }
  for pattern in 'gpusort_device_memory_bytes{device="cuda:0",kind="pool_reserved"}' \
                 'gpusort_requests_total{algorithm="radix",code="OK",dtype="f32",method="SortStream"}'; do
    grep -F "$pattern" "$logs/metrics.txt" || { echo "missing in /metrics: $pattern"; ok=1; }
  done
  for stage in h2d kernel d2h; do  # of whichever method (the labels: method, stage)
    grep -E "^gpusort_stage_duration_seconds_count\{method=\"[A-Za-z]+\",stage=\"$stage\"\}" "$logs/metrics.txt" \
      || { echo "missing in /metrics: the $stage stage"; ok=1; }
  done
  rm -rf "$work"
  [ $ok = 0 ] && echo "metrics: device memory and h2d/kernel/d2h stages present"
  return $ok
}

# sort_rpc_bench against a CUDA server whose message limit lets every size go unary, as the echo does.
sort_rpc_bench() {
  local bin=$1 json=$2; shift 2
  local work; work=$(mktemp -d)
  "$bin/gpusort-server" --backend cuda --listen 127.0.0.1:0 --metrics-listen "" --log-level warn \
    --max-message-bytes 1073741824 --port-file "$work/ports" >"$work/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do [ -s "$work/ports" ] && break; sleep 0.1; done
  . "$work/ports"
  "$bin/sort_rpc_bench" --server "127.0.0.1:$grpc_port" --json "$json" "$@"
  local rc=$?
  kill -TERM $pid; wait $pid
  return $rc
}

case ${1:-} in
  bundle) bundle ;;
  device) shift; device "$@" ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
esac
