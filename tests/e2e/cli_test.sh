#!/usr/bin/env bash
# The gpusort CLI end to end against a real server: gen, then sort and topk in every file format
# (raw, text, npy), every dtype, argsort, descending, rows, health, and clear failures; every answer
# is checked with numpy against the input file.
# usage: cli_test.sh BUILD_BIN_DIR
set -euo pipefail
bin=$1
cli=$bin/gpusort
work=$(mktemp -d)
server_pid=""
cleanup() {
  local rc=$?
  # A failure shows the server's side too (a server that died says why only there).
  [ "$rc" -ne 0 ] && [ -f "$work/server.log" ] && { echo "--- server.log"; tail -n 30 "$work/server.log"; } >&2
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py() { "${PYTHON:-/usr/bin/python3}" -c "import numpy as np, sys; $1" "${@:2}" || fail "check failed: $1"; }

# A small message limit, so that the 3M-key files below must travel through the streaming RPCs; shared
# memory registered on $work/shm.sock.
"$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --backend "${GPUSORT_E2E_BACKEND:-cpu}" \
  --max-message-bytes 1048576 --shm-socket "$work/shm.sock" --data-port 0 --port-file "$work/ports" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -f "$work/ports" ] && break; sleep 0.05; done
[ -f "$work/ports" ] || { cat "$work/server.log"; fail "no port file"; }
. "$work/ports"
export GPUSORT_SERVER=127.0.0.1:$grpc_port

[ "$("$cli" health)" = SERVING ] || fail "health is not SERVING"
"$cli" --help | grep -q topk || fail "no usage text"
"$cli" --version | grep -Eq '^gpusort [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version does not print 'gpusort X.Y.Z'"

# One count syntax on every subcommand: digits, K/M/G (powers of 1024), and whole numbers as 1e6.
for count_bytes in "1000 4000" "1e3 4000" "2.5E3 10000" "1K 4096" "1M 4194304"; do
  set -- $count_bytes
  "$cli" gen --dtype u32 --count "$1" --out "$work/c.bin" || fail "gen --count $1"
  [ "$(stat -c %s "$work/c.bin")" = "$2" ] || fail "gen --count $1 wrote $(stat -c %s "$work/c.bin") bytes, not $2"
done
if "$cli" gen --dtype u32 --count 1e-3 --out "$work/c.bin" 2>/dev/null; then fail "gen --count 1e-3 accepted"; fi
# A flag that needs a positive number says so, not the whole range of a double.
if "$cli" bench --concurrency 0 2>"$work/err"; then fail "bench --concurrency 0 accepted"; fi
grep -q "must be a number above 0, not 0" "$work/err" || fail "bench --concurrency 0: $(head -c 200 "$work/err")"
# bench against no server at all: exit 1, saying nothing was measured (it used to exit 0 with zeros).
rc=0; "$cli" bench -s 127.0.0.1:1 --requests 3 >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 1 ] || fail "bench against no server exited $rc, not 1"
grep -q "nothing was measured" "$work/err" || fail "bench against no server does not say so"
# --server: a bare host gets the default port, a URL is refused saying what to write.
if "$cli" health -s http://127.0.0.1:$grpc_port 2>"$work/err"; then fail "a URL as --server accepted"; fi
grep -q "not a URL" "$work/err" || fail "the URL refusal does not say so"

# Files by content, outputs by what the CLI writes: an .npy renamed .bin sorts as .npy; .npz is refused;
# a directory as --in says so.
"$cli" gen --dtype i32 --count 1000 --out "$work/renamed.npy"
mv "$work/renamed.npy" "$work/renamed.bin"
"$cli" sort --in "$work/renamed.bin" --out "$work/renamed-sorted.npy" || fail "an .npy renamed .bin"
py "a = np.load(sys.argv[1]); assert a.dtype == np.int32 and a.size == 1000 and (np.diff(a) >= 0).all()" \
  "$work/renamed-sorted.npy"
if "$cli" sort --in "$work/renamed.bin" --out "$work/x.npz" 2>"$work/err"; then fail ".npz written"; fi
grep -q -- "--format" "$work/err" || fail "the .npz refusal does not say what to do"
if "$cli" sort --in "$work" --dtype u32 --out "$work/x.bin" 2>"$work/err"; then fail "a directory as --in"; fi
grep -q "is a directory" "$work/err" || fail "the directory refusal does not say so"

