#!/usr/bin/env bash
# mkcerts.sh DIR: make a throwaway CA and a server certificate for loopback
# tests (ECDSA P-256).  Writes DIR/ca.crt, DIR/ca.key, DIR/server.crt
# (SAN IP:127.0.0.1, IP:::1, DNS:localhost), DIR/server.key.
set -euo pipefail
dir=${1:?usage: mkcerts.sh DIR}
mkdir -p "$dir"
cd "$dir"
umask 077
openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=fakeapi test CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out ca.crt 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out server.key 2>/dev/null
openssl req -new -key server.key -sha256 -subj "/CN=localhost" -out server.csr 2>/dev/null
cat >server.ext <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
EOF
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -days 2 -sha256 -extfile server.ext -out server.crt 2>/dev/null
rm -f server.csr server.ext ca.srl
chmod 644 ca.crt server.crt
openssl verify -CAfile ca.crt server.crt >/dev/null
