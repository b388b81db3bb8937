#!/usr/bin/env bash
# The Python client's tests (client/python/tests) against the checkout's server on the CPU backend:
#   client/python/run_tests.sh DIR_OF_GPUSORT_SERVER [pytest args...]
# Uses the first python3 that has grpc, numpy and pytest (Debian's are built for /usr/bin/python3, which a
# pyenv or venv python3 earlier on PATH may hide). Exit 77 (ctest: skipped) when none has them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server_dir=${1:?usage: run_tests.sh DIR_OF_GPUSORT_SERVER}
shift
. "$here/find_python.sh" "grpc, grpc_tools, numpy, pytest" "no python3 with grpc, grpc_tools, numpy and pytest (scripts/install-deps.sh installs them)"
export GPUSORT_SERVER_BIN=$server_dir/gpusort-server
cd "$here"
# GPUSORT_PYTEST_PATHS: which test files (default all of tests/; ctest runs test_dask.py on its own).
exec "$python" -m pytest -q -p no:cacheprovider ${GPUSORT_PYTEST_PATHS:-tests} "$@"
