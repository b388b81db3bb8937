#!/usr/bin/env bash
# Bundle what bench/dask_bench.py needs on the GPU machine (issue 45): that machine's python3 (3.12)
# has no dask or distributed, and Debian's 2022.12 releases of them predate its numpy 2 and pandas 3.
# So the run takes this machine's own Python 3.11 with Debian's numpy, pandas, grpcio, dask and
# distributed (the stack the Python tests pass on), the generated gRPC modules, and the CUDA server
# with its shared libraries (../shared/tools/device-bundle.sh), into one folder:
#
#   scripts/dask-device-bundle.sh build/dask-device      # here, after scripts/build.sh (CUDA on)
#   tar -cJf build/dask-device.tar.xz -C build dask-device   # carried (under 64 MiB)
#   GPU machine: tar -xJf build/dask-device.tar.xz -C build && build/dask-device/python bench/dask_bench.py \
#                --server-bin build/dask-device/gpusort-server --backend cuda ...
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/dask-device-bundle.sh OUT_DIR}
rm -rf "$out"; mkdir -p "$out/bin" "$out/so" "$out/lib/python3/dist-packages"
packages="python3-click python3-cloudpickle python3-dask python3-dateutil python3-distributed python3-fsspec
  python3-grpcio python3-heapdict python3-jinja2 python3-locket python3-markupsafe python3-msgpack python3-numpy
  python3-packaging python3-pandas python3-pandas-lib python3-partd python3-protobuf python3-psutil python3-six
  python3-sortedcontainers python3-tblib python3-toolz python3-tornado python3-typing-extensions python3-tz
  python3-urllib3 python3-yaml python3-zict python3-zipp python3-importlib-metadata"
cp /usr/bin/python3.11 "$out/bin/"
# The standard library without what a benchmark never loads (tests, GUI, installers).
tar -C /usr/lib -cf - --exclude=__pycache__ --exclude=python3.11/test --exclude=python3.11/idlelib \
  --exclude=python3.11/tkinter --exclude='_tkinter*' --exclude=python3.11/ensurepip --exclude=python3.11/lib2to3 \
  --exclude=python3.11/turtledemo --exclude=python3.11/config-3.11-x86_64-linux-gnu python3.11 | tar -C "$out/lib" -xf -
for p in $packages; do
  dpkg -s "$p" >/dev/null 2>&1 || continue  # some are dependencies only of others not loaded here
  dpkg -L "$p" | grep '^/usr/lib/python3/dist-packages/' | while read -r f; do
    [ -f "$f" ] || continue
    case $f in */tests/*|*/__pycache__/*) continue ;; esac
    mkdir -p "$out/lib/python3/dist-packages/$(dirname "${f#/usr/lib/python3/dist-packages/}")"
    cp "$f" "$out/lib/python3/dist-packages/${f#/usr/lib/python3/dist-packages/}"
  done
done
cp -r client/python/gpusort "$out/lib/python3/dist-packages/"
find "$out" -name __pycache__ -prune -exec rm -rf {} +
# Every shared library the interpreter and its extension modules load, but glibc's own (the GPU
# machine's is newer).
skip='^(libc|libm|libdl|libpthread|librt|libutil|ld-linux.*|libcuda|libnvidia-.*)\.so'
{ echo "$out/bin/python3.11"; find "$out/lib" -name '*.so*' -type f; } | while read -r f; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib"); [[ $name =~ $skip ]] && continue
  cp -L "$lib" "$out/so/$name"
done
strip --strip-unneeded "$out/bin/python3.11" "$out"/so/* 2>/dev/null || true
find "$out/lib" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
../shared/tools/device-bundle.sh "$out/server" build/bin/gpusort-server >/dev/null
cat > "$out/python" <<'RUN'
#!/usr/bin/env bash
# This bundle's Python 3.11, its packages and libraries; the CUDA server is at $(dirname $0)/server/run.
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONHOME=$here PYTHONPATH=$here/lib/python3/dist-packages LD_LIBRARY_PATH=$here/so
exec "$here/bin/python3.11" "$@"
RUN
cat > "$out/gpusort-server" <<'RUN'
#!/usr/bin/env bash
exec "$(dirname "$0")/server/run" gpusort-server "$@"
RUN
chmod +x "$out/python" "$out/gpusort-server"
du -sh "$out"
