#!/usr/bin/env bash
# Issue 18 on the GPU machine: the edges of a request, each beside its floor in the same run. Built here:
#
#   here:  scripts/edge-device.sh bundle [ROWS_DIR...]   # CUDA build in build-cuda, bundled into build/device
#          (ROWS_DIR: bundles of other builds of comparison_bench to run beside this one, carried as they are)
#   GPU:   scripts/edge-device.sh device OUT [--no-ncu] [--no-network] [--no-shm] [--mixed] [--rows-only]
#          [--engine-tests] [--net-probe] [--sockets] [--spin-ab] [--probe] [--wake] [--client-spin]
#          [--shm-calls] [--no-tests]
#          [--no-rows] [--no-duplex]
#          (run(command='scripts/edge-device.sh device $OUT', carry=['build/device.tar.xz']))
#
# Steps: the PCIe floor from pinned and from memfd (shared-memory) host memory; the rows kernel
# (comparison_bench rows_u32, and the earlier bundle's beside it); the bitonic tests; ncu on the rows
# kernel; a CUDA server's Sort and TopK from shared memory at 16M and 256M keys; the network rows of
# scripts/service-bench.sh (stream16: the streamed sort, gRPC's echo in parts, the plain-TCP floor);
# with --mixed, issue 18's mixed load through shared memory on a CUDA server and a CPU server (each with
# the client's copies into the regions, and with the arrays already in them); with --engine-tests, the CUDA
# engine's other suites (sort_ingest_test, device_region_test, the fault tests, gpu_job_source_test (the
# pipeline's stage times among them), cuda_backend_test's
# CudaBackend.* and pinned sorts); with --net-probe, service-bench.sh's probe (gRPC echoes of 64 MiB split
# in different ways); with --sockets, service-bench.sh's sockets (the sorts over the data port,
# SortOnSockets, beside gRPC's parted sort and the plain-TCP floor); with --spin-ab, the shared-memory rows and the mixed load (arrays in
# regions) on CUDA servers whose waits for GPU events poll first (--cuda-wait-spin-us 2000, the default)
# and sleep at once (0), three alternating rounds, and a CPU server's mixed load beside them; with
# --probe, split_upload_probe (the 16M shared-memory sort step by step); with --wake, the cost of the
# host's idle cores to a call (wake_steps); with --client-spin, the bench's calls polling for their answer
# and sleeping (client_spin_steps); with --shm-calls, the shared-memory calls as records on the socket
# beside the same calls over gRPC (shm_calls_steps), and the region-call suites on the CUDA backend both
# ways. Every folder
# build/device/rows_* (other builds of comparison_bench, carried as they are) runs beside the rows step.
# Logs go to OUT: summary.txt and logs.tar.gz (every log and JSON).
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  set -e
  scripts/cuda-bundle.sh gpusort-server gpusort tcp_floor duplex_floor comparison_bench bitonic_sort_test \
    pinned_ranges_test cuda_backend_test mixed_load_bench merge_sort_test sort_ingest_test device_region_test \
    gpu_fault_test gpu_oom_test gpu_job_source_test event_wait_test split_upload_probe service_tests client_tests
  local dir
  for dir in "$@"; do cp -r "$dir" "build/device/rows_$(basename "$dir")"; done
  tar -cf - -C build device | xz -T2 -6 > build/device.tar.xz
  du -sh build/device build/device.tar.xz
}

