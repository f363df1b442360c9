#!/usr/bin/env bash
# mkcert.sh DIR [ecdsa|rsa] [SAN...]: throwaway TLS material for the demo,
# the tests and the benchmarks. Writes into DIR:
#   ca.crt ca.key    a self-signed CA
#   tls.crt tls.key  a server leaf signed by it (leaf only, no chain), SAN
#                    IP:127.0.0.1, IP:::1, DNS:localhost, and each extra SAN
#                    given (IP:10.231.7.1, DNS:api-int.example), e.g. the
#                    address of a test's network namespace
# Keys are ECDSA P-256 (default) or RSA-2048; certificates last 30 days.
# Idempotent: existing material of the requested key type that verifies,
# names every requested SAN and is valid for at least another day is left
# alone. Silent unless it fails.
set -euo pipefail

usage() { echo "usage: $0 DIR [ecdsa|rsa] [IP:ADDRESS|DNS:NAME...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dir=$1
kind=${2:-ecdsa}
extra_sans=("${@:3}")
for san in "${extra_sans[@]}"; do
  [[ $san =~ ^(IP:[0-9A-Fa-f.:]+|DNS:[A-Za-z0-9.-]+)$ ]] || { echo "mkcert: bad SAN '$san'" >&2; usage; }
done
case $kind in
  ecdsa) newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
         key_alg=id-ecPublicKey
         leaf_usage=digitalSignature ;;
  rsa)   newkey=(-newkey rsa:2048)
         key_alg=rsaEncryption
         leaf_usage=digitalSignature,keyEncipherment ;;
  *)     usage ;;
esac
days=30

mkdir -p "$dir"

current() {
  local f
  for f in ca.crt ca.key tls.crt tls.key; do [ -s "$dir/$f" ] || return 1; done
  openssl x509 -in "$dir/tls.crt" -noout -text 2>/dev/null |
    grep -q "Public Key Algorithm: $key_alg" || return 1
  openssl x509 -in "$dir/ca.crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl x509 -in "$dir/tls.crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1 || return 1
  local sans san
  sans=$(openssl x509 -in "$dir/tls.crt" -noout -ext subjectAltName 2>/dev/null | tr -d ' ' | tr ',' '\n')
  for san in "${extra_sans[@]}"; do
    grep -qxF "${san/#IP:/IPAddress:}" <<<"$sans" || return 1
  done
  # A leaf whose key was replaced behind our back would still verify.
  [ "$(openssl x509 -in "$dir/tls.crt" -noout -pubkey 2>/dev/null)" = \
    "$(openssl pkey -in "$dir/tls.key" -pubout 2>/dev/null)" ]
}
current && exit 0

# Built in a scratch directory next to the target, then moved into place, so
# an interrupted run never leaves a key that does not match its certificate.
work=$(mktemp -d "$dir/.mkcert.XXXXXX")
trap 'rm -rf "$work"' EXIT
umask 077

# A private config, so neither the system openssl.cnf nor OPENSSL_CONF can
# add extensions (the Debian default marks every req -x509 output a CA).
cat >"$work/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = skewgate
[ca_ext]
basicConstraints = critical,CA:TRUE,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,$leaf_usage
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,IP:::1,DNS:localhost${extra_sans[*]:+,$(IFS=,; echo "${extra_sans[*]}")}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

run() {
  if ! out=$("$@" 2>&1); then
    echo "mkcert: $* failed:" >&2
    echo "$out" >&2
    exit 1
  fi
}

run openssl req -config "$work/openssl.cnf" -x509 "${newkey[@]}" -noenc \
  -subj "/CN=skewgate throwaway CA" -extensions ca_ext -days "$days" \
  -keyout "$work/ca.key" -out "$work/ca.crt"
run openssl req -config "$work/openssl.cnf" -x509 "${newkey[@]}" -noenc \
  -subj "/CN=localhost" -extensions leaf_ext -days "$days" \
  -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -keyout "$work/tls.key" -out "$work/tls.crt"

chmod 644 "$work/ca.crt" "$work/tls.crt"
for f in ca.key ca.crt tls.key tls.crt; do mv -f "$work/$f" "$dir/$f"; done
