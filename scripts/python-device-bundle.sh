#!/usr/bin/env bash
# Packs this machine's Python 3.11 with grpcio, grpc_tools, numpy and pytest (Debian's), and every shared
# library they load but glibc's, into one archive that runs on the GPU machine. That machine's python3
# (3.12, with torch) has no grpcio, and Debian's grpcio is built for 3.11, so the Python client's
# device-memory tests (client/python/tests/test_cuda_arrays.py) run there on this interpreter instead:
#
#   here:         scripts/python-device-bundle.sh build/pydev.tar.xz
#   GPU machine:  scripts/python-device-test.sh build/pydev.tar.xz build/device "$OUT"
#                 (with the device tool: carry build/pydev.tar.xz and the server's bundle)
#
# usage: scripts/python-device-bundle.sh OUT.tar.xz
set -euo pipefail
out=${1:?usage: python-device-bundle.sh OUT.tar.xz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/pydev
mkdir -p "$root/bin" "$root/lib" "$root/site"
cp -L /usr/bin/python3.11 "$root/bin/python3.11"
# The standard library without what tests never load (its own tests, GUI, 2to3, docs).
tar -C /usr/lib -cf - --exclude='python3.11/test' --exclude='python3.11/idlelib' --exclude='python3.11/tkinter' \
  --exclude='python3.11/turtledemo' --exclude='python3.11/lib2to3' --exclude='python3.11/ensurepip' \
  --exclude='python3.11/pydoc_data' --exclude='python3.11/config-3.11-*' --exclude='__pycache__' \
  --exclude='python3.11/site-packages' --exclude='python3.11/dist-packages' python3.11 | tar -C "$root/lib" -xf -
for package in grpc grpc_tools google numpy _pytest pytest pluggy iniconfig packaging py.py pkg_resources attr attrs; do
  tar -C /usr/lib/python3/dist-packages -cf - --exclude='__pycache__' --exclude='numpy/*/tests' \
    --exclude='numpy/f2py' --exclude='numpy/distutils' --exclude='numpy/doc' "$package" | tar -C "$root/site" -xf -
done
# The shared libraries of the interpreter and of every extension module, but glibc's and the driver's.
skip='^(libc|libm|libdl|libpthread|librt|libutil|ld-linux.*|libcuda|libnvidia-.*)\.so'
find "$root" -name '*.so' -o -name 'python3.11' -type f | while read -r object; do
  ldd "$object" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  [[ $name =~ $skip ]] && continue
  cp -L "$lib" "$root/lib/$name"
done
find "$root" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
cat > "$root/python" <<'RUN'
#!/usr/bin/env bash
# This bundle's python3.11 with its own standard library, packages and shared libraries.
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONHOME=$here PYTHONPATH="$here/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONNOUSERSITE=1
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/python3.11" "$@"
RUN
chmod +x "$root/python"
"$root/python" -c 'import grpc, grpc_tools.protoc, numpy, pytest; print("bundle imports ok")'
mkdir -p "$(dirname "$out")"
tar -C "$work" -cf - pydev | xz -T2 -6 > "$out"
du -h "$out"
