#!/usr/bin/env bash
# `make soak` (issue 12 item 5; not in make test): SOAK_SECONDS (900) of
# mixed traffic against one gate with the Kubernetes source (the fake API
# server): admitted downloads and held requests from SOAK_CLIENTS (8)
# clients, a verdict flip every SOAK_FLIP (3) seconds, the upstream and the
# API server each restarted at random (every 15-45 s). The gate is
# $SKEWGATE_BIN (make soak: the ASan+UBSan build), or, with SOAK_VALGRIND=1,
# that binary under valgrind memcheck (--errors-for-leak-kinds=definite,indirect
# --error-exitcode=1). RSS and open descriptors are sampled every
# SOAK_SAMPLE (10) seconds into $SOAK_OUT/samples.csv; the summary is
# $SOAK_OUT/summary.txt. Fails on a crash, a sanitizer or memcheck report, a
# leak, or a body presented as complete that is not the upstream's whole.
. "$(dirname "$0")/../integration/lib_kube.sh"

SOAK_SECONDS=${SOAK_SECONDS:-900}
SOAK_CLIENTS=${SOAK_CLIENTS:-8}
SOAK_FLIP=${SOAK_FLIP:-3}
SOAK_SAMPLE=${SOAK_SAMPLE:-10}
SOAK_OUT=${SOAK_OUT:-$ROOT/build/soak}
mkdir -p "$SOAK_OUT"
[ "$SOAK_SECONDS" -le 86400 ] || fail "SOAK_SECONDS over a day"
gate_bin=$SKEWGATE_BIN
if [ "${SOAK_VALGRIND:-0}" = 1 ]; then
  command -v valgrind >/dev/null || fail "valgrind is not installed"
  cat >"$TMP/gate-under-valgrind" <<EOF
#!/bin/sh
exec valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --error-exitcode=1 --track-fds=no --num-callers=30 "$gate_bin" "\$@"
EOF
  chmod +x "$TMP/gate-under-valgrind"
  SKEWGATE_BIN="$TMP/gate-under-valgrind"
  GATE_START_WAIT=120   # valgrind's start on a loaded 2-core machine
fi

certs
mcs_start 307200
mcs_port=$MCS_PORT
mcs_pid=${PIDS[-1]}
fa_start --object "$FIXTURES/automatic-compliant.yaml"
fa_port=$FA_PORT
ADMIN_ADDR="127.0.0.1:$(free_port)"
KUBE_WATCH_TIMEOUT=30s kube_gate_start hold "  max_staleness: 600s"
# under valgrind the gate is slow to start listening and to answer
wait_until 60 reason_is Compliant || die "no Compliant verdict at start"
gate_pid=$GATE_PID
expected_size=$(curl -s -o /dev/null -w '%{size_download}' "http://127.0.0.1:$mcs_port/config/worker")

# the traffic: each client asks in turn for an admitted-or-held config;
# a 200 must carry exactly the stand-in's body
python3 - "$PLAIN_PORT" "$SOAK_CLIENTS" "$SOAK_SECONDS" "$expected_size" >"$SOAK_OUT/traffic.txt" <<'PY' &
import http.client, sys, threading, time
port, clients, secs, size = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
lock = threading.Lock()
counts = {"admitted": 0, "held": 0, "502/503/504 other": 0, "cut (error seen)": 0, "refused or reset": 0,
          "no answer in 30 s": 0, "truncated as complete": 0}
errors = {}
def add(k):
    with lock:
        counts[k] += 1
def client():
    end = time.monotonic() + secs
    c = None
    while time.monotonic() < end:
        try:
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/config/worker")
            r = c.getresponse()
            body = r.read()
            if r.status == 200:
                add("admitted" if len(body) == size else "truncated as complete")
            elif r.status == 503 and r.getheader("Skewgate-Reason"):
                add("held")
            else:
                add("502/503/504 other")
            if r.getheader("Connection", "").lower() == "close":
                c.close(); c = None
        except http.client.IncompleteRead:
            add("cut (error seen)"); c.close(); c = None
        except TimeoutError:
            # a request the gate never answered: a hang, not a fault it
            # reported (coalesce.c's lost wake-up looked like this)
            add("no answer in 30 s"); c.close(); c = None
        except (OSError, http.client.HTTPException) as e:
            add("refused or reset")
            with lock:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            c = None; time.sleep(0.2)
        time.sleep(0.05)
ts = [threading.Thread(target=client) for _ in range(clients)]
for t in ts: t.start()
for t in ts: t.join()
for k, v in counts.items():
    print("%s: %d" % (k, v))
