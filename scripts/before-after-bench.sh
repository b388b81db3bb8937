#!/usr/bin/env bash
# Two builds of the server side by side, in one device session (issue 15: "nothing got slower"): each
# figure is measured on the "before" build and the "after" build in turn, two rounds, so that drift on
# the machine hits both alike (each round alternates which goes first). The figures, as BENCHMARKS.md measures them:
#   shm16M:     16M u32 sort over shared memory (no array crosses the socket), 20 requests
#   parts16M:   16M u32 sort streamed in 8 parts (the client's default) beside the one-stream echo
#   small:      1000-key u32 sorts, 64 in flight on 8 connections, beside the echo (5 s after 1 s)
#   topk256M:   256M f32 top-k, k = 100, device time (top_k_bench, beside its device-to-device copy)
#   sockets16M: 16M u32 sort over the data port in 8 parts (SortOnSockets), as service-bench.sh measures it
#   mid64K:     64K-key u32 sorts, 16 in flight on 4 connections (5 s after 1 s), on the CUDA server and
#               on a --backend cpu server of the same build
#
#   [ROUNDS=2] [REQUESTS_16M=20] [PARTS="shm16M parts16M small topk256M"] scripts/before-after-bench.sh BEFORE_BIN AFTER_BIN OUT_DIR
# (issue 42's set: PARTS="shm16M parts16M small sockets16M mid64K"; the two-GPU mix is mix-ab-device.sh)
#
# Each BIN holds gpusort-server, gpusort and top_k_bench, with its libraries in BIN/lib (COMMON_LIB, if
# set, is searched after it: the libraries both builds share, carried once). JSON per
# measurement under OUT_DIR/json; a summary line each to stdout.
set -uo pipefail
before=$1 after=$2 out=$3
rounds=${ROUNDS:-2}
parts=" ${PARTS:-shm16M parts16M small topk256M} "
want() { [[ $parts == *" $1 "* ]]; }
mkdir -p "$out/json"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

# start_server BIN NAME [BACKEND]: a server from BIN (CUDA unless told); sets $port and $shm_socket.
start_server() {
  local bin=$1 name=$2 backend=${3:-cuda}
  LD_LIBRARY_PATH="$bin/lib${COMMON_LIB:+:$COMMON_LIB}" "$bin/gpusort-server" --backend "$backend" --listen 127.0.0.1:0 --metrics-listen "" \
    --log-level warn --max-message-bytes 1073741824 --max-request-bytes 4294967296 --data-port 0 \
    --shm-socket "$work/$name.sock" --port-file "$work/$name.ports" >"$out/server-$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do [ -s "$work/$name.ports" ] && break; sleep 0.1; done
  # shellcheck disable=SC1090
  . "$work/$name.ports"
  port=$grpc_port
  shm_socket=$work/$name.sock
}

# run BIN NAME FLAGS...: one `gpusort bench` (the CLI of the same build), its summary line.
run() {
  local bin=$1 name=$2; shift 2
  LD_LIBRARY_PATH="$bin/lib${COMMON_LIB:+:$COMMON_LIB}" timeout 150 "$bin/gpusort" bench --server "127.0.0.1:$port" --no-progress \
    --format json --output "$out/json/$name.json" "$@" || echo "FAILED: $name $*"
  python3 -c "import json; r=json.load(open('$out/json/$name.json'))['rows'][0]; \
print(f\"{'$name':32s} ok={r['requests']:<7} err={r['errors']:<3} p50={r['latency_ms']['p50']:9.3f} ms \
p99={r['latency_ms']['p99']:9.3f} ms {r['requests_per_s']:10.1f} req/s\")" 2>/dev/null || true
}

for round in $(seq "$rounds"); do
  sides="before after"
  [ $((round % 2)) -eq 0 ] && sides="after before"  # alternate which goes first
  for side in $sides; do
    bin=$before; [ "$side" = after ] && bin=$after
    start_server "$bin" "$side-r$round"
    tag="r$round-$side"
    want shm16M && run "$bin" "$tag-shm16M-sort" --method sort --transport shm --shm-socket "$shm_socket" --count 16M --requests ${REQUESTS_16M:-20} --warmup 0.5 --payloads 2
    want parts16M && run "$bin" "$tag-parts16M-sort" --method sort --transport stream --stream-parts 8 --count 16M --requests ${REQUESTS_16M:-20} --warmup 0.5 --payloads 2 --check
    want parts16M && run "$bin" "$tag-stream16M-echo" --method echo --transport stream --count 16M --requests ${REQUESTS_16M:-20} --warmup 0.5 --payloads 2
    want small && run "$bin" "$tag-small-echo" --method echo --count 1000 --concurrency 64 --connections 8 --duration 5 --warmup 1
    want small && run "$bin" "$tag-small-sort" --method sort --count 1000 --concurrency 64 --connections 8 --duration 5 --warmup 1 --check
    want sockets16M && run "$bin" "$tag-sockets16M-sort" --method sort --transport sockets --stream-parts 8 --count 16M --requests ${REQUESTS_16M:-20} --warmup 0.5 --payloads 2
    want mid64K && run "$bin" "$tag-mid64K-cuda" --method sort --count 64K --concurrency 16 --connections 4 --duration 5 --warmup 1 --check
    kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
    if want mid64K; then
      start_server "$bin" "$side-r$round-cpu" cpu
      run "$bin" "$tag-mid64K-cpu" --method sort --count 64K --concurrency 16 --connections 4 --duration 5 --warmup 1 --check
      kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
    fi
    want topk256M || continue
    LD_LIBRARY_PATH="$bin/lib${COMMON_LIB:+:$COMMON_LIB}" timeout 120 "$bin/top_k_bench" --only f32_256M_k100 --no-full-sort \
      --json "$out/json/$tag-topk256M.json" >"$out/$tag-topk256M.log" 2>&1 || echo "FAILED: top_k_bench $tag"
    grep -E 'radix_select|copy_d2d' "$out/$tag-topk256M.log" | sed "s/^/$tag topk256M: /" | head -4
  done
done
tar -czf "$out/before-after-json.tar.gz" -C "$out/json" .
