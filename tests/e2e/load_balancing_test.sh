#!/usr/bin/env bash
# Client-side load balancing with retries, end to end: three gpusort-server processes on loopback,
# `gpusort bench` spreading checked Sorts from 8 threads over all three (--server a,b,c: round_robin
# with UNAVAILABLE retried), and one server stopped mid-run. No request may fail, and every server
# must have served some. Run once per way of stopping (default: TERM, a drain; KILL, the process gone
# at once, connections reset under calls in flight).
# usage: load_balancing_test.sh BUILD_BIN_DIR [TERM|KILL]...
set -euo pipefail
bin=$1
shift
signals=("$@")
[ ${#signals[@]} -gt 0 ] || signals=(TERM)
cli=$bin/gpusort
work=$(mktemp -d)
pids=()
bench_pid=""
cleanup() {
  local rc=$?
  [ -n "$bench_pid" ] && kill -KILL "$bench_pid" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done >&2
  fi
  # GPUSORT_E2E_KEEP=DIR keeps the logs (server logs with GPUSORT_E2E_SERVER_ARGS="--log-level debug").
  [ -n "${GPUSORT_E2E_KEEP:-}" ] && cp -r "$work/." "$GPUSORT_E2E_KEEP/" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Sort calls a server answered OK, from its /metrics (0 when it cannot be read).
served() {
  curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" |
    awk '/^gpusort_requests_total\{/ && /method="Sort"/ && /code="OK"/ { n += $NF } END { printf "%d\n", n }'
}

run_once() {
  local signal=$1
  local grpc_ports=() metrics_ports=()
  pids=()
  for i in 0 1 2; do
    "$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --backend cpu --workers 1 \
      --cpu-threads 1 --drain-timeout 10 --port-file "$work/ports$i" ${GPUSORT_E2E_SERVER_ARGS:-} \
      >"$work/server$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2; do
    for _ in $(seq 400); do [ -f "$work/ports$i" ] && break; sleep 0.05; done
    [ -f "$work/ports$i" ] || fail "server $i wrote no port file"
    . "$work/ports$i"
    grpc_ports+=("$grpc_port")
    metrics_ports+=("$metrics_port")
    rm -f "$work/ports$i"
  done
  local servers="127.0.0.1:${grpc_ports[0]},127.0.0.1:${grpc_ports[1]},127.0.0.1:${grpc_ports[2]}"

  # 8 threads of 1000-key sorts for 8 s, every answer checked; a failed request makes the exit code 3.
  "$cli" bench --server "$servers" --method sort --count 1000 --concurrency 8 --connections 2 \
    --duration 8 --warmup 0.5 --check --timeout 30 --no-progress --fail-on-error --format json \
    -o "$work/bench.json" >"$work/bench.log" 2>&1 &
  bench_pid=$!

  # Into the measurement, and every server serving, before one stops.
  sleep 3
  local before=() victim_served
  for i in 0 1 2; do before+=("$(served "${metrics_ports[$i]}")"); done
  victim_served=${before[1]}
  kill -"$signal" "${pids[1]}"
  local rc=0
  timeout 20 tail --pid="${pids[1]}" -f /dev/null || fail "server 1 did not exit after SIG$signal"
  { wait "${pids[1]}"; } 2>/dev/null || rc=$?
  if [ "$signal" = TERM ]; then [ "$rc" -eq 0 ] || fail "server 1 exited $rc after SIGTERM"; fi

  rc=0
  timeout 60 tail --pid="$bench_pid" -f /dev/null || fail "bench did not end"
  wait "$bench_pid" || rc=$?
  bench_pid=""
  [ "$rc" -eq 0 ] || { cat "$work/bench.log" "$work/bench.json" 2>/dev/null; fail "bench exited $rc (3: failed requests)"; }

  local requests errors
  requests=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rows'][0]['requests'])" "$work/bench.json")
  errors=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rows'][0]['errors'])" "$work/bench.json")
  [ "$errors" -eq 0 ] || fail "SIG$signal: $errors requests failed: $(cat "$work/bench.json")"
  [ "$requests" -gt 100 ] || fail "SIG$signal: only $requests requests in 8 s"
  [ "$victim_served" -gt 0 ] || fail "SIG$signal: the stopped server had served nothing before it stopped"
  local after
  for i in 0 2; do
    after=$(served "${metrics_ports[$i]}")
    [ "${before[$i]}" -gt 0 ] || fail "SIG$signal: server $i served nothing before the stop"
    [ "$after" -gt "${before[$i]}" ] || fail "SIG$signal: server $i served nothing after the stop"
  done
  echo "SIG$signal: $requests requests, 0 failed; served before the stop: ${before[*]}; server 1 stopped"
  for i in 0 2; do kill -TERM "${pids[$i]}"; wait "${pids[$i]}" || true; done
  pids=()
}

for signal in "${signals[@]}"; do run_once "$signal"; done
echo "load balancing: OK"