# npy: every dtype numpy has (bf16 below), ascending, descending, argsort.
for dtype in i32 u32 i64 u64 f32 f64 f16 i16 u16 i8 u8; do
  "$cli" gen --dtype $dtype --count 3000001 --distribution bits --seed 3 --out "$work/k.npy"
  "$cli" sort --in "$work/k.npy" --out "$work/s.npy"
  "$cli" sort --in "$work/k.npy" --out "$work/d.npy" --descending
  "$cli" sort --in "$work/k.npy" --out "$work/p.npy" --argsort --stable
  py "
k = np.load(sys.argv[1]); s = np.load(sys.argv[2]); d = np.load(sys.argv[3]); p = np.load(sys.argv[4])
u = k.view(np.dtype(k.dtype.str.replace('f', 'u').replace('i', 'u')))
# the service's order: totalOrder for floats, as ordered unsigned bits
top = u.dtype.type(1 << (u.dtype.itemsize * 8 - 1))
if k.dtype.kind == 'f':
    key = np.where(u & top, ~u, u | top)
elif k.dtype.kind == 'i':
    key = u ^ top
else:
    key = u
order = np.argsort(key, kind='stable')
assert s.dtype == k.dtype and s.shape == k.shape
assert np.array_equal(s.view(u.dtype), u[order]), 'ascending'
assert np.array_equal(d.view(u.dtype), u[order][::-1]), 'descending'  # equal keys have equal bits
assert p.dtype == np.int64 and np.array_equal(p, order), 'stable argsort'
" "$work/k.npy" "$work/s.npy" "$work/d.npy" "$work/p.npy"
done

# bf16 has no .npy: raw, checked the same way on its bits (the upper half of a float32).
"$cli" gen --dtype bf16 --count 3000001 --distribution bits --seed 3 --out "$work/k.bin"
"$cli" sort --in "$work/k.bin" --dtype bf16 --out "$work/s.bin"
"$cli" sort --in "$work/k.bin" --dtype bf16 --out "$work/d.bin" --descending
"$cli" sort --in "$work/k.bin" --dtype bf16 --out "$work/p.npy" --argsort --stable
py "
u = np.fromfile(sys.argv[1], '<u2'); s = np.fromfile(sys.argv[2], '<u2'); d = np.fromfile(sys.argv[3], '<u2')
p = np.load(sys.argv[4])
order = np.argsort(np.where(u & 0x8000, ~u, u | 0x8000), kind='stable')  # totalOrder as unsigned bits
assert np.array_equal(s, u[order]), 'ascending'
assert np.array_equal(d, u[order][::-1]), 'descending'
assert np.array_equal(p, order), 'stable argsort'
" "$work/k.bin" "$work/s.bin" "$work/d.bin" "$work/p.npy"
# f16 and bf16 as text: numpy reads what the CLI writes (bf16 as the float32 it rounds from).
for dtype in f16 bf16; do
  "$cli" gen --dtype $dtype --count 20000 --distribution normal --out "$work/k.txt"
  "$cli" sort --in "$work/k.txt" --dtype $dtype --out "$work/s.txt" --descending
  py "
t = np.float16 if sys.argv[3] == 'f16' else np.float32
k = np.loadtxt(sys.argv[1], dtype=t); s = np.loadtxt(sys.argv[2], dtype=t); assert np.array_equal(np.sort(k)[::-1], s)
" "$work/k.txt" "$work/s.txt" $dtype
done
if "$cli" sort --in "$work/k.bin" --dtype bf16 --out "$work/x.npy" 2>"$work/err"; then fail "bf16 written as .npy"; fi
grep -q "NumPy has no bfloat16" "$work/err" || fail "no message for bf16 as .npy: $(cat "$work/err")"

# Every transport gives the same bytes: unary, streamed, and shared memory (server on this host), for
# 4-, 2- and 1-byte keys.
for dtype in f32 f16 u8; do
  "$cli" gen --dtype $dtype --count 50001 --distribution bits --seed 5 --out "$work/t.npy"  # unary-sized
  for transport in unary stream shm; do
    "$cli" sort --transport $transport --shm-socket "$work/shm.sock" --in "$work/t.npy" \
      --out "$work/t-$transport.npy" --argsort --stable || fail "$dtype sort over $transport"
    "$cli" topk --transport $transport --shm-socket "$work/shm.sock" --in "$work/t.npy" \
      --out "$work/k-$transport.npy" -k 50 || fail "$dtype topk over $transport"
  done
  for transport in stream shm; do
    cmp -s "$work/t-unary.npy" "$work/t-$transport.npy" || fail "$dtype argsort over $transport differs from unary"
    cmp -s "$work/k-unary.npy" "$work/k-$transport.npy" || fail "$dtype topk over $transport differs from unary"
  done