device() {
  local out=$1; shift
  local ncu=1 network=1 shm=1 mixed="" tests=1 engine_tests="" probe="" rows=1 duplex=1 spin_ab="" split_probe=""
  local wake="" client_spin="" sockets="" shm_calls=""
  for a in "$@"; do
    case $a in
      --no-ncu) ncu="" ;; --no-network) network="" ;; --no-shm) shm="" ;; --mixed) mixed=1 ;;
      --engine-tests) engine_tests=1 ;; --net-probe) probe=1 ;; --sockets) sockets=1 ;;
      --spin-ab) spin_ab=1 ;; --probe) split_probe=1 ;; --wake) wake=1 ;; --client-spin) client_spin=1 ;;
      --no-tests) tests="" ;; --no-rows) rows="" ;; --no-duplex) duplex="" ;; --shm-calls) shm_calls=1 ;;
      --rows-only) network="" shm="" tests="" ;;
      *) echo "unknown option $a" >&2; exit 2 ;;
    esac
  done
  if [ -f build/device.tar.xz ]; then
    local unpack; unpack=$(mktemp -d)
    tar -xJf build/device.tar.xz -C "$unpack" && rm -rf build/device && mv "$unpack/device" build/device
  fi
  mkdir -p "$out"
  local logs; logs=$(mktemp -d)
  local run=build/device/run summary=$out/summary.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$summary"
  step() {  # step NAME COMMAND...: log to logs/NAME.log, a line in summary.txt
    local name=$1; shift
    local start=$SECONDS
    "$@" > "$logs/$name.log" 2>&1
    echo "$name rc=$? $((SECONDS - start))s" >> "$summary"
  }
  if [ -n "$duplex" ]; then
    step duplex_64M $run duplex_floor --devices 0 --host both --bytes 64M --repeats 30
    step duplex_1G $run duplex_floor --devices 0 --host both --bytes 1G --repeats 3
  fi
  # The rows kernel of this build and of every carried one, alternating so that drift hits all.
  local round other
  for round in 1 2; do
    [ -n "$rows" ] || break
    step rows_new_$round $run comparison_bench --only rows_u32 --runs 30 --no-writeup
    for other in build/device/rows_*/run; do
      [ -x "$other" ] || continue
      step "$(basename "$(dirname "$other")")_$round" "$other" comparison_bench --only rows_u32 --runs 30 --no-writeup
    done
  done
  [ -n "$tests" ] && step bitonic_sort_test $run bitonic_sort_test --gtest_brief=1
  [ -n "$tests" ] && step merge_sort_test $run merge_sort_test --gtest_brief=1
  [ -n "$tests" ] && step pinned_ranges_test $run pinned_ranges_test --gtest_brief=1
  [ -n "$tests" ] && step cuda_backend_rows $run cuda_backend_test --gtest_brief=1 --gtest_filter="*Row*:*Segment*:*Batch*"
  if [ -n "$engine_tests" ]; then
    local t
    for t in sort_ingest_test device_region_test gpu_fault_test gpu_oom_test gpu_job_source_test event_wait_test; do
      step $t $run $t --gtest_brief=1
    done
    step cuda_backend_engine $run cuda_backend_test --gtest_brief=1 --gtest_filter="CudaBackend.*:*PinnedSort*"
  fi
  local ncu_bin; ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
  if [ -n "$ncu" ] && [ -n "$ncu_bin" ]; then
    step ncu_rows env LD_LIBRARY_PATH="$PWD/build/device/lib" "$ncu_bin" --clock-control none --kernel-name regex:TileKernel --launch-skip 1 --launch-count 1 --section SpeedOfLight \
      --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section Occupancy \
      --section SchedulerStats build/device/comparison_bench --only rows_u32 --runs 2 --warmup 1 --no-writeup
  fi
  [ -n "$split_probe" ] && step split_upload_probe $run split_upload_probe --runs 30
  [ -n "$shm" ] && shm_steps "$logs"
  [ -n "$mixed" ] && mixed_steps "$logs"
  [ -n "$spin_ab" ] && spin_ab_steps "$logs"
  [ -n "$wake" ] && wake_steps "$logs"
  [ -n "$client_spin" ] && client_spin_steps "$logs"
  [ -n "$shm_calls" ] && shm_calls_steps "$logs"
  if [ -n "$network" ]; then
    step service_stream16 env LD_LIBRARY_PATH="$PWD/build/device/lib" scripts/service-bench.sh build/device "$logs/service" stream16
  fi
  if [ -n "$probe" ]; then
    step service_probe env LD_LIBRARY_PATH="$PWD/build/device/lib" scripts/service-bench.sh build/device "$logs/probe" probe
  fi
  if [ -n "$sockets" ]; then
    step service_sockets env LD_LIBRARY_PATH="$PWD/build/device/lib" scripts/service-bench.sh build/device "$logs/sockets" sockets
  fi
  cat "$summary"
  grep -h "GB/s" "$logs"/duplex_*.log 2> /dev/null
  tar -czf "$out.logs.tar.gz" -C "$logs" . && mv "$out.logs.tar.gz" "$out/logs.tar.gz"
}

