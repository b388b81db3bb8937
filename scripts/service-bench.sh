#!/usr/bin/env bash
# The service's speed, measured with `gpusort bench` beside the server's own EchoService in the same run
# (BENCHMARKS.md "Service"). Starts CUDA servers on loopback and writes one JSON file per measurement
# into OUT_DIR; bench/service_report.py turns them into the tables.
#
#   scripts/service-bench.sh BIN_DIR OUT_DIR [--quick] [sizes] [chunks] [small] [stream16] [split] [probe] [sockets]
#
# BIN_DIR holds gpusort-server and gpusort (build/bin here, build/device on the GPU machine). The named
# parts run (sizes, chunks and small when none is named; stream16 repeats the 16M streaming figures with
# more requests; split measures where a streamed sort's time goes; probe the 16M parted sort and echo
# with reused and fresh answer memory, on servers with different malloc settings; sockets the sorts over the
# data port, SortOnSockets, beside the same sorts through gRPC and the plain-TCP floor). After each
# measurement OUT_DIR/service-json.tar.gz holds every JSON so far, so that a run cut short still brings
# back what it measured.
set -uo pipefail
bin=$1 out=$2; shift 2
quick="" parts=""
for a in "$@"; do
  case $a in --quick) quick=1 ;; sizes|chunks|small|stream16|split|probe|sockets) parts="$parts $a" ;; *) echo "unknown: $a" >&2; exit 2 ;; esac
done
[ -z "$parts" ] && parts=" sizes chunks small"
want() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$out/json"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

# start_server NAME FLAGS...: a CUDA server whose message limit lets every unary size through, as the
# echo's does; sets $port.
start_server() {
  local name=$1; shift
  # shellcheck disable=SC2086
  env ${server_env:-} "$bin/gpusort-server" --backend "${GPUSORT_BENCH_BACKEND:-cuda}" --listen 127.0.0.1:0 --metrics-listen "" \
    --log-level warn --max-message-bytes 1073741824 --max-request-bytes 4294967296 \
    --shm-socket "$work/$name.sock" --data-port 0 --port-file "$work/$name.ports" "$@" >"$out/server-$name.log" 2>&1 &
  for _ in $(seq 300); do [ -s "$work/$name.ports" ] && break; sleep 0.1; done
  # shellcheck disable=SC1090
  . "$work/$name.ports"
  port=$grpc_port
  shm_socket=$work/$name.sock
}

# run NAME FLAGS...: one measurement, JSON to $out/NAME.json, the table line to stdout.
run() {
  local name=$1; shift
  timeout 150 "$bin/gpusort" bench --server "127.0.0.1:$port" --no-progress --format json \
    --output "$out/json/$name.json" "$@" || echo "FAILED: $name $*"
  tar -czf "$out/service-json.tar.gz" -C "$out/json" .
  python3 -c "import json,sys; r=json.load(open('$out/json/$name.json'))['rows'][0]; \
print(f\"{'$name':34s} ok={r['requests']:<6} err={r['errors']:<3} p50={r['latency_ms']['p50']:9.3f} ms \
p99={r['latency_ms']['p99']:9.3f} ms {r['requests_per_s']:9.1f} req/s\")" 2>/dev/null || true
}

# floor NAME BYTES CONNECTIONS REQUESTS: the same bytes over plain loopback TCP (bench/tcp_floor), both
# patterns (echo; store-and-forward, which answers only once every part has arrived), on the same
# number of connections as the service row beside it: the network path's floor (issue 18).
floor() {
  local name=$1 bytes=$2 conns=$3 reqs=$4
  if [ ! -x "$bin/tcp_floor" ]; then echo "tcp_floor: not in $bin, floor rows skipped"; return; fi
  for pattern in echo store; do
    timeout 150 "$bin/tcp_floor" --bytes "$bytes" --connections "$conns" --pattern "$pattern" --requests "$reqs" \
      --warmup 2 --json "$out/json/$name-tcp-$pattern.json" || echo "FAILED: floor $name $pattern"
  done
  tar -czf "$out/service-json.tar.gz" -C "$out/json" .
}

# The connections a streamed sort of BYTES uses: the client's parts from 16 MiB (8), else one.
stream_connections() { if [ "$1" -ge $((16 << 20)) ]; then echo 8; else echo 1; fi; }
size_bytes() { case $1 in *K) echo $((${1%K} << 12)) ;; *M) echo $((${1%M} << 22)) ;; *) echo $(($1 * 4)) ;; esac; }

