#!/usr/bin/env bash
# `make abuse` (issue 12 item 4, the heavier parts; not in make test):
#  - a hold storm: HOLD_CLIENTS (1000) clients retrying a held path every
#    200 ms for HOLD_SECONDS (10), while admitted 4 MiB downloads run; the
#    download throughput with and without the storm, and their ratio;
#  - IDLE_CONNS (10,000) idle TLS connections within max_connections: the
#    gate's RSS before and after, bytes per connection, and a request
#    served while they are open.
# Loopback only; every loop bounded. Figures on stdout, last line PASS.
. "$(dirname "$0")/../integration/lib.sh"

HOLD_CLIENTS=${HOLD_CLIENTS:-1000}
HOLD_SECONDS=${HOLD_SECONDS:-10}
IDLE_CONNS=${IDLE_CONNS:-10000}
ulimit -n "$(ulimit -Hn)"   # the idle connections need a descriptor each, here and in the gate
export TMP
certs
mcs_start 4194304
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
# /config/ is admitted; /held/ is gated by the same verdict through a
# second gate that rejects (hold): two gates, one upstream
gate_config "$TMP/admit.yaml" hold "$object" "limits:
  max_connections: 20000
  header_timeout: 60s
  idle_timeout: 300s"
gate_start "$TMP/admit.yaml"
ADMIT_PID=$GATE_PID ADMIT_PORT=$PLAIN_PORT ADMIT_TLS=$TLS_PORT
held_object="$TMP/held.yaml"
set_object automatic-out-of-skew.yaml "$held_object"
GATE_LOG_SAVED=$GATE_LOG
gate_config "$TMP/hold.yaml" hold "$held_object"
GATE_LOG="$TMP/hold.log"
"$SKEWGATE_BIN" run -c "$TMP/hold.yaml" 2>"$GATE_LOG" &
HOLD_PID=$!
PIDS+=($HOLD_PID)
GATE_PID=$HOLD_PID wait_until 10 gate_listening || fail "the holding gate did not start"
HOLD_PORT=$(gate_port false)
GATE_LOG=$GATE_LOG_SAVED

# download_mibs SECONDS: 4 MiB downloads from the admitting gate, one after
# another for SECONDS; prints MiB/s
download_mibs() {
  python3 - "$ADMIT_PORT" "$1" <<'PY'
import http.client, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
t0, total, n = time.monotonic(), 0, 0
while time.monotonic() - t0 < secs and n < 100000:
    c.request("GET", "/config/worker")
    r = c.getresponse(); body = r.read()
    assert r.status == 200 and len(body) == int(r.getheader("Content-Length")), (r.status, len(body))
    total += len(body); n += 1
print("%.1f" % (total / (1 << 20) / (time.monotonic() - t0)))
PY
}

note "hold storm: $HOLD_CLIENTS clients every 200 ms for $HOLD_SECONDS s, against admitted downloads"
quiet=$(download_mibs 4)
python3 - "$HOLD_PORT" "$HOLD_CLIENTS" "$HOLD_SECONDS" >"$TMP/storm.out" <<'PY' &
import asyncio, sys
port, clients, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
req = b"GET /config/worker HTTP/1.1\r\nHost: x\r\n\r\n"
counts = {"503": 0, "other": 0, "errors": 0}
async def client(stop):
    loop = asyncio.get_running_loop()
    while loop.time() < stop:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            while loop.time() < stop:   # Ignition retries on its connection
                w.write(req); await w.drain()
                head = await r.readuntil(b"\r\n\r\n")
                counts["503" if head.startswith(b"HTTP/1.1 503") else "other"] += 1
                await asyncio.sleep(0.2)
            w.close()
        except (OSError, asyncio.IncompleteReadError):
            counts["errors"] += 1
            await asyncio.sleep(0.2)
async def main():
    stop = asyncio.get_running_loop().time() + secs
    await asyncio.gather(*(client(stop) for _ in range(clients)))
asyncio.run(main())
print(counts["503"], counts["other"], counts["errors"])
PY
storm=$!
PIDS+=($storm)
sleep 1   # let the storm reach its pace: a measurement window, not a synchronisation
loaded=$(download_mibs $((HOLD_SECONDS - 2)))
wait "$storm"
read -r held other errors <"$TMP/storm.out"
python3 - "$quiet" "$loaded" "$held" "$other" "$errors" "$HOLD_SECONDS" <<'PY' || fail "hold storm"
import sys
quiet, loaded, held, other, errors, secs = float(sys.argv[1]), float(sys.argv[2]), *map(int, sys.argv[3:6]), float(sys.argv[6])
print("hold storm: %d held answers (%.0f/s), %d other, %d errors; downloads %.1f MiB/s quiet, %.1f MiB/s in the storm: ratio %.2f"
      % (held, held / secs, other, errors, quiet, loaded, loaded / quiet))
assert other == 0 and held > 0
PY

note "$IDLE_CONNS idle TLS connections"
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$ADMIT_PID/status"; }
before=$(rss_kb)
python3 - "$ADMIT_TLS" "$CA" "$IDLE_CONNS" "$ADMIT_PID" "$ADMIT_PORT" <<'PY' || fail "idle TLS connections"
import http.client, os, socket, ssl, sys, time
port, ca, n, pid, plain = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
ctx = ssl.create_default_context(cafile=ca)
conns, t0 = [], time.monotonic()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    conns.append(ctx.wrap_socket(s, server_hostname="127.0.0.1"))
print("%d TLS connections open after %.1f s" % (len(conns), time.monotonic() - t0))
time.sleep(1)
rss = int(next(l.split()[1] for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS")))
print("rss_with_conns_kb", rss)
open(os.environ["TMP"] + "/rss_with", "w").write(str(rss))
c = http.client.HTTPConnection("127.0.0.1", plain, timeout=10)
c.request("GET", "/config/worker"); r = c.getresponse(); r.read()
assert r.status == 200, r.status
print("a request is served while they are open")
for s in conns:
    s.close()
PY
with=$(cat "$TMP/rss_with")
python3 -c "import sys; b, w, n = map(int, sys.argv[1:]); print('idle TLS: RSS %d KiB before, %d KiB with %d connections: %.0f bytes per connection' % (b, w, n, (w - b) * 1024 / n))" "$before" "$with" "$IDLE_CONNS"
kill "$HOLD_PID"
echo PASS
