#!/usr/bin/env bash
# What outlives a reload holds a reference to the configuration or owns
# copies of what it reads (docs/internals.md, "What outlives a reload").
# Each long-lived consumer is used once before a SIGHUP that leaves it
# unchanged, the old configuration is let go (the worker's
# config_generation_freed), and then it is used again; under ASan
# (SKEWGATE_SAN=1) a borrowed pointer into the freed configuration is a
# report, and without it a consumer that lost its settings fails below.
#   part 1, one gate with the Kubernetes source, SIGHUP with the same file:
#     the kube source, the token watch, the admin listener (TCP with its
#     credential, and its unix socket), the metrics listener, the held
#     table, a coalesced fetch kept for coalesce.ttl, the upstream pool (a
#     pooled TLS connection made before the reload), the listener's TLS
#     context (a keep-alive connection made before it, and a new one after).
#   part 2, the machines watch, on a gate of its own: it holds a reference
#     to the configuration it started with until a reload changes its
#     Kubernetes connection, which would keep the start-up configuration of
#     part 1's consumers alive and hide a borrow; the same file keeps it.
#   part 3, the file source, SIGHUP with only an unrelated key changed.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
cp "$FA_DIR/token" "$GATE_TOKEN"
NS=openshift-machine-api
machine() {  # machine NAME IP: a pending Machine (no nodeRef) at IP
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}}" >/dev/null
}

ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
METRICS_ADDR="127.0.0.1:$(free_port)"
printf 'tok-one\n' >"$TMP/node-token"
printf 'admin-secret\n' >"$TMP/admin-token"
EXTRA="admission:
  token:
    files: [$TMP/node-token]
metrics:
  enabled: true
  address: \"$METRICS_ADDR\"
coalesce:
  ttl: 60s
log:
  level: debug"

# One worker: the pooled upstream connection and the kept fetch are its.
GATE_WORKERS=1 MCS_PORT=$MCS_TLS_PORT UPSTREAM_EXTRA="  tls: true
  ca_file: $CA" ADMIN_ADDR=$ADMIN_ADDR ADMIN_EXTRA="  token_file: $TMP/admin-token" GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "$EXTRA"
gate_start "$TMP/gate.yaml"

TOKEN=tok-one
# from ADDR [PATH] [CURL_ARGS]: the status a node at ADDR gets (plain listener, with the token).
from() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface "$1" -H "Authorization: Bearer $TOKEN" \
    "${@:3}" "http://127.0.0.1:$PLAIN_PORT${2:-/config/worker}" || true
}
from_is() { [ "$(from "$2" "${3:-}")" = "$1" ]; }
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
freed_at_least() { [ "$(grep -c '"event":"config_generation_freed"' "$GATE_LOG")" -ge "$1" ]; }
mcs_requests() { grep -c "$1" "$TMP/mcs/access.log" || true; }
coalesce_lines() { grep -c "\"event\":\"coalesce\",\"msg\":\"$1 /config/worker" "$GATE_LOG" || true; }
# The gate's connections to the MCS's TLS port, by local port.
upstream_conns() { ss -Htn state established "( dport = :$MCS_TLS_PORT )" | awk '{print $3}' | sort; }
held_entry() {  # held_entry ADDR: "REASON ADMITTED" of ADDR's entry in /held
  curl -sf "$ADMIN/held" | python3 -c '
import json, sys
for c in json.load(sys.stdin)["clients"]:
    if c["address"] == sys.argv[1]:
        print(c["reason"], c["admitted"])' "$1"
}

