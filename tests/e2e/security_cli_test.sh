#!/usr/bin/env bash
# TLS, mutual TLS and bearer tokens through the real server process and the gpusort CLI, with
# certificates made by openssl for this run: bad files stop the server at start; a plaintext client,
# a client trusting another CA, one without a certificate or with one from another CA are refused;
# no token is UNAUTHENTICATED, a wrong one PERMISSION_DENIED, the right one sorts; health needs no token,
# and the plaintext --health-listen port and /metrics keep answering probes.
# usage: security_cli_test.sh BUILD_BIN_DIR
set -euo pipefail
bin=$1
cli=$bin/gpusort
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server_pid=""
cleanup() {
  local rc=$?
  [ "$rc" -ne 0 ] && [ -f "$work/server.log" ] && { echo "--- server.log"; tail -n 30 "$work/server.log"; } >&2
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset GPUSORT_TOKEN GPUSORT_TOKEN_FILE GPUSORT_SERVER

"$here/make_test_certs.sh" "$work/certs"
c=$work/certs
printf '# gpusort e2e callers\nright-token-%s\n' "$$" >"$work/tokens"
printf 'not-the-token\n' >"$work/wrong-token"
cp "$work/tokens" "$work/right-token"
chmod 600 "$work/tokens" "$work/right-token" "$work/wrong-token"
printf 'garbage\n' >"$work/garbage.pem"
printf '# none\n\n' >"$work/empty-tokens"

# Bad files: the server exits 1 at start, names the problem, and never writes its port file.
expect_refused_start() {  # message flags...
  local message=$1
  shift
  rm -f "$work/ports"
  local rc=0
  timeout 30 "$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen "" --backend cpu \
    --port-file "$work/ports" "$@" >"$work/bad.log" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || fail "server with $* exited $rc, not 1"
  grep -q -- "$message" "$work/bad.log" || fail "server with $*: no '$message' in: $(cat "$work/bad.log")"
  [ ! -f "$work/ports" ] || fail "server with $* wrote a port file"
}
expect_refused_start "--tls-cert" --tls-cert "$work/garbage.pem" --tls-key "$c/server.key"
expect_refused_start "--tls-key" --tls-cert "$c/server.pem" --tls-key "$work/missing.key"
expect_refused_start "is not the key" --tls-cert "$c/server.pem" --tls-key "$c/client.key"
expect_refused_start "needs --tls-cert" --tls-client-ca "$c/ca.pem"
expect_refused_start "holds no token" --auth-tokens-file "$work/empty-tokens"
expect_refused_start "--auth-tokens-file" --auth-tokens-file "$work/missing-tokens"

"$bin/gpusort-server" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --backend cpu \
  --tls-cert "$c/server.pem" --tls-key "$c/server.key" --tls-client-ca "$c/ca.pem" \
  --auth-tokens-file "$work/tokens" --health-listen 127.0.0.1:0 --port-file "$work/ports" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [ -f "$work/ports" ] && break; sleep 0.05; done
[ -f "$work/ports" ] || fail "no port file"
. "$work/ports"
[ "${health_port:-0}" -gt 0 ] || fail "no health_port in the port file: $(cat "$work/ports")"
grep -q "mutual TLS, bearer tokens" "$work/server.log" || fail "the start-up line does not say what is on"
server=127.0.0.1:$grpc_port
mtls=(--tls-ca "$c/ca.pem" --tls-cert "$c/client.pem" --tls-key "$c/client.key")

refused() {  # what expected_code cli args...
  local what=$1 code=$2
  shift 2
  if "$cli" "$@" >"$work/out" 2>"$work/err"; then fail "$what: accepted"; fi
  grep -q "$code" "$work/err" || fail "$what: expected $code, got: $(cat "$work/err")"
}
refused "plaintext client" UNAVAILABLE health -s "$server" --timeout 5
refused "client trusting another CA" UNAVAILABLE health -s "$server" --tls-ca "$c/other-ca.pem" \
  --tls-cert "$c/client.pem" --tls-key "$c/client.key" --timeout 5
refused "client without a certificate" UNAVAILABLE health -s "$server" --tls-ca "$c/ca.pem" --timeout 5
refused "client certificate from another CA" UNAVAILABLE health -s "$server" --tls-ca "$c/ca.pem" \
  --tls-cert "$c/other-client.pem" --tls-key "$c/other-client.key" --timeout 5
refused "--tls-cert without --tls-key" "go together" health -s "$server" --tls-cert "$c/client.pem"

# Health needs TLS but no token; the plaintext health port needs neither; /metrics stays plain HTTP.
[ "$("$cli" health -s "$server" "${mtls[@]}" --timeout 5)" = SERVING ] || fail "health over mutual TLS"
[ "$("$cli" health -s "localhost:$grpc_port" "${mtls[@]}" --timeout 5)" = SERVING ] || fail "health by name"
[ "$("$cli" health -s "127.0.0.1:$health_port" --service gpusort.v1.SortService --timeout 5)" = SERVING ] \
  || fail "plaintext health port"
curl -sf "http://127.0.0.1:$metrics_port/metrics" | grep -q '^gpusort_build_info' || fail "no /metrics"

"$cli" gen --count 2000 --out "$work/k.txt"
refused "sort without a token" UNAUTHENTICATED sort -s "$server" "${mtls[@]}" --in "$work/k.txt" --dtype u32 \
  --out "$work/s.txt"
refused "sort with a wrong token" PERMISSION_DENIED sort -s "$server" "${mtls[@]}" --token-file "$work/wrong-token" \
  --in "$work/k.txt" --dtype u32 --out "$work/s.txt"
GPUSORT_TOKEN=not-it refused "sort with a wrong GPUSORT_TOKEN" PERMISSION_DENIED sort -s "$server" "${mtls[@]}" \
  --in "$work/k.txt" --dtype u32 --out "$work/s.txt"
refused "bench without a token" UNAUTHENTICATED bench -s "$server" "${mtls[@]}" --requests 5 --warmup 0 --no-progress

"$cli" sort -s "$server" "${mtls[@]}" --token-file "$work/right-token" --in "$work/k.txt" --dtype u32 \
  --out "$work/s.txt" || fail "sort with the right token"
sort -n "$work/k.txt" | cmp -s - "$work/s.txt" || fail "the sorted file is not sorted"
for transport in unary stream; do
  GPUSORT_TOKEN=$(sed -n 2p "$work/tokens") "$cli" topk -s "$server" "${mtls[@]}" --transport $transport -k 5 \
    --in "$work/k.txt" --dtype u32 --out "$work/t-$transport.txt" || fail "topk over $transport with GPUSORT_TOKEN"
done
sort -n "$work/k.txt" | tail -n 5 | sort -nr | cmp -s - "$work/t-unary.txt" || fail "topk answer"
cmp -s "$work/t-unary.txt" "$work/t-stream.txt" || fail "topk over stream differs"
for method in sort echo; do
  "$cli" bench -s "$server,localhost:$grpc_port" "${mtls[@]}" --token-file "$work/right-token" --method $method \
    --requests 40 --concurrency 2 --warmup 0 --check --no-progress --fail-on-error >"$work/bench.txt" \
    || fail "bench $method with TLS and a token: $(cat "$work/bench.txt")"
done

kill -TERM "$server_pid"
rc=0; wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" -eq 0 ] || fail "server exited $rc after SIGTERM"
echo "security cli: OK"
