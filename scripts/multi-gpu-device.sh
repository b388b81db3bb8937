#!/usr/bin/env bash
# Issue 19 on a GPU machine (two GPUs where lent): the multi-GPU tests, the large-sort benchmark (one GPU
# and two, beside the PCIe floor) and the mixed load on one GPU and on two. Everything is built here:
#
#   here:  scripts/multi-gpu-device.sh bundle      # CUDA build in build-cuda, bundled into build/device
#   GPU:   scripts/multi-gpu-device.sh device OUT [--keys 4G] [--big 16G] [--quick] [--no-tests] [--no-mixed]
#          [--spin-ab] [--in-device] [--mix-probe]
#          (run(command='scripts/multi-gpu-device.sh device $OUT', carry=['build/device'], kind='nvidia-h100-x2'))
#
# --spin-ab: only the GPU-bound load (sorts of 1M-16M, arrays in regions) on one GPU and on two, with the
# servers' GPU waits polling first (--cuda-wait-spin-us 2000, the default) and sleeping at once (0), two
# alternating rounds (in place of the usual mixed loads).
# --in-device: only the mixed loads with the arrays already in GPU memory (device regions: each array on
# every GPU the server has, each worker's calls on one GPU's copies), issue 18's mix and the sorts of
# 1M-16M, on one GPU and on two, two alternating rounds: what a second GPU adds when no key crosses PCIe
# (then, on each server, the mix once more with every answer checked). The region calls go on the
# shared-memory socket (the client's default); the mix runs once more with them over gRPC (--shm-calls).
# --mix-probe: where issue 18's mix spends the host when its keys are on the GPUs: the mix on one GPU and
# on two, with the servers' GPU waits polling (2000 us, the default) and sleeping (0), and on two GPUs at
# 128 in flight, and with 8 streams a GPU instead of 4 (--cuda-streams); each run with the host's busy cores,
# the server's CPU by thread name (scripts/thread-cpu.py), the CPU time of the server and of the benchmark,
# each GPU's busy time (nvidia-smi dmon) and the calls' time by stage (scripts/stage-load.py, from the
# server's /metrics) over its timed part (mix_probe.txt).
# MIX_PROBE_SPECS="LIST SPIN IN_FLIGHT [STREAMS [KEPT]];..." runs other servers and loads instead.
# Each run also samples what the server's threads wait in (scripts/thread-syscalls.py, 100 times a second:
# 0.12 of a core for 75 threads on the dev VM). For a profile (perf, gdb stacks) see scripts/mix-contention-device.sh.
# Logs go to OUT: summary.txt (a line per step) and one log per step.
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  set -e
  scripts/cuda-bundle.sh gpusort-server mixed_load_bench large_sort_bench duplex_floor multi_gpu_test \
    multi_gpu_fault_test gpu_set_test device_merged_sort_test cuda_backend_test device_region_test gpu_fault_test \
    sort_ingest_test stream_memory_test event_wait_test
  du -sh build/device
}