done
if "$cli" sort --transport shm --in "$work/t.npy" --out "$work/x.npy" 2>"$work/err"; then fail "shm without --shm-socket accepted"; fi
grep -q -- "--shm-socket" "$work/err" || fail "no message for shm without --shm-socket: $(cat "$work/err")"
GPUSORT_SHM_SOCKET="$work/shm.sock" "$cli" bench --transport shm --method sort --count 10000 --requests 20 --warmup 0 \
  --check --fail-on-error --no-progress >/dev/null || fail "bench over shm (socket from GPUSORT_SHM_SOCKET)"
# Sorts over the data port (SortOnSockets): the last dtype's file through the CLI, and a checked bench in parts.
"$cli" sort --transport sockets --in "$work/t.npy" --out "$work/t-sockets.npy" --argsort --stable ||
  fail "sort over the data port"
cmp -s "$work/t-unary.npy" "$work/t-sockets.npy" || fail "argsort over the data port differs from unary"
"$cli" bench --transport sockets --method sort --count 3M --stream-parts 3 --requests 5 --warmup 0 --check \
  --fail-on-error --no-progress >/dev/null || fail "bench over the data port"

# text and raw: round trips and the same answers.
"$cli" gen --dtype f64 --count 1000 --distribution normal --out "$work/k.txt"
"$cli" sort --in "$work/k.txt" --dtype f64 --out "$work/s.txt"
py "k = np.loadtxt(sys.argv[1]); s = np.loadtxt(sys.argv[2]); assert np.array_equal(np.sort(k), s)" "$work/k.txt" "$work/s.txt"
"$cli" gen --dtype i64 --count 100000 --out "$work/k.bin"
"$cli" sort --in "$work/k.bin" --dtype i64 --out "$work/s.bin"
py "k = np.fromfile(sys.argv[1], '<i8'); s = np.fromfile(sys.argv[2], '<i8'); assert np.array_equal(np.sort(k), s)" "$work/k.bin" "$work/s.bin"
"$cli" sort --in "$work/k.bin" --dtype i64 --out "$work/s.npy" --out-format npy
py "k = np.fromfile(sys.argv[1], '<i8'); s = np.load(sys.argv[2]); assert np.array_equal(np.sort(k), s)" "$work/k.bin" "$work/s.npy"

# topk: one row from text, rows from a 2-D npy, values and indices.
"$cli" gen --dtype u32 --count 5000 --distribution few-distinct --out "$work/k.txt"
"$cli" topk --in "$work/k.txt" --dtype u32 -k 7 --out "$work/t.txt"
py "k = np.loadtxt(sys.argv[1], dtype=np.uint64); t = np.loadtxt(sys.argv[2], dtype=np.uint64); assert np.array_equal(np.sort(k)[::-1][:7], t)" "$work/k.txt" "$work/t.txt"
py "np.save(sys.argv[1], np.random.default_rng(5).standard_normal((64, 1000)).astype(np.float32))" "$work/rows.npy"
"$cli" topk --in "$work/rows.npy" -k 10 --smallest --output both --out "$work/tv.npy" --indices-out "$work/ti.npy"
py "
x = np.load(sys.argv[1]); v = np.load(sys.argv[2]); i = np.load(sys.argv[3])
assert v.shape == (64, 10) and i.shape == (64, 10), (v.shape, i.shape)
assert np.array_equal(v, np.sort(x, axis=1)[:, :10])
assert np.array_equal(np.take_along_axis(x, i, axis=1), v)
" "$work/rows.npy" "$work/tv.npy" "$work/ti.npy"

# sort of a 2-D .npy sorts each row (numpy.sort(a, axis=-1)), argsort per row, the shape kept
"$cli" sort --in "$work/rows.npy" --out "$work/rs.npy" --indices-out "$work/ri.npy" --descending --stable
py "
x = np.load(sys.argv[1]); s = np.load(sys.argv[2]); i = np.load(sys.argv[3])
assert s.shape == (64, 1000) and i.shape == (64, 1000), (s.shape, i.shape)
assert np.array_equal(s, -np.sort(-x, axis=1)), 'rows not sorted descending'
assert np.array_equal(np.take_along_axis(x, i, axis=1), s)
assert np.array_equal(i, np.argsort(-x, axis=1, kind='stable'))
" "$work/rows.npy" "$work/rs.npy" "$work/ri.npy"

