#!/usr/bin/env bash
# Gathers what the runtime image needs from a build tree: gpusort-server, the gpusort CLI, and every
# shared library they load, resolved as the loader resolves them on the build machine. The Dockerfile
# runs it between its stages; tests/deploy/dockerfile_test.sh runs it on the CI build.
# Left out: the C library (the runtime image is the same distribution as the build image and has its
# own) and the NVIDIA driver (libcuda, libnvidia-*: the container toolkit mounts the node's own at run
# time; a copy from the build image would not match the node's kernel module).
# usage: collect-runtime.sh BUILD_DIR OUT_DIR   (OUT_DIR/bin, OUT_DIR/lib)
set -euo pipefail
build=$1
out=$2
bins=("$build/bin/gpusort-server" "$build/bin/gpusort")
if ldd "${bins[@]}" | grep "not found"; then
  echo "collect-runtime: unresolved shared libraries (above)" >&2
  exit 1
fi
mkdir -p "$out/bin" "$out/lib"
cp "${bins[@]}" "$out/bin/"
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u \
  | grep -vE '/lib(c|m|dl|pthread|rt|resolv|util)\.so|/lib(cuda|nvidia-[^/]*)\.so' \
  | while read -r lib; do cp -L "$lib" "$out/lib/"; done
echo "collect-runtime: $(ls "$out/bin" | wc -l) executables, $(ls "$out/lib" | wc -l) libraries in $out"