# start_server LOGS NAME FLAGS...: a server on loopback with a shared-memory socket; sets port and sock.
start_server() {
  local logs=$1 name=$2; shift 2
  local work; work=$(mktemp -d)
  $run gpusort-server --listen 127.0.0.1:0 --metrics-listen "" --log-level warn --max-message-bytes 1073741824 \
    --max-request-bytes 4294967296 --shm-socket "$work/shm.sock" --port-file "$work/ports" "$@" \
    > "$logs/server_$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do [ -s "$work/ports" ] && break; sleep 0.1; done
  # shellcheck disable=SC1091
  . "$work/ports"
  port=$grpc_port sock=$work/shm.sock
}

# Sort and TopK from shared memory on a CUDA server (stages in the JSON).
shm_steps() {
  local logs=$1 round
  start_server "$logs" shm --backend cuda --shm-max-bytes-per-user 17179869184 --shm-max-bytes 17179869184
  local b=(bench --server "127.0.0.1:$port" --no-progress --format json --transport shm --shm-socket "$sock")
  for round in 1 2; do
    step shm_sort_16M_$round $run gpusort "${b[@]}" --method sort --count 16M --requests 40 --warmup 0.5 \
      --output "$logs/shm_sort_16M_$round.json"
    step shm_topk_16M_$round $run gpusort "${b[@]}" --method topk -k 100 --dtype f32 --count 16M --requests 40 \
      --warmup 0.5 --output "$logs/shm_topk_16M_$round.json"
  done
  step shm_sort_256M $run gpusort "${b[@]}" --method sort --count 256M --requests 8 --warmup 0.5 \
    --output "$logs/shm_sort_256M.json"
  # The floors of the call around the sort, same server: a gRPC echo of one key (the RPC alone, no
  # worker), and a Sort of one key from shared memory (the RPC, the region's lookup and the scheduler;
  # AUTO sorts it on the CPU).
  for round in 1 2; do
    step rpc_echo_1_$round $run gpusort bench --server "127.0.0.1:$port" --no-progress --format json --method echo \
      --count 1 --requests 400 --warmup 0.5 --output "$logs/rpc_echo_1_$round.json"
    step shm_sort_1_$round $run gpusort "${b[@]}" --method sort --count 1 --requests 400 --warmup 0.5 \
      --output "$logs/shm_sort_1_$round.json"
  done
  kill $server_pid; wait $server_pid 2>/dev/null
}

