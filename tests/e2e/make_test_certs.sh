#!/usr/bin/env bash
# Test certificates, made fresh with openssl in DIR: a CA (ca.pem), a server certificate for
# localhost and 127.0.0.1 (server.pem, server.key), a client certificate (client.pem, client.key), and a
# second, unrelated CA (other-ca.pem) with a client certificate of its own (other-client.pem, .key).
# usage: make_test_certs.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { echo "make_test_certs: failed: $*" >&2; "$@"; exit 1; }; }

ca() {  # name
  quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=gpusort test $1" \
    -keyout "$1.key" -out "$1.pem"
}
leaf() {  # name ca extensions
  quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=gpusort test $1" -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$3" >"$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}

ca ca
ca other-ca
leaf server ca "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client ca "extendedKeyUsage=clientAuth"
leaf other-client other-ca "extendedKeyUsage=clientAuth"
chmod 600 ./*.key
