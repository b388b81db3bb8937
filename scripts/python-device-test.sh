#!/usr/bin/env bash
# On the GPU machine: the Python client's tests, the device-memory ones included, against a gpusort-server
# on the CUDA backend, on either Python:
#   - PYDEV.tar.xz: this machine's Python 3.11 with Debian's grpcio (scripts/python-device-bundle.sh);
#   - image: the GPU machine's own python3 (3.12 with torch, grpcio and protobuf of its own, no grpc_tools),
#     for torch's CUDA tensors (test_torch.py). It imports the stubs generated here: carry
#     client/python/gpusort/v1 (git-ignored) with the call.
#
# usage: scripts/python-device-test.sh PYDEV.tar.xz|image SERVER_BUNDLE_DIR OUT_DIR [pytest args...]
#   SERVER_BUNDLE_DIR: a ../shared/tools/device-bundle.sh folder holding gpusort-server (build/device)
set -uo pipefail
python_from=${1:?usage: python-device-test.sh PYDEV.tar.xz|image SERVER_BUNDLE_DIR OUT_DIR}
server_dir=$(cd "${2:?}" && pwd)
out=${3:?}
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
if [[ $python_from == image ]]; then
  python=python3
  if [[ ! -f $here/client/python/gpusort/v1/sort_pb2.py ]]; then
    echo "python-device-test.sh: no client/python/gpusort/v1 stubs: generate them here and carry them" >&2
    exit 2
  fi
  log=$out/python-image-tests.log
else
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$python_from"
  python=$unpacked/pydev/python
  log=$out/python-device-tests.log
fi
# The server's libraries first: the bundle's own copies of the same Debian libraries come second.
# (The image's python3 is started with the system's libraries: the server's path is only the server's.)
export GPUSORT_SERVER_BIN=$server_dir/gpusort-server GPUSORT_TEST_BACKEND=cuda
cd "$here/client/python"
if [[ $python_from == image ]]; then
  cat > "$out/gpusort-server-wrapper" <<WRAP
#!/usr/bin/env bash
LD_LIBRARY_PATH="$server_dir/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$server_dir/gpusort-server" "\$@"
WRAP
  chmod +x "$out/gpusort-server-wrapper"
  GPUSORT_SERVER_BIN=$out/gpusort-server-wrapper "$python" -m pytest -p no:cacheprovider -rs tests "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  rm -f "$out/gpusort-server-wrapper"
  exit "$status"
fi
export LD_LIBRARY_PATH="$server_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$python" -m pytest -p no:cacheprovider -rs tests "$@" 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
