#!/usr/bin/env bash
# limits.send_timeout: a client that takes nothing for that long is cut,
# relayed or reading a shared fetch, and the request is in the access log
# with reason ClientSendTimeout (it was not logged at all before); a slow
# client that keeps taking bytes is not cut.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 8388608
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object" "limits:
  send_timeout: 1s"
gate_start "$TMP/gate.yaml"

# stall PATH: asks for PATH and never reads (a small receive buffer, full
# at once); in the background, killed by the caller. Bounded at 30 s.
stall() {
  python3 - "$PLAIN_PORT" "$1" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: Ignition/2.14.0\r\n\r\n" % sys.argv[2].encode())
time.sleep(30)
PY
  STALLED=$!
  PIDS+=($STALLED)
}
# slow PATH: reads at 2 MiB/s (8 MiB in about 4 s: the gate's socket is
# writable again well within 1 s); prints "complete|closed SECONDS
# BODY_BYTES".
slow() {
  python3 - "$PLAIN_PORT" "$1" <<'PY'
import re, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: Ignition/2.14.0\r\n\r\n" % sys.argv[2].encode())
s.settimeout(10)
t0, got = time.monotonic(), b""
while time.monotonic() - t0 < 60:
    chunk = s.recv(262144)
    if not chunk:
        break
    got += chunk
    end = got.find(b"\r\n\r\n")
    length = re.search(rb"\r\ncontent-length: *(\d+)", got[:end], re.I) if end > 0 else None
    if length and len(got) - end - 4 >= int(length.group(1)):
        print("complete %.1f %d" % (time.monotonic() - t0, len(got) - end - 4))
        sys.exit(0)
    time.sleep(max(0, t0 + len(got) / (2 << 20) - time.monotonic()))
print("closed %.1f %d" % (time.monotonic() - t0, len(got)))
PY
}
timeouts() { access_count reason ClientSendTimeout; }
timeouts_are() { [ "$(timeouts)" = "$1" ]; }

note "a relayed response (a query: not coalesced) to a client that never reads"
stall "/config/worker?x=1"
wait_until 10 timeouts_are 1 || fail "no ClientSendTimeout access line for the relayed request: $(grep '"event":"access"' "$GATE_LOG")"

note "a shared fetch's reader that never reads"
kill "$STALLED"
stall /config/worker
wait_until 10 timeouts_are 2 || fail "no ClientSendTimeout access line for the coalesced request: $(grep '"event":"access"' "$GATE_LOG")"
python3 - "$GATE_LOG" <<'PY' || fail "the access lines"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"event":"access"' in l]
cut = [l for l in lines if l.get("reason") == "ClientSendTimeout"]
assert len(cut) == 2 and all(l["status"] == 200 and 0 < l["bytes"] < 8000000 for l in cut), cut
PY

kill "$STALLED"

note "a slow reader that keeps taking bytes is not cut"
read -r how secs bytes < <(slow /config/worker)
[ "$how" = complete ] || fail "the slow reader: $how after $secs s with $bytes bytes"
[ "$(timeouts)" = 2 ] || fail "the slow reader was logged as cut"
gate_stop
