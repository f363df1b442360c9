#!/usr/bin/env bash
# The shared line through an API outage (issue 34: "the API stopped for 20 s
# mid-wave: never above M, and counting by the API again within 5 s of its
# return"). Three gates on the shared line (lib_pace_shared.sh:
# pace.replicas 3, max_joining 6) on one fake API server; 24 nodes, each
# retrying once a second, joining five times slower than the other
# shared-line tests. The load balancer sends every node to gate 1 until 6
# are admitted, so the set's entries are all gate 1's; then to no gate
# (connections refused, retried) until 3 of them are Ready and every gate
# counts 3 of 6 used; then it picks among the three at random and every
# API request fails 503 for 20 s (the fake's `fail` fault with a count no
# wave uses up, then its watches dropped): the Leases stay as they were
# (a restart of the fake would forget them) while the cluster goes on (the
# driver makes Nodes Ready through the control API, which no fault
# touches). The first fallback counted R x a gate's own joining nodes
# only: gates 2 and 3, with none, admitted floor(6/3) = 2 each on top of
# gate 1's 3 not Ready (7 admitted of 6 once, under ThreadSanitizer). Now
# each gate may admit floor((6 - 3) / 3) = 1 blind.
# Checked:
#   - at every admission and every Node turning Ready, before, during and
#     after the outage, at most 6 admitted and not Ready, and in the
#     joining Lease at most 6 entries whose Node is not Ready (the
#     fallback counts the set it saw last, less what it saw Ready, and R x
#     its own blind admissions; back on the line it writes those into the
#     set and keeps to its share for PACE_SETTLE_MS);
#   - every gate leaves the shared line during the outage (lineMode local,
#     counting join_timeout), and is back on it (lineMode "api", counting
#     "api") within 5 s of the API's return: the time is printed.
. "$(dirname "$0")/lib_kube.sh"
. "$(dirname "$0")/lib_pace_shared.sh"
NODES=24
OUTAGE=20

note "$NODES nodes through 3 gates (max_joining $MAX); the API down ${OUTAGE} s mid-wave"
echo "${PORTS[1]}" >"$TMP/lb"
python3 "$ROOT/tests/integration/pace_cluster.py" --ports "${PORTS[1]},${PORTS[2]},${PORTS[3]}" --nodes "$NODES" \
  --fake-port "$FA_PORT" --ca "$FA_DIR/pki/ca.crt" --bound "$MAX" --limit 110 --out "$TMP/summary.json" \
  --progress "$TMP/progress" --leases skewgate --retry 1 --arrive 4 --ports-file "$TMP/lb" --join-scale 5 \
  --tolerate-down \
  >/dev/null &
