#!/usr/bin/env bash
# Why issue 18's mix (keys on the GPUs) does not scale from one GPU to two in one server: the server on
# two GPUs, and on one, profiled under the mix (perf, where the device lets it, and gdb's stacks of every
# thread), and the same two GPUs served by two processes (one server a GPU, a benchmark each) beside one
# process on both. Everything is built here:
#
#   here:  scripts/multi-gpu-device.sh bundle && scripts/mix-contention-device.sh tools
#          (build/device.tar.xz and build/tools.tar.xz: perf, gdb and the server with its symbols)
#   GPU:   scripts/mix-contention-device.sh device OUT
#          (run(command=..., carry=['build/device.tar.xz', 'build/tools.tar.xz'], kind='nvidia-h100-x2'))
#
# CONTENTION_STREAMS (16) is --cuda-streams, CONTENTION_SPIN (the server's default) --cuda-wait-spin-us.
# OUT gets summary.txt and logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."

tools() {
  set -e
  # gdb-minimal: Debian's full gdb loads Python 3.11, whose library the GPU machine's image lacks.
  dpkg -s gdb-minimal > /dev/null 2>&1 || apt-get install -y gdb-minimal > /dev/null
  rm -rf build/tools
  ../shared/tools/device-bundle.sh build/tools /usr/bin/perf /usr/bin/gdb
  cp build-cuda/bin/gpusort-server build/tools/gpusort-server-syms  # symbols kept, for perf and gdb
  tar -cf - -C build tools | xz -T2 -6 > build/tools.tar.xz
  du -sh build/tools build/tools.tar.xz
}

device() {
  local out=$1 streams=${CONTENTION_STREAMS:-16} spin=${CONTENTION_SPIN:-}
  mkdir -p "$out"
  [ -d build/device ] || tar -xJf build/device.tar.xz -C build
  [ -d build/tools ] || tar -xJf build/tools.tar.xz -C build
  local summary=$out/summary.txt lib=build/device/lib
  cat /proc/sys/kernel/perf_event_paranoid > "$out/perf_paranoid.txt" 2>&1
  echo "--cuda-streams $streams, --cuda-wait-spin-us ${spin:-default}" > "$summary"
  server() {  # server PORT LIST TAG: a server (the binary with symbols) in the background; its pid in $!
    env LD_LIBRARY_PATH=$lib build/tools/gpusort-server-syms --listen "127.0.0.1:$1" --metrics-listen "" \
      --backend cuda --cuda-devices "$2" --cuda-streams "$streams" ${spin:+--cuda-wait-spin-us $spin} --max-inflight 1024 \
      --max-inflight-per-caller 1024 --shm-socket "/tmp/gpusort-contention-$1.sock" --shm-max-regions 1024 \
      --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 --shm-max-bytes-per-user 137438953472 \
      > "$out/server_$3_$1.log" 2>&1 &
  }
  bench() {  # bench PORT GPUS IN_FLIGHT TAG: the mix, keys on the GPUs, 10 s after 4
    build/device/run mixed_load_bench --server "127.0.0.1:$1" --shm-socket "/tmp/gpusort-contention-$1.sock" \
      --in-device --gpus "$2" --concurrency "$3" --connections 8 --duration 10 --warmup 4 \
      > "$out/mix_$4_$1.log" 2>&1
  }
  rate() { grep -m1 '^  all' "$out/mix_$1.log" | awk '{print $4}'; }
  profile() {  # profile PID TAG: perf for 3 s, then two dumps of every thread's stack
    env LD_LIBRARY_PATH=build/tools/lib build/tools/perf record -F 499 -g -p "$1" -o "$out/perf_$2.data" \
      -- sleep 3 > "$out/perf_record_$2.log" 2>&1
    local i
    for i in 1 2; do
      env LD_LIBRARY_PATH=build/tools/lib timeout 60 build/tools/gdb -batch -nx -p "$1" \
        -ex "set pagination off" -ex "thread apply all bt 30" > "$out/stacks_$2_$i.txt" 2>&1
    done
  }
  local pid pid2 b
  # One process on both GPUs, then on one (64 in flight each), each profiled inside its timed part.
  for list in 0,1 0; do
    local tag="one_${list/,/_}"
    server 50151 "$list" "$tag"; pid=$!; sleep 4
    bench 50151 "$(( ${#list} / 2 + 1 ))" 64 "$tag" & b=$!
    sleep 8; profile "$pid" "$tag"; wait $b
    echo "$tag (one server on GPUs $list, 64 in flight): $(rate "${tag}_50151") req/s" >> "$summary"
    kill $pid; wait $pid
  done
  # Two processes, one a GPU, 32 in flight on each; and one process on one GPU at 32 (the same load a GPU).
  # Each server and its benchmark see only their GPU (as ordinal 0): the benchmark puts its arrays on its
  # GPUs 0..N-1, so the server on GPU 1, beside a benchmark that saw both GPUs, was given keys in GPU 0's
  # memory (the twelfth and thirteenth sittings' runs: 15.1K and 17.2K req/s on GPU 1 against 18.3K and
  # 24.5K on GPU 0).
  CUDA_VISIBLE_DEVICES=0 server 50151 0 two; pid=$!; CUDA_VISIBLE_DEVICES=1 server 50152 0 two; pid2=$!; sleep 4
  CUDA_VISIBLE_DEVICES=0 bench 50151 1 32 two & b=$!
  CUDA_VISIBLE_DEVICES=1 bench 50152 1 32 two; wait $b
  echo "two servers, one a GPU, 32 in flight each: $(rate two_50151) + $(rate two_50152) req/s" >> "$summary"
  kill $pid $pid2; wait $pid $pid2
  server 50151 0 one_0_c32; pid=$!; sleep 4
  bench 50151 1 32 one_0_c32
  echo "one server on GPU 0, 32 in flight: $(rate one_0_c32_50151) req/s" >> "$summary"
  kill $pid; wait $pid
  cat "$summary"
  tar -czf "$out.logs.tar.gz" -C "$out" . && mv "$out.logs.tar.gz" "$out/logs.tar.gz" &&
    find "$out" -type f ! -name logs.tar.gz ! -name summary.txt -delete
}

case ${1:-} in
  tools) tools ;;
  device) shift; device "$@" ;;
  *) echo "usage: $0 tools | device OUT" >&2; exit 2 ;;
esac