# failures are clear and non-zero
if "$cli" sort --in "$work/k.bin" --out "$work/x.bin" 2>"$work/err"; then fail "raw without --dtype accepted"; fi
grep -q -- "--dtype is required" "$work/err" || fail "no message for a missing --dtype: $(cat "$work/err")"
if "$cli" sort --in "$work/k.npy" --dtype f32 --out "$work/x.npy" 2>"$work/err"; then fail "dtype mismatch accepted"; fi
grep -q "holds" "$work/err" || fail "no message for a dtype mismatch: $(cat "$work/err")"
if "$cli" topk --in "$work/k.txt" --dtype u32 -k 0 --out "$work/x.txt" 2>"$work/err"; then fail "k=0 accepted"; fi
grep -q -- "-k: must be a number above 0" "$work/err" || fail "k=0 did not say why: $(cat "$work/err")"
if "$cli" sort --in "$work/missing.npy" --out "$work/x.npy" 2>"$work/err"; then fail "missing file accepted"; fi
grep -q "missing.npy" "$work/err" || fail "the error does not name the file"
if "$cli" health --server 127.0.0.1:1 --timeout 2 >/dev/null 2>&1; then fail "health of nothing succeeded"; fi

# Exit codes (issue 17): 0 done, 1 failed, 2 bad usage, on every subcommand.
code() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
[ "$(code "$cli" sort --in "$work/k.npy" --out "$work/x.npy" --no-such-flag)" = 2 ] || fail "sort: a bad flag is not exit 2"
[ "$(code "$cli" topk --in "$work/k.npy" --out "$work/x.npy" -k banana)" = 2 ] || fail "topk: a bad value is not exit 2"
[ "$(code "$cli" gen --dtype f99 --out "$work/x.bin")" = 2 ] || fail "gen: an unknown dtype is not exit 2"
[ "$(code "$cli" sort --in "$work/k.bin" --dtype nope --out "$work/x.bin")" = 2 ] || fail "sort: an unknown dtype is not exit 2"
[ "$(code "$cli" health --bogus)" = 2 ] || fail "health: a bad flag is not exit 2"
[ "$(code "$cli" sort --in "$work/missing.npy" --out "$work/x.npy")" = 1 ] || fail "sort: a missing file is not exit 1"
"$cli" sort --help | grep -q "Exit codes: 0 done; 1 failed" || fail "sort --help does not document its exit codes"
# health over several servers: 0 only when every one is SERVING, a line each.
"$cli" health -s "127.0.0.1:$grpc_port,127.0.0.1:$grpc_port" >"$work/health" || fail "health of two serving servers failed"
[ "$(grep -c SERVING "$work/health")" = 2 ] || fail "health did not list both servers: $(cat "$work/health")"
[ "$(code "$cli" health -s "127.0.0.1:$grpc_port,127.0.0.1:1" --timeout 2)" = 1 ] || fail "health said yes with one server down"
# Standard input and output as '-': .npy by its magic, text otherwise (and text out).
printf '3\n-1\n2\n' | "$cli" sort --in - --out - --dtype i32 >"$work/piped.txt" || fail "sort from stdin to stdout failed"
[ "$(tr '\n' ' ' <"$work/piped.txt")" = "-1 2 3 " ] || fail "sort through pipes gave $(cat "$work/piped.txt")"
"$cli" topk --in - --out - -k 1 <"$work/k.npy" >"$work/piped-top.txt" || fail "topk of an .npy on stdin failed"
[ "$(wc -l <"$work/piped-top.txt")" = 1 ] || fail "topk through pipes gave $(cat "$work/piped-top.txt")"
"$cli" gen --dtype u16 --count 10 --out - --format raw | "$cli" sort --in - --format raw --dtype u16 --out "$work/from-pipe.bin" \
  || fail "raw through a pipe failed"
