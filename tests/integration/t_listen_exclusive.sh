#!/usr/bin/env bash
# A listener address is the gate's alone (issue 33.1): its workers share
# each port through SO_REUSEPORT, which would let a second `skewgate run`
# on the same addresses start and take part of the traffic. A gate refuses
# to start (exit 1, the listener named on stderr, nothing started) when
# any process listens on one of its addresses: another gate, a listener
# without SO_REUSEPORT, or one with SO_REUSEPORT under the same uid (the
# case the issue hit). Its own workers still share the port, a SIGHUP that
# keeps its listeners (or flips one to TLS on the same address) reloads,
# one that adds an address someone else holds is refused naming it, and
# a gate started after the first one has stopped starts; so does one
# started while the first drains (SIGTERM closes the listeners at once).
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4096
admit="$TMP/admit.yaml" skew="$TMP/skew.yaml"
set_object automatic-compliant.yaml "$admit"
set_object automatic-out-of-skew.yaml "$skew"

# conf FILE OBJECT WORKERS LISTENER_YAML...: reject.mode deny, so a request
# judged out of skew gets a 403 where the compliant gate answers 200.
conf() {
  local file=$1 object=$2 workers=$3; shift 3
  {
    printf 'workers: %s\nlisteners:\n' "$workers"
    printf '%s\n' "$@"
    printf 'upstream:\n  address: "127.0.0.1:%s"\nreject:\n  mode: deny\n' "$MCS_PORT"
    printf 'enforcement:\n  source: file\n  file:\n    path: %s\nadmin:\n  enabled: false\n' "$object"
  } >"$file"
}
plain() { printf '  - address: "%s"' "$1"; }
tls() { printf '  - address: "%s"\n    tls:\n      certificate: %s\n      key: %s' "$1" "$TMP/pki/tls.crt" "$TMP/pki/tls.key"; }

# holder NAME PORT [reuseport]: a Python listener on 127.0.0.1:PORT, with
# SO_REUSEPORT or without; returns once it listens.
holder() {
  python3 - "$2" "$TMP/$1.ready" "${3:-}" <<'PY' &
import signal, socket, sys
s = socket.socket()
if sys.argv[3] == "reuseport":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
open(sys.argv[2], "w").close()
signal.pause()
PY
  PIDS+=($!)
  wait_until 10 test -e "$TMP/$1.ready" || fail "holder $1 did not listen"
}

# refused NAME CONFIG ADDR: skewgate run exits 1 within 10 s, its stderr
# naming listeners[0] ADDR as taken, and it started nothing.
refused() {
  local rc=0
  timeout 10 "$SKEWGATE_BIN" run -c "$2" >"$TMP/$1.out" 2>"$TMP/$1.err" || rc=$?
  [ "$rc" = 1 ] || fail "$1: skewgate run exited $rc, not 1: $(cat "$TMP/$1.err")"
  grep -qF "skewgate run: listeners[0] $3: address already in use by another process" "$TMP/$1.err" ||
    fail "$1: stderr does not name listeners[0] $3: $(cat "$TMP/$1.err")"
  if grep -qE '"event":"(listening|started)"' "$TMP/$1.err"; then fail "$1: started something: $(cat "$TMP/$1.err")"; fi
}

# codes URL N: the status codes of N requests, each on a new connection, sorted and counted.
codes() {
  local i
  for i in $(seq "$2"); do curl -s -o /dev/null -w '%{http_code}\n' --max-time 5 "${@:3}" "$1" || true; done | sort | uniq -c |
    awk '{printf "%s%s:%s", sep, $2, $1; sep=" "}'
}

reloaded() { [ "$(grep -c 'configuration reloaded' "$GATE_LOG")" -ge "$1" ]; }
refusals() { grep -c '"event":"reload".*refused' "$GATE_LOG" || true; }
refused_since() { [ "$(refusals)" -gt "$1" ]; }

