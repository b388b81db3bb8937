#!/usr/bin/env bash
# Issue 41's attack session against the real server process, started with 2048 descriptors (prlimit):
#  1. it logs its descriptor limit;
#  2. 800 raw HTTP/2 connections held on the gRPC port (hostile_descriptors.py hold, which reopens every
#     second those the server closed): health on --health-listen turns NOT_SERVING within 10 s, the
#     refusal warning is logged, at most about a line a second; the server holds at most 480 of them
#     (three eighths of what its reserve of 768 leaves);
#  3. once they are closed, health is SERVING again within 10 s and a sort through the gRPC port works;
#  4. a TCP socket whose close blocks (SO_LINGER 30 s, full send queue, a peer that never reads) handed to
#     --shm-socket as host memory (the server, held stopped for the hand-over, gets the last reference)
#     is refused INVALID_ARGUMENT, and a sealed memfd registered right after it is accepted within 3 s
#     (the listener did not wait for that close);
#  5. SIGTERM stops the server, exit code 0, within --drain-timeout + 5 s while that close still blocks.
# usage: descriptor_exhaustion_test.sh BUILD_BIN_DIR [BACKEND]   (BACKEND: cpu, the default, or cuda)
set -euo pipefail
bin=$1
backend=${2:-cpu}
cli=$bin/gpusort
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/hostile_descriptors.py
work=$(mktemp -d)
server_pid="" hold_pid="" stall_pid="" grpc_port="" health_port=""
descriptors=2048                # the server's limit (prlimit): the least it keeps its promises with
cap=$(((descriptors - 768) / 8 * 3))  # connections its gRPC port may hold (three eighths of what the reserve leaves: descriptor_limit.h)
attack_connections=800
drain_timeout=5

now_ms() { date +%s%3N; }
since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }  # seconds since $1 (ms)
# Whether process $1 runs (a zombie, exited but not yet waited for, does not).
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}
# Polls until process $1 has exited, at most $2 seconds; returns 1 if it still runs.
wait_exit() {
  local deadline=$(($(now_ms) + $2 * 1000))
  while alive "$1"; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
# The names of the server's threads now in close(2), from /proc/PID/task/*/syscall, one a line; "?" alone
# when that cannot be read here (another architecture, or /proc hides it).
threads_in_close() {
  local nr task first readable=0
  case "$(uname -m)" in x86_64) nr=3 ;; aarch64) nr=57 ;; *) echo "?"; return 0 ;; esac
  for task in /proc/"$1"/task/*; do
    first=""
    read -r first _ <"$task/syscall" 2>/dev/null || continue
    readable=1
    [ "$first" = "$nr" ] && cat "$task/comm" 2>/dev/null
  done
  [ "$readable" -eq 1 ] || echo "?"
  return 0
}

# The server's closer process (server/transport/shm_socket/closer_process.h): its child named gpusort-closer.
closer_of() {
  local status
  for status in /proc/[0-9]*/status; do
    awk -v parent="$1" '/^Name:/ { name = $2 } /^PPid:/ { ppid = $2 }
      END { exit !(name == "gpusort-closer" && ppid == parent) }' "$status" 2>/dev/null &&
      basename "$(dirname "$status")"
  done
  return 0
}

