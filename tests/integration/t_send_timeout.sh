#!/usr/bin/env bash
# limits.send_timeout: a client that takes nothing for that long is cut,
# relayed, reading a shared fetch or taking the gate's own answers, and
# the request is in the access log with reason ClientSendTimeout (it was
# not logged at all before); a slow client that keeps taking bytes is not
# cut.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 8388608
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object" "limits:
  send_timeout: 2s
evidence:
  enabled: true
  min_spec: \"3.4.0\""
gate_start "$TMP/gate.yaml"

# stall PATH [N [ACCEPT]]: asks for PATH N times (pipelined; default 1)
# and never reads (a small receive buffer, full at once); in the
# background, killed by the caller. Bounded at 30 s.
stall() {
  python3 - "$PLAIN_PORT" "$1" "${2:-1}" "${3:-*/*}" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
req = b"GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: Ignition/2.14.0\r\nAccept: %s\r\n\r\n" % (
    sys.argv[2].encode(), sys.argv[4].encode())
s.setblocking(False)
pending = req * int(sys.argv[3])
t0 = time.monotonic()
while pending and time.monotonic() - t0 < 30:   # the gate stops reading once it cannot answer
    try:
        pending = pending[s.send(pending):]
    except BlockingIOError:
        time.sleep(0.05)
    except OSError:        # the gate cut the connection while requests were still going out
        break
time.sleep(max(0, 30 - (time.monotonic() - t0)))
PY
  STALLED=$!
  PIDS+=($STALLED)
}
# slow PATH: reads at 4 MiB/s (8 MiB in about 2 s; Linux says the gate's
# socket is writable once about a third of its 4 MiB send buffer drained:
# every 0.33 s here, well within the 2 s); prints "complete|closed
# SECONDS BODY_BYTES".
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
    time.sleep(max(0, t0 + len(got) / (4 << 20) - time.monotonic()))
print("closed %.1f %d" % (time.monotonic() - t0, len(got)))
PY
}
timeouts() { access_count reason ClientSendTimeout; }
timeouts_are() { [ "$(timeouts)" = "$1" ]; }

note "a relayed response (a query: not coalesced) to a client that never reads"
stall "/config/worker?x=1"
wait_until 10 timeouts_are 1 || fail "no ClientSendTimeout access line for the relayed request: $(grep '"event":"access"' "$GATE_LOG")"

note "a shared fetch's reader that never reads"
kill "$STALLED" 2>/dev/null || true   # it may be done
stall /config/worker
wait_until 10 timeouts_are 2 || fail "no ClientSendTimeout access line for the coalesced request: $(grep '"event":"access"' "$GATE_LOG")"
python3 - "$GATE_LOG" <<'PY' || fail "the access lines"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"event":"access"' in l]
cut = [l for l in lines if l.get("reason") == "ClientSendTimeout"]
assert len(cut) == 2 and all(l["status"] == 200 and 0 < l["bytes"] < 8000000 for l in cut), cut
PY

kill "$STALLED" 2>/dev/null || true   # it may be done

note "the gate's own answers (evidence holds, 503) pipelined to a client that never reads"
stall /config/worker 100000 'application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1'
wait_until 15 timeouts_are 3 || fail "no ClientSendTimeout access line for a local answer: $(grep -c '"event":"access"' "$GATE_LOG") access lines"
kill "$STALLED" 2>/dev/null || true   # it may be done
python3 - "$GATE_LOG" <<'PY' || fail "the local answer's access line"
import json, sys
cut = [json.loads(l) for l in open(sys.argv[1]) if '"reason":"ClientSendTimeout"' in l]
assert cut[-1]["status"] == 503 and cut[-1]["decision"] == "reject", cut[-1]
PY

note "a slow reader that keeps taking bytes is not cut"
read -r how secs bytes < <(slow /config/worker)
[ "$how" = complete ] || fail "the slow reader: $how after $secs s with $bytes bytes"
[ "$(timeouts)" = 3 ] || fail "the slow reader was logged as cut"
gate_stop