note "before the reload: every consumer in use"
wait_until 15 from_is 200 127.0.0.2 || die "not admitted at start: $(from 127.0.0.2)"
[ "$(coalesce_lines leads)" -ge 1 ] || die "the GET was not coalesced (nothing tested)"
before_worker=$(mcs_requests "GET /config/worker HTTP")
# A keep-alive TLS client from the Machine's address: one request now
# (not coalesced: a query), the next after the reload on the same connection.
python3 - "$TLS_PORT" "$CA" "$TMP/ka" "$TOKEN" >"$TMP/ka.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
port, ca, base, token = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)
raw = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))
s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
buf = b""
def request(n):
    global buf
    s.sendall(("GET /config/worker?ka=%d HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
               % (n, token)).encode())
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return "closed"
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    length = next(int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:"))
    while len(buf) < length:
        chunk = s.recv(65536)
        if not chunk:
            return "short"
        buf += chunk
    buf = buf[length:]
    return lines[0].split()[1]
print("first", request(1), flush=True)
open(base + ".first", "w").close()
deadline = time.time() + 60
while not os.path.exists(base + ".go") and time.time() < deadline:
    time.sleep(0.02)
print("second", request(2), flush=True)
PY
ka=$!
PIDS+=($ka)
wait_until 10 test -e "$TMP/ka.first" || die "the keep-alive client's first request: $(cat "$TMP/ka.out")"
grep -q "^first 200$" "$TMP/ka.out" || die "keep-alive client: $(cat "$TMP/ka.out")"
pooled=$(upstream_conns)
[ "$(wc -w <<<"$pooled")" = 1 ] || die "expected one pooled upstream connection, got: $pooled"
patch_status "$STATUS_OUT_OF_SKEW"
wait_until 5 from_is 503 127.0.0.2 || die "not held out of skew before the reload"
[ "$(held_entry 127.0.0.2)" = "OutOfSkew False" ] || die "/held before the reload: $(held_entry 127.0.0.2)"
patch_status "$STATUS_COMPLIANT"
wait_until 5 from_is 200 127.0.0.2 || die "not admitted again before the reload"

note "SIGHUP with the same file; the worker frees the old configuration"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
wait_until 10 freed_at_least 1 || die "the old configuration was not freed (nothing tested)"

note "coalesce.ttl: the fetch kept from before the reload serves the next GET"
joined=$(coalesce_lines joined)
from_is 200 127.0.0.2 || die "GET after the reload: $(from 127.0.0.2)"
[ "$(coalesce_lines joined)" -gt "$joined" ] || die "the kept fetch was not joined"
[ "$(mcs_requests "GET /config/worker HTTP")" = "$before_worker" ] || die "the kept fetch was not used: the MCS was asked again"

note "upstream pool: the TLS connection pooled before the reload carries the next request"
queries=$(mcs_requests "GET /config/worker?q=")
from_is 200 127.0.0.2 "/config/worker?q=1" || die "a query after the reload: $(from 127.0.0.2 /config/worker?q=1)"
[ "$(mcs_requests "GET /config/worker?q=")" -gt "$queries" ] || die "the query did not reach the MCS"
[ "$(upstream_conns)" = "$pooled" ] || die "the pooled connection was not reused: before $pooled, now $(upstream_conns)"

note "listener TLS: the keep-alive connection from before, and a new one"
touch "$TMP/ka.go"
wait "$ka" || die "keep-alive client: $(cat "$TMP/ka.out")"
grep -q "^second 200$" "$TMP/ka.out" || die "the keep-alive connection after the reload: $(cat "$TMP/ka.out")"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.2 --cacert "$CA" \
  -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$TLS_PORT/config/worker?tls=new")
[ "$code" = 200 ] || die "a new TLS connection after the reload: $code"

note "token watch: the file rotated after the reload"
printf 'tok-two\n' >"$TMP/node-token.new" && mv "$TMP/node-token.new" "$TMP/node-token"
TOKEN=tok-two
wait_until 10 from_is 200 127.0.0.2 || die "the rotated token is not accepted: $(from 127.0.0.2)"
TOKEN=tok-one
from_is 403 127.0.0.2 || die "the old token still passes: $(from 127.0.0.2)"
TOKEN=tok-two

note "kube source and held table: out of skew is held, and recorded"
patch_status "$STATUS_OUT_OF_SKEW"
wait_until 5 from_is 503 127.0.0.5 || die "not held out of skew after the reload: $(from 127.0.0.5)"
[ "$(held_entry 127.0.0.5)" = "OutOfSkew False" ] || die "/held after the reload: $(held_entry 127.0.0.5)"
[ -n "$(held_entry 127.0.0.2)" ] || die "the entry recorded before the reload is gone"

note "admin listener: routes, the credential over TCP, the unix socket"
ready=$(curl -s -o /dev/null -w '%{http_code}' "$ADMIN/readyz")
[ "$ready" = 200 ] || die "/readyz after the reload: $ready"
curl -sf "$ADMIN/verdict" | has '"reason": "OutOfSkew"' || die "/verdict: $(curl -s "$ADMIN/verdict")"
curl -sf "$ADMIN/metrics" | has '^skewgate_config_reloads_total{result="success"} 1' ||
  die "admin /metrics: $(curl -s "$ADMIN/metrics" | grep reloads)"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" -d action=admit "$ADMIN/override")
[ "$code" = 403 ] || die "a wrong admin token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer admin-secret" -d action=admit "$ADMIN/override")
[ "$code" = 200 ] || die "the admin token over TCP after the reload: $code"
wait_until 5 from_is 200 127.0.0.5 || die "the override is not followed"
[ "$(admin_post /override action=clear)" = 200 ] || die "the unix socket after the reload: $(cat "$TMP/answer")"
wait_until 5 from_is 503 127.0.0.5 || die "the cleared override is still followed"

