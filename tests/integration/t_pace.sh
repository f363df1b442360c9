#!/usr/bin/env bash
# Pacing a scale-up (issue 26): 50 nodes (127.1.0.1..50) ask at once with
# pace.max_joining 10: exactly 10 are admitted, 40 held (503, Skewgate-
# Reason: Paced), shown in line order in /held, skewgate status and the
# status page (headless Chromium), and counted in the metrics.
# Their slots free at join_timeout (here 6 s: the file
# source shows no Node joining), and the next 10 of the line, in the order
# they were first paced, are admitted, though the last of the line retries
# first every round. A reload in between keeps the line. Pacing is off by
# default (every other test).
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "pace:
  enabled: true
  max_joining: 10
  join_timeout: 6s"
gate_start "$TMP/gate.yaml"
round1() { [ -s "$TMP/round1" ]; }
wait_until 10 grep -q '"reason":"Compliant"' "$GATE_LOG" || fail "the verdict did not settle"

note "50 nodes ask at once, then retry (the last of the line first) until admitted"
python3 "$ROOT/tests/integration/pace_nodes.py" "$PLAIN_PORT" 50 --out "$TMP/admitted" --limit 20 \
  --reload-pid "$GATE_PID" --reload-after 10 --round-file "$TMP/round1" &
NODES=$!
PIDS+=($NODES)
wait_until 10 round1 || fail "the first round did not end"
note "the line in /held, in order, and the counts in /metrics"
curl -sf "http://$ADMIN_ADDR/held" >"$TMP/held.json" || fail "/held"
python3 - "$TMP/held.json" <<'PY' || fail "/held's pace: $(head -c 600 "$TMP/held.json")"
import json, sys
p = json.load(open(sys.argv[1]))["pace"]
assert p["joining"] == 10 and p["waiting"] == 40, p
line = p["line"]
assert [e["address"] for e in line] == ["127.1.0.%d" % i for i in range(11, 51)], [e["address"] for e in line][:5]
assert [e["place"] for e in line] == list(range(1, 41))
assert all(e["pool"] == "worker" and e["present"] for e in line)
PY
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || true
grep -q '^Pacing: *10 joining, 40 waiting' "$TMP/status.txt" || fail "status: $(cat "$TMP/status.txt")"
grep -qE '^ +1\. 127\.1\.0\.11 +worker +waited' "$TMP/status.txt" || fail "status's line: $(grep -A3 Pacing "$TMP/status.txt")"
timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --user-data-dir="$TMP/chromium" --virtual-time-budget=4000 --dump-dom "http://$ADMIN_ADDR/" \
  >"$TMP/dom.html" 2>"$TMP/chromium.log" || fail "chromium: $(tail -3 "$TMP/chromium.log")"
grep -q '<section id="pace">' "$TMP/dom.html" || fail "the status page hides the line"
# (a wave may have been admitted meanwhile: the head is 11, 21 or 31)
grep -qE '<tr><td class="num">1</td><td>127\.1\.0\.[123]1</td><td>worker</td>' "$TMP/dom.html" ||
  fail "the status page's line: $(grep -o '<tbody id="pacerows">.\{0,300\}' "$TMP/dom.html")"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
grep -qx 'skewgate_pace_joining 10' <<<"$metrics" || fail "skewgate_pace_joining: $(grep pace_ <<<"$metrics")"
grep -qx 'skewgate_pace_waiting 40' <<<"$metrics" || fail "skewgate_pace_waiting"
grep -qx 'skewgate_pace_admitted_total 10' <<<"$metrics" || fail "skewgate_pace_admitted_total"
grep -qE '^skewgate_pace_longest_wait_seconds [0-9]+$' <<<"$metrics" || fail "skewgate_pace_longest_wait_seconds"
promtool check metrics <<<"$metrics" || fail "promtool refuses /metrics with pacing on"
wait "$NODES" || fail "the nodes did not run"
python3 - "$TMP/admitted" <<'PY' || fail "not paced in line order"
import sys
rows = [l.split() for l in open(sys.argv[1])]
errors = [r for r in rows if r[0] == "error"]
assert not errors, errors
by_round = {}
for r in rows:
    if r[0] != "done":
        by_round.setdefault(int(r[0]), []).append(int(r[1]))
first = sorted(by_round.get(0, []))
print("round 0 admitted:", first)
assert first == list(range(1, 11)), "exactly the first 10 asked are admitted at once: %s" % first
later = [(k, sorted(v)) for k, v in sorted(by_round.items()) if k > 0]
print("then:", later)
# the next 10 admitted (the slots freed at join_timeout, within a round or
# across two): nodes 11..20, the head of the line, before any node behind
flat = [i for _, v in later for i in v]
assert sorted(flat[:10]) == list(range(11, 21)), later[:3]
PY
grep -q '"msg":"configuration reloaded' "$GATE_LOG" || fail "the reload between the waves was not taken"
[ "$(access_count reason Paced)" -gt 40 ] || fail "paced requests are not in the access log as Paced"