[ "$(stat -c %s "$work/from-pipe.bin")" = 20 ] || fail "raw through a pipe lost bytes"
# The README's pipe needs no --dtype: text is read as the first of i64, u64 and f64 that holds it (issue 43).
for dtype in u32 i8 u64 f32 f16; do
  "$cli" gen --dtype $dtype --count 1000 --out - >"$work/gen.txt" || fail "gen $dtype to stdout"
  "$cli" gen --dtype $dtype --count 1000 --out - | "$cli" sort --in - --out - >"$work/piped-gen.txt" ||
    fail "gen $dtype | sort --in - --out - failed"
  py "k = np.loadtxt(sys.argv[1], dtype=np.float64, ndmin=1); s = np.loadtxt(sys.argv[2], dtype=np.float64, ndmin=1)
assert np.array_equal(np.sort(k), s), 'pipe sort differs'
assert sorted(open(sys.argv[1]).read().split()) == sorted(open(sys.argv[2]).read().split()), 'numbers changed'" \
    "$work/gen.txt" "$work/piped-gen.txt"
done
printf '18446744073709551615\n3\n' | "$cli" sort --in - --out - >"$work/u64.txt" || fail "u64 text without --dtype"
[ "$(tr '\n' ' ' <"$work/u64.txt")" = "3 18446744073709551615 " ] || fail "u64 text sorted as $(cat "$work/u64.txt")"
[ "$(printf '1\nseven\n' | code "$cli" sort --in - --out -)" = 1 ] || fail "text that is no number is not exit 1"
# Usage mistakes are exit 2, each said (issue 43): k below 1, a negative timeout, a URL for --server,
# shm without its socket.
for k in -1 0 2.5; do
  [ "$(code "$cli" topk --in "$work/k.npy" --out "$work/x.npy" -k $k)" = 2 ] || fail "topk -k $k is not exit 2"
