#!/usr/bin/env bash
# The Dockerfile cannot drift from what CI builds and from the manifests: its build stage runs
# scripts/install-deps.sh and scripts/build.sh (the scripts scripts/test.sh runs) and no CMake of its own;
# its CUDA devel and runtime images are one version (the toolkit's here, where there is one); its user,
# ports and health check agree with deploy/kubernetes. Then deploy/docker/collect-runtime.sh, which the
# image build runs, gathers a runtime tree from this build that starts with no library from elsewhere
# but the C library. No container engine here: the image itself is not built.
# usage: dockerfile_test.sh SOURCE_DIR BUILD_BIN_DIR
set -euo pipefail
src=$1
bin=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
docker=$src/Dockerfile
# Instructions only: comments dropped, continuation lines joined.
sed -e '/^[[:space:]]*#/d' "$docker" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' >"$work/instructions"
has() { grep -Eq "$1" "$work/instructions" || fail "Dockerfile: no instruction matches /$1/"; }

# One build recipe: the scripts CI runs.
has '^RUN .*scripts/install-deps\.sh'
has '^RUN .*scripts/build\.sh'
for script in install-deps build; do
  grep -q "scripts/$script.sh" "$src/scripts/test.sh" || fail "scripts/test.sh no longer runs scripts/$script.sh"
done
if grep -Eq '(^|[[:space:];&|(])(cmake|ninja|make|g\+\+|nvcc)[[:space:]]' "$work/instructions"; then
  fail "Dockerfile runs a compiler or build tool itself; build through scripts/build.sh: $(grep -E '(cmake|ninja|make|nvcc) ' "$work/instructions")"
fi
grep -q 'cmake --build' "$src/scripts/build.sh" || fail "scripts/build.sh no longer builds with CMake"

# CUDA: devel and runtime images of one version and one distribution; that version is the toolkit's here.
grep -Eq '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-devel-ubuntu24\.04 AS build-on$' "$work/instructions" \
  || fail "Dockerfile: the GPU build stage is not nvidia/cuda:\${CUDA_VERSION}-devel-ubuntu24.04"
grep -Eq '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-runtime-ubuntu24\.04 AS runtime-on$' "$work/instructions" \
  || fail "Dockerfile: the GPU runtime stage is not nvidia/cuda:\${CUDA_VERSION}-runtime-ubuntu24.04"
grep -Eq '^FROM debian:12 AS build-off$' "$work/instructions" || fail "Dockerfile: no Debian 12 CPU-only build stage"
grep -Eq '^FROM debian:12-slim AS runtime-off$' "$work/instructions" || fail "Dockerfile: no Debian 12 CPU-only runtime"
has '^FROM build-\$\{GPUSORT_CUDA\} AS build$'
has '^FROM runtime-\$\{GPUSORT_CUDA\}$'
has '^ARG GPUSORT_CUDA=(on|off)$'
cuda_version=$(sed -n 's/^ARG CUDA_VERSION=//p' "$work/instructions")
[[ $cuda_version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "Dockerfile: ARG CUDA_VERSION=$cuda_version is not X.Y.Z"
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ]; then
  here_version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  [ "${cuda_version%.*}" = "$here_version" ] \
    || fail "Dockerfile builds with CUDA $cuda_version, this machine's toolkit is $here_version: move them together"
fi

# Runtime: non-root numeric user (the one the Deployment runs as), ports, health check through the CLI.
user=$(sed -n 's/^USER \([0-9]*\)\(:[0-9]*\)\?$/\1/p' "$work/instructions")
[ -n "$user" ] && [ "$user" != 0 ] || fail "Dockerfile: USER is not a numeric non-root uid"
grep -q "runAsUser: $user\$" "$src/deploy/kubernetes/deployment.yaml" || fail "deployment.yaml does not run as uid $user"
has '^EXPOSE 50051 9464$'
has '^HEALTHCHECK .*CMD \["gpusort", "health", "--server", "127\.0\.0\.1:50051"'
has '^CMD \["--listen=0\.0\.0\.0:50051", "--metrics-listen=0\.0\.0\.0:9464"\]$'
for port in 50051 9464; do
  grep -q "containerPort: $port\$" "$src/deploy/kubernetes/deployment.yaml" || fail "deployment.yaml lacks port $port"
done
for pattern in 'build\*' '\.git'; do
  grep -Eq "^$pattern\$" "$src/.dockerignore" || fail ".dockerignore does not exclude $pattern"
done

# The runtime tree from this build: both executables, and every library they load is in it, the C
# library (libc, libm, ... and the loader) aside.
"$src/deploy/docker/collect-runtime.sh" "$(dirname "$bin")" "$work/out" >/dev/null
for exe in gpusort-server gpusort; do
  [ -x "$work/out/bin/$exe" ] || fail "collect-runtime.sh did not copy $exe"
  LD_LIBRARY_PATH=$work/out/lib ldd "$work/out/bin/$exe" >"$work/ldd"
  if grep -vE "=> $work/out/lib/|linux-vdso|ld-linux|/lib(c|m|dl|pthread|rt|resolv|util)\.so" "$work/ldd"; then
    fail "$exe loads the libraries above from outside the runtime tree"
  fi
  LD_LIBRARY_PATH=$work/out/lib "$work/out/bin/$exe" --help >/dev/null || fail "$exe --help fails from the runtime tree"
done
echo "Dockerfile: OK (build through install-deps.sh + build.sh, CUDA $cuda_version, uid $user; runtime tree of $(ls "$work/out/lib" | wc -l) libraries)"
