#!/usr/bin/env bash
# On the GPU machine: device regions as their caller sees them (issue 44, target 5), in one call. Starts a
# CUDA gpusort-server from a device bundle, then ROUNDS times: device_region_bench (gRPC calls and calls on
# the shared-memory socket), bench/device_region_anchor.py (torch in its own process) and
# bench/device_region_python.py (a torch caller through gpusort's Python client, beside torch in the same
# process; the image's python3 with the stubs generated here: carry client/python/gpusort/v1).
#
# usage: scripts/device-region-run.sh BUNDLE_DIR OUT_DIR   (env ROUNDS, default 2; RUNS, default 30)
set -uo pipefail
bundle=$(cd "${1:?usage: device-region-run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
"$bundle/run" gpusort-server --backend cuda --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --port-file "$work/ports" --shm-socket "$work/gs.sock" --log-level warn > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 300); do [[ -s $work/ports ]] && grep -q grpc_port "$work/ports" && break; sleep 0.1; done
port=$(sed -n 's/^grpc_port=//p' "$work/ports")
[[ -n $port ]] || { echo "device-region-run.sh: the server did not start" >&2; cat "$out/server.log" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in $(seq "${ROUNDS:-2}"); do
  echo "## round $round"
  "$bundle/run" device_region_bench --target "127.0.0.1:$port" --shm-socket "$work/gs.sock" --runs "${RUNS:-30}"
  python3 "$here/bench/device_region_anchor.py" --runs "${RUNS:-30}"
  python3 "$here/bench/device_region_python.py" --target "127.0.0.1:$port" --shm-socket "$work/gs.sock" \
    --runs "${RUNS:-30}"
done
