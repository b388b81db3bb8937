#!/usr/bin/env bash
# README.md's "From Python" block, line by line, as a new user on a fresh Debian 12 runs it (issue 43): in
# a clean HOME, from a copy of client/python and proto/, with a python3 first on PATH that is not Debian's (as a pyenv
# or venv python3 would be: here a decoy that fails), against a server started here. The apt-get line is
# checked (every package it names is installed), not run: a test installs nothing. The quickstart's
# address is the started server's, since port 50051 may be taken; its answers must all be True.
# usage: readme_python_test.sh REPO_DIR BIN_DIR        (exit 77: no Debian python3 with grpc and numpy)
set -euo pipefail
repo=$1 bin=$2
/usr/bin/python3 -c 'import grpc, numpy, setuptools' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks grpc or numpy"; exit 77; }
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

block=$(awk '/^## From Python/ {section = 1; next} /^## / {section = 0}
             section && /^```sh/ {code = 1; next} code && /^```/ {exit} code' "$repo/README.md")
[ -n "$block" ] || fail "README.md has no sh block under '## From Python'"

"$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --backend cpu --port-file "$work/ports" \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -s "$work/ports" ] && break; sleep 0.05; done
[ -s "$work/ports" ] || { cat "$work/server.log"; fail "no port file"; }
. "$work/ports"

mkdir -p "$work/decoy" "$work/home" "$work/checkout/client"
for name in python3 python pip pip3; do
  printf '#!/bin/sh\necho "decoy %s: not the interpreter Debian'"'"'s grpcio is built for" >&2\nexit 1\n' "$name" \
    >"$work/decoy/$name"
  chmod +x "$work/decoy/$name"
done
# What the block reads of the checkout: the package and the proto it is built from (a copy, so that pip's
# build folders land there, not in the checkout).
(cd "$repo" && tar --exclude=build --exclude='*.egg-info' --exclude=__pycache__ -cf - client/python proto) |
  tar -xf - -C "$work/checkout"
cd "$work/checkout"
export HOME=$work/home PATH=$work/decoy:$PATH
while IFS= read -r line; do
  case $line in
    "" | "#"*) continue ;;
    "sudo apt-get install "* | "apt-get install "*)
      for package in ${line#*install }; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
          fail "the README's apt-get line names $package, which is not installed here"
      done
      ;;
    *)
      line=${line//127.0.0.1:50051/127.0.0.1:$grpc_port}
      echo "+ $line"
      bash -euo pipefail -c "$line" >"$work/out" 2>&1 || { cat "$work/out"; fail "README line failed: $line"; }
      cat "$work/out"
      ;;
  esac
done <<<"$block"
grep -q "equals numpy.sort: True" "$work/out" || fail "the quickstart did not run to its checks"
! grep -q "False" "$work/out" || fail "the quickstart printed a False"
echo "PASS: README's Python section"
