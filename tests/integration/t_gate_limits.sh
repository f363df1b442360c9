#!/usr/bin/env bash
# Limits and operations: the connection cap, the upstream concurrency cap
# and its bounded queue, a TLS upstream, `check --files`, and SIGTERM
# draining an in-flight response.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 307200
python3 "$ROOT/tools/mcs-data.py" "$MCS_DATA" $((4 * 1024 * 1024)) big
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"

note "a TLS upstream, verified against its CA, with the server name checked"
MCS_PLAIN=$MCS_PORT; MCS_PORT=$MCS_TLS_PORT
UPSTREAM_EXTRA="  tls: true
  ca_file: $CA
  server_name: localhost" gate_config "$TMP/gate.yaml" hold "$object"
"$SKEWGATE_BIN" check --files -c "$TMP/gate.yaml" || fail "check --files rejects a good config"
gate_start "$TMP/gate.yaml"
want=$(sha256sum <"$MCS_DATA/spec2/big")
got=$(curl -sf --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/big" | sha256sum)
[ "$want" = "$got" ] || fail "4 MiB over TLS both ways differs"
gate_stop
note "a TLS upstream whose certificate does not match the name -> 502"
UPSTREAM_EXTRA="  tls: true
  ca_file: $CA
  server_name: mcs.example.com" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 502 ] || fail "unverified upstream was used"
gate_stop
MCS_PORT=$MCS_PLAIN

note "check --files names a certificate that does not load"
gate_config "$TMP/bad.yaml" hold "$object"
sed -i "s|$TMP/pki/tls.crt|$TMP/pki/missing.crt|" "$TMP/bad.yaml"
"$SKEWGATE_BIN" check -c "$TMP/bad.yaml" >/dev/null || fail "plain check should not open files"
if "$SKEWGATE_BIN" check --files -c "$TMP/bad.yaml" 2>"$TMP/check.err"; then fail "check --files passed a missing certificate"; fi
grep -q "missing.crt" "$TMP/check.err" || fail "check --files did not name the file: $(cat "$TMP/check.err")"

note "upstream cap 1, queue 1: the third concurrent request gets 503 at once"
python3 "$ROOT/tests/integration/bad_upstream.py" --mode stall --port-file "$TMP/stall.port" &
PIDS+=($!)
wait_until 10 test -s "$TMP/stall.port" || fail "stalling upstream did not start"
MCS_PORT=$(cat "$TMP/stall.port")
GATE_WORKERS=1 UPSTREAM_EXTRA="  max_concurrent: 1
  max_queue: 1
  queue_timeout: 1s
  response_timeout: 10s" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
curl -s -o /dev/null -w '%{http_code}' --max-time 15 "http://127.0.0.1:$PLAIN_PORT/config/a" >"$TMP/first" &
first=$!
# The gate holds the first request with the upstream: one connection there.
upstream_busy() { [ "$(ss -tn state established "( dport = :$MCS_PORT )" | tail -n +2 | wc -l)" -ge 1 ]; }
wait_until 10 upstream_busy || fail "first request never reached the upstream"
curl -s -o /dev/null -w '%{http_code}' --max-time 15 "http://127.0.0.1:$PLAIN_PORT/config/b" >"$TMP/second" &
second=$!
queued() { [ "$(ss -tn state established "( dport = :$PLAIN_PORT )" | tail -n +2 | wc -l)" -ge 2 ]; }
wait_until 10 queued || fail "second request not connected"
third=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PLAIN_PORT/config/c")
[ "$third" = 503 ] || fail "queue overflow answered $third, expected 503"
wait "$second" || true
[ "$(cat "$TMP/second")" = 503 ] || fail "queued request answered $(cat "$TMP/second") after queue_timeout, expected 503"
gate_stop
wait "$first" || true

note "max_connections: connections over the cap are closed"
MCS_PORT=$MCS_PLAIN
GATE_WORKERS=1 gate_config "$TMP/gate.yaml" hold "$object" "limits:
  max_connections: 3"
gate_start "$TMP/gate.yaml"
python3 - "$PLAIN_PORT" <<'PY' || fail "connection cap not enforced"
import socket, sys
port = int(sys.argv[1])
held = []
for i in range(3):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"GET /config/worker HTTP/1.1\r\nHost: a\r\n")   # a partial head: accepted, kept
    held.append(s)
