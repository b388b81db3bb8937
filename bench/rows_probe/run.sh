#!/usr/bin/env bash
# A probe of the rows tile kernel (kernels/src/bitonic_network.cuh) that needs no build here: each VARIANT
# is a folder holding an edited copy of bitonic_network.cuh (and of bitonic_tiles.h, if the edit needs
# one), which rows_probe.cu includes ahead of kernels/src. On the GPU machine this compiles one probe per
# variant with nvcc, prints each one's SASS instruction counts for the 256- and 1024-key row kernels
# (cuobjdump), and times them alternating, two rounds: 65536 x 256 and 16384 x 1024 u32 rows, events
# around the kernel, median of 30 after 3 warm-ups with the L2 flushed, every row checked against
# std::sort. How the rows kernel of issue 18's sixth step was chosen (docs/benchmarks-log.md).
#
#   mkdir -p v0 vA && cp kernels/src/bitonic_network.cuh v0/ && cp kernels/src/bitonic_network.cuh vA/  # edit vA
#   run(command="bench/rows_probe/run.sh /tmp/rp $PWD/v0 $PWD/vA")
#
# rows_probe.cu sets TileJob::whole_tiles (the vector path of whole rows) wherever the TileJob it sees has it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1; shift
mkdir -p "$out"
flags="-std=c++17 -O3 -arch=sm_90 -I$here/../../kernels/src -I$here/../../kernels/include"
for v in "$@"; do
  name=$(basename "$v")
  nvcc -I"$v" $flags -o "$out/probe_$name" "$here/rows_probe.cu" 2>&1 | tail -3
  cuobjdump -sass "$out/probe_$name" > "$out/$name.sass" 2>&1
  for lp in 8 10; do
    counts=$(awk -v p="Li${lp}ELb0" '/Function :/{f = index($0, p) > 0} f' "$out/$name.sass" |
      sed -nE 's#^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z0-9_]+).*#\2#p' | sort | uniq -c | sort -rn |
      head -16 | tr '\n' ' ')
    echo "== $name, TileKernel of 2^$lp keys: $counts"
  done
done
for round in 1 2; do
  for v in "$@"; do "$out/probe_$(basename "$v")" "$(basename "$v")" 30; done
done
