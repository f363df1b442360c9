#!/usr/bin/env bash
# Process faults (issue 12 item 3): kill -9 during a held and during an
# admitted fetch, then a restart on the same ports, after which every node
# boots (Debian's real Ignition, which retries a refused connection);
# SIGHUP with a broken certificate (the old one keeps serving, the log
# says why); descriptor exhaustion (RLIMIT_NOFILE 128, 1000 connection
# attempts): no busy loop (gate CPU seconds / wall seconds under 0.3), and
# the gate serves again once they close.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
# the infra pool's config larger than loopback socket buffers hold, so that
# kill -9 cuts it in flight
for spec in spec2 spec3; do head -c 33554432 /dev/zero | tr '\0' x >"$MCS_DATA/$spec/infra"; done
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
gate_config "$TMP/gate.yaml" hold "$object"
# the same ports after a restart, as a node's pointer config names them:
# ports of the test's own block (a port the kernel chose could be any
# connection's source port by the time of the restart)
sed -i "0,/127.0.0.1:0/s//127.0.0.1:$(free_port)/; 0,/127.0.0.1:0/s//127.0.0.1:$(free_port)/" "$TMP/gate.yaml"
gate_start "$TMP/gate.yaml"
held_accesses() { [ "$(access_count status 503)" -ge "$1" ]; }
restart() {
  gate_start "$TMP/gate.yaml"
  [ "$(gate_port true)" = "$TLS_PORT" ] || fail "the restart did not take the same port"
}

note "kill -9 while Ignition is held, then a restart: it boots once admitted"
( ign_run held; echo $? >"$TMP/held.rc" ) &
PIDS+=($!)
wait_until 20 held_accesses 1 || fail "Ignition was never held"
kill -KILL "$GATE_PID"; wait "$GATE_PID" 2>/dev/null || true; GATE_PID=
restart
wait_until 20 held_accesses 1 || fail "Ignition did not come back after the restart"
set_object automatic-compliant.yaml "$object"
wait_until 40 test -s "$TMP/held.rc" || fail "Ignition did not finish"
[ "$(cat "$TMP/held.rc")" = 0 ] || { tail -20 "$TMP/held/out"; fail "Ignition failed after the restart"; }
[ -s "$TMP/held/cache.json" ] || fail "Ignition fetched nothing"

note "kill -9 during an admitted 32 MiB download: the node sees an error (or the whole body), then boots"
set +e
curl -s --limit-rate 500k --max-time 30 --cacert "$CA" -o "$TMP/cut" "https://127.0.0.1:$TLS_PORT/config/infra" &
curl_pid=$!
set -e
wait_until 10 test -s "$TMP/cut" || fail "the download did not begin"
kill -KILL "$GATE_PID"; wait "$GATE_PID" 2>/dev/null || true; GATE_PID=
set +e; wait "$curl_pid"; rc=$?; set -e
got=$(stat -c %s "$TMP/cut")
[ "$rc" != 0 ] || [ "$got" = 33554432 ] || fail "a download cut by kill -9 passed as whole ($got bytes)"
echo "kill -9 at $got of 33554432 bytes, curl exit $rc"
restart
ign_run admitted || { tail -20 "$TMP/admitted/out"; fail "Ignition failed after the restart"; }

note "SIGHUP with a broken certificate: the old one keeps serving"
cp "$TMP/pki/tls.crt" "$TMP/tls.crt.good"
printf -- '-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n' >"$TMP/pki/tls.crt"
kill -HUP "$GATE_PID"
wait_until 5 grep -q '"level":"error".*tls.crt\|"level":"warn".*tls.crt' "$GATE_LOG" ||
  fail "the broken certificate was not logged: $(tail -3 "$GATE_LOG")"
echo "logged: $(grep 'tls.crt' "$GATE_LOG" | tail -1 | cut -c1-200)"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/worker")
[ "$code" = 200 ] || fail "the old certificate stopped serving: $code"
kill -0 "$GATE_PID" || fail "the gate died on the reload"
cp "$TMP/tls.crt.good" "$TMP/pki/tls.crt"

note "descriptor exhaustion: RLIMIT_NOFILE 128, 1000 connection attempts"
prlimit --pid "$GATE_PID" --nofile=128:128
python3 - "$PLAIN_PORT" "$GATE_PID" "$(getconf CLK_TCK)" <<'PY' || fail "descriptor exhaustion"
import socket, sys, time
port, pid, tck = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def cpu():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck
socks = []
c0, t0 = cpu(), time.monotonic()
for _ in range(1000):
    s = socket.socket(); s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(0.3)
for s in socks:   # TCP_DEFER_ACCEPT: a connection reaches accept() with its first byte
    try:
        s.send(b"G")
    except OSError:
        pass
time.sleep(3)   # the measured window: the gate has no descriptor left for the backlog
c1, t1 = cpu(), time.monotonic()
ratio = (c1 - c0) / (t1 - t0)
print("storm: gate cpu %.2f s over %.1f s wall (%.3f)" % (c1 - c0, t1 - t0, ratio))
for s in socks:
    s.close()
deadline = time.monotonic() + 10
while True:
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=2)
        c.sendall(b"GET /healthz-nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        if c.recv(64).startswith(b"HTTP/1.1 "):
            break
    except OSError:
        pass
    assert time.monotonic() < deadline, "the gate does not serve again after the storm"
    time.sleep(0.1)
print("serving again %.1f s after the close" % (time.monotonic() - t1))
assert ratio < 0.3, "busy loop: %.3f" % ratio
PY
warns=$(grep -c '"event":"accept"' "$GATE_LOG" || true)
echo "accept warnings logged: $warns"
[ "$warns" -ge 1 ] || fail "the exhaustion was not logged"
[ "$warns" -le 200 ] || fail "the exhaustion flooded the log: $warns lines"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/worker")
[ "$code" = 200 ] || fail "not serving after the storm: $code"
gate_stop
echo PASS
