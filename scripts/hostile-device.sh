#!/usr/bin/env bash
# Issue 41's hostile-caller tests against the CUDA backend on the GPU machine: the in-process suites
# (out of descriptors, stalled descriptors, parted tickets, token spellings, registrations) with
# GPUSORT_TEST_BACKEND=cuda, the process-level attack (tests/e2e/descriptor_exhaustion_test.sh ... cuda),
# device regions (their descriptors go through the new classification), then the whole service suite
# on CUDA.
#   here:        scripts/hostile-device.sh bundle              # build/ must be built; writes build/hostile.tar.xz
#   GPU machine: scripts/hostile-device.sh device "$OUT"       # carry build/hostile.tar.xz
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  set -e
  rm -rf build/hostile build/hostile.tar.xz
  ../shared/tools/device-bundle.sh build/hostile build/bin/service_tests build/bin/gpusort-server build/bin/gpusort \
    build/bin/device_region_test
  tar -C build -cf - hostile | xz -T0 -6 > build/hostile.tar.xz
  ls -la build/hostile.tar.xz
}

device() {
  local out=$1 b=/tmp/hostile
  tar -xJf build/hostile.tar.xz -C /tmp
  nvidia-smi -L > "$out/gpu.txt" 2>&1
  step() {  # name, then the command; one line each in summary.txt
    local name=$1; shift
    local start=$SECONDS
    if "$@" > "$out/$name.log" 2>&1; then echo "PASS $name $((SECONDS - start)) s"; else echo "FAIL $name $((SECONDS - start)) s"; fi \
      | tee -a "$out/summary.txt"
  }
  local focus='DescriptorExhaustion.*:StalledDescriptors.*:StreamParts.*:SharedMemoryRegistration.*:IdleStreams.*'
  focus+=':TokenCheck.*:MetricsListener.*:MetricsEndpoint.*:HealthListener.*:CloserProcess.*'
  step focused env GPUSORT_TEST_BACKEND=cuda timeout 300 "$b/run" service_tests --gtest_filter="$focus"
  step e2e env LD_LIBRARY_PATH="$b/lib" timeout 180 tests/e2e/descriptor_exhaustion_test.sh "$b" cuda
  step device_region timeout 300 "$b/run" device_region_test
  step service_cuda env GPUSORT_TEST_BACKEND=cuda timeout 400 "$b/run" service_tests --gtest_brief=1
  (cd "$out" && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
}

case ${1:-} in
  bundle) bundle ;;
  device) device "${2:?usage: hostile-device.sh device OUT}" ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
