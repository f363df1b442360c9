#!/usr/bin/env bash
# The admin API refuses what an operator would not mean (issue 12): an
# override longer than 7 days, and a field given twice
# (action=admit&action=reject), each with a 400 that says why, and the
# verdict unchanged. A client trickling its request a byte at a time is cut
# at limits.header_timeout, on the admin and the metrics listener, while
# others are served; a reload's header_timeout applies to them too.
# run: alone: sub-second deadlines: requests 0.6 s apart under a 1 s header_timeout, cuts timed within 0.9-2.5 s
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
METRICS_PORT=$(free_port)
gate_config "$TMP/gate.yaml" hold "$object" "limits:
  header_timeout: 1s
metrics:
  enabled: true
  address: \"127.0.0.1:$METRICS_PORT\""
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "the gate is not ready"

# post FORM: status code, body in $TMP/answer
post() { admin_post /override "$1"; }
verdict_reason() { curl -s "$ADMIN/verdict" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])'; }

note "for= is capped at 7 days"
[ "$(post 'action=admit&for=999999999h')" = 400 ] || fail "a 999999999h override was taken: $(cat "$TMP/answer")"
grep -q '7d' "$TMP/answer" || fail "the refusal does not say the cap: $(cat "$TMP/answer")"
[ "$(post 'action=admit&for=169h')" = 400 ] || fail "a 169h override was taken"
[ "$(verdict_reason)" = OutOfSkew ] || fail "a refused override changed the verdict"
[ "$(post 'action=admit&for=168h')" = 200 ] || fail "a 7-day override was refused: $(cat "$TMP/answer")"
[ "$(verdict_reason)" = Override ] || fail "the 7-day override did not take"
[ "$(post 'action=clear')" = 200 ] || fail "clear"

note "a field given twice is refused"
[ "$(post 'action=admit&action=reject')" = 400 ] || fail "action given twice was taken: $(cat "$TMP/answer")"
grep -q 'twice' "$TMP/answer" || fail "the refusal does not say why: $(cat "$TMP/answer")"
[ "$(post 'action=admit&for=1h&for=2h')" = 400 ] || fail "for given twice was taken"
[ "$(verdict_reason)" = OutOfSkew ] || fail "a refused override changed the verdict"

note "a request trickled a byte every 200 ms is cut at header_timeout (1 s)"
# Before the fix evhttp's idle timeout (10 s, restarted by every byte) kept
# such a connection open for as long as the client liked.
# trickled PORT CONNS LIMIT MIN MAX: CONNS connections trickling their
# request to PORT are all closed, each MIN to MAX seconds after the accept.
trickled() {
  python3 "$ROOT/tests/integration/trickle.py" "$1" --conns "$2" --gap 0.2 --limit "$3" >"$TMP/trickle.$1.json" ||
    fail "trickle.py on port $1"
  python3 - "$TMP/trickle.$1.json" "$2" "$4" "$5" <<'PY' || fail "port $1: the trickled connections: $(cat "$TMP/trickle.$1.json")"
import json, sys
r, n, lo, hi = json.load(open(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
assert r["open"] == 0 and r["closed"] == n, r
assert lo <= r["min"] and r["max"] <= hi, r
PY
}
for port in "${ADMIN_ADDR#*:}" "$METRICS_PORT"; do
  trickled "$port" 20 6 0.9 2.5 &
  trickler=$!
  PIDS+=("$trickler")
  # meanwhile others are served
  for i in 1 2 3; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/healthz")" = 200 ] ||
      fail "port $port stopped serving during the trickle"
  done
  wait "$trickler" || fail "port $port: the trickled connections"
done

note "keep-alive: each request gets the whole deadline again, an idle connection is closed at it"
python3 - "${ADMIN_ADDR#*:}" <<'PY' || fail "keep-alive on the admin listener"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
for _ in range(3):
    time.sleep(0.6)          # 1.8 s in all on one connection, 0.6 s before each request
    s.sendall(req)
    data = s.recv(4096)
    assert data.startswith(b"HTTP/1.1 200"), data
t0 = time.monotonic()
assert s.recv(4096) == b""   # closed at the deadline, about 1 s after the last answer
assert 0.8 <= time.monotonic() - t0 <= 2.5, time.monotonic() - t0
PY
note "a reload to header_timeout 3s: the admin and metrics listeners cut at 3 s from now on"
sed -i 's/^  header_timeout: 1s$/  header_timeout: 3s/' "$TMP/gate.yaml"
grep -q '^  header_timeout: 3s$' "$TMP/gate.yaml" || fail "the config was not rewritten"
reloads() { curl -sf "$ADMIN/config" | sed -n 's/^ *"success": \([0-9]*\).*/\1/p'; }
reloaded() { [ "$(reloads)" = 1 ]; }
kill -HUP "$GATE_PID"
wait_until 10 reloaded || fail "the reload was not counted: $(curl -s "$ADMIN/config")"
# before the fix the listeners kept the 1 s they were started with
for port in "${ADMIN_ADDR#*:}" "$METRICS_PORT"; do
  trickled "$port" 5 8 2.5 5.0
done
gate_stop
echo PASS
