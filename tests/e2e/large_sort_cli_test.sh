#!/usr/bin/env bash
# 64M uint32 keys (256 MiB) through the CLI and a real server (CPU backend; GPUSORT_E2E_BACKEND=cuda on a GPU): the answer must come
# back complete and sorted (checked here with numpy against its own sort of the input file).
# usage: large_sort_cli_test.sh BUILD_BIN_DIR [COUNT]
set -euo pipefail
bin=$1
count=${2:-67108864}
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --backend "${GPUSORT_E2E_BACKEND:-cpu}" \
  --port-file "$work/ports" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -f "$work/ports" ] && break; sleep 0.05; done
[ -f "$work/ports" ] || { cat "$work/server.log"; fail "no port file"; }
. "$work/ports"
server=127.0.0.1:$grpc_port

"$bin/gpusort" gen --dtype u32 --count "$count" --seed 7 --out "$work/keys.npy"
start=$(date +%s%N)
"$bin/gpusort" sort --server "$server" --in "$work/keys.npy" --out "$work/sorted.npy" --verbose
end=$(date +%s%N)
echo "sorted $count u32 keys through the CLI in $(( (end - start) / 1000000 )) ms (gen excluded)"

# Debian's python3 (python3-numpy, from install-deps.sh) unless PYTHON says otherwise (the GPU machine).
"${PYTHON:-/usr/bin/python3}" - "$work/keys.npy" "$work/sorted.npy" "$count" <<'PY'
import sys, numpy as np
keys = np.load(sys.argv[1], mmap_mode="r")
out = np.load(sys.argv[2], mmap_mode="r")
n = int(sys.argv[3])
assert keys.dtype == np.uint32 and out.dtype == np.uint32, (keys.dtype, out.dtype)
assert keys.shape == (n,) and out.shape == (n,), (keys.shape, out.shape)
assert np.array_equal(np.sort(keys), out), "the answer is not the sorted input"
print(f"checked: {n} keys, sorted and complete")
PY