done
[ "$(code "$cli" sort --in "$work/k.npy" --out "$work/x.npy" --timeout -1)" = 2 ] || fail "--timeout -1 is not exit 2"
[ "$(code "$cli" sort -s "http://$GPUSORT_SERVER" --in "$work/k.npy" --out "$work/x.npy")" = 2 ] ||
  fail "a URL for --server is not exit 2"
[ "$(code "$cli" sort --transport shm --in "$work/k.npy" --out "$work/x.npy")" = 2 ] ||
  fail "--transport shm without --shm-socket is not exit 2"
# --transport takes the same names in every subcommand; one a subcommand cannot use is usage, said why.
"$cli" bench --transport auto --method sort --count 1000 --requests 20 --warmup 0 --check --fail-on-error \
  --no-progress >/dev/null || fail "bench --transport auto"
"$cli" bench --transport auto --method echo --count 2M --requests 4 --warmup 0 --no-progress >/dev/null ||
  fail "bench --transport auto of 8 MiB echoes"
"$cli" sort --transport device --in "$work/k.npy" --out "$work/x.npy" 2>"$work/err" && fail "sort took --transport device"
grep -q "bench's" "$work/err" || fail "sort --transport device did not say why: $(cat "$work/err")"
[ "$(code "$cli" topk --transport device --in "$work/k.npy" --out "$work/x.npy")" = 2 ] || fail "topk device is not exit 2"
# (--help to a file first: grep -q leaving a pipe early would fail the pipeline under pipefail.)
for sub in sort topk bench; do
  "$cli" $sub --help >"$work/help.txt"
  grep -q -- "--transport.*auto" "$work/help.txt" || fail "$sub --help lists no auto transport"
done
# --count is a number of keys: its help names no byte units (issue 43).
for sub in gen bench; do
  "$cli" $sub --help >"$work/help.txt"
  grep -- "--count" "$work/help.txt" | grep -q "kb" && fail "$sub --count help lists byte units"
done
# bench's CSV: one column per server stage.
"$cli" bench --method sort --count 1000 --requests 20 --warmup 0 --format csv --no-progress >"$work/stages.csv" ||
  fail "bench --format csv"
sort_col=$(head -1 "$work/stages.csv" | tr ',' '\n' | grep -n '^stage_sort_p50_ms$' | cut -d: -f1)
[ -n "$sort_col" ] || fail "no stage_sort_p50_ms column: $(head -1 "$work/stages.csv")"
tail -n 1 "$work/stages.csv" | cut -d, -f"$sort_col" | grep -Eq '^[0-9]+\.[0-9]{3}$' || fail "the sort stage's cell is not a time"
# A timeout under a millisecond is a deadline (1 ms), not none: a 4M sort cannot meet it.
"$cli" gen --dtype u32 --count 4M --out "$work/big.npy"
"$cli" sort --in "$work/big.npy" --out "$work/x.npy" --timeout 0.0001 2>"$work/err" && fail "--timeout 0.0001 was no deadline"
grep -q DEADLINE_EXCEEDED "$work/err" || fail "--timeout 0.0001 failed otherwise: $(cat "$work/err")"
# --verbose names the path the keys took.
"$cli" sort --transport sockets -v --in "$work/k.npy" --out "$work/x.npy" 2>"$work/err" || fail "sort -v over sockets"
head -1 "$work/err" | grep -q "data port$" || fail "-v over the data port says: $(head -1 "$work/err")"
# A values payload for sort: a typed .npy moves with its keys (stable), or raw bytes of --value-width.
PY=${PYTHON:-/usr/bin/python3}
$PY -c "
import numpy as np, sys
np.save(sys.argv[1], np.array([3, 1, 2, 1, 0], dtype=np.int32))
np.save(sys.argv[2], np.array([30.5, 10.5, 20.5, 11.5, 0.5]))
open(sys.argv[3], 'wb').write(bytes(range(15)))
" "$work/vk.npy" "$work/vv.npy" "$work/vv.bin"
"$cli" sort --in "$work/vk.npy" --out "$work/vks.npy" --values "$work/vv.npy" --values-out "$work/vvs.npy" --stable \
  || fail "sort with .npy values failed"
$PY -c "
import numpy as np, sys
k, v = np.load(sys.argv[1]), np.load(sys.argv[2])
assert k.tolist() == [0, 1, 1, 2, 3] and v.tolist() == [0.5, 10.5, 11.5, 20.5, 30.5], (k, v)
" "$work/vks.npy" "$work/vvs.npy" || fail "values did not move with their keys"
"$cli" sort --in "$work/vk.npy" --out "$work/vks.npy" --values "$work/vv.bin" --value-width 3 --values-out "$work/vvs.bin" \
  --stable || fail "sort with raw values failed"
[ "$(od -An -tu1 "$work/vvs.bin" | tr -s ' ' | sed 's/^ //')" = "12 13 14 3 4 5 9 10 11 6 7 8 0 1 2" ] \
  || fail "raw values moved wrongly: $(od -An -tu1 "$work/vvs.bin")"
[ "$(code "$cli" sort --in "$work/vk.npy" --out "$work/x.npy" --values "$work/vv.npy")" = 2 ] || fail "--values without --values-out"
# bench: a step ramp is a row per rate; a ramp that is not FROM:TO:STEP is bad usage.
"$cli" bench --ramp 40:120:40 --requests 8 --warmup 0 --count 100 --format csv >"$work/ramp.csv" || fail "bench --ramp failed"
[ "$(tail -n +2 "$work/ramp.csv" | cut -d, -f6 | tr '\n' ' ')" = "40 80 120 " ] || fail "ramp rows: $(cat "$work/ramp.csv")"
[ "$(code "$cli" bench --ramp 40:x --requests 8)" = 2 ] || fail "a bad --ramp is not exit 2"
# A linear ramp is a row per --ramp-interval, each at its interval's mean rate, with where it starts;
# one that is not FROM:TO, or that is given a number of requests instead of a duration, is bad usage.
"$cli" bench --ramp-linear 20:60 --duration 1 --ramp-interval 0.5 --warmup 0 --count 100 --format csv \
  >"$work/ramp-linear.csv" || fail "bench --ramp-linear failed"
ramp_at=$(head -1 "$work/ramp-linear.csv" | tr ',' '\n' | grep -n '^ramp_at_s$' | cut -d: -f1)
[ "$(tail -n +2 "$work/ramp-linear.csv" | cut -d, -f6,"$ramp_at" | tr '\n' ' ')" = "30,0.000000 50,0.500000 " ] \
  || fail "linear ramp rows: $(cat "$work/ramp-linear.csv")"
[ "$(code "$cli" bench --ramp-linear 40 --duration 1)" = 2 ] || fail "a bad --ramp-linear is not exit 2"
[ "$(code "$cli" bench --ramp-linear 10:20 --requests 8)" = 2 ] || fail "--ramp-linear with --requests is not exit 2"
kill -TERM "$server_pid" && wait "$server_pid" || true
server_pid=""
[ ! -e "$work/shm.sock" ] || fail "the server left its shared-memory socket behind"
echo "cli: OK"