P=$(free_port)
A="127.0.0.1:$P"
note "gate A: 2 workers on $A (its own sockets share the port)"
conf "$TMP/a.yaml" "$admit" 2 "$(plain "$A")"
GATE_LOG="$TMP/gate.log"
"$SKEWGATE_BIN" run -c "$TMP/a.yaml" 2>"$GATE_LOG" &
GATE_PID=$!
PIDS+=($GATE_PID)
wait_until 10 grep -q '"event":"started"' "$GATE_LOG" || fail "gate A did not start: $(cat "$GATE_LOG")"
[ "$(codes "http://$A/config/worker" 1)" = "200:1" ] || fail "gate A does not admit"

note "gate B on the same address, out of skew: refused, and A answers every request"
conf "$TMP/b.yaml" "$skew" 2 "$(plain "$A")"
"$SKEWGATE_BIN" run -c "$TMP/b.yaml" >"$TMP/b.out" 2>"$TMP/b.err" &
B=$!
PIDS+=($B)
b_ran=
wait_until 10 proc_gone "$B" || b_ran=yes
got=$(codes "http://$A/config/worker" 12)
if [ -n "$b_ran" ]; then kill "$B" 2>/dev/null || true; fail "gate B started beside A (12 requests: $got): $(cat "$TMP/b.err")"; fi
rc=0; wait "$B" || rc=$?
[ "$rc" = 1 ] || fail "gate B exited $rc, not 1: $(cat "$TMP/b.err")"
grep -qF "skewgate run: listeners[0] $A: address already in use by another process" "$TMP/b.err" ||
  fail "gate B's stderr does not name listeners[0] $A: $(cat "$TMP/b.err")"
if grep -qE '"event":"(listening|started)"' "$TMP/b.err"; then fail "gate B started something: $(cat "$TMP/b.err")"; fi
[ "$got" = "200:12" ] || fail "not every request answered by A: $got"

note "a Python listener without SO_REUSEPORT: refused"
Q=$(free_port)
holder plain "$Q"
conf "$TMP/q.yaml" "$admit" 2 "$(plain "127.0.0.1:$Q")"
refused plain "$TMP/q.yaml" "127.0.0.1:$Q"

note "a Python listener with SO_REUSEPORT, same uid: refused"
R=$(free_port)
holder reuse "$R" reuseport
conf "$TMP/r.yaml" "$admit" 2 "$(plain "127.0.0.1:$R")"
refused reuse "$TMP/r.yaml" "127.0.0.1:$R"

note "SIGHUP on A with the same configuration: reloaded, still serving"
kill -HUP "$GATE_PID"
wait_until 10 reloaded 1 || fail "the same configuration was not reloaded: $(cat "$GATE_LOG")"
[ "$(codes "http://$A/config/worker" 4)" = "200:4" ] || fail "A stopped serving after the reload"

note "SIGHUP adding the address the reuseport listener holds: refused, naming it"
conf "$TMP/a.yaml" "$admit" 2 "$(plain "$A")" "$(plain "127.0.0.1:$R")"
before=$(refusals)
kill -HUP "$GATE_PID"
wait_until 10 refused_since "$before" || fail "the reload onto a taken address was not refused: $(cat "$GATE_LOG")"
grep '"event":"reload".*refused' "$GATE_LOG" | tail -1 |
  grep -qF "listeners[1] 127.0.0.1:$R: address already in use by another process" ||
  fail "the refusal does not name listeners[1] 127.0.0.1:$R: $(grep refused "$GATE_LOG" | tail -1)"
[ "$(codes "http://$A/config/worker" 4)" = "200:4" ] || fail "A stopped serving after the refused reload"

note "SIGHUP adding a free address, then the same address with TLS: both reloaded"
S=$(free_port)
conf "$TMP/a.yaml" "$admit" 2 "$(plain "$A")" "$(plain "127.0.0.1:$S")"
kill -HUP "$GATE_PID"
wait_until 10 reloaded 2 || fail "the reload adding 127.0.0.1:$S was not taken: $(grep reload "$GATE_LOG")"
[ "$(codes "http://127.0.0.1:$S/config/worker" 4)" = "200:4" ] || fail "the added listener does not serve"
conf "$TMP/a.yaml" "$admit" 2 "$(plain "$A")" "$(tls "127.0.0.1:$S")"
kill -HUP "$GATE_PID"
wait_until 10 reloaded 3 || fail "the reload turning TLS on for 127.0.0.1:$S was not taken: $(grep reload "$GATE_LOG")"
[ "$(codes "https://127.0.0.1:$S/config/worker" 4 --cacert "$CA")" = "200:4" ] || fail "the TLS listener does not serve"

note "restart: A stops, then gate B on its address starts (the connections A left in TIME_WAIT do not count)"
gate_stop
conf "$TMP/b.yaml" "$skew" 1 "$(plain "$A")"
"$SKEWGATE_BIN" run -c "$TMP/b.yaml" 2>"$TMP/b2.err" &
GATE_PID=$!
PIDS+=($GATE_PID)
GATE_LOG="$TMP/b2.err"
wait_until 10 grep -q '"event":"started"' "$GATE_LOG" || fail "gate B did not start after A stopped: $(cat "$GATE_LOG")"
got=$(codes "http://$A/config/worker" 3)
[ "$got" = "403:3" ] || fail "gate B does not answer on $A: $got"
gate_stop

note "drain: SIGTERM closes the listeners at once, so a gate started while the old one drains starts"
printf '{"ignition":{"version":"3.4.0"}}' >"$TMP/ign.json"
start_bad file --file "$TMP/ign.json" --release-file "$TMP/release"
T=$(free_port)
MCS_PORT=$BAD_PORT conf "$TMP/c.yaml" "$admit" 2 "$(plain "127.0.0.1:$T")"
"$SKEWGATE_BIN" run -c "$TMP/c.yaml" 2>"$TMP/c.err" &
C=$!
PIDS+=($C)
wait_until 10 grep -q '"event":"started"' "$TMP/c.err" || fail "gate C did not start: $(cat "$TMP/c.err")"
curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://127.0.0.1:$T/config/worker" >"$TMP/inflight" &
INFLIGHT=$!
upstream_has_it() { [ "$(wc -l <"$TMP/bad.count" 2>/dev/null || echo 0)" -ge 1 ]; }
wait_until 10 upstream_has_it || fail "the request did not reach the upstream"
kill -TERM "$C"
port_closed() { ! (exec 3<>"/dev/tcp/127.0.0.1/$T") 2>/dev/null; }
wait_until 10 port_closed || fail "gate C still listens after SIGTERM"
kill -0 "$C" 2>/dev/null || fail "gate C is not draining (it exited with its response in flight)"
conf "$TMP/d.yaml" "$skew" 1 "$(plain "127.0.0.1:$T")"
"$SKEWGATE_BIN" run -c "$TMP/d.yaml" 2>"$TMP/d.err" &
GATE_PID=$!
PIDS+=($GATE_PID)
GATE_LOG="$TMP/d.err"
wait_until 10 grep -q '"event":"started"' "$GATE_LOG" || fail "gate D did not start beside the draining C: $(cat "$GATE_LOG")"
got=$(codes "http://127.0.0.1:$T/config/worker" 3)
[ "$got" = "403:3" ] || fail "gate D does not answer on 127.0.0.1:$T: $got"
: >"$TMP/release"
wait "$INFLIGHT" || true
[ "$(cat "$TMP/inflight")" = 200 ] || fail "C's response in flight was not finished by its drain: $(cat "$TMP/inflight")"
wait_until 20 proc_gone "$C" || fail "gate C did not exit after its drain"
echo PASS
