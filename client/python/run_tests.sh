#!/usr/bin/env bash
# The Python client's tests (client/python/tests) against the checkout's server on the CPU backend:
#   client/python/run_tests.sh DIR_OF_GPUSORT_SERVER [pytest args...]
# Uses the first python3 that has grpc, numpy and pytest (Debian's are built for /usr/bin/python3, which a
# pyenv or venv python3 earlier on PATH may hide). Exit 77 (ctest: skipped) when none has them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server_dir=${1:?usage: run_tests.sh DIR_OF_GPUSORT_SERVER}
shift
python=
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -c 'import grpc, grpc_tools, numpy, pytest' 2>/dev/null; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: no python3 with grpc, grpc_tools, numpy and pytest (scripts/install-deps.sh installs them)"
  exit 77
fi
export GPUSORT_SERVER_BIN=$server_dir/gpusort-server
cd "$here"
exec "$python" -m pytest -q -p no:cacheprovider tests "$@"
