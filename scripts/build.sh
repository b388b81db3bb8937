#!/usr/bin/env bash
# Configures and builds gpusort into build/ (executables land in build/bin/).
# Extra arguments go to CMake, e.g. scripts/build.sh -DCMAKE_BUILD_TYPE=Debug
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build