print("refused or reset, by error: %s" % (", ".join("%s %d" % kv for kv in sorted(errors.items())) or "none"))
PY
traffic=$!
PIDS+=($traffic)

echo "seconds,rss_kib,fds" >"$SOAK_OUT/samples.csv"
sample() {
  echo "$1,$(awk '/^VmRSS/ {print $2}' "/proc/$gate_pid/status"),$(ls "/proc/$gate_pid/fd" | wc -l)" >>"$SOAK_OUT/samples.csv"
}
t0=$(date +%s)
next_flip=$t0 next_sample=$t0
next_mcs=$(( t0 + 15 + RANDOM % 30 )) next_fa=$(( t0 + 15 + RANDOM % 30 ))
flips=0 mcs_restarts=0 fa_restarts=0 flip_to=out
while [ "$(( $(date +%s) - t0 ))" -lt "$SOAK_SECONDS" ]; do
  now=$(date +%s)
  kill -0 "$gate_pid" 2>/dev/null || die "the gate died after $((now - t0)) s"
  if [ "$now" -ge "$next_sample" ]; then sample $((now - t0)); next_sample=$((now + SOAK_SAMPLE)); fi
  if [ "$now" -ge "$next_flip" ]; then
    if [ "$flip_to" = out ]; then status=$STATUS_OUT_OF_SKEW flip_to=in; else status=$STATUS_COMPLIANT flip_to=out; fi
    patch_status "$status" 2>/dev/null && flips=$((flips + 1)) || true   # the API server may be restarting
    next_flip=$((now + SOAK_FLIP))
  fi
  if [ "$now" -ge "$next_mcs" ]; then
    kill "$mcs_pid"; wait "$mcs_pid" 2>/dev/null || true
    cmd=$("$ROOT/tools/mcs-standin.sh" "$TMP/mcs" "$mcs_port" 307200)
    $cmd >>"$TMP/mcs/stdout" 2>&1 &
    mcs_pid=$!; PIDS+=($mcs_pid)
    wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$mcs_port/healthz" || die "the upstream did not restart"
    mcs_restarts=$((mcs_restarts + 1)); next_mcs=$((now + 15 + RANDOM % 30))
  fi
  if [ "$now" -ge "$next_fa" ]; then
    fa_stop
    fa_start --port "$fa_port" --object "$FIXTURES/automatic-compliant.yaml" 2>/dev/null
    fa_restarts=$((fa_restarts + 1)); next_fa=$((now + 15 + RANDOM % 30))
  fi
  sleep 0.2
done
wait "$traffic" || die "the traffic client failed"
sample "$(( $(date +%s) - t0 ))"
kill -TERM "$gate_pid"
wait_until 120 proc_gone "$gate_pid" || die "the gate did not stop on SIGTERM"
set +e; wait "$gate_pid"; gate_rc=$?; set -e
GATE_PID=

{
  echo "soak: $SOAK_SECONDS s, $SOAK_CLIENTS clients, $(basename "$gate_bin")$([ "${SOAK_VALGRIND:-0}" = 1 ] && echo ' under valgrind memcheck')"
  echo "verdict flips: $flips, upstream restarts: $mcs_restarts, API server restarts: $fa_restarts"
  cat "$SOAK_OUT/traffic.txt"
  echo "gate exit status after SIGTERM: $gate_rc"
  echo "sanitizer reports: $(grep -cE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$GATE_LOG" || true)"
  if [ "${SOAK_VALGRIND:-0}" = 1 ]; then
    grep -E 'ERROR SUMMARY|definitely lost|indirectly lost' "$GATE_LOG" | sed 's/^==[0-9]*== *//'
  fi
  python3 - "$SOAK_OUT/samples.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rss = [int(r["rss_kib"]) for r in rows]; fds = [int(r["fds"]) for r in rows]
half = len(rows) // 2
print("samples: %d; RSS KiB first %d, max %d, last %d (second half min %d max %d); fds first %d, max %d, last %d"
      % (len(rows), rss[0], max(rss), rss[-1], min(rss[half:]), max(rss[half:]), fds[0], max(fds), fds[-1]))
PY
} | tee "$SOAK_OUT/summary.txt"
grep -q '^truncated as complete: 0$' "$SOAK_OUT/summary.txt" || die "a truncated body was presented as complete"
grep -q '^no answer in 30 s: 0$' "$SOAK_OUT/summary.txt" || die "a request hung (no answer in 30 s)"
[ "$gate_rc" = 0 ] || die "the gate exited $gate_rc (a crash, a leak or a memcheck error)"
grep -q '^sanitizer reports: 0$' "$SOAK_OUT/summary.txt" || die "sanitizer reports"
echo PASS
