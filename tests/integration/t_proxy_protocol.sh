#!/usr/bin/env bash
# PROXY protocol listeners (listeners[].proxy_protocol, trusted_proxies):
# v1 from curl and from a hand-made header, v2 from a real HAProxy in front
# (send-proxy-v2, over plain and TLS), v2 LOCAL; a missing, late or bad
# header and an untrusted peer get 400 and a close. Clients come from
# distinct loopback addresses.
. "$(dirname "$0")/lib.sh"

command -v haproxy >/dev/null || fail "haproxy is not installed (package haproxy)"
certs
mcs_start 4096
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
admin_port=$(free_port)
ADMIN_ADDR="127.0.0.1:$admin_port"
LISTENER_EXTRA='    proxy_protocol: true
    trusted_proxies: ["127.0.0.1/32", "::1/128"]' \
  gate_config "$TMP/gate.yaml" hold "$object" "limits:
  header_timeout: 1s"
gate_start "$TMP/gate.yaml"
plain="http://127.0.0.1:$PLAIN_PORT/config/worker"
tls="https://127.0.0.1:$TLS_PORT/config/worker"

# last_access FIELD: FIELD of the newest access log line.
last_access() {
  python3 - "$GATE_LOG" "$1" <<'PY'
import json, sys
last = None
for line in open(sys.argv[1]):
    try: j = json.loads(line)
    except ValueError: continue
    if j.get("event") == "access": last = j
print(last.get(sys.argv[2]) if last else "")
PY
}
# access_lines N: at least N access lines were written.
access_lines() { [ "$(grep -c '"event":"access"' "$GATE_LOG")" -ge "$1" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@" || true; }
n=0
expect_access() {   # CLIENT STATUS REASON: the next access line says so
  n=$((n + 1))
  wait_until 5 access_lines "$n" || fail "no access line $n"
  [ "$(last_access client)" = "$1" ] || fail "client $(last_access client), expected $1"
  [ "$(last_access status)" = "$2" ] || fail "status $(last_access status), expected $2"
  [ "$(last_access reason)" = "$3" ] || fail "reason $(last_access reason), expected $3"
}

note "curl --haproxy-protocol (v1) from a trusted peer: admitted, over plain and TLS"
[ "$(code --haproxy-protocol "$plain")" = 200 ] || fail "v1 plain"
expect_access 127.0.0.1 200 Compliant
[ "$(code --haproxy-protocol --cacert "$CA" "$tls")" = 200 ] || fail "v1 before TLS"
expect_access 127.0.0.1 200 Compliant

note "the client address is the header's: a v1 header naming 127.0.0.9"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" \
  'PROXY TCP4 127.0.0.9 127.0.0.1 4444 80\r\nGET /config/worker HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
grep -q '^HTTP/1.1 200' <<<"$out" || fail "hand-made v1: $out"
expect_access 127.0.0.9 200 Compliant
[ "$(last_access client_port)" = 4444 ] || fail "client port $(last_access client_port)"

note "v2 LOCAL (a health check): the peer's own address"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" \
  '\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00GET /config/worker HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
grep -q '^HTTP/1.1 200' <<<"$out" || fail "v2 LOCAL: $out"
expect_access 127.0.0.1 200 Compliant

note "an untrusted peer (127.0.0.2) gets 400 UntrustedProxy and a close"
h=$(curl -s -D - -o /dev/null --interface 127.0.0.2 --haproxy-protocol "$plain" || true)
grep -q '^HTTP/1.1 400' <<<"$h" || fail "untrusted: $h"
grep -q '^Skewgate-Reason: UntrustedProxy' <<<"$h" || fail "no reason: $h"
grep -q '^Connection: close' <<<"$h" || fail "not closed: $h"
expect_access 127.0.0.2 400 UntrustedProxy
# Over TLS the refusal comes before the handshake: curl sees no TLS.
if curl -s -o /dev/null --interface 127.0.0.2 --haproxy-protocol --cacert "$CA" "$tls"; then fail "untrusted TLS succeeded"; fi
expect_access 127.0.0.2 400 UntrustedProxy

note "no PROXY header: 400 BadProxyHeader, plain and TLS"
[ "$(code "$plain")" = 400 ] || fail "no header"
expect_access 127.0.0.1 400 BadProxyHeader
if curl -s -o /dev/null --cacert "$CA" "$tls"; then fail "TLS without a header succeeded"; fi
expect_access 127.0.0.1 400 BadProxyHeader

note "a header that does not complete within header_timeout: 400 and closed"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" 'PROXY TCP4 127.0.0.9' --timeout 5)
[ "$(tr '\n' ' ' <<<"$out")" = "HTTP/1.1 400 Bad Request CLOSED " ] || fail "late header: $out"
expect_access 127.0.0.1 400 BadProxyHeader

note "HAProxy in front (send-proxy-v2): clients 127.0.0.2 and 127.0.0.3 keep their addresses"
hp_plain=$(free_port); hp_tls=$(free_port)
cat >"$TMP/haproxy.cfg" <<CFG
global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend plain
    bind 127.0.0.1:$hp_plain
    default_backend gate_plain
frontend tls
    bind 127.0.0.1:$hp_tls
    default_backend gate_tls
backend gate_plain
    server gate 127.0.0.1:$PLAIN_PORT send-proxy-v2
backend gate_tls
    server gate 127.0.0.1:$TLS_PORT send-proxy-v2
CFG
haproxy -c -q -f "$TMP/haproxy.cfg" || fail "haproxy refused its config"
haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
PIDS+=($!)
hp_up() { curl -s -o /dev/null "http://127.0.0.1:$hp_plain/healthz"; }
wait_until 10 hp_up || { cat "$TMP/haproxy.log"; fail "haproxy did not start"; }
n=$((n + 1))   # the probe's own access line
[ "$(code --interface 127.0.0.2 "http://127.0.0.1:$hp_plain/config/worker")" = 200 ] || fail "via haproxy, plain"
expect_access 127.0.0.2 200 Compliant
[ "$(code --interface 127.0.0.3 --cacert "$CA" "https://127.0.0.1:$hp_tls/config/worker")" = 200 ] || fail "via haproxy, TLS"
expect_access 127.0.0.3 200 Compliant
[ "$(last_access tls)" = True ] || fail "the TLS request was not logged as TLS"

note "the refusals are counted"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
grep -q '^skewgate_admission_rejects_total{reason="UntrustedProxy"} 2$' <<<"$metrics" || fail "UntrustedProxy count: $(grep admission <<<"$metrics")"
grep -q '^skewgate_admission_rejects_total{reason="BadProxyHeader"} 3$' <<<"$metrics" || fail "BadProxyHeader count: $(grep admission <<<"$metrics")"
echo "PASS"
