#!/usr/bin/env bash
# No client holds the MCS (issue 27): 64 clients (the default
# upstream.max_concurrent) that ask over HTTP/1.0 and never read, and 64
# that ask with a 5 KiB query (past the 4 KiB share key, so relayed on
# their own) and never read, take no upstream slot for longer than the MCS
# takes to send: a real Ignition fetch behind them is served at once.
# Before, each such request held its slot and its MCS connection until
# send_timeout (60 s), and Ignition got 503 UpstreamQueueTimeout.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4194304
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN_ADDR=$ADMIN_ADDR UPSTREAM_EXTRA="  queue_timeout: 3s" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
buffered() { curl -sf "http://$ADMIN_ADDR/metrics" | awk '$1 == "skewgate_buffered_bytes" {print $2}'; }
buffered_is_0() { [ "$(buffered)" = 0 ]; }

note "128 idle clients from 127.0.0.2: 64 HTTP/1.0, 64 with a 5 KiB query"
python3 "$ROOT/tests/integration/idle_clients.py" "$PLAIN_PORT" --ready "$TMP/idle.ready" \
  --http10 64 --query 64 --limit 90 &
IDLE=$!
PIDS+=($IDLE)
wait_until 30 test -s "$TMP/idle.ready" || fail "the idle clients did not get going"
cat "$TMP/idle.ready"

note "a real Ignition fetch from 127.0.0.1 behind them"
t0=$(date +%s%N)
IGN_TIMEOUT=30 ign_run node || { cat "$TMP/node/out" >&2; fail "Ignition did not get its config"; }
echo "Ignition took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
python3 - "$GATE_LOG" <<'PY' || fail "Ignition was not served at once"
import json, sys
mine = [j for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))
        if j.get("event") == "access" and str(j.get("user_agent", "")).startswith("Ignition/")]
codes = [j.get("status") for j in mine]
print("Ignition's answers:", codes, [j.get("reason") for j in mine])
sys.exit(0 if codes and all(c == 200 for c in codes) else 1)
PY

note "the slow readers' bytes stay within limits.max_buffered (256 MiB) and the shared body"
if [ -z "${SKEWGATE_SAN:-}" ]; then
  rss=$(gate_rss)
  echo "gate RSS ${rss} KiB"
  [ "$rss" -lt $(( (256 + 64) * 1024 )) ] || fail "the gate holds ${rss} KiB for its slow readers"
fi
b=$(buffered)
echo "skewgate_buffered_bytes $b"
[ "$b" -gt 0 ] && [ "$b" -le $((256 << 20)) ] || fail "skewgate_buffered_bytes: $b"

note "the 64 HTTP/1.0 requests shared their renders (1.0 with 1.0 only)"
renders=$(grep -c '"GET /config/worker HTTP/1.0"' "$TMP/mcs/access.log" || true)
echo "the MCS rendered $renders times for 64 HTTP/1.0 requests"
[ "$renders" -ge 1 ] && [ "$renders" -lt 16 ] || fail "HTTP/1.0 GETs were not coalesced: $renders renders"

note "a shared answer is framed for its HTTP/1.0 reader as the relay frames it"
python3 - "$PLAIN_PORT" <<'PY' || fail "HTTP/1.0 framing"
import re, socket, sys
def answer(s, buf=b""):
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, _, body = buf.partition(b"\r\n\r\n")
    n = int(re.search(rb"\r\ncontent-length: *(\d+)", head, re.I).group(1))
    while len(body) < n:
        body += s.recv(65536)
    return head.decode(), body[n:]
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
req = b"GET /config/worker HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
s.sendall(req)
head, rest = answer(s)
assert head.startswith("HTTP/1.1 200 ") and "\r\nConnection: keep-alive" in head, head
s.sendall(b"GET /config/worker HTTP/1.0\r\n\r\n")
head, rest = answer(s, rest)
assert "\r\nConnection: close" in head, head
assert s.recv(1) == b"", "a 1.0 answer without keep-alive ends the connection"
print("1.0 keep-alive, then 1.0 close: framed as the relay does")
PY
kill "$IDLE" 2>/dev/null || true
note "the idle clients gone, every kept byte is given back"
wait_until 20 buffered_is_0 || fail "skewgate_buffered_bytes stays at $(buffered) with no client left"