DRIVER=$!
PIDS+=("$DRIVER")
admitted_now() { cat "$TMP/progress" 2>/dev/null || echo 0; }
admitted_at_least() { [ "$(admitted_now)" -ge "$1" ]; }
wait_until 30 admitted_at_least "$MAX" || die "the wave did not get to $MAX admissions"
held_modes() {   # held_modes: "lineMode/counting" of each gate, space-separated
  local g
  for g in 1 2 3; do
    curl -sf --max-time 2 "http://${ADMINS[$g]}/held" |
      python3 -c 'import json, sys; p = json.load(sys.stdin)["pace"]; print("%s/%s" % (p["lineMode"], p["counting"]))' ||
      echo "none/none"
  done | tr '\n' ' '
}
lb() { echo "$1" >"$TMP/lb.new"; mv "$TMP/lb.new" "$TMP/lb"; }
lb "$(free_port)"
ready_at_least() { [ "$(cat "$TMP/progress.ready" 2>/dev/null || echo 0)" -ge "$1" ]; }
wait_until 30 ready_at_least 3 || die "3 of the first nodes did not get Ready"
used_at_most() {   # used_at_most N: every gate counts at most N slots used
  local g
  for g in 1 2 3; do
    curl -sf --max-time 2 "http://${ADMINS[$g]}/held" |
      python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["pace"]["budgetUsed"] > int(sys.argv[1]))' "$1" ||
      return 1
  done
}
wait_until 10 used_at_most 3 || die "the gates did not see 3 nodes Ready: $(held_modes)"
lb "${PORTS[1]},${PORTS[2]},${PORTS[3]}"
fa_ctl '{"fault":"fail","count":100000000,"code":503}' >/dev/null
fa_ctl '{"fault":"drop_watches"}' >/dev/null
down=$(date +%s%N)
note "API down at $(admitted_now) admitted"
# The outage's 20 s, sampling the gates: each must be seen off the shared line.
blind=(0 0 0 0)
while [ $(( $(date +%s%N) - down )) -lt $(( OUTAGE * 1000000000 )) ]; do
  read -r -a modes <<<"$(held_modes)"
  for g in 1 2 3; do
    case ${modes[$((g - 1))]} in local/*) [ "${blind[$g]}" != 0 ] || blind[$g]=$(( ($(date +%s%N) - down) / 1000000 )) ;; esac
  done
  sleep 0.2
done
echo "during the outage ($(admitted_now) admitted by its end): off the shared line after ${blind[1]} / ${blind[2]} / ${blind[3]} ms (0: never)"
fa_ctl '{"fault":"clear"}' >/dev/null
up=$(date +%s%N)
note "API back at $(admitted_now) admitted"
# Each gate's reflectors (the Leases', the Nodes' and CSRs') retry a failing
# list after 2-4 s (backoff ceiling 4 s, PACE_LINE_MAX_BACKOFF_MS and
# PACE_WATCH_MAX_BACKOFF_MS), so the last gate is back 4 s and a list after
# the return at worst: measured 2.4-4.0 s.
back=(0 0 0 0)
all_back() {
  local g now
  read -r -a modes <<<"$(held_modes)"
  now=$(( ($(date +%s%N) - up) / 1000000 ))
  for g in 1 2 3; do
    [ "${modes[$((g - 1))]}" != api/api ] || [ "${back[$g]}" != 0 ] || back[$g]=$now
  done
  [ "${back[1]}" != 0 ] && [ "${back[2]}" != 0 ] && [ "${back[3]}" != 0 ]
}
wait_until 15 all_back || die "not every gate is back on the API 15 s after its return: $(held_modes)"
back_ms=$(( ${back[1]} > ${back[2]} ? ${back[1]} : ${back[2]} ))
back_ms=$(( back_ms > ${back[3]} ? back_ms : ${back[3]} ))
echo "back on the shared line and counting by the API after the API's return: ${back[1]} / ${back[2]} / ${back[3]} ms (the last ${back_ms} ms)"
driver_rc=0
wait "$DRIVER" || driver_rc=$?
python3 - "$TMP/summary.json" "$MAX" <<'PY' || die "summary"
import json, sys
s = json.load(open(sys.argv[1]))
print("scale-up %.1f s; highest count of nodes admitted and not Ready, cluster-wide: %d; in the joining Lease: %d "
      "(%d samples); max_joining %s; violations %s; errors %s" % (s["seconds"], s["max_joining_seen"],
      s["lease_max_not_ready"], s["lease_samples"], sys.argv[2], s["violations"], s["errors"]))
PY
[ "$driver_rc" = 0 ] || die "the bound or the scale-up failed: $(cat "$TMP/summary.json" 2>/dev/null)"
for g in 1 2 3; do [ "${blind[$g]}" != 0 ] || die "gate $g never left the shared line during the outage"; done
[ "$back_ms" -lt 5000 ] || die "back on the API after ${back_ms} ms, not within 5 s"
grep -h '"event":"pace_line"' "$TMP"/gate[123].log | grep -v '"level":"info"' | head -10 || true
stop_gates
cat "$TMP"/gate[123].log >"$TMP/gate.log"
GATE_LOG="$TMP/gate.log"
echo PASS