note "metrics listener"
curl -sf "http://$METRICS_ADDR/metrics" | has '^skewgate_held_clients' ||
  die "metrics listener: $(curl -s "http://$METRICS_ADDR/metrics" | head -5)"
gate_stop
grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$GATE_LOG" && die "sanitizer report from part 1"

note "part 2: the machines watch; a Machine added after the reload is admitted"
machine pending-1 127.0.0.2
GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/machines.yaml" hold unused "admission:
  machines:
    enabled: true
    namespace: $NS
log:
  level: debug"
gate_start "$TMP/machines.yaml"
patch_status "$STATUS_COMPLIANT"
wait_until 15 from_is 200 127.0.0.2 || die "the pending Machine is not admitted: $(from 127.0.0.2)"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the machines gate's reload was not taken"
wait_until 10 freed_at_least 1 || die "the machines gate's old configuration was not freed"
# The same connection keeps the running watch: no second start, and its
# addresses stay in force (a new watch would hold everyone until it listed).
[ "$(log_count machines_watch)" = 1 ] || die "a reload that changed nothing started the machines watch again"
from_is 200 127.0.0.2 || die "the kept watch's pending Machine is not admitted: $(from 127.0.0.2)"
from_is 503 127.0.0.5 || die "an unknown address is not held: $(from 127.0.0.5)"
machine pending-2 127.0.0.5
wait_until 10 from_is 200 127.0.0.5 || die "the Machine added after the reload is not seen: $(from 127.0.0.5)"
gate_stop
grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$GATE_LOG" && die "sanitizer report from part 2"

note "part 3: the file source, SIGHUP with only limits.idle_timeout changed"
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
file_gate() {
  GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/file.yaml" hold "$object" "limits:
  idle_timeout: $1
log:
  level: debug"
}
file_gate 120s
gate_start "$TMP/file.yaml"
wait_until 10 code_is 200 || die "the file source's compliant object is not admitted"
file_gate 150s
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the file gate's reload was not taken"
wait_until 10 freed_at_least 1 || die "the file gate's old configuration was not freed"
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 code_is 503 || die "the file source does not follow the file after the reload: $(gate_code)"
set_object automatic-compliant.yaml "$object"
wait_until 5 code_is 200 || die "the file source does not follow the file back: $(gate_code)"
gate_stop
echo PASS
