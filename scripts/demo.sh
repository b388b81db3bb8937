#!/usr/bin/env bash
# From a fresh clone: installs, builds, starts gpusort-server (CPU backend where there is no GPU),
# and sorts and selects top-k through the gpusort CLI against it. The server stops at the end;
# pass --keep to leave it running.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0; [ "${1:-}" = "--keep" ] && keep=1
scripts/install-deps.sh
scripts/build.sh

work=$(mktemp -d)
build/bin/gpusort-server --listen 127.0.0.1:50051 --metrics-listen 127.0.0.1:9464 \
  --port-file "$work/ports" >"$work/server.log" 2>&1 &
server_pid=$!
stop() { [ $keep = 1 ] || { kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true; }; }
trap stop EXIT
for _ in $(seq 100); do [ -f "$work/ports" ] && break; sleep 0.1; done
[ -f "$work/ports" ] || { cat "$work/server.log"; echo "the server did not start" >&2; exit 1; }
head -n 1 "$work/server.log"

cli=build/bin/gpusort
export GPUSORT_SERVER=127.0.0.1:50051
echo "== health";                     $cli health
echo "== 1M random float32 keys";     $cli gen --dtype f32 --count 1000000 --out "$work/keys.npy"
echo "== sort them (descending)";     $cli sort --in "$work/keys.npy" --out "$work/sorted.npy" --descending --verbose
echo "== top 5 of them";              $cli topk --in "$work/keys.npy" --out "$work/top5.txt" -k 5 --verbose
cat "$work/top5.txt"
echo "== a small text file";          printf '3\n-1\n2.5\nnan\n-inf\n0\n-0\n' > "$work/small.txt"
$cli sort --in "$work/small.txt" --dtype f64 --out "$work/small-sorted.txt"
cat "$work/small-sorted.txt"
echo "== from Python (client/python, checked against numpy)"
/usr/bin/python3 client/python/examples/quickstart.py
echo "== metrics (first lines)";      curl -s http://127.0.0.1:9464/metrics | grep '^gpusort_requests_total' | head -5
[ $keep = 1 ] && echo "server left running (pid $server_pid) on 127.0.0.1:50051, metrics on :9464"
echo "demo done"
