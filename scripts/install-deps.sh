#!/usr/bin/env bash
# Installs everything gpusort needs to build, test and run, from Debian 12 packages only.
# Used by the README, .ci/run and the Dockerfile, so that all three agree.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates python3 python3-numpy
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  nlohmann-json3-dev libboost-dev libtbb-dev
)
# Tests also start a real Prometheus and check /metrics with promtool.
if [ "${GPUSORT_NO_TEST_DEPS:-0}" != 1 ]; then packages+=(prometheus); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: all packages present"; exit 0; fi
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian prometheus package starts a system service where systemd runs; tests start their own.
