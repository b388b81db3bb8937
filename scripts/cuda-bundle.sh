#!/usr/bin/env bash
# The CUDA build for the GPU machine (build-cuda: Release, sm_90) of the named executables, bundled with
# their libraries into build/device (../shared/tools/device-bundle.sh). The device scripts' `bundle`
# step (scripts/edge-device.sh, scripts/multi-gpu-device.sh) calls this.
#
#   scripts/cuda-bundle.sh EXECUTABLE...
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null
cmake --build build-cuda --target "$@"
rm -rf build/device
../shared/tools/device-bundle.sh build/device $(for e in "$@"; do echo "build-cuda/bin/$e"; done)
