#!/usr/bin/env bash
# The pacing room when its line is full, and /held with thousands waiting
# (issue 31, after e8773cb). Two gates, one after the other.
#
# (a) The review's repro, scaled down (join_timeout 40s -> 8s, head_hold
# 3s): held.max_clients 16, max_joining 2. Two strangers are admitted,
# then 14 ask once (places 1..14); then a real node asks every second
# while a new stranger address asks once every 0.3 s. The line fills
# (16), and each newcomer makes the node absent longest (unseen for more
# than head_hold) leave: the 14 first, then the strangers gone quiet
# (until the 14 are 3 s quiet, a newcomer finds the line full of present
# nodes and is paced without a place, cause room). The
# real node, present and ahead of every present stranger, is admitted on
# its first ask once the two slots free at join_timeout, and no stranger
# is (each asks once: present nodes are always ahead of a newcomer).
# Before e8773cb the room held held.max_clients nodes, joining ones
# included: 2 joining + 14 waiting filled it, every later newcomer was
# paced unrecorded (no place), and when the slots freed at join_timeout
# the first newcomers to ask took them (nobody present was in line): a
# stranger always took one (the first to ask with a slot free), and the
# real node the other only when it asked before a second stranger did
# (against 083c05c: the real node asked first, 127.3.2.28 took the
# other slot, and the test failed there). Also
# checked: pace_cause and pace_place on every Paced access line,
# evictedTotal in /held and skewgate_pace_evicted_total (neither existed).
#
# (b) /held at 1,500 and at 4,096 waiting nodes (held.max_clients 4096,
# max_joining 1, nobody absent or forgotten: head_hold and join_timeout
# 10m): one node admitted, then 1,500 distinct addresses ask once (64 at
# a time): every one listed in pace.line, pool worker (among the default
# held.pools), places 1..1,500 in line order, each the place its access
# line said; skewgate_held_clients{pool="worker",reason="Paced"} 1500;
# `skewgate status` lists them all. Then 2,596 more: all 4,096 listed, the
# line full, and the next newcomer is paced without a place (cause room:
# every node of the line is present). Before e8773cb /held listed at most
# 1,000 (PACE_SHOWN), and the room counted the joining node among its
# 4,096: the 4,096th waiting node had no place.
#
# Not alone: nothing is measured against a clock. (a) needs the real node
# and the strangers to keep asking within head_hold (3 s) of each other,
# which their 1 s and 0.3 s periods leave ample room for.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
J=8

# pace_gate ADMIN_PORT MAX_CLIENTS MAX_JOINING JOIN_TIMEOUT HEAD_HOLD: a
# gate (file source, hold) pacing with those, its admin API on ADMIN_PORT.
pace_gate() {
  ADMIN_ADDR="127.0.0.1:$1"
  ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "held:
  max_clients: $2
pace:
  enabled: true
  max_joining: $3
  join_timeout: $4
  head_hold: $5"
  gate_start "$TMP/gate.yaml"
  wait_until 10 grep -q '"reason":"Compliant"' "$GATE_LOG" || fail "the verdict did not settle"
}
held() { curl -sf --max-time 10 "http://$ADMIN_ADDR/held"; }
metrics() { curl -sf --max-time 10 "http://$ADMIN_ADDR/metrics"; }

note "(a) a full line: held.max_clients 16, max_joining 2, join_timeout ${J}s, head_hold 3s"
pace_gate "$(free_port)" 16 2 "${J}s" 3s
python3 - "$ROOT/tests/integration" "$PLAIN_PORT" "$J" "$TMP/repro.json" <<'PY' || fail "the repro's clients"
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from pace_node import fetch
port, J, out = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rec = {"initial": [], "line": [], "real": [], "strangers": []}

def ask(addr):
    t = time.monotonic()
    status, reason = fetch(addr, port)
    return {"addr": addr, "t": t, "end": time.monotonic(), "status": status, "reason": reason}

rec["t0"] = time.monotonic()
rec["initial"] = [ask("127.3.0.%d" % i) for i in (1, 2)]
rec["t_adm"] = time.monotonic()
rec["line"] = [ask("127.3.1.%d" % i) for i in range(1, 15)]
t_loop = time.monotonic()
# Both slots are free by then (the later admission began before t_adm).
t_free = rec["t_free"] = rec["t_adm"] + J + 0.05
deadline = t_free + 6
admitted = []

