#!/usr/bin/env bash
# Installs this build into a temporary prefix, builds tests/client/consumer against it with
# find_package(gpusort) and again with pkg-config (gpusort.pc), and runs both against a live server from
# the same build.
# usage: consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true; rm -rf "$work"; }
trap cleanup EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
# Only gpusort's headers: another project's (gRPC's health service) would collide in a shared prefix.
if [ -e "$work/prefix/include/grpc" ]; then
  echo "the install put headers of other projects into include/grpc:"; find "$work/prefix/include/grpc" -type f
  exit 1
fi
# The client's headers name only gpusort's types: no generated proto header is installed, and
# client.h, types.h and shared_memory.h reach neither gRPC nor protobuf. The compiler lists every header
# each one includes (-M); gpusort/grpc_interop.h is the one that may include gRPC, and it must compile
# on its own as quietly as the consumer.
leaked=$(find "$work/prefix/include" -name '*.pb.h' -o -name 'region_socket.h')
if [ -n "$leaked" ]; then
  echo "the install still ships generated API headers:"; echo "$leaked"
  exit 1
fi
cxx=${CXX:-c++}
for header in client.h types.h shared_memory.h; do
  deps=$(echo "#include <gpusort/$header>" | "$cxx" -std=c++20 -M -I "$work/prefix/include" -x c++ -)
  if grep -E 'grpc|google/protobuf|\.pb\.h' <<<"$deps"; then
    echo "gpusort/$header includes gRPC or protobuf headers (above)"
    exit 1
  fi
done
echo "#include <gpusort/grpc_interop.h>" |
  "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I "$work/prefix/include" -x c++ -

cmake -S "$source/tests/client/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
# The same program without CMake, as docs/cpp-library.md says: gpusort.pc gives the C++20 flag, the
# include path and every library to link.
pc=$(find "$work/prefix" -name gpusort.pc)
[ -n "$pc" ] || { echo "the install has no gpusort.pc"; exit 1; }
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs gpusort)
grep -q -- "-std=c++20" <<<"$flags" || { echo "gpusort.pc does not say C++20: $flags"; exit 1; }
# CXXFLAGS as CMake takes them for the consumer above (scripts/sanitize.sh instruments both builds with it).
# shellcheck disable=SC2086
"$cxx" ${CXXFLAGS:-} -O1 -Wall -Wextra -Werror "$source/tests/client/consumer/main.cpp" $flags -o "$work/consumer_pc"

"$work/prefix/bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --backend cpu \
  --port-file "$work/ports" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -f "$work/ports" ] && break; sleep 0.05; done
[ -f "$work/ports" ] || { echo "the installed server did not start:"; cat "$work/server.log"; exit 1; }
. "$work/ports"
"$work/consumer/consumer" "127.0.0.1:$grpc_port"
"$work/consumer_pc" "127.0.0.1:$grpc_port"
echo "consumer: OK"