s = socket.create_connection(("127.0.0.1", port), timeout=3)
s.sendall(b"GET /config/worker HTTP/1.1\r\nHost: a\r\n\r\n")
try:
    data = s.recv(100)
except ConnectionResetError:
    data = b""
assert data == b"", "the fourth connection was served: %r" % data[:40]
held[0].sendall(b"\r\n")
assert held[0].recv(12) == b"HTTP/1.1 200", "a connection under the cap was not served"
PY
gate_stop

note "SIGHUP: new certificates for new handshakes, open connections untouched"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
leaf_key() { openssl s_client -connect "127.0.0.1:$TLS_PORT" -CAfile "$1" </dev/null 2>/dev/null |
             openssl x509 -noout -text | grep -o 'Public Key Algorithm: [a-zA-Z-]*'; }
[ "$(leaf_key "$CA")" = "Public Key Algorithm: id-ecPublicKey" ] || fail "expected the ECDSA certificate first"
mkfifo "$TMP/reload.fifo.go"
python3 - "$TLS_PORT" "$CA" "$TMP/reload.fifo" <<'PY' &
import os, socket, ssl, sys
port, ca, fifo = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
req = b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
s.sendall(req); assert s.recv(12) == b"HTTP/1.1 200"
s.recv(65536)
open(fifo, "w").close()                    # tell the shell: connected
open(fifo + ".go").read()                  # wait: the shell reloaded
s.sendall(req); assert s.recv(12) == b"HTTP/1.1 200", "old connection broken by reload"
PY
client=$!
PIDS+=($client)
wait_until 10 test -e "$TMP/reload.fifo" || fail "reload client did not connect"
"$ROOT/tools/mkcert.sh" "$TMP/pki-rsa" rsa
cp "$TMP/pki-rsa/tls.crt" "$TMP/pki/tls.crt"; cp "$TMP/pki-rsa/tls.key" "$TMP/pki/tls.key"
kill -HUP "$GATE_PID"
wait_until 10 grep -q '"event":"reload"' "$GATE_LOG" || fail "no reload log line"
[ "$(leaf_key "$TMP/pki-rsa/ca.crt")" = "Public Key Algorithm: rsaEncryption" ] || fail "new handshakes still get the old certificate"
echo go >"$TMP/reload.fifo.go"
wait "$client" || fail "the connection opened before SIGHUP did not survive it"
gate_stop
cp "$TMP/pki-rsa/ca.crt" "$TMP/pki/ca.crt"   # the listener now serves the RSA certificate

note "SIGTERM: an in-flight response completes, new connections are refused"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
curl -s -o "$TMP/drain.out" --limit-rate 1m --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/big" &
dl=$!
wait_until 10 test -s "$TMP/drain.out" || fail "download did not start"
kill -TERM "$GATE_PID"
wait_until 10 grep -q '"event":"stopping"' "$GATE_LOG" || fail "no stopping log line"
if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PLAIN_PORT/healthz"; then fail "accepted a connection while draining"; fi
wait "$dl" || fail "in-flight download failed during the drain"
[ "$(sha256sum <"$TMP/drain.out")" = "$(sha256sum <"$MCS_DATA/spec2/big")" ] || fail "drained body differs"
wait_until 20 proc_gone "$GATE_PID" || fail "gate did not exit after the drain"
grep -q '"event":"stopped"' "$GATE_LOG" || fail "no stopped log line"
echo PASS