start_server main
# 1. Where the time goes, by size: sort and echo over each transport; kernel time comes from kernel_bench.
sizes="1K 64K 1M 16M 64M 256M"
[ -n "$quick" ] && sizes="1K 1M 16M"
want sizes || sizes=""
for n in $sizes; do
  case $n in
    1K|64K) reqs=300 ;; 1M) reqs=100 ;; 16M) reqs=12 ;; 64M) reqs=5 ;; *) reqs=3 ;;
  esac
  common=(--count "$n" --requests "$reqs" --warmup 0.5 --payloads 2 --check)
  for transport in unary stream; do
    [ "$n" = 256M ] && [ "$transport" = unary ] && continue  # 1 GiB is over gRPC's message limit
    run "size-$n-sort-$transport" --method sort --transport "$transport" "${common[@]}"
    run "size-$n-echo-$transport" --method echo --transport "$transport" "${common[@]}"
  done
  # The keys over the data port beside gRPC (SortOnSockets): parts of at least 1 MiB, at most 8.
  run "size-$n-sort-sockets" --method sort --transport sockets --stream-parts 8 "${common[@]}"
  # The floor beside them: one connection (unary, one stream, the echo) and the streamed sort's parts.
  bytes=$(size_bytes "$n")
  floor "size-$n-x1" "$bytes" 1 "$reqs"
  stream_conns=$(stream_connections "$bytes")
  [ "$stream_conns" -gt 1 ] && floor "size-$n-x$stream_conns" "$bytes" "$stream_conns" "$reqs"
  # No --check here: it copies the answer out of the region inside the timed call (tests check shm).
  run "size-$n-sort-shm" --method sort --transport shm --shm-socket "$shm_socket" --count "$n" --requests "$reqs" \
    --warmup 0.5 --payloads 2
done

# 1b. The issue's streaming figures alone, with more requests: 16M u32 sort streamed on one stream and
# split over 4 and 8 streams on as many connections (--stream-parts; the client's default is 8), beside
# the streamed echo on one stream, the same bytes echoed as 4 streams at once, and the unary sort;
# alternating so that drift hits all of them.
if want stream16; then
  for round in 1 2 3; do
    for n_parts in 1 4 8; do
      run "s16-r$round-sort-stream-p$n_parts" --method sort --transport stream --stream-parts "$n_parts" --count 16M --requests 20 --warmup 0.5 --payloads 2
    done
    run "s16-r$round-echo-stream" --method echo --transport stream --count 16M --requests 20 --warmup 0.5 --payloads 2
    run "s16-r$round-echo-stream-4x4M" --method echo --transport stream --count 4M --concurrency 4 --connections 4 --requests 80 --warmup 0.5 --payloads 4
    # The same 64 MiB echoed in 8 parts at once, each on its own connection: the parted sort's gRPC floor.
    run "s16-r$round-echo-stream-p8" --method echo --transport stream --stream-parts 8 --count 16M --requests 20 --warmup 0.5 --payloads 2
    run "s16-r$round-sort-unary" --method sort --transport unary --count 16M --requests 10 --warmup 0.5 --payloads 2
    floor "s16-r$round-x8" $((64 << 20)) 8 20
    floor "s16-r$round-x1" $((64 << 20)) 1 20
  done
fi

# 1c. Sockets beside gRPC (SortOnSockets, the server's --data-port): the 16M sort over the data port in 8
# parts beside the same sort through gRPC in 8 streamed parts and the plain-TCP floor on 8 connections,
# three alternating rounds; then 1M (4 parts of 1 MiB), 64M and 256M over the data port beside their
# floors; then one run of 16M that checks every answer (outside the timed rows: --check copies).
if want sockets; then
  for round in 1 2 3; do
    run "sock-r$round-16M-sockets-p8" --method sort --transport sockets --stream-parts 8 --count 16M --requests 20 --warmup 0.5 --payloads 2
    run "sock-r$round-16M-stream-p8" --method sort --transport stream --stream-parts 8 --count 16M --requests 20 --warmup 0.5 --payloads 2
    floor "sock-r$round-16M-x8" $((64 << 20)) 8 20
  done
  for n in 1M 64M 256M; do
    case $n in 1M) reqs=100 conns=4 ;; 64M) reqs=8 conns=8 ;; *) reqs=4 conns=8 ;; esac
    run "sock-$n-sockets" --method sort --transport sockets --stream-parts 8 --count "$n" --requests "$reqs" --warmup 0.5 --payloads 2
    floor "sock-$n-x$conns" "$(size_bytes "$n")" "$conns" "$reqs"
  done
  run "sock-16M-checked" --method sort --transport sockets --stream-parts 8 --count 16M --requests 10 --payloads 2 --check
  run "sock-16M-argsort-checked" --method sort --transport sockets --stream-parts 8 --count 16M --requests 5 --payloads 2 --argsort --check
