#!/usr/bin/env bash
# The metrics listener: a second, read-only listener that serves what the
# admin API's /metrics serves (promtool accepts it), and /healthz; no route
# that changes anything; `check` lets it bind a non-loopback address (the
# admin API may not) and refuses a port it would share; a typo names
# file:line:column.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object none.yaml "$object"

metrics_yaml() { printf 'metrics:\n  enabled: true\n  address: "%s"\n' "$1"; }

note "check: metrics on 0.0.0.0 is accepted, the admin API on 0.0.0.0 is not"
ADMIN_ADDR="127.0.0.1:$(free_port)" gate_config "$TMP/open-metrics.yaml" hold "$object" \
  "$(metrics_yaml "0.0.0.0:$(free_port)")"
"$SKEWGATE_BIN" check -c "$TMP/open-metrics.yaml" >/dev/null || fail "check refused metrics on 0.0.0.0"
ADMIN_ADDR="[::]:$(free_port)" gate_config "$TMP/v6-metrics.yaml" hold "$object" \
  "$(metrics_yaml "[::]:$(free_port)")"
if "$SKEWGATE_BIN" check -c "$TMP/v6-metrics.yaml" 2>"$TMP/check.err"; then fail "check passed admin on [::]"; fi
grep -q 'admin.address: address "\[::\]:[0-9]*" is not loopback' "$TMP/check.err" ||
  fail "admin on [::]: $(cat "$TMP/check.err")"
ADMIN_ADDR="0.0.0.0:$(free_port)" gate_config "$TMP/open-admin.yaml" hold "$object" \
  "$(metrics_yaml "127.0.0.1:$(free_port)")"
if "$SKEWGATE_BIN" check -c "$TMP/open-admin.yaml" 2>"$TMP/check.err"; then fail "check passed admin on 0.0.0.0"; fi
grep -q 'is not loopback' "$TMP/check.err" || fail "check did not say why: $(cat "$TMP/check.err")"

note "check: metrics on the admin API's port is refused, at the metrics address"
port=$(free_port)
ADMIN_ADDR="127.0.0.1:$port" gate_config "$TMP/clash.yaml" hold "$object" "$(metrics_yaml "0.0.0.0:$port")"
if "$SKEWGATE_BIN" check -c "$TMP/clash.yaml" 2>"$TMP/check.err"; then fail "check passed metrics on the admin port"; fi
line=$(grep -n '^  address: "0.0.0.0:' "$TMP/clash.yaml" | cut -d: -f1)
[ "$(cat "$TMP/check.err")" = "$TMP/clash.yaml:$line:12: metrics.address \"0.0.0.0:$port\" and admin.address \"127.0.0.1:$port\" overlap" ] ||
  fail "clash error: $(cat "$TMP/check.err")"

note "check: a broken key under metrics names file:line:column"
gate_config "$TMP/typo.yaml" hold "$object" "$(printf 'metrics:\n  enabeld: true\n')"
if "$SKEWGATE_BIN" check -c "$TMP/typo.yaml" 2>"$TMP/check.err"; then fail "a typo'd metrics key passed"; fi
line=$(grep -n '^  enabeld:' "$TMP/typo.yaml" | cut -d: -f1)
[ "$(head -1 "$TMP/check.err")" = "$TMP/typo.yaml:$line:3: metrics.enabeld: unknown key; did you mean \"enabled\"?" ] &&
  [ "$(grep -c . "$TMP/check.err")" = 2 ] && grep -q '^note: .*checks across keys' "$TMP/check.err" ||
  fail "typo error: $(cat "$TMP/check.err")"
gate_config "$TMP/badaddr.yaml" hold "$object" "$(metrics_yaml "master-0:22646")"
if "$SKEWGATE_BIN" check -c "$TMP/badaddr.yaml" 2>"$TMP/check.err"; then fail "a hostname passed"; fi
line=$(grep -n '^  address: "master-0' "$TMP/badaddr.yaml" | cut -d: -f1)
grep -q "^$TMP/badaddr.yaml:$line:12: metrics.address: invalid address \"master-0:22646\"" "$TMP/check.err" ||
  fail "bad address error: $(cat "$TMP/check.err")"

note "the gate serves /metrics on the metrics listener and logs where"
ADMIN_ADDR="127.0.0.1:$(free_port)"
METRICS_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
METRICS="http://$METRICS_ADDR"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "$(metrics_yaml "$METRICS_ADDR")"
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" >/dev/null || fail "check refuses the gate's config"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$METRICS/healthz" || fail "no /healthz on the metrics listener"
python3 - "$GATE_LOG" "${METRICS_ADDR##*:}" <<'PY' || fail "no metrics_listening line with host and port: $(cat "$GATE_LOG")"
import json, sys
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "metrics_listening" and j.get("host") == "127.0.0.1" and j.get("port") == int(sys.argv[2]):
        sys.exit(0)
sys.exit(1)
PY
[ "$(curl -s "$METRICS/healthz")" = ok ] || fail "/healthz body"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "the source did not confirm a view"

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
for _ in 1 2 3; do [ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] || fail "admit"; done
metric() { curl -sf "$1/metrics" | awk -v k="$2" '$1 == k {v = $2} END {printf "%.0f\n", v}'; }
admitted='skewgate_requests_total{pool="worker",decision="admit",code="200"}'
metric_at_least() { [ "$(metric "$METRICS" "$1")" -ge "$2" ]; }
wait_until 5 metric_at_least "$admitted" 3 || fail "admits not counted: $(curl -s "$METRICS/metrics" | grep requests_total)"

