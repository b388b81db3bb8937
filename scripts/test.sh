#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs, builds, runs ctest.
# GPU tests skip themselves where there is no GPU. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Shape (issue 15): no function in server/, client/ or kernels/ over 80 lines without a written reason.
python3 scripts/check-function-length.py server client kernels
scripts/build.sh "$@"
cd build
status=0
ctest --output-on-failure --timeout 900 -j "$(nproc)" || status=$?
[ "$status" -eq 0 ] || ../scripts/print-failed-tests.sh .
exit "$status"
