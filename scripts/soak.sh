#!/usr/bin/env bash
# The soak: one server under mixed, checked load for a while, its resources sampled throughout.
# Every answer is checked (gpusort bench --check); at the end no call may have failed or been wrong,
# and memory, open descriptors and threads must be flat (scripts/soak_report.py says what "flat" is).
#
# usage: scripts/soak.sh BIN_DIR OUT_DIR SECONDS [cpu|cuda]
#   CI runs 60 s on the CPU backend (ctest: e2e.soak); on the GPU machine, with a bundle of gpusort-server
#   and gpusort (../shared/tools/device-bundle.sh build/device build/bin/gpusort-server build/bin/gpusort):
#   LD_LIBRARY_PATH=$PWD/build/device/lib scripts/soak.sh build/device $OUT/soak 480 cuda
#   (480 s leaves room inside one 600 s device call).
# Leaves in OUT_DIR: samples.csv (every 2 s: RSS, descriptors, threads, device memory), one bench-*.json
# per workload, server.log, and soak-summary.txt (the figures, and PASS or the failures).
set -euo pipefail
bin=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd); seconds=$3; backend=${4:-cpu}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --backend "$backend" \
  --port-file "$work/ports" --shm-socket "$work/shm.sock" --log-level warn >"$out/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 600); do [ -s "$work/ports" ] && grep -q metrics_port "$work/ports" && break; sleep 0.1; done
. "$work/ports"
server=127.0.0.1:$grpc_port

# Workloads: every method, transport, dtype family and payload, and (on the GPU) the named kernels.
# Each line: a name, then gpusort bench flags.
if [ "$backend" = cuda ]; then
  small_algorithms="radix merge bitonic"; big=16M
else
  small_algorithms="cpu auto"; big=4M
fi
workloads=(
  "small-u32-unary   --method sort -t u32 -n 1000 -c 8 -d uniform"
  "mid-f32-argsort   --method sort -t f32 -n 256K -c 2 -d bits --argsort --descending"
  "big-u64-stream    --method sort -t u64 -n $big -c 1 --transport stream"
  "topk-f64-unary    --method topk -t f64 -n 100K -k 100 -c 4 --argsort -d few-distinct"
  "topk-i32-stream   --method topk -t i32 -n 1M -k 1000 -c 1 --transport stream"
  "echo-stream       --method echo -n 1M -c 1 --transport stream"
  "shm-f32-sort      --method sort -t f32 -n 1M -c 2 --transport shm --shm-socket $work/shm.sock -d bits"
  "shm-u64-topk      --method topk -t u64 -n 1M -k 64 -c 1 --transport shm --shm-socket $work/shm.sock"
)
for a in $small_algorithms; do workloads+=("sort-i64-$a --method sort -t i64 -n 64K -c 2 -a $a -d few-distinct"); done

pids=()
for w in "${workloads[@]}"; do
  read -r name flags <<<"$w"
  # shellcheck disable=SC2086  # the flags are words on purpose
  "$bin/gpusort" bench -s "$server" $flags --duration "$seconds" --warmup 0 --check --timeout 120 \
    --format json -o "$out/bench-$name.json" >"$work/$name.log" 2>&1 &
  pids+=($!)
done

# Sample the server every 2 s while the load runs.
echo "t_s,rss_kib,fds,threads,device_used_bytes,pool_used_bytes" >"$out/samples.csv"
start=$(date +%s)
sample() {
  local now rss fds threads metrics dev pool
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$server_pid/status")
  fds=$(ls "/proc/$server_pid/fd" | wc -l)
  metrics=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null || true)
  dev=$(awk '/^gpusort_device_memory_bytes\{.*kind="device_used"/ {print $2}' <<<"$metrics" | head -1)
  pool=$(awk '/^gpusort_device_memory_bytes\{.*kind="pool_used"/ {print $2}' <<<"$metrics" | head -1)
  echo "$now,$rss,$fds,$threads,${dev:-},${pool:-}" >>"$out/samples.csv"
}
while :; do
  running=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
  [ "$running" = 1 ] || break
  kill -0 "$server_pid" 2>/dev/null || { echo "the server died" >>"$out/server.log"; break; }
  sample
  sleep 2
done
bench_failed=0
for p in "${pids[@]}"; do wait "$p" || bench_failed=1; done
for w in "${workloads[@]}"; do
  read -r name _ <<<"$w"
  [ -s "$out/bench-$name.json" ] || { echo "no report from $name:"; cat "$work/$name.log"; bench_failed=1; }
done
kill -0 "$server_pid" 2>/dev/null || { echo "FAIL: the server died"; tail -20 "$out/server.log"; exit 1; }
sample
[ "$bench_failed" = 0 ] || { echo "FAIL: a bench run failed"; exit 1; }
python3 "$here/soak_report.py" "$out" "$backend" "$seconds" | tee "$out/soak-summary.txt"