fi

# 1d. Where the parted sort's time goes beside gRPC's: 64 MiB echoed and sorted in 8 parts, each answer
# in the bench thread's reused memory and in fresh memory (--fresh-answers), on servers whose malloc
# differs (glibc's defaults; transparent huge pages for its large blocks; large blocks kept, not given
# back), beside 8 independent 8 MiB echoes in flight and the TCP floor.
if want probe; then
  for variant in plain hugetlb keep; do
    case $variant in
      plain) server_env="" ;;
      hugetlb) server_env="GLIBC_TUNABLES=glibc.malloc.hugetlb=1" ;;
      keep) server_env="GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296" ;;
    esac
    start_server "probe-$variant"
    common=(--transport stream --stream-parts 8 --count 16M --requests 10 --warmup 0.5 --payloads 2)
    run "probe-$variant-echo-p8" --method echo "${common[@]}"
    run "probe-$variant-echo-p8-fresh" --method echo "${common[@]}" --fresh-answers
    run "probe-$variant-sort-p8" --method sort "${common[@]}"
    run "probe-$variant-sort-p8-fresh" --method sort "${common[@]}" --fresh-answers
    run "probe-$variant-echo-8x2M" --method echo --transport stream --count 2M --concurrency 8 --connections 8 --requests 80 --warmup 0.5 --payloads 8
  done
  server_env=""
  floor "probe-x8" $((64 << 20)) 8 20
fi

# 1c. Where a streamed 16M sort's time goes. A TopK with k = 1 streams the same 64 MiB up and answers
# with one key, so it is the upload alone; the sort is upload + device + download; the echo overlaps its
# upload with its download. Then the same 64 MiB split over 4 and 8 streamed echoes in flight at once,
# on as many connections, to see whether more streams move the bytes faster than one.
if want split; then
  for round in 1 2; do
    run "split-r$round-topk1-stream" --method topk -k 1 --transport stream --count 16M --requests 10 --warmup 0.5 --payloads 2
    run "split-r$round-sort-stream" --method sort --transport stream --stream-parts 1 --count 16M --requests 10 --warmup 0.5 --payloads 2
    run "split-r$round-echo-stream" --method echo --transport stream --count 16M --requests 10 --warmup 0.5 --payloads 2
    run "split-r$round-echo-stream-4x4M" --method echo --transport stream --count 4M --concurrency 4 --connections 4 --requests 40 --warmup 0.5 --payloads 4
    run "split-r$round-echo-stream-8x2M" --method echo --transport stream --count 2M --concurrency 8 --connections 8 --requests 80 --warmup 0.5 --payloads 8
  done
fi

# 2. Chunk size of the streaming RPCs, 16M keys (64 MiB), sort beside echo.
if [ -z "$quick" ] && want chunks; then
  for chunk in 256K 1M 4M 16M; do
    run "chunk-$chunk-sort" --method sort --transport stream --count 16M --chunk-bytes "$chunk" --requests 10 --warmup 0.5 --payloads 2
    run "chunk-$chunk-echo" --method echo --transport stream --count 16M --chunk-bytes "$chunk" --requests 10 --warmup 0.5 --payloads 2
  done
fi

# 3. Many small requests: 1000 u32 keys, 64 in flight, on 1 and 8 connections.
want small || exit 0
for conns in 1 8; do
  run "small-c64-x$conns-echo" --method echo --count 1000 --concurrency 64 --connections "$conns" --duration 5 --warmup 1
  run "small-c64-x$conns-sort" --method sort --count 1000 --concurrency 64 --connections "$conns" --duration 5 --warmup 1 --check
done
floor small 4000 1 2000  # one request at a time: each call's floor, not 64 in flight's
start_server inline --inline-max-keys 4096
for conns in 1 8; do
  run "small-c64-x$conns-sort-inline" --method sort --count 1000 --concurrency 64 --connections "$conns" --duration 5 --warmup 1 --check
done