device() {
  local out=$1; shift
  local keys=4G big="" quick="" tests=1 mixed=1 spin_ab="" in_device="" mix_probe=""
  while [ $# -gt 0 ]; do
    case $1 in
      --keys) keys=$2; shift ;; --big) big=$2; shift ;; --quick) quick=1 ;;
      --no-tests) tests="" ;; --no-mixed) mixed="" ;; --spin-ab) spin_ab=1 mixed="" ;;
      --in-device) in_device=1 mixed="" ;;
      --mix-probe) mix_probe=1 mixed="" ;;
      *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
  done
  mkdir -p "$out"
  local run=build/device/run summary=$out/summary.txt
  nvidia-smi --query-gpu=index,name,memory.total --format=csv > "$out/gpus.txt" 2>&1
  nproc >> "$out/gpus.txt"; free -g >> "$out/gpus.txt"; command -v perf >> "$out/gpus.txt"
  step() {  # step NAME COMMAND...: runs it, logs to OUT/NAME.log, a line in summary.txt
    local name=$1; shift
    local start=$SECONDS
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - start))s" >> "$summary"
  }
  if [ -n "$tests" ]; then
    step gpu_set_test $run gpu_set_test --gtest_brief=1
    step device_merged_sort_test $run device_merged_sort_test --gtest_brief=1
    step multi_gpu_test $run multi_gpu_test --gtest_brief=1
    step multi_gpu_fault_test $run multi_gpu_fault_test --gtest_brief=1
    step device_region_test $run device_region_test --gtest_brief=1
    step gpu_fault_test $run gpu_fault_test --gtest_brief=1
    step stream_memory_test $run stream_memory_test --gtest_brief=1
    step event_wait_test $run event_wait_test --gtest_brief=1
  fi
  if [ -n "$tests" ] && [ -z "$quick" ]; then
    step sort_ingest_test $run sort_ingest_test --gtest_brief=1
    # 97 tests, 2^31-key arrays among them: 390 s on an H200 (2026-11-27).
    step cuda_backend_test timeout "${CUDA_BACKEND_TEST_TIMEOUT:-480}" stdbuf -oL $run cuda_backend_test --gtest_brief=1
  fi
  local gpus; gpus=$(nvidia-smi -L | wc -l)
  local sets="--devices 0"; [ "$gpus" -ge 2 ] && sets="--devices 0 --devices 0,1"
  [ -n "$keys" ] && step large_sort_$keys $run large_sort_bench --keys "$keys" $sets --repeats 3 --json "$out/large_sort_$keys.json"
  [ -n "$big" ] && step large_sort_$big $run large_sort_bench --keys "$big" $sets --repeats 1 --json "$out/large_sort_$big.json"
  step duplex_floor $run duplex_floor $sets --bytes 1G --repeats 5
  # Mixed load through shared memory on one GPU, then on two (the same pool of requests, same order).
  local list
  for list in ${mixed:+0 0,1}; do
    [ "$list" = 0,1 ] && [ "$gpus" -lt 2 ] && continue
    local sock=/tmp/gpusort-mixed-$$.sock
    $run gpusort-server --listen 127.0.0.1:50151 --metrics-listen "" --backend cuda --cuda-devices $list \
      --max-inflight 1024 --max-inflight-per-caller 1024 --shm-socket $sock --shm-max-regions 1024 \
      --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 --shm-max-bytes-per-user 137438953472 \
      > "$out/server_${list/,/_}.log" 2>&1 &
    local pid=$!
    sleep 4
    # Issue 18's mix (half the requests small enough for the CPU engine), then only large sorts (every
    # one on a GPU), which is what a second GPU can add to.
    step mixed_${list/,/_} $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --concurrency 64 \
      --connections 8 --duration 15 --warmup 3 --check --json "$out/mixed_${list/,/_}.json"
    step mixed_large_${list/,/_} $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock \
      --concurrency 64 --connections 8 --duration 15 --warmup 3 --min-keys 1M --max-keys 16M --topk-share 0 \
      --json "$out/mixed_large_${list/,/_}.json"
    # The same two loads with the arrays already in regions (no client copies): what the GPUs can take.
    step mixed_region_${list/,/_} $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --in-region \
      --concurrency 64 --connections 8 --duration 15 --warmup 3 --check --json "$out/mixed_region_${list/,/_}.json"
    step mixed_region_large_${list/,/_} $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock \
      --in-region --concurrency 64 --connections 8 --duration 15 --warmup 3 --min-keys 1M --max-keys 16M \
      --topk-share 0 --json "$out/mixed_region_large_${list/,/_}.json"
    kill $pid; wait $pid
  done
  local round spin
  for round in ${spin_ab:+1 2}; do
    for spin in 2000 0; do
      for list in 0 0,1; do
        [ "$list" = 0,1 ] && [ "$gpus" -lt 2 ] && continue
        local sock=/tmp/gpusort-spin-$$.sock tag="${list/,/_}_spin${spin}_r$round"
        $run gpusort-server --listen 127.0.0.1:50151 --metrics-listen "" --backend cuda --cuda-devices $list \
          --cuda-wait-spin-us $spin --max-inflight 1024 --max-inflight-per-caller 1024 --shm-socket $sock \
          --shm-max-regions 1024 --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 \
          --shm-max-bytes-per-user 137438953472 > "$out/server_$tag.log" 2>&1 &
        local pid=$!
        sleep 4
        step "mixed_region_large_$tag" $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock \
          --in-region --concurrency 64 --connections 8 --duration 15 --warmup 3 --min-keys 1M --max-keys 16M \
          --topk-share 0 --json "$out/mixed_region_large_$tag.json"
        kill $pid; wait $pid
      done
    done
  done
  if [ -n "$mix_probe" ]; then
    local probe=$out/mix_probe.txt list spin inflight
    # LIST SPIN IN_FLIGHT [STREAMS [KEPT]]: the GPUs, --cuda-wait-spin-us, the calls in flight,
    # --cuda-streams (4 unless given: whether small calls queue for a GPU's streams behind large ones) and
    # --cuda-stream-memory-bytes (the server's default unless given).
    # MIX_PROBE_SPECS (specs separated by ";") replaces the list.
    local specs="0 2000 64;0,1 2000 64;0 0 64;0,1 0 64;0,1 2000 128;0 2000 64 8;0,1 2000 64 8"
    local -a spec_list
    IFS=';' read -r -a spec_list <<< "${MIX_PROBE_SPECS:-$specs}"
    for spec in "${spec_list[@]}"; do
      read -r list spin inflight streams kept <<< "$spec"
      streams=${streams:-4}
      [ "$kept" = - ] && kept=""
      local sock=/tmp/gpusort-probe-$$.sock n_gpus=$(( ${#list} / 2 + 1 ))
      local tag="${list/,/_}_spin${spin}_c${inflight}_s$streams${kept:+_kept$kept}"
      $run gpusort-server --listen 127.0.0.1:50151 --metrics-listen 127.0.0.1:9464 --backend cuda --cuda-devices $list \
        --cuda-wait-spin-us "$spin" --cuda-streams "$streams" ${kept:+--cuda-stream-memory-bytes $kept} \
        --max-inflight 1024 --max-inflight-per-caller 1024 --shm-socket $sock \
        --shm-max-regions 1024 --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 \
        --shm-max-bytes-per-user 137438953472 > "$out/server_probe_$tag.log" 2>&1 &
      local pid=$!
      sleep 4
      $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --in-device --gpus $n_gpus \
        --concurrency "$inflight" --connections 8 --duration 12 --warmup 4 --json "$out/mix_probe_$tag.json" \
        > "$out/mix_probe_$tag.log" 2>&1 &
      local bench=$!
      sleep 7  # inside the timed part (after the warm-up and the pool's upload)
      local cpu0 srv0 bench0 cpu1 srv1 bench1
      cpu0=$(head -1 /proc/stat); srv0=$(awk '{print $14 + $15}' /proc/$pid/stat)
      bench0=$(cat /proc/[0-9]*/stat 2> /dev/null | awk '$2 ~ /mixed_load/ {t += $14 + $15} END {print t + 0}')
      # The window itself: the server's CPU by thread name (its own threads are named "gs-...").
      # and how busy each GPU's SMs are over the same window (nvidia-smi dmon: one line a second a GPU).
      nvidia-smi dmon -s u -c 5 > "$out/mix_probe_dmon_$tag.txt" 2>&1 &
      local dmon=$!
      # and where the server's calls spend it, stage by stage (its /metrics).
      python3 scripts/stage-load.py http://127.0.0.1:9464/metrics 5 > "$out/mix_probe_stages_$tag.txt" 2>&1 &
      local stages=$!
      # and what its threads wait in.
      python3 scripts/thread-syscalls.py "$pid" 5 100 > "$out/mix_probe_waits_$tag.txt" 2>&1 &
      local waits=$!
      python3 scripts/thread-cpu.py "$pid" 5 > "$out/mix_probe_threads_$tag.txt" 2>&1
      wait $dmon $stages $waits
      cpu1=$(head -1 /proc/stat); srv1=$(awk '{print $14 + $15}' /proc/$pid/stat)
      bench1=$(cat /proc/[0-9]*/stat 2> /dev/null | awk '$2 ~ /mixed_load/ {t += $14 + $15} END {print t + 0}')
      wait $bench
      echo "$tag: $(grep -m1 '^  all' "$out/mix_probe_$tag.log")" >> "$probe"
      awk -v a="$cpu0" -v b="$cpu1" -v s0="$srv0" -v s1="$srv1" -v b0="$bench0" -v b1="$bench1" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { split(a, x); split(b, y); busy = 0; all = 0
                 for (i = 2; i <= 9; i++) { d = y[i] - x[i]; all += d; if (i != 5 && i != 6) busy += d }
                 printf "  host busy %.1f%% of %d cores; server %.1f cores, bench %.1f cores (5 s)\n",
                        100 * busy / all, all / hz / 5, (s1 - s0) / hz / 5, (b1 - b0) / hz / 5 }' >> "$probe"
      sed -n '2,13s/^/  /p' "$out/mix_probe_threads_$tag.txt" >> "$probe"  # the busiest thread names
      awk '$1 ~ /^[0-9]+$/ {sm[$1] += $2; n[$1]++} END {for (g in sm) printf "  GPU %s SM busy %.0f%% (dmon)\n", g, sm[g] / n[g]}' \
        "$out/mix_probe_dmon_$tag.txt" >> "$probe"
      sed 's/^/  /' "$out/mix_probe_stages_$tag.txt" >> "$probe"
      grep -E '^  (all|gs-|cuda)' "$out/mix_probe_waits_$tag.txt" | sed 's/^  /  waits: /' >> "$probe"
      kill $pid; wait $pid
    done
    cat "$probe" >> "$summary"
  fi
  for round in ${in_device:+1 2}; do
    for list in 0 0,1; do
      [ "$list" = 0,1 ] && [ "$gpus" -lt 2 ] && continue
      local sock=/tmp/gpusort-device-$$.sock tag="${list/,/_}_r$round" n_gpus=$(( ${#list} / 2 + 1 ))
      $run gpusort-server --listen 127.0.0.1:50151 --metrics-listen "" --backend cuda --cuda-devices $list \
        --max-inflight 1024 --max-inflight-per-caller 1024 --shm-socket $sock \
        --shm-max-regions 1024 --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 \
        --shm-max-bytes-per-user 137438953472 > "$out/server_device_$tag.log" 2>&1 &
      local pid=$!
      sleep 4
      # Timed without --check: checking a 16M answer keeps its worker on the host for milliseconds, which
      # lowers the load the GPUs see and does not scale with them. The last round's servers check below.
      step "mixed_device_$tag" $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --in-device \
        --gpus $n_gpus --concurrency 64 --connections 8 --duration 15 --warmup 3 \
        --json "$out/mixed_device_$tag.json"
      step "mixed_device_grpc_$tag" $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --in-device \
        --gpus $n_gpus --concurrency 64 --connections 8 --duration 15 --warmup 3 --shm-calls grpc \
        --json "$out/mixed_device_grpc_$tag.json"
      step "mixed_device_large_$tag" $run mixed_load_bench --server 127.0.0.1:50151 --shm-socket $sock --in-device \
        --gpus $n_gpus --concurrency 64 --connections 8 --duration 15 --warmup 3 --min-keys 1M --max-keys 16M \
        --topk-share 0 --json "$out/mixed_device_large_$tag.json"
      [ "$round" = 2 ] && step "mixed_device_checked_$tag" $run mixed_load_bench --server 127.0.0.1:50151 \
        --shm-socket $sock --in-device --gpus $n_gpus --concurrency 64 --connections 8 --duration 5 --warmup 1 --check
      kill $pid; wait $pid
    done
  done
  cat "$summary"
  # What comes back is at most 8 files: the summary and the logs in one archive.
  # (Written beside OUT first: tar reading a folder it writes into stops with "file changed".)
  tar -czf "$out.logs.tar.gz" -C "$out" . && mv "$out.logs.tar.gz" "$out/logs.tar.gz" &&
    find "$out" -type f ! -name logs.tar.gz ! -name summary.txt -delete
}

case ${1:-} in
  bundle) bundle && tar -cf - -C build device | xz -T2 -6 > build/device.tar.xz ;;
  device) shift; device "$@" ;;
  *) echo "usage: $0 bundle | device OUT [--keys 4G] [--big 16G] [--quick]" >&2; exit 2 ;;
esac
