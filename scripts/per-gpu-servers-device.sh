#!/usr/bin/env bash
# The control for "one server on two GPUs": issue 18's mix with its keys on the GPUs served three ways in
# one device call, alternating rounds:
#   one         one server on GPU 0, the load's 64 callers on it (the baseline);
#   two_in_one  one server on GPUs 0 and 1 (--cuda-devices 0,1), the same 64 callers, 32 a GPU
#               (mixed_load_bench --gpus 2 puts worker w's arrays on GPU w % 2);
#   split       two servers, one a GPU (CUDA_VISIBLE_DEVICES), each with a load of its own of 32 callers
#               (as an operator ran gpusort before --cuda-devices), the two loads at once; req/s summed.
# If two_in_one falls short of 2x one, split says whether the server is to blame or the node (the host's
# cores, memory and driver, which both GPUs share whichever way they are served).
#
#   here:  scripts/multi-gpu-device.sh bundle && scripts/mix-ab-device.sh keep NAME   # build/NAME.tar.xz
#   GPU:   scripts/per-gpu-servers-device.sh OUT NAME [ROUNDS [STREAMS]]
#          (run(command=..., carry=['build/NAME.tar.xz'], kind='nvidia-h100-x2'))
#
# STREAMS is each server's --cuda-streams (16 unless given, as the mix probe's figures). Each cell runs the
# load for 12 s after 4 of warm-up. OUT gets summary.txt (each load's line and each GPU's busy SMs from
# nvidia-smi dmon), the loads' and servers' logs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

out=${1:?OUT}
name=${2:?NAME}
rounds=${3:-2}
streams=${4:-16}
[ -d "build/$name" ] || tar -xJf "build/$name.tar.xz" -C build || exit 1
run=build/$name/run

server() {  # server VISIBLE PORT SOCKET DEVICES LOG
  CUDA_VISIBLE_DEVICES=$1 $run gpusort-server --listen "127.0.0.1:$2" --metrics-listen "" --backend cuda \
    --cuda-devices "$4" --cuda-streams "$streams" --max-inflight 1024 --max-inflight-per-caller 1024 \
    --shm-socket "$3" --shm-max-regions 1024 --shm-max-regions-per-user 1024 --shm-max-bytes 137438953472 \
    --shm-max-bytes-per-user 137438953472 > "$5" 2>&1 &
  servers+=" $!"
}

load() {  # load VISIBLE PORT SOCKET GPUS IN_FLIGHT LOG
  CUDA_VISIBLE_DEVICES=$1 $run mixed_load_bench --server "127.0.0.1:$2" --shm-socket "$3" --in-device --gpus "$4" \
    --concurrency "$5" --connections 8 --duration 12 --warmup 4 > "$6" 2>&1 &
  loads+=" $!"
}

mkdir -p "$out"
a=/tmp/gpusort-per-gpu-a-$$.sock
b=/tmp/gpusort-per-gpu-b-$$.sock
for round in $(seq 1 "$rounds"); do
  for cell in one two_in_one split; do
    tag=${cell}_r$round servers="" loads=""
    case $cell in
      one) server 0,1 50151 "$a" 0 "$out/server_$tag.log"; sleep 4
           load 0,1 50151 "$a" 1 64 "$out/load_$tag.log" ;;
      two_in_one) server 0,1 50151 "$a" 0,1 "$out/server_$tag.log"; sleep 4
           load 0,1 50151 "$a" 2 64 "$out/load_$tag.log" ;;
      split) server 0 50151 "$a" 0 "$out/server_${tag}_gpu0.log"
           server 1 50152 "$b" 0 "$out/server_${tag}_gpu1.log"; sleep 4
           load 0 50151 "$a" 1 32 "$out/load_${tag}_gpu0.log"
           load 1 50152 "$b" 1 32 "$out/load_${tag}_gpu1.log" ;;
    esac
    sleep 7  # inside the timed part
    nvidia-smi dmon -s u -c 5 > "$out/dmon_$tag.txt" 2>&1
    # shellcheck disable=SC2086  # the lists of pids are meant to split
    wait $loads
    # shellcheck disable=SC2086
    kill $servers
    # shellcheck disable=SC2086
    wait $servers
    for f in "$out"/load_"$tag"*.log; do
      echo "$(basename "$f" .log): $(grep -m1 '^  all' "$f")"
    done | tee -a "$out/summary.txt"
    awk '$1 ~ /^[0-9]+$/ {sm[$1] += $2; n[$1]++}
         END {for (g in sm) printf "  GPU %s SM busy %.0f%%\n", g, sm[g] / n[g]}' \
      "$out/dmon_$tag.txt" | tee -a "$out/summary.txt"
  done
done
