#!/usr/bin/env bash
# Installs everything gpusort needs to build, test and run, from Debian 12 packages (plus, for the deploy/
# checks only, npm packages pinned by tests/deploy/package-lock.json).
# Used by the README, .ci/run and the Dockerfile, so that all three agree.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates python3 python3-numpy
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  nlohmann-json3-dev libboost-dev libtbb-dev
  libssl-dev  # the server checks TLS files and hashes bearer tokens with OpenSSL (gRPC links it too)
  # The Python client (client/python): Debian's grpcio and its protoc plugin, setuptools for pip.
  python3-grpcio python3-grpc-tools python3-setuptools python3-wheel python3-venv python3-pip
)
# Tests also start a real Prometheus and check /metrics with promtool; the deploy/ checks
# (tests/deploy/) lint YAML and validate the Kubernetes manifests with npm packages under Node.js.
if [ "${GPUSORT_NO_TEST_DEPS:-0}" != 1 ]; then
  packages+=(prometheus yamllint python3-yaml python3-pytest)
  # python.mypy: mypy --strict on the Python client (client/python/run_mypy.sh).
  packages+=(mypy)
  # gpusort.dask's tests: a distributed.LocalCluster and pandas frames (client/python/tests/test_dask.py).
  packages+=(python3-dask python3-distributed python3-pandas)
  # The TLS tests make their certificates with the openssl command.
  packages+=(openssl)
  # The hostile-caller tests write HTTP/2 frames by hand that gRPC clients refuse to send.
  packages+=(libnghttp2-dev)
  # scripts/fuzz.sh: libFuzzer and its sanitizer runtimes come with clang (gcc has no libFuzzer); llvm
  # gives the sanitizers' reports of both compilers their file:line (llvm-symbolizer).
  packages+=(clang-14 libfuzzer-14-dev libclang-rt-14-dev llvm)
  # Any Node.js with npm will do (the machine may have its own, which Debian's npm would conflict with).
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The Debian prometheus package starts a system service where systemd runs; tests start their own.

# The Kubernetes schema packages, pinned by tests/deploy/package-lock.json, into the git-ignored
# tests/deploy/node_modules; skipped when that lock is what is installed already.
if [ "${GPUSORT_NO_TEST_DEPS:-0}" != 1 ]; then
  deploy_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/deploy"
  if ! cmp -s "$deploy_tests/package-lock.json" "$deploy_tests/node_modules/.gpusort-installed-lock"; then
    npm ci --prefix "$deploy_tests" --no-audit --no-fund
    cp "$deploy_tests/package-lock.json" "$deploy_tests/node_modules/.gpusort-installed-lock"
  fi
fi