# The sleeps below are the load's shape (one ask a second, one new
# address every 0.3 s), not a wait for anything.
def real():
    k = 0
    while time.monotonic() < deadline and not admitted:
        r = ask("127.3.9.9")
        rec["real"].append(r)
        if r["status"] == 200:
            admitted.append(r["end"])
        k += 1
        time.sleep(max(0.0, t_loop + k - time.monotonic()))

def strangers():
    k = 0
    # until 3 s after the real node's admission (the slot it left free
    # stays free): bounded by the deadline
    while time.monotonic() < deadline and (not admitted or time.monotonic() < admitted[0] + 3):
        rec["strangers"].append(ask("127.3.%d.%d" % (2 + k // 250, 1 + k % 250)))
        k += 1
        time.sleep(max(0.0, t_loop + 0.3 * k - time.monotonic()))

ts = [threading.Thread(target=f) for f in (real, strangers)]
for t in ts:
    t.start()
for t in ts:
    t.join()
json.dump(rec, open(out, "w"))
PY
python3 - "$TMP/repro.json" "$J" <<'PY' || fail "the real node behind a full line"
import json, sys
rec, J = json.load(open(sys.argv[1])), float(sys.argv[2])
assert [r["status"] for r in rec["initial"]] == [200, 200], rec["initial"]
assert all(r["status"] == 503 and r["reason"] == "Paced" for r in rec["line"]), rec["line"]
real, t_free = rec["real"], rec["t_free"]
print("real node: %d asks, %s" % (len(real), " ".join("%.1f:%d" % (r["t"] - rec["t0"], r["status"]) for r in real)))
assert real and real[-1]["status"] == 200, "the real node was never admitted"
assert all(r["status"] == 503 and r["reason"] == "Paced" for r in real[:-1]), real
# not before the slots could free (the first admission began after t0)
assert real[-1]["end"] >= rec["t0"] + J - 0.01, "admitted before join_timeout freed a slot"
after = [r for r in real if r["t"] >= t_free]
# admitted at the latest on its first ask once both slots were free
assert len(after) <= 1, "asked %d times after the slots freed" % len(after)
late = [r for r in rec["strangers"] if r["status"] != 503 or r["reason"] != "Paced"]
print("strangers: %d asked, %d after the slots freed" % (len(rec["strangers"]),
      sum(r["t"] >= t_free for r in rec["strangers"])))
assert not late, "a stranger was not paced: %s" % late
assert sum(r["t"] >= real[-1]["end"] for r in rec["strangers"]) >= 5, "too few strangers after the admission"
PY

note "(a) /held and /metrics: the line full, absent nodes made way"
held >"$TMP/held-a.json" || fail "/held"
python3 - "$TMP/held-a.json" <<'PY' || fail "/held's pace: $(head -c 800 "$TMP/held-a.json")"
import json, sys
h = json.load(open(sys.argv[1]))
p = h["pace"]
assert not any(c.get("reason") == "Paced" for c in h["clients"]), "a paced node in clients[]"
assert p["maxLine"] == 16 and p["waiting"] == 16 and p["roomFull"], p
assert p["evictedTotal"] >= 14, p
# the strangers that came while the 14 were still present (head_hold)
# found a full line of present nodes: paced without a place
assert p["unrecordedTotal"] == p["pacedTotal"]["room"], p
assert p["joining"] == 1 and [j["address"] for j in p["joiningNodes"]] == ["127.3.9.9"], p["joiningNodes"]
assert p["admittedTotal"] == 3 and p["joinTimeouts"] == 2, p
assert p["pacedTotal"]["turn"] > 0 and p["pacedTotal"]["budget"] > 0, p["pacedTotal"]
line = p["line"]
assert len(line) == 16 and [e["place"] for e in line] == list(range(1, 17)), line
assert not any(e["address"].startswith("127.3.1.") for e in line), "the 14 absent ones still in line"
PY
m=$(metrics) || fail "/metrics"
[ "$(awk '$1 == "skewgate_pace_evicted_total" {print $2}' <<<"$m")" -gt 0 ] ||
  fail "skewgate_pace_evicted_total: $(grep pace_ <<<"$m")"
grep -qx 'skewgate_pace_line_full 1' <<<"$m" || fail "skewgate_pace_line_full"
[ "$(awk '$1 == "skewgate_pace_unrecorded_total" {print $2}' <<<"$m")" = \
  "$(awk '$1 == "skewgate_pace_paced_total{cause=\"room\"}" {print $2}' <<<"$m")" ] || fail "skewgate_pace_unrecorded_total"
grep -qx 'skewgate_held_clients{pool="worker",reason="Paced"} 16' <<<"$m" ||
  fail "held_clients Paced: $(grep held_clients <<<"$m")"
promtool check metrics <<<"$m" || fail "promtool refuses /metrics"

note "(a) the Paced access lines: pace_cause and pace_place"
python3 - "$GATE_LOG" <<'PY' || fail "the Paced access lines"
import json, sys
rows = []
for l in open(sys.argv[1]):
    try:
        j = json.loads(l)
    except ValueError:
        continue
    if j.get("event") == "access" and j.get("reason") == "Paced":
        rows.append(j)
assert rows and all("pace_cause" in j and "pace_place" in j for j in rows), [j for j in rows if "pace_cause" not in j][:2]
first = [(j["client"], j["pace_cause"], j["pace_place"]) for j in rows if j["client"].startswith("127.3.1.")]
assert first == [("127.3.1.%d" % i, "budget", i) for i in range(1, 15)], first
real = [(j["pace_cause"], j["pace_place"]) for j in rows if j["client"] == "127.3.9.9"]
assert real and all(c == "budget" for c, _ in real), real
places = [p for _, p in real]
assert all(1 <= b <= a for a, b in zip(places, places[1:])), "the real node's place rose: %s" % places
strangers = [j for j in rows if j["client"].startswith(("127.3.2.", "127.3.3."))]
causes = [j["pace_cause"] for j in strangers]
assert {"budget", "turn"} <= set(causes) <= {"budget", "turn", "room"}, set(causes)
# without a place (room) only while the 14 were present, before the
# slots freed (turn); with one (from 1) otherwise
assert "room" not in causes or "turn" not in causes[:max(i for i, c in enumerate(causes) if c == "room")], causes
assert all((j["pace_place"] == 0) == (j["pace_cause"] == "room") for j in strangers), "a place and its cause disagree"
print("strangers' causes:", " ".join(causes))
print("real node's places:", places)
PY
gate_stop

note "(b) /held at 1,500 waiting nodes: held.max_clients 4096, max_joining 1"
pace_gate "$(free_port)" 4096 1 10m 10m
[ "$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from pace_node import fetch; print(fetch("127.4.0.1", int(sys.argv[2]))[0])' \
  "$ROOT/tests/integration" "$PLAIN_PORT")" = 200 ] || fail "the first node was not admitted"
# swarm FIRST COUNT: nodes FIRST.. ask once; every answer must be a Paced 503.
swarm() {
  python3 "$ROOT/tests/integration/pace_swarm.py" "$PLAIN_PORT" "$1" "$2" --jobs 64 >"$TMP/swarm-$1.txt" ||
    fail "pace_swarm.py $1 $2"
  [ "$(wc -l <"$TMP/swarm-$1.txt")" -eq "$2" ] || fail "pace_swarm.py $1 $2: $(wc -l <"$TMP/swarm-$1.txt") answers"
  ! grep -v ' 503 Paced$' "$TMP/swarm-$1.txt" | head -5 | grep . || fail "not all paced"
}
# paced_logged N: the gate has written N Paced access lines (a line may
# come a moment after its answer).
paced_logged() { [ "$(grep -c '"reason":"Paced"' "$GATE_LOG")" -ge "$1" ]; }
# line_is N: /held lists exactly the N nodes asked so far, in line order,
# each at the place its (only) access line said.
line_is() {
  wait_until 10 paced_logged "$1" || fail "$1 Paced access lines: $(grep -c '"reason":"Paced"' "$GATE_LOG")"
  held >"$TMP/held-$1.json" || fail "/held"
  python3 - "$TMP/held-$1.json" "$1" "$GATE_LOG" "$TMP"/swarm-*.txt <<'PY' || fail "/held at $1: $(head -c 600 "$TMP/held-$1.json")"
import json, sys
h, n = json.load(open(sys.argv[1])), int(sys.argv[2])
p = h["pace"]
asked = {l.split()[0] for f in sys.argv[4:] for l in open(f)}
assert len(asked) == n, len(asked)
line = p["line"]
assert len(line) == n, "listed %d of %d" % (len(line), n)
assert p["waiting"] == n and p["present"] == n and p["joining"] == 1, {k: v for k, v in p.items() if k not in ("line", "joiningNodes")}
assert [e["place"] for e in line] == list(range(1, n + 1)), "places out of order"
assert all(e["pool"] == "worker" and e["present"] for e in line), [e for e in line if e["pool"] != "worker"][:3]
assert {e["address"] for e in line} == asked, "listed: not the nodes asked"
assert [j["address"] for j in p["joiningNodes"]] == ["127.4.0.1"], p["joiningNodes"]
assert not h["clients"], "paced nodes kept by the held table too: %d" % len(h["clients"])
said = {}
for l in open(sys.argv[3]):
    if '"event":"access"' in l and '"Paced"' in l:
        j = json.loads(l)
        said[j["client"]] = (j["pace_cause"], j["pace_place"])
got = {e["address"]: ("budget", e["place"]) for e in line}
wrong = [(a, said.get(a), got[a]) for a in got if said.get(a) != got[a]]
assert not wrong, "places /held and the access log disagree on %d: %s" % (len(wrong), wrong[:3])
print("listed %d, places 1..%d; %d bytes of /held" % (len(line), n, len(open(sys.argv[1]).read())))
PY
}
swarm 0 1500
line_is 1500
m=$(metrics) || fail "/metrics"
grep -qx 'skewgate_held_clients{pool="worker",reason="Paced"} 1500' <<<"$m" ||
  fail "held_clients Paced: $(grep held_clients <<<"$m")"
grep -qx 'skewgate_pace_waiting 1500' <<<"$m" || fail "skewgate_pace_waiting"
grep -qx 'skewgate_pace_line_full 0' <<<"$m" || fail "skewgate_pace_line_full"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || fail "skewgate status: $(tail -3 "$TMP/status.txt")"
grep -q '^Pacing: *1 joining, 1500 waiting' "$TMP/status.txt" || fail "status: $(grep -A3 Pacing "$TMP/status.txt")"
rows=$(grep -cE '^ +[0-9]+\. 127\.3\.[0-9]+\.[0-9]+ +worker ' "$TMP/status.txt" || true)
[ "$rows" -eq 1500 ] || fail "status lists $rows of the 1500: $(grep -A3 'waiting, in line' "$TMP/status.txt")"
grep -qE '^ +1500\. 127\.3\.' "$TMP/status.txt" || fail "status: no place 1500"

note "(b) 2,596 more: all 4,096 listed, the line full"
swarm 1500 2596
line_is 4096
m=$(metrics) || fail "/metrics"
grep -qx 'skewgate_held_clients{pool="worker",reason="Paced"} 4096' <<<"$m" ||
  fail "held_clients Paced: $(grep held_clients <<<"$m")"
grep -qx 'skewgate_pace_line_full 1' <<<"$m" || fail "skewgate_pace_line_full"
note "(b) a newcomer to a line full of present nodes: paced without a place"
python3 "$ROOT/tests/integration/pace_swarm.py" "$PLAIN_PORT" 0 1 --net 127.5 >"$TMP/extra.txt" || fail "the newcomer"
grep -qx '127.5.1.1 503 Paced' "$TMP/extra.txt" || fail "the newcomer: $(cat "$TMP/extra.txt")"
wait_until 5 grep -q '"client":"127.5.1.1".*"pace_cause":"room","pace_place":0' "$GATE_LOG" ||
  fail "the newcomer's access line: $(grep '127.5.1.1' "$GATE_LOG")"
held | python3 -c '
import json, sys
p = json.load(sys.stdin)["pace"]
assert p["waiting"] == 4096 and len(p["line"]) == 4096 and p["roomFull"], p["waiting"]
assert p["unrecordedTotal"] == 1 and p["evictedTotal"] == 0 and p["pacedTotal"]["room"] == 1, p["pacedTotal"]
assert "127.5.1.1" not in {e["address"] for e in p["line"]}' || fail "/held after the newcomer"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || fail "skewgate status at 4096"
rows=$(grep -cE '^ +[0-9]+\. 127\.3\.[0-9]+\.[0-9]+ +worker ' "$TMP/status.txt" || true)
[ "$rows" -eq 4096 ] || fail "status lists $rows of the 4096"
grep -q 'line full: 4096 places' "$TMP/status.txt" || fail "status: $(grep -A3 Pacing "$TMP/status.txt")"
