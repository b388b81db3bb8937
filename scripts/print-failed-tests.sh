#!/usr/bin/env bash
# After a failed ctest run: prints, last, the output of each failed test (its final 80 lines, each cut at 400 characters), so that a
# CI report that keeps only the end of the log still shows why. ctest's --output-on-failure prints it
# too, but in the middle of the log, among the tests that ran beside it.
# usage: print-failed-tests.sh BUILD_DIR
set -uo pipefail
dir=${1:-build}/Testing/Temporary
[ -s "$dir/LastTestsFailed.log" ] || exit 0
echo
echo "=== failed tests, with the end of their output ==="
while IFS= read -r line; do
  name=${line#*:}
  echo
  echo "--- $name"
  # LastTest.log holds "N/M Test: NAME", then the output between "Output:" and "<end of output>".
  awk -v name="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); current = ($0 == name); next }
    current && /^<end of output>$/ { current = 0 }
    current { print }
  ' "$dir/LastTest.log" | cut -c1-400 | tail -n 80
done < "$dir/LastTestsFailed.log"