# --wake: what the host's idle cores cost a call. A 1-key gRPC echo and a 1-key Sort from shared memory,
# back to back and at 300 calls/s (each waits ~3 ms idle, as the caller and the server's gRPC threads do
# during a 16M sort), and the 16M sort; then the same with a SCHED_IDLE busy loop on every core, which
# keeps every core awake without taking time from anything else.
wake_steps() {
  local logs=$1 round burn pids
  start_server "$logs" wake --backend cuda --shm-max-bytes-per-user 17179869184 --shm-max-bytes 17179869184
  local b=(bench --server "127.0.0.1:$port" --no-progress --format json)
  local s=(--transport shm --shm-socket "$sock")
  for round in 1 2; do
    for burn in 0 1; do
      pids=()
      if [ "$burn" = 1 ]; then
        for _ in $(seq "$(nproc)"); do chrt --idle 0 sh -c 'while :; do :; done' & pids+=($!); done
      fi
      local tag="burn${burn}_r$round"
      step "wake_echo_1_$tag" $run gpusort "${b[@]}" --method echo --count 1 --requests 400 --warmup 0.5 \
        --output "$logs/wake_echo_1_$tag.json"
      step "wake_echo_1_300_$tag" $run gpusort "${b[@]}" --method echo --count 1 --rate 300 --duration 1.5 \
        --warmup 0.5 --output "$logs/wake_echo_1_300_$tag.json"
      step "wake_shm_1_$tag" $run gpusort "${b[@]}" "${s[@]}" --method sort --count 1 --requests 400 --warmup 0.5 \
        --output "$logs/wake_shm_1_$tag.json"
      step "wake_shm_1_300_$tag" $run gpusort "${b[@]}" "${s[@]}" --method sort --count 1 --rate 300 --duration 1.5 \
        --warmup 0.5 --output "$logs/wake_shm_1_300_$tag.json"
      step "wake_shm_16M_$tag" $run gpusort "${b[@]}" "${s[@]}" --method sort --count 16M --requests 40 \
        --warmup 0.5 --output "$logs/wake_shm_16M_$tag.json"
      [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2> /dev/null && wait "${pids[@]}" 2> /dev/null
    done
  done
  kill $server_pid; wait $server_pid 2>/dev/null
}

# --client-spin: the bench's calls poll for their answer for 5 ms before they sleep (--wait-spin-us,
# ClientOptions::wait_spin) and sleep at once, alternating, three rounds on one CUDA server: Sort of 16M
# and of 1 key and TopK of 16M keys from shared memory.
client_spin_steps() {
  local logs=$1 round spin
  start_server "$logs" client_spin --backend cuda --shm-max-bytes-per-user 17179869184 --shm-max-bytes 17179869184
  for round in 1 2 3; do
    for spin in 0 5000; do
      local b=(bench --server "127.0.0.1:$port" --no-progress --format json --transport shm --shm-socket "$sock"
               --wait-spin-us "$spin")
      local tag="cspin${spin}_r$round"
      step "shm_sort_16M_$tag" $run gpusort "${b[@]}" --method sort --count 16M --requests 40 --warmup 0.5 \
        --output "$logs/shm_sort_16M_$tag.json"
      step "shm_sort_1_$tag" $run gpusort "${b[@]}" --method sort --count 1 --requests 400 --warmup 0.5 \
        --output "$logs/shm_sort_1_$tag.json"
      step "shm_topk_16M_$tag" $run gpusort "${b[@]}" --method topk -k 100 --dtype f32 --count 16M --requests 40 \
        --warmup 0.5 --output "$logs/shm_topk_16M_$tag.json"
    done
  done
  kill $server_pid; wait $server_pid 2>/dev/null
}

# --shm-calls: the region calls as records on the shared-memory socket (the client's default) and over
# gRPC, alternating on one CUDA server, three rounds: Sort of 16M and of 1 key and TopK of 16M keys from
# shared memory, and the socket again with the caller polling 5 ms for its answer; 256M once each way.
# Then the shared-memory suites on the CUDA backend, both ways.
shm_calls_steps() {
  local logs=$1 round how
  start_server "$logs" shm_calls --backend cuda --shm-max-bytes-per-user 17179869184 --shm-max-bytes 17179869184
  for round in 1 2 3; do
    for how in socket grpc socket_spin; do
      local b=(bench --server "127.0.0.1:$port" --no-progress --format json --transport shm --shm-socket "$sock"
               --shm-calls "${how%_spin}")
      [ "$how" = socket_spin ] && b+=(--wait-spin-us 5000)
      local tag="${how}_r$round"
      step "shm_sort_16M_$tag" $run gpusort "${b[@]}" --method sort --count 16M --requests 40 --warmup 0.5 \
        --output "$logs/shm_sort_16M_$tag.json"
      step "shm_sort_1_$tag" $run gpusort "${b[@]}" --method sort --count 1 --requests 400 --warmup 0.5 \
        --output "$logs/shm_sort_1_$tag.json"
      step "shm_topk_16M_$tag" $run gpusort "${b[@]}" --method topk -k 100 --dtype f32 --count 16M --requests 40 \
        --warmup 0.5 --output "$logs/shm_topk_16M_$tag.json"
    done
  done
  for how in socket grpc; do
    step "shm_sort_256M_$how" $run gpusort bench --server "127.0.0.1:$port" --no-progress --format json \
      --transport shm --shm-socket "$sock" --shm-calls "$how" --method sort --count 256M --requests 8 --warmup 0.5 \
      --output "$logs/shm_sort_256M_$how.json"
  done
  kill $server_pid; wait $server_pid 2>/dev/null
  step shm_suites_socket env GPUSORT_TEST_BACKEND=cuda $run service_tests --gtest_brief=1 \
    --gtest_filter='RegionCalls*:SharedMemory*:DeviceRegion*'
  step shm_suites_grpc env GPUSORT_TEST_BACKEND=cuda GPUSORT_TEST_SHM_CALLS=grpc $run service_tests --gtest_brief=1 \
    --gtest_filter='SharedMemory*:DeviceRegion*'
}

# Issue 18's mixed load (sizes 1K-16M log-uniform, sorts and top-100, four dtypes, 64 in flight) through
# shared memory: a CUDA server, then a CPU server on the same cores, each with the client's copies and
# with the arrays already in regions.
mixed_steps() {
  local logs=$1 backend mode
  local limits=(--max-inflight 1024 --max-inflight-per-caller 1024 --shm-max-regions 1024
                --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 --shm-max-bytes-per-user 137438953472)
  for backend in cuda cpu; do
    start_server "$logs" "mixed_$backend" --backend $backend "${limits[@]}"
    for mode in copies in-region; do
      step "mixed_${backend}_$mode" $run mixed_load_bench --server "127.0.0.1:$port" --shm-socket "$sock" \
        --concurrency 64 --connections 8 --duration 12 --warmup 3 --check $([ "$mode" = in-region ] && echo --in-region) \
        --json "$logs/mixed_${backend}_$mode.json"
    done
    kill $server_pid; wait $server_pid 2>/dev/null
  done
}

# --spin-ab: CUDA servers that poll GPU events for 2 ms before they sleep (the default) and that sleep at
# once, alternating: Sort and TopK of 16M keys from shared memory (and 256M in the first round), and the
# mixed load with the arrays in regions; then a CPU server's mixed load, the anchor of the keys/s ratio.
spin_ab_steps() {
  local logs=$1 round spin
  local limits=(--max-inflight 1024 --max-inflight-per-caller 1024 --shm-max-regions 1024
                --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 --shm-max-bytes-per-user 137438953472)
  for round in 1 2 3; do
    for spin in 2000 0; do
      local tag="spin${spin}_r$round"
      start_server "$logs" "$tag" --backend cuda --cuda-wait-spin-us $spin "${limits[@]}"
      local b=(bench --server "127.0.0.1:$port" --no-progress --format json --transport shm --shm-socket "$sock")
      step "shm_sort_16M_$tag" $run gpusort "${b[@]}" --method sort --count 16M --requests 40 --warmup 0.5 \
        --output "$logs/shm_sort_16M_$tag.json"
      step "shm_topk_16M_$tag" $run gpusort "${b[@]}" --method topk -k 100 --dtype f32 --count 16M --requests 40 \
        --warmup 0.5 --output "$logs/shm_topk_16M_$tag.json"
      if [ "$round" = 1 ]; then
        step "shm_sort_256M_$tag" $run gpusort "${b[@]}" --method sort --count 256M --requests 8 --warmup 0.5 \
          --output "$logs/shm_sort_256M_$tag.json"
      fi
      step "mixed_$tag" $run mixed_load_bench --server "127.0.0.1:$port" --shm-socket "$sock" --concurrency 64 \
        --connections 8 --duration 10 --warmup 2 --check --in-region --json "$logs/mixed_$tag.json"
      kill $server_pid; wait $server_pid 2>/dev/null
    done
  done
  start_server "$logs" mixed_cpu --backend cpu "${limits[@]}"
  step mixed_cpu $run mixed_load_bench --server "127.0.0.1:$port" --shm-socket "$sock" --concurrency 64 \
    --connections 8 --duration 10 --warmup 2 --check --in-region --json "$logs/mixed_cpu.json"
  kill $server_pid; wait $server_pid 2>/dev/null
}

case ${1:-} in
  bundle) shift; bundle "$@" ;;
  device) shift; device "$@" ;;
  *) echo "usage: $0 bundle [ROWS_DIR...] | device OUT [options, see the top of this file]" >&2; exit 2 ;;
esac
