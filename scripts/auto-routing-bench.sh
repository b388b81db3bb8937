#!/usr/bin/env bash
# AUTO's routing under load (issue 18): the same sorts against servers that differ only in where AUTO
# sends work, on a grid of sizes and concurrencies, and top-k per transport. Writes one gpusort bench
# JSON per server and size into OUT_DIR; bench/auto_routing_report.py turns them into the table.
#
#   scripts/auto-routing-bench.sh BIN_DIR OUT_DIR [--quick] [grid] [topk]
#
# Servers: cpu (--backend cpu: the CPU-only anchor), gpu (--auto-routing gpu: every AUTO call to the GPU,
# the GPU-only anchor), size (--auto-routing size), load (--auto-routing load, the default). All run at
# once; one is measured at a time (the others idle), in rounds that alternate between them, each round
# starting one server further along (3 rounds of 1 s cells; --quick: 1 round). Every server takes 1024
# calls in flight from one caller and as many shared-memory regions: the defaults (48 calls a caller, 16
# regions a user) refuse part of the 64-in-flight load, which then measures admission instead of routing
# (seen in the first run).
# grid: u32 sorts of 1K 16K 64K 256K 1M 16M keys at 1, 4, 16 and 64 in flight on 4 connections, each
# as one unary message at every size (gpusort bench's --transport default; the client library streams
# from 4 MiB): from 1M most of a call is spent outside the server, in gRPC and the client (bench JSON:
# 1M alone 7.9 ms p50, 1.3 of it in the server; 16M 385 ms, 7.7), the same on every server.
# topk: f32 top-100 of 1M and 16M keys over unary/stream and shared memory on each server.
# AUTO_ROUTING_SERVERS and AUTO_ROUTING_SIZES (space-separated) narrow the servers and the grid's sizes
# (a server named ROUTING-SUFFIX, such as gpu-b, is another server of that routing: a control that shows
# how far two servers of the same routing differ); AUTO_ROUTING_ROUNDS (3) and AUTO_ROUTING_DURATION
# (1 s a cell; 16M twice that) lengthen the grid.
set -uo pipefail
bin=$1 out=$2; shift 2
quick="" parts=""
for a in "$@"; do
  case $a in --quick) quick=1 ;; grid|topk) parts="$parts $a" ;; *) echo "unknown: $a" >&2; exit 2 ;; esac
done
[ -z "$parts" ] && parts=" grid topk"
want() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$out/json"
work=$(mktemp -d)

declare -A ports sockets pids
start_server() {  # start_server NAME FLAGS...: records its port and shared-memory socket
  local name=$1; shift
  rm -f "$work/$name.ports"
  "$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --log-level warn \
    --max-message-bytes 1073741824 --max-inflight 1024 --max-inflight-per-caller 1024 \
    --shm-max-regions 1024 --shm-max-regions-per-user 1024 --shm-max-bytes 68719476736 \
    --shm-max-bytes-per-user 68719476736 \
    --shm-socket "$work/$name.sock" --port-file "$work/$name.ports" "$@" \
    >"$out/server-$name.log" 2>&1 &
  pids[$name]=$!
  for _ in $(seq 300); do [ -s "$work/$name.ports" ] && break; sleep 0.1; done
  # shellcheck disable=SC1090
  . "$work/$name.ports"
  ports[$name]=$grpc_port
  sockets[$name]=$work/$name.sock
}

bench() {  # bench SERVER NAME FLAGS...: JSON to $out/json/NAME.json
  local server=$1 name=$2; shift 2
  timeout 300 "$bin/gpusort" bench --server "127.0.0.1:${ports[$server]}" --no-progress --format json \
    --output "$out/json/$name.json" "$@" >/dev/null 2>"$out/json/$name.err" || echo "FAILED: $name $*"
  tar -czf "$out/routing-json.tar.gz" -C "$out/json" .
}

# Every server runs from the start, idle but for the one measured: the rounds below alternate between
# them, so that the machine's drift (cells of one routing measured minutes apart differed by 10-20%
# where the routing was the same) falls on all alike; the report takes each cell's median over rounds.
servers=${AUTO_ROUTING_SERVERS:-cpu gpu size load}
for server in $servers; do
  case $server in
    cpu) start_server cpu --backend cpu ;;
    *) start_server "$server" --backend cuda --auto-routing "${server%%-*}" ;;  # gpu-b: a second gpu
  esac
done
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT

duration=${AUTO_ROUTING_DURATION:-1} warmup=0.3 rounds=${AUTO_ROUTING_ROUNDS:-3}
[ -n "$quick" ] && rounds=1
sizes=${AUTO_ROUTING_SIZES:-1K 16K 64K 256K 1M 16M}
if want grid; then
  for n in $sizes; do
    d=$duration
    [ "$n" = 16M ] && d=$(awk -v d="$duration" 'BEGIN { print d * 2 }')
    for round in $(seq "$rounds"); do
      # Each round starts one server further along, so no server is always measured right after the
      # same one (the tenth sitting's grid always measured load last, after gpu).
      read -ra order <<<"$servers"
      shift_by=$(( (round - 1) % ${#order[@]} ))
      for server in "${order[@]:shift_by}" "${order[@]:0:shift_by}"; do
        bench "$server" "grid-$server-$n-r$round" --method sort --count "$n" --concurrency-sweep 1,4,16,64 \
          --connections 4 --duration "$d" --warmup "$warmup" --payloads 4
      done
    done
    echo "grid $n done"
  done
fi
if want topk; then
  for server in $servers; do
    for n in 1M 16M; do
      bench "$server" "topk-$server-$n-grpc" --method topk -k 100 --dtype f32 --count "$n" --concurrency-sweep 1,16 \
        --connections 4 --duration 2 --warmup 0.5 --payloads 2
      bench "$server" "topk-$server-$n-shm" --method topk -k 100 --dtype f32 --count "$n" --transport shm \
        --shm-socket "${sockets[$server]}" --concurrency-sweep 1,16 --connections 4 --duration 2 \
        --warmup 0.5 --payloads 2
    done
  done
fi
echo "auto-routing-bench done"
