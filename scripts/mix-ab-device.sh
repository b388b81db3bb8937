#!/usr/bin/env bash
# Two builds (or more) of the server under the same mixed load in one device call, alternating: what a change to the
# engine is worth, measured beside the build without it on the same machine (calls on different machines
# differed by up to 15% in the thirteenth sitting). Each run is one `multi-gpu-device.sh --mix-probe`
# spec (scripts/multi-gpu-device.sh says what a spec is and what a run records).
#
#   here:  scripts/multi-gpu-device.sh bundle && scripts/mix-ab-device.sh keep before   # build/before.tar.xz
#          (change the code) scripts/multi-gpu-device.sh bundle && scripts/mix-ab-device.sh keep after
#   GPU:   scripts/mix-ab-device.sh device OUT "before after" "0,1 0 64 16;0 0 64 16" [ROUNDS]
#          (run(command=..., carry=['build/before.tar.xz', 'build/after.tar.xz'], kind='nvidia-h100-x2'))
#
# Each round runs every spec on each build in the order named (three builds of ~19 MB fit the device
# call's 64 MiB carry). OUT gets ab.txt (the lines that matter, each marked with its
# build and round) and runs.tar.gz (every run's logs).
set -uo pipefail
cd "$(dirname "$0")/.."

keep() {  # keep NAME: build/device (a multi-gpu-device.sh bundle) as build/NAME.tar.xz, its folder NAME
  set -e
  local name=$1
  [[ $name =~ ^[a-z0-9_]+$ ]] || { echo "NAME: lower-case letters, digits and _" >&2; exit 2; }
  [ -d build/device ] || { echo "no build/device: run scripts/multi-gpu-device.sh bundle first" >&2; exit 2; }
  rm -rf "build/$name"
  cp -a build/device "build/$name"
  tar -cf - -C build "$name" | xz -T2 -6 > "build/$name.tar.xz"
  rm -rf "build/$name"
  du -sh "build/$name.tar.xz"
}

device() {
  local out=$1 builds=$2 specs=$3 rounds=${4:-2}
  mkdir -p "$out/runs"
  local name
  for name in $builds; do
    [ -d "build/$name" ] || tar -xJf "build/$name.tar.xz" -C build || exit 1
  done
  # multi-gpu-device.sh runs build/device/run: point it at each build in turn.
  if [ -e build/device ] && [ ! -L build/device ]; then mv build/device build/device.before-ab; fi
  local round
  for round in $(seq 1 "$rounds"); do
    for name in $builds; do
      rm -f build/device
      ln -s "$name" build/device
      MIX_PROBE_SPECS="$specs" scripts/multi-gpu-device.sh device "$out/runs/${name}_$round" --no-tests --keys "" \
        --mix-probe > "$out/runs/${name}_$round.txt" 2>&1
      grep -A60 '^0' "$out/runs/${name}_$round/summary.txt" | grep -E '^0|busy|calls/s|waits: +(all|gs-shm)' |
        sed "s/^/$name round $round: /" >> "$out/ab.txt"
    done
  done
  rm -f build/device
  # What comes back from a device call is at most 8 files: ab.txt and one archive of the runs.
  tar -czf "$out/runs.tar.gz" -C "$out" runs && rm -rf "$out/runs"
  cat "$out/ab.txt"
}

case ${1:-} in
  keep) shift; keep "$@" ;;
  device) shift; device "$@" ;;
  *) echo "usage: $0 keep NAME | device OUT \"A B [C]\" SPECS [ROUNDS]" >&2; exit 2 ;;
esac
