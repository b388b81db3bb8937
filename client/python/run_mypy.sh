#!/usr/bin/env bash
# mypy --strict on the Python client package with mypy.ini (beside this script): every function typed, no
# error. tests/CMakeLists.txt's python.mypy runs it. The generated gRPC stubs (gpusort/v1/) are neither
# needed nor checked: mypy.ini takes them as Any, so a fresh clone checks the same as a built one.
# Uses the first python3 that has mypy and numpy (numpy's types are part of the check; Debian's mypy runs on
# /usr/bin/python3, which a pyenv or venv python3 earlier on PATH may hide). Exit 77 (ctest: skipped)
# when none has them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/find_python.sh" "mypy, numpy" "no python3 with mypy and numpy (scripts/install-deps.sh installs Debian's mypy)"
cd "$here"
exec "$python" -m mypy --strict --config-file mypy.ini gpusort "$@"
