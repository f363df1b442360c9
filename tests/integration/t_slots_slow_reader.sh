#!/usr/bin/env bash
# No client holds the MCS (issue 27): a 16 MiB config to a slow reader
# (256 KiB/s: slow enough to need a minute, fast enough that its socket
# turns writable within send_timeout, so that the deadline is what cuts it;
# a reader slower still is cut by send_timeout first, t_send_timeout). The upstream slot (max_concurrent 1 here) comes back as soon as
# the MCS has sent it all, whatever the reader does: another request asked
# right then is served within queue_timeout (1 s). The reader is cut at
# its deadline, send_timeout + size / coalesce.min_read_rate (10 s + 1 s
# here), closed short of its Content-Length, logged ClientTooSlow. Both
# relayed (coalescing off: kept in the relay's store) and shared. Before,
# a relayed response held its slot until the reader was done or stalled.
. "$(dirname "$0")/lib.sh"

certs
size=16777216
mcs_start "$size"
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"

# reader TAG: asks for /config/worker?TAG from 127.0.0.2 and reads 256 KiB
# a second (as fast as it can once $TMP/reader.fast exists: the gate's cut
# is seen behind what the kernel buffers hold); prints "complete|closed
# SECONDS BODY_BYTES". Bounded at 40 s.
reader() {
  rm -f "$TMP/reader.fast"
  python3 - "$PLAIN_PORT" "$1" "$TMP/reader.fast" >"$TMP/reader.$1" <<'PY' &
import os, re, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.2", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /config/worker?%s HTTP/1.1\r\nHost: x\r\nUser-Agent: slow-reader\r\n\r\n" % sys.argv[2].encode())
s.settimeout(15)
t0, got, length, end = time.monotonic(), b"", None, -1
while time.monotonic() - t0 < 40:
    try:
        chunk = s.recv(65536)
    except (ConnectionResetError, socket.timeout):
        chunk = b""
    if not chunk:
        break
    got += chunk
    if end < 0:
        end = got.find(b"\r\n\r\n")
        m = re.search(rb"\r\ncontent-length: *(\d+)", got[:end], re.I) if end > 0 else None
        length = int(m.group(1)) if m else None
    if length is not None and len(got) - end - 4 >= length:
        print("complete %.1f %d" % (time.monotonic() - t0, len(got) - end - 4)); sys.exit(0)
    if not os.path.exists(sys.argv[3]):
        time.sleep(max(0, t0 + len(got) / 262144 - time.monotonic()))
print("closed %.1f %d" % (time.monotonic() - t0, max(0, len(got) - end - 4)))
PY
  READER=$!
  PIDS+=($READER)
}

reloaded() { [ "$(grep -c '"msg":"configuration reloaded' "$GATE_LOG")" -ge "$1" ]; }
cut_logged() { grep -q '"user_agent":"slow-reader"' "$GATE_LOG"; }
mcs_logged() { [ "$(grep -c "GET /config/worker?$1 " "$TMP/mcs/access.log" 2>/dev/null)" -ge 1 ]; }

round() {
  local tag=$1
  note "$tag: the reader asks; once the MCS has sent all of it, another request gets the slot"
  reader "$tag"
  wait_until 20 mcs_logged "$tag" || fail "$tag: the MCS never sent the reader's config"
  # curl fails (18) on a body short of its Content-Length.
  got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$PLAIN_PORT/config/worker?other-$tag") || got="$got curl:$?"
  [ "$got" = 200 ] ||
    fail "$tag: the slot was still the reader's: another request got $got ($(grep -o '"reason":"[A-Za-z]*"' "$GATE_LOG" | sort | uniq -c | tr '\n' ' '))"
  note "$tag: a reload while the reader reads what was kept for it (its deadline and store outlive it)"
  kill -HUP "$GATE_PID"
  wait_until 10 reloaded "$2" || fail "$tag: the reload was not taken"
  note "$tag: the reader is cut at its deadline, short of its Content-Length"
  wait_until 30 cut_logged || fail "$tag: the reader was not cut"
  touch "$TMP/reader.fast"
  wait "$READER" || true
  read -r how secs bytes <"$TMP/reader.$tag"
  echo "$tag: reader $how after $secs s with $bytes of $size body bytes"
  [ "$how" = closed ] && [ "$bytes" -lt $((size / 2)) ] || fail "$tag: the reader was not cut short: $how $bytes"
  python3 - "$GATE_LOG" "$tag" <<'PY' || fail "$tag: the reader's access line is not ClientTooSlow"
import json, sys
lines = [j for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))
         if j.get("event") == "access" and j.get("user_agent") == "slow-reader" and sys.argv[2] in j.get("path", "")]
print(sys.argv[2], [(j.get("status"), j.get("reason"), j.get("bytes")) for j in lines])
sys.exit(0 if len(lines) == 1 and lines[0].get("reason") == "ClientTooSlow" else 1)
PY
}

for coalesce in false true; do
  GATE_WORKERS=1 UPSTREAM_EXTRA="  max_concurrent: 1
  queue_timeout: 1s" gate_config "$TMP/gate.yaml" hold "$object" "limits:
  send_timeout: 10s
coalesce:
  enabled: $coalesce
  min_read_rate: 16MiB"
  gate_start "$TMP/gate.yaml"
  round "coalesce-$coalesce" 1
  gate_stop
done
