#!/usr/bin/env bash
# On the GPU machine: two builds of large_sort_bench alternating, round by round, in one call (issue 44's
# out-of-core comparisons: the runs merged on the host against the buckets of sort_in_buckets.h, one
# build each). Each bundle is a ../shared/tools/device-bundle.sh folder holding large_sort_bench.
#
#   here:  ../shared/tools/device-bundle.sh build/lsb-a build/bin/large_sort_bench   (first build)
#          ../shared/tools/device-bundle.sh build/lsb-b build/bin/large_sort_bench   (second build)
#   there: scripts/large-sort-ab.sh build/lsb-a build/lsb-b OUT [large_sort_bench flags...]
#          (default flags: --keys 4G --devices 0 --memory-limit 4G --repeats 1; env ROUNDS, default 2)
set -uo pipefail
a=$(cd "${1:?usage: large-sort-ab.sh BUNDLE_A BUNDLE_B OUT [flags...]}" && pwd)
b=$(cd "${2:?}" && pwd)
out=${3:?}
shift 3
flags=("$@")
[[ ${#flags[@]} -gt 0 ]] || flags=(--keys 4G --devices 0 --memory-limit 4G --repeats 1)
mkdir -p "$out"
for round in $(seq "${ROUNDS:-2}"); do
  for bundle in "$a" "$b"; do
    echo "== round $round: $(basename "$bundle")"
    "$bundle/run" large_sort_bench "${flags[@]}" 2>&1 | tail -2
  done
done | tee "$out/large-sort-ab.log"