cleanup() {
  local rc=$?
  touch "$work/stop-hold" "$work/stop-stall" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    for f in server.log hold.out stall.out; do
      [ -f "$work/$f" ] && { echo "--- $f"; tail -n 40 "$work/$f"; } >&2
    done
  fi
  if [ -n "$server_pid" ] && alive "$server_pid"; then
    kill -CONT "$server_pid" 2>/dev/null || true  # should the stall helper have died while it held it stopped
    kill -TERM "$server_pid" 2>/dev/null || true
    wait_exit "$server_pid" 15 || kill -KILL "$server_pid" 2>/dev/null || true
  fi
  for pid in $hold_pid $stall_pid; do
    wait_exit "$pid" 5 || kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset GPUSORT_TOKEN GPUSORT_TOKEN_FILE GPUSORT_SERVER GPUSORT_SHM_SOCKET
command -v prlimit >/dev/null || fail "prlimit (util-linux) is needed"
command -v python3 >/dev/null || fail "python3 is needed"

# What `gpusort health` says of 127.0.0.1:$1 (SERVING, NOT_SERVING, or its error message).
health() {
  local state
  state=$("$cli" health --server "127.0.0.1:$1" --timeout 3 2>"$work/health.err") || true
  echo "${state:-$(head -c 300 "$work/health.err")}"
}
# Polls health on port $1 until it says $2, at most $3 seconds from $5 (ms; default now); $4: when.
wait_health() {
  local port=$1 want=$2 seconds=$3 what=$4 start=${5:-$(now_ms)} state
  while :; do
    state=$(health "$port")
    [ "$state" = "$want" ] && return 0
    [ "$(now_ms)" -lt $((start + seconds * 1000)) ] ||
      fail "$what: health on port $port says '$state' after $seconds s, not $want"
    sleep 0.2
  done
}
# Refusal warnings of the gRPC port in the log (grpc_accept_guard.cc, at most one a second).
warning_re() { echo "gRPC port $grpc_port: .*refused [0-9]+ connection\(s\) since the last such line"; }
count_warnings() { grep -Ec "$(warning_re)" "$work/server.log" || true; }
check_warning_rate() {  # attack start (ms), when
  local lines elapsed
  lines=$(count_warnings)
  elapsed=$(awk -v a="$1" -v b="$(now_ms)" 'BEGIN { s = (b - a) / 1000; print (s == int(s)) ? s : int(s) + 1 }')
  echo "  $lines refusal warning line(s) in the $elapsed s since the attack began ($2)"
  [ "$lines" -le $((elapsed + 3)) ] || fail "$lines refusal warning lines in $elapsed s ($2): more than 1 a second"
}

# 1. The server, with 2048 descriptors, says its limit.
prlimit --nofile=$descriptors:$descriptors -- "$bin/gpusort-server" --backend "$backend" --listen 127.0.0.1:0 \
  --health-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --port-file "$work/ports" \
  --shm-socket "$work/shm.sock" --log-level info --drain-timeout "$drain_timeout" >"$work/server.log" 2>&1 &
server_pid=$!
start=$(now_ms)
while [ ! -f "$work/ports" ]; do
  alive "$server_pid" || fail "the server exited at start"
  [ "$(now_ms)" -lt $((start + 60000)) ] || fail "no port file after 60 s"
  sleep 0.05
done
. "$work/ports"
if [ "${grpc_port:-0}" -le 0 ] || [ "${health_port:-0}" -le 0 ]; then fail "bad port file: $(cat "$work/ports")"; fi
grep -Eq "descriptor limit (raised from [0-9]+ to )?$descriptors " "$work/server.log" ||
  fail "the log does not say the descriptor limit $descriptors"
echo "1. started in $(since "$start") s: $(grep -Eo 'descriptor limit .*' "$work/server.log" | head -n 1)"
[ -S "$work/shm.sock" ] || fail "no shared-memory socket at $work/shm.sock"
wait_health "$health_port" SERVING 10 "before the attack"

# 2. The attack: NOT_SERVING while it holds; the refusal warning, not more than about a line a second.
attack_start=$(now_ms)
python3 "$helper" hold 127.0.0.1 "$grpc_port" "$attack_connections" "$work/hold-ready" "$work/stop-hold" 180 \
  >"$work/hold.out" 2>&1 &
hold_pid=$!
while [ ! -f "$work/hold-ready" ]; do
  alive "$hold_pid" || fail "the hold helper exited: $(cat "$work/hold.out")"
  [ "$(now_ms)" -lt $((attack_start + 60000)) ] || fail "the hold helper opened no connections in 60 s"
  sleep 0.05
done
echo "2. attack: $(cat "$work/hold-ready") of $attack_connections connections in $(since "$attack_start") s"
wait_health "$health_port" NOT_SERVING 10 "during the attack" "$attack_start"
echo "  health NOT_SERVING $(since "$attack_start") s after the attack began"
while [ "$(count_warnings)" -eq 0 ]; do
  [ "$(now_ms)" -lt $((attack_start + 10000)) ] || fail "no refusal warning in the log 10 s into the attack"
  sleep 0.1
done
echo "  refusal warning logged: $(grep -E "$(warning_re)" "$work/server.log" | head -n 1)"
# Hold on for a few seconds in all, so that the churn of reopened connections tests the rate limit; health
# must stay NOT_SERVING meanwhile.
while [ "$(now_ms)" -lt $((attack_start + 5000)) ]; do
  state=$(health "$health_port")
  [ "$state" = NOT_SERVING ] || fail "health turned '$state' while the attack held"
  sleep 0.5
done
alive "$hold_pid" || fail "the hold helper exited before it was told: $(cat "$work/hold.out")"
check_warning_rate "$attack_start" "at the release"

# 3. Released: SERVING again within 10 s, and a sort through the gRPC port.
touch "$work/stop-hold"
release=$(now_ms)
wait_exit "$hold_pid" 30 || fail "the hold helper did not close its connections in 30 s"
rc=0; wait "$hold_pid" || rc=$?
hold_pid=""
[ "$rc" -eq 0 ] || fail "the hold helper exited $rc: $(cat "$work/hold.out")"
sed 's/^/  /' "$work/hold.out"
most_held=$(sed -n 's/^most_held=//p' "$work/hold.out")
if [ -z "$most_held" ] || [ "$most_held" -gt "$cap" ]; then
  fail "the server held ${most_held:-?} of the attack's connections, more than $cap (three eighths of what its reserve leaves)"
fi
wait_health "$health_port" SERVING 10 "after the release" "$release"
echo "3. health SERVING $(since "$release") s after the release"
wait_health "$grpc_port" SERVING 10 "the gRPC port's own health, after the release" "$release"
"$cli" gen --dtype u32 --count 1000 --out "$work/keys.txt" || fail "gpusort gen"
"$cli" sort --server "127.0.0.1:$grpc_port" --timeout 30 --in "$work/keys.txt" --dtype u32 \
  --out "$work/sorted.txt" 2>"$work/sort.err" || fail "sort after the attack: $(cat "$work/sort.err")"
[ "$(wc -l <"$work/sorted.txt")" -eq 1000 ] || fail "the sort gave $(wc -l <"$work/sorted.txt") keys, not 1000"
sort -n "$work/keys.txt" | cmp -s - "$work/sorted.txt" || fail "the sorted file is not the keys in order"
echo "  sort of 1000 keys through port $grpc_port: sorted, $(since "$release") s after the release"
check_warning_rate "$attack_start" "after recovery"
grep -E "gRPC port $grpc_port (cannot take|accepts connections)" "$work/server.log" | sed 's/^/  log: /' || true

# 4. A descriptor whose close blocks, then at once a proper memfd.
python3 "$helper" stall-register "$work/shm.sock" "$server_pid" "$work/stall-result" "$work/stop-stall" 180 \
  >"$work/stall.out" 2>&1 &
stall_pid=$!
start=$(now_ms)
while [ ! -f "$work/stall-result" ]; do
  alive "$stall_pid" || fail "the stall helper exited: $(cat "$work/stall.out")"
  [ "$(now_ms)" -lt $((start + 60000)) ] || fail "the stall helper got no answers in 60 s: $(cat "$work/stall.out")"
  sleep 0.05
done
result() { sed -n "s/^$1=//p" "$work/stall-result"; }
sed 's/^/  /' "$work/stall.out"
[ "$(result own_close_at_once)" = 1 ] ||
  fail "the helper's own close of the stalled socket blocked: the server did not hold the last reference"
[ "$(result stall_code)" = 3 ] ||
  fail "the stalled socket's registration got code '$(result stall_code)' ($(result stall_text)), not 3"
[ "$(result memfd_code)" = 0 ] ||
  fail "the memfd registered after it got code '$(result memfd_code)' ($(result memfd_text)), not 0 OK"
awk -v s="$(result memfd_reply_s)" 'BEGIN { exit !(s < 3) }' ||
  fail "the memfd registration took $(result memfd_reply_s) s, not under 3 s"
echo "4. stalled descriptor refused (code 3) in $(result stall_reply_s) s;" \
  "memfd registered (code 0) in $(result memfd_reply_s) s"
# A thread of the closer process is now blocked closing it (where /proc shows threads' system calls): not
# leaked, not in the server, and still blocked when SIGTERM comes.
closer_pid=$(closer_of "$server_pid")
[ -n "$closer_pid" ] || fail "the server has no closer process (a child named gpusort-closer)"
start=$(now_ms)
while :; do
  in_close=$(threads_in_close "$closer_pid")
  [ -n "$in_close" ] && break
  [ "$(now_ms)" -lt $((start + 5000)) ] || fail "no closer process thread closes the stalled socket 5 s after its refusal"
  sleep 0.1
done
if [ "$in_close" = "?" ]; then
  echo "  (which threads are in close(2) cannot be read here)"
else
  echo "  closer process thread(s) blocked in close(2): $(echo "$in_close" | tr '\n' ' ')"
  [ -z "$(threads_in_close "$server_pid")" ] || fail "a server thread is in close(2) too"
fi

# 5. SIGTERM: exit 0 within --drain-timeout + 5 s, although that close still blocks (SO_LINGER 30 s).
stop=$(now_ms)
kill -TERM "$server_pid"
if ! wait_exit "$server_pid" $((drain_timeout + 5)); then
  echo "  server threads in close(2): $(threads_in_close "$server_pid" | tr '\n' ' ')" >&2
  kill -KILL "$server_pid" 2>/dev/null || true
  fail "the server still ran $((drain_timeout + 5)) s after SIGTERM"
fi
rc=0; wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" -eq 0 ] || fail "the server exited $rc after SIGTERM"
echo "5. server exited 0 $(since "$stop") s after SIGTERM"
wait_exit "$closer_pid" 5 || fail "the closer process still ran 5 s after the server exited"
touch "$work/stop-stall"
wait_exit "$stall_pid" 30 || fail "the stall helper did not finish"
rc=0; wait "$stall_pid" || rc=$?
stall_pid=""
[ "$rc" -eq 0 ] || fail "the stall helper exited $rc: $(cat "$work/stall.out")"
echo "descriptor exhaustion ($backend): OK"
