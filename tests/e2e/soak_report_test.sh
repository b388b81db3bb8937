#!/usr/bin/env bash
# soak_report.py must fail a soak for each thing it promises to catch: a wrong answer, a failed call,
# growing memory, descriptors or threads, and device memory still held; and pass a clean one.
set -euo pipefail
report=$(cd "$(dirname "$0")/../../scripts" && pwd)/soak_report.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bench() {  # bench JSON with one row: errors, errors_by_code
  cat >"$work/bench-x.json" <<JSON
{"rows": [{"requests": 100, "count": 1000, "errors": $1, "errors_by_code": $2, "error_messages": {},
           "requests_per_s": 10.0, "latency_ms": {"p99": 1.0}}]}
JSON
}
samples() {  # 10 samples; RSS/fds/threads of the second half scaled by $1, last pool bytes $2
  echo "t_s,rss_kib,fds,threads,device_used_bytes,pool_used_bytes" >"$work/samples.csv"
  for i in $(seq 0 9); do
    local k=1; [ "$i" -ge 5 ] && k=$1
    echo "$((i * 2)),$((200000 * k)),$((20 * k)),$((20 * k)),$((1000000000 * k)),$([ "$i" = 9 ] && echo "$2" || echo 4096)" \
      >>"$work/samples.csv"
  done
}
expect() {  # expect pass|fail WHAT
  local rc=0
  python3 "$report" "$work" cpu 20 >"$work/out" 2>&1 || rc=$?
  if [ "$1" = pass ]; then [ "$rc" = 0 ] || { cat "$work/out"; fail "$2: failed"; }
  else [ "$rc" = 1 ] || { cat "$work/out"; fail "$2: passed"; }; fi
}

bench 0 '{}'; samples 1 0; expect pass "a clean soak"
bench 1 '{"WRONG_ANSWER": 1}'; samples 1 0; expect fail "a wrong answer"
bench 2 '{"UNAVAILABLE": 2}'; samples 1 0; expect fail "failed calls"
bench 0 '{}'; samples 3 0; expect fail "memory, descriptors and threads tripled"
bench 0 '{}'; samples 1 8192; expect fail "device pool still held"
echo "soak report: OK"
