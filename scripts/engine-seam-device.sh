#!/usr/bin/env bash
# Issue 42's engine seam (Backend::Run, the set's merge across GPUs) on the GPU machine: the CUDA engine's
# suites that go through the seam, then, with `bench`, the before/after figures of before-after-bench.sh.
#   here:        bundle build/seam (device-bundle.sh: the server, CLI and GPU tests of this build, and a
#                "before" server and CLI in build/seam/before), tar it with xz into build/seam.tar.xz
#   GPU machine: scripts/engine-seam-device.sh tests "$OUT"     # carry build/seam.tar.xz
#                scripts/engine-seam-device.sh rest "$OUT"      # two GPUs
#                scripts/engine-seam-device.sh leases "$OUT"    # two GPUs
#                scripts/engine-seam-device.sh transport "$OUT"  # the transport layer (issue 42 part B)
#                scripts/engine-seam-device.sh bench "$OUT"
#                scripts/engine-seam-device.sh suites "$OUT"    # two GPUs: every GPU suite, one lane a GPU
#                scripts/engine-seam-device.sh mix "$OUT"       # two GPUs: the two-GPU mix, before and after
#   SEAM_BUNDLE=NAME takes build/NAME.tar.xz instead (issue 42's last gate: `gate`, every suite's binary
#   and mixed_load_bench beside the server, CLI and service tests).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=$1 out=$2 bundle=${SEAM_BUNDLE:-seam}
b=/tmp/$bundle
[ -d "$b" ] || tar -xJf "build/$bundle.tar.xz" -C /tmp
nvidia-smi -L > "$out/gpu.txt" 2>&1
step() {  # name, then the command; one line each in summary.txt
  local name=$1; shift
  local start=$SECONDS
  if "$@" > "$out/$name.log" 2>&1; then echo "PASS $name $((SECONDS - start)) s"; else echo "FAIL $name $((SECONDS - start)) s"; fi \
    | tee -a "$out/summary.txt"
}
case $mode in
  tests)
    for t in pinned_ranges_test device_region_test stream_memory_test sort_ingest_test \
             gpu_job_source_test gpu_oom_test gpu_fault_test device_merged_sort_test; do
      step "$t" timeout 300 "$b/run" "$t" --gtest_brief=1
    done
    ;;
  rest)  # cuda_backend_test (about 6 minutes on one GPU) in two shards, one a GPU, then the multi-GPU suites
    shard() { CUDA_VISIBLE_DEVICES=$1 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$1 timeout 400 "$b/run" cuda_backend_test --gtest_brief=1; }
    step cuda_backend_shard0 shard 0 & step cuda_backend_shard1 shard 1 & wait
    step multi_gpu_test timeout 200 "$b/run" multi_gpu_test --gtest_brief=1
    step multi_gpu_fault_test timeout 120 "$b/run" multi_gpu_fault_test --gtest_brief=1
    step service_cuda env GPUSORT_TEST_BACKEND=cuda timeout 150 "$b/run" service_tests --gtest_brief=1
    ;;
  leases)  # the leases' move into gpu_job.cc (RunGpuStep, LeaseSlots): the ingest and the merge across GPUs
    for t in sort_ingest_test stream_memory_test device_merged_sort_test gpu_oom_test multi_gpu_test; do
      step "$t" timeout 200 "$b/run" "$t" --gtest_brief=1
    done
    step service_cuda env GPUSORT_TEST_BACKEND=cuda timeout 150 "$b/run" service_tests --gtest_brief=1
    ;;
  transport)  # the service and client suites against a CUDA server: every transport through the one entry
    step service_cuda env GPUSORT_TEST_BACKEND=cuda timeout 200 "$b/run" service_tests --gtest_brief=1
    step client_cuda env GPUSORT_TEST_BACKEND=cuda timeout 200 "$b/run" client_tests --gtest_brief=1
    ;;
  suites)  # one lane a GPU (each suite on one GPU), then the suites that take both GPUs
    lane0() {
      export CUDA_VISIBLE_DEVICES=0 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=0
      step cuda_backend_shard0 timeout 400 "$b/run" cuda_backend_test --gtest_brief=1
      unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
      for t in pinned_ranges_test device_region_test stream_memory_test sort_ingest_test gpu_job_source_test \
               gpu_oom_test gpu_fault_test event_wait_test; do
        step "$t" timeout 300 "$b/run" "$t" --gtest_brief=1
      done
    }
    lane1() {
      export CUDA_VISIBLE_DEVICES=1 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=1
      step cuda_backend_shard1 timeout 400 "$b/run" cuda_backend_test --gtest_brief=1
      unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
      step client_cuda env GPUSORT_TEST_BACKEND=cuda timeout 200 "$b/run" client_tests --gtest_brief=1
      step service_cuda_one_gpu env GPUSORT_TEST_BACKEND=cuda timeout 200 "$b/run" service_tests --gtest_brief=1
    }
    lane0 & lane1 & wait
    for t in gpu_set_test multi_gpu_test multi_gpu_fault_test device_merged_sort_test; do
      step "$t" timeout 200 "$b/run" "$t" --gtest_brief=1
    done
    ;;
  mix)  # mix-ab-device.sh over two servers of this bundle: before/ and this build, the same mixed_load_bench
    for side in before after; do
      rm -rf "build/$side"; mkdir -p "build/$side"
      ln -s "$b/lib" "build/$side/lib"; cp "$b/run" "$b/mixed_load_bench" "build/$side/"
    done
    cp "$b/before/gpusort-server" build/before/; cp "$b/gpusort-server" build/after/
    scripts/mix-ab-device.sh device "$out" "before after" "${MIX_SPECS:-0,1 0 64 16;0 0 64 16}" "${ROUNDS:-2}" \
      >> "$out/summary.txt" 2>&1
    ;;
  bench)
    mkdir -p "$b/before/lib"
    COMMON_LIB="$b/lib" ROUNDS=${ROUNDS:-2} PARTS=${PARTS:-"shm16M parts16M small sockets16M mid64K"} \
      scripts/before-after-bench.sh "$b/before" "$b" "$out/ab" > "$out/before-after.txt" 2>&1
    cat "$out/before-after.txt" >> "$out/summary.txt"
    cp "$out/ab/before-after-json.tar.gz" "$out/" 2>/dev/null
    ;;
esac
(cd "$out" && tar czf "logs-$mode.tar.gz" ./*.log ab/*.log 2>/dev/null; rm -f ./*.log; rm -rf ab)