note "the same exposition as the admin API's, and promtool accepts it"
curl -sf "$METRICS/metrics" -D "$TMP/metrics.head" -o "$TMP/metrics.txt" || fail "GET /metrics"
curl -sf "$ADMIN/metrics" -o "$TMP/admin-metrics.txt" || fail "GET admin /metrics"
promtool check metrics <"$TMP/metrics.txt" || fail "promtool check metrics: $(cat "$TMP/metrics.txt")"
grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/metrics.head" || fail "content type: $(cat "$TMP/metrics.head")"
# Series by series: the same names and labels, the same request counters
# (the source's sync timestamp may move between the two scrapes).
series() { grep -v '^#' "$1" | awk '{print $1}' | sort; }
diff <(series "$TMP/metrics.txt") <(series "$TMP/admin-metrics.txt") || fail "the two listeners expose different series"
diff <(grep '^skewgate_requests_total' "$TMP/metrics.txt") <(grep '^skewgate_requests_total' "$TMP/admin-metrics.txt") ||
  fail "the two listeners count differently"
grep -q '^skewgate_verdict_admit 1$' "$TMP/metrics.txt" || fail "verdict_admit on the metrics listener"

note "HEAD answers like GET without a body, on both listeners (they share the code)"
# HEAD then GET on one connection: the second answer must follow the first
# one's head directly, with no body in between; the HEAD says the length
# the GET has.
head_then_get() {
  python3 - "$1" "$2" "$3" <<'PY'
import socket, sys
port, path, get_len = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"HEAD " + path + b" HTTP/1.1\r\nHost: m\r\n\r\n"
          b"GET /healthz HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
buf = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
head, _, rest = buf.partition(b"\r\n\r\n")
assert head.startswith(b"HTTP/1.1 200"), buf[:200]
length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
assert length and int(length[0].split(b":")[1]) == get_len, (head, get_len)
assert rest.startswith(b"HTTP/1.1 200"), rest[:200]
assert rest.endswith(b"\r\n\r\nok\n"), rest
PY
}
head_then_get "${METRICS_ADDR##*:}" /healthz 3 || fail "HEAD /healthz on the metrics listener"
head_then_get "${ADMIN_ADDR##*:}" /healthz 3 || fail "HEAD /healthz on the admin listener"
# /metrics moves between two requests (the scrape itself is not counted,
# but the source's sync time is): its length is checked to be there.
python3 - "${METRICS_ADDR##*:}" <<'PY' || fail "HEAD /metrics"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
buf = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
head, sep, rest = buf.partition(b"\r\n\r\n")
assert head.startswith(b"HTTP/1.1 200") and sep and rest == b"", buf[:300]
length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
assert length and int(length[0].split(b":")[1]) > 1000, head
PY

note "read-only: nothing else is served, nothing changes the verdict"
[ "$(code "$METRICS/verdict")" = 404 ] || fail "/verdict on the metrics listener"
[ "$(code "$METRICS/readyz")" = 404 ] || fail "/readyz on the metrics listener"
[ "$(code -d action=reject "$METRICS/override")" = 404 ] || fail "POST /override on the metrics listener was not refused"
[ "$(code -X DELETE "$METRICS/metrics")" = 405 ] || fail "DELETE /metrics"
[ "$(code -d x=1 "$METRICS/healthz")" = 405 ] || fail "POST /healthz"
allow=$(curl -s -o /dev/null -D - -X PUT "$METRICS/metrics" | tr -d '\r' | awk -F': ' 'tolower($1) == "allow" {print $2}')
[ "$allow" = "GET, HEAD" ] || fail "405 Allow: '$allow'"
[ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] || fail "the refused POST changed the verdict"

note "the admin API still takes overrides; the metrics listener shows them"
[ "$(admin_post /override action=reject)" = 200 ] || fail "admin POST /override"
[ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 503 ] || fail "admin override reject did not hold"
[ "$(metric "$METRICS" 'skewgate_verdict_info{reason="Override",mode="None"}')" = 1 ] ||
  fail "the override is not on the metrics listener: $(curl -s "$METRICS/metrics" | grep verdict_info)"
[ "$(admin_post /override action=clear)" = 200 ] || fail "admin clear"
[ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] || fail "clear did not admit"

note "a second gate cannot take the same metrics port (no SO_REUSEPORT sharing)"
ADMIN_ADDR= gate_config "$TMP/second.yaml" hold "$object" "$(metrics_yaml "$METRICS_ADDR")"
set +e
timeout 10 "$SKEWGATE_BIN" run -c "$TMP/second.yaml" 2>"$TMP/second.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "second gate on a taken metrics port: exit $rc"
grep -q "metrics listener $METRICS_ADDR: Address already in use" "$TMP/second.err" ||
  fail "second gate's error: $(cat "$TMP/second.err")"
[ "$(curl -s "$METRICS/healthz")" = ok ] || fail "the first gate's metrics listener is gone"

note "disabled (the default): nothing listens there"
gate_stop
gate_config "$TMP/off.yaml" hold "$object"
gate_start "$TMP/off.yaml"
# "started" is logged once everything that listens has been set up.
wait_until 10 grep -q '"event":"started"' "$GATE_LOG" || fail "the gate did not log started"
if grep -q '"event":"metrics_listening"' "$GATE_LOG"; then fail "metrics listener started while disabled"; fi
[ "$(code "$METRICS/metrics")" = 000 ] || fail "something answers on the metrics address"
echo PASS
