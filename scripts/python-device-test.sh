#!/usr/bin/env bash
# On the GPU machine: the Python client's tests, the device-memory ones included, against a gpusort-server
# on the CUDA backend, on the Python 3.11 bundle of scripts/python-device-bundle.sh.
#
# usage: scripts/python-device-test.sh PYDEV.tar.xz SERVER_BUNDLE_DIR OUT_DIR [pytest args...]
#   SERVER_BUNDLE_DIR: a ../shared/tools/device-bundle.sh folder holding gpusort-server (build/device)
set -uo pipefail
archive=${1:?usage: python-device-test.sh PYDEV.tar.xz SERVER_BUNDLE_DIR OUT_DIR}
server_dir=$(cd "${2:?}" && pwd)
out=${3:?}
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
unpacked=$(mktemp -d)
tar -C "$unpacked" -xJf "$archive"
mkdir -p "$out"
# The server's libraries first: the bundle's own copies of the same Debian libraries come second.
export LD_LIBRARY_PATH="$server_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUSORT_SERVER_BIN=$server_dir/gpusort-server GPUSORT_TEST_BACKEND=cuda
cd "$here/client/python"
"$unpacked/pydev/python" -m pytest -p no:cacheprovider -rs tests "$@" 2>&1 | tee "$out/python-device-tests.log"
exit "${PIPESTATUS[0]}"
