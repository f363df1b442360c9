#!/usr/bin/env bash
# Which nodes are held (issue 11.2, 11.3): real clients from distinct
# loopback addresses are held, GET /held and the metrics list them with
# their attempts, a verdict flip admits them and marks them admitted, and
# `skewgate status` prints it for people and for scripts. Issue 20: a
# table stores 99 % of max_clients from sequential addresses (4); refusals
# by the token policy take no held node's room (5). Held means held now:
# a node answered 403 (deny) or 200 (explain) does not retry, and is
# listed as denied or explained, not held. A control character a client
# sends in its User-Agent or pool is shown as a space, never raw. What
# must land within forget_after is t_held_forget.sh, which runs alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_held.sh"

certs
mcs_start
object="$TMP/mc.yaml"
note "a bad held section is refused with its position"
MCS_PORT=$MCS_PORT ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/bad.yaml" hold "$object" "held:
  max_clients: 0"
if "$SKEWGATE_BIN" check -c "$TMP/bad.yaml" 2>"$TMP/check.err"; then fail "check took held.max_clients: 0"; fi
grep -q "bad.yaml:[0-9]*:[0-9]*:.*max_clients" "$TMP/check.err" || fail "no position: $(cat "$TMP/check.err")"

note "two clients from 127.0.0.2 and 127.0.0.3 are held, on new connections each"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 verdict_is reject || fail "the gate does not reject: $(curl -s "$ADMIN/verdict")"
for _ in 1 2 3; do [ "$(fetch 127.0.0.2)" = 503 ] || fail "127.0.0.2 not held"; done
[ "$(fetch 127.0.0.3 master)" = 503 ] || fail "127.0.0.3 not held"
held_check '
c = {e["address"]: e for e in h["clients"]}
assert set(c) == {"127.0.0.2", "127.0.0.3"}, h
a, b = c["127.0.0.2"], c["127.0.0.3"]
assert a["attempts"] == 3 and b["attempts"] == 1, h
assert a["pool"] == "worker" and b["pool"] == "master", h
assert a["userAgent"] == "Ignition/2.14.0" and a["spec"] == "3.4.0", h
assert a["reason"] == "OutOfSkew" and not a["admitted"] and a["admittedAt"] is None, h
assert a["firstSeen"].endswith("Z") and a["lastSeen"] >= a["firstSeen"], h
assert h["held"] == 2 and h["admittedAfterHold"] == 0 and h["overflow"] == 0, h
assert h["maxClients"] >= 4096 and h["forgetAfterSeconds"] == 900, h
' || fail "/held: $(held_json)"
[ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = 1 ] || fail "held gauge worker"
[ "$(metric 'skewgate_held_clients{pool="master",reason="OutOfSkew"}')" = 1 ] || fail "held gauge master"
[ "$(metric skewgate_admitted_after_hold_total)" = 0 ] || fail "admitted_after_hold before any admission"
curl -sf "$ADMIN/metrics" >"$TMP/metrics.txt"
promtool check metrics <"$TMP/metrics.txt" || fail "promtool check metrics: $(grep held "$TMP/metrics.txt")"

note "skewgate status: the human summary, exit 3 while it rejects"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" 2>"$TMP/status.err" || rc=$?
[ "$rc" = 3 ] || fail "status exited $rc: $(cat "$TMP/status.err")"
grep -q '^Decision: *HOLD new nodes: the boot images are older than this release supports (OutOfSkew)$' \
  "$TMP/status.txt" || fail "decision line: $(cat "$TMP/status.txt")"
grep -q '^Message: *the cluster is using OCP boot image version 4.12.0, which is below the minimum required version 4.13.0$' \
  "$TMP/status.txt" || fail "message line: $(cat "$TMP/status.txt")"
grep -q '^Mode: *Automatic$' "$TMP/status.txt" || fail "mode line"
grep -q '^Boot image: *OCP 4.12.0; limit OCP 4.13.0, RHEL 9.2$' "$TMP/status.txt" || fail "boot image line"
grep -q '^Source: *file, healthy; last sync 20.*Z (.*ago)$' "$TMP/status.txt" || fail "source line"
grep -q '^Override: *none$' "$TMP/status.txt" || fail "override line"
grep -q '^Held nodes: *2 held, 0 admitted after a hold; forgotten after 15m00s of silence$' "$TMP/status.txt" ||
  fail "held summary: $(cat "$TMP/status.txt")"
# The table's columns line up: every row has ATTEMPTS's value where its heading starts.
python3 - "$TMP/status.txt" <<'PY' || fail "held table: $(cat "$TMP/status.txt")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
head = next(i for i, l in enumerate(lines) if l.startswith("ADDRESS"))
cols = [m.start() for m in re.finditer(r"(?<!\S)\S+(?: \S+)*", lines[head])]
names = re.findall(r"\S+(?: \S+)*", lines[head])
assert names == ["ADDRESS", "POOL", "IGNITION", "SPEC", "REASON", "ATTEMPTS", "HELD FOR", "LAST SEEN", "STATE"], names
rows = {l.split()[0]: l for l in lines[head + 1:] if l.strip()}
assert set(rows) == {"127.0.0.2", "127.0.0.3"}, rows
for addr, row in rows.items():
    cells = {n: row[c:].split("  ")[0].strip() for n, c in zip(names, cols)}
    assert cells["ADDRESS"] == addr and cells["REASON"] == "OutOfSkew" and cells["STATE"] == "held", cells
    assert cells["ATTEMPTS"] == ("3" if addr == "127.0.0.2" else "1"), cells
    assert re.fullmatch(r"\d+s|\d+m\d\ds", cells["HELD FOR"]), cells
    assert re.fullmatch(r"(\d+s|\d+m\d\ds) ago", cells["LAST SEEN"]), cells
PY

note "skewgate status -o json: /verdict's object with /held's"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" -o json >"$TMP/status.json" || rc=$?
[ "$rc" = 3 ] || fail "status -o json exited $rc"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["decision"] == "reject" and s["reason"] == "OutOfSkew" and s["source"] == "file", s
assert s["override"] is None, s
assert len(s["held"]["clients"]) == 2 and s["held"]["held"] == 2, s
' "$TMP/status.json" || fail "status -o json: $(cat "$TMP/status.json")"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" -o yaml >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "status -o yaml exited $rc"

note "an override shows with its expiry and how to undo it"
[ "$(admin_post /override "action=admit&for=30m")" = 200 ] || fail "override admit: $(cat "$TMP/answer")"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || rc=$?
[ "$rc" = 0 ] || fail "status under an admit override exited $rc"
grep -q '^Override: *admit, lapses 20.*Z (in \(29m[0-9][0-9]\|30m0[0-9]\)s)$' "$TMP/status.txt" || fail "override line: $(cat "$TMP/status.txt")"
grep -q 'undo: skewgate override clear' "$TMP/status.txt" || fail "no undo hint"
[ "$(admin_post /override action=clear)" = 200 ] || fail "override clear"
wait_until 5 verdict_is reject || fail "clear did not restore the verdict"

note "the verdict flips: a held node gets its config and is marked admitted"
set_object none.yaml "$object"
wait_until 10 verdict_is admit || fail "the gate does not admit after the flip"
# /verdict is the main thread's; the worker takes the new verdict a moment
# later: the node asks again, as Ignition would (a 503 before is one more
# attempt). A 5th run in a row failed here once.
late=0
for _ in $(seq 100); do
  got=$(fetch 127.0.0.2)
  [ "$got" = 503 ] || break
  late=$((late + 1))
  sleep 0.02
done
[ "$got" = 200 ] || fail "127.0.0.2 not admitted: $got"
admitted_counted() { [ "$(metric skewgate_admitted_after_hold_total)" = 1 ]; }
wait_until 5 admitted_counted || fail "admitted_after_hold: $(metric skewgate_admitted_after_hold_total)"
held_check '
c = {e["address"]: e for e in h["clients"]}
a, b = c["127.0.0.2"], c["127.0.0.3"]
assert a["admitted"] and a["admittedAt"] and a["attempts"] == 3 + '"$late"', h
assert not b["admitted"], h
assert h["held"] == 1 and h["admittedAfterHold"] == 1, h
' || fail "/held after the flip: $(held_json)"
[ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = 0 ] || fail "admitted node still in the gauge"
[ "$(metric 'skewgate_held_clients{pool="master",reason="OutOfSkew"}')" = 1 ] || fail "held master left the gauge"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || fail "status exit while admitting"
grep -q '^127\.0\.0\.2 .* admitted$' "$TMP/status.txt" || fail "status row not admitted: $(cat "$TMP/status.txt")"
note "a second admission of the same node is not counted twice"
[ "$(fetch 127.0.0.2)" = 200 ] || fail "second fetch"
[ "$(metric skewgate_admitted_after_hold_total)" = 1 ] || fail "counted twice"
gate_stop

# count_listed: how many clients /held lists.
count_listed() { held_check 'print(len(h["clients"]))'; }

note "sequential addresses: 99 % of max_clients stored (issue 20.4)"
set_object automatic-out-of-skew.yaml "$object"
for workers in 1 2; do
  GATE_WORKERS=$workers ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/many.yaml" hold "$object"
  gate_start "$TMP/many.yaml"
  wait_until 10 verdict_is reject || fail "many gate does not reject"
  answers=$(python3 "$ROOT/tests/integration/held_clients.py" many "$PLAIN_PORT" 3000) || fail "3000 clients"
  [ "$answers" = "503:3000" ] || fail "3000 clients answered $answers"
  n=$(count_listed)
  echo "$workers worker(s): $n of 3000 clients from one /16 listed"
  [ "$n" -ge 2990 ] || fail "$workers worker(s): $n of 3000 stored; /held overflow $(held_check 'print(h["overflow"])')"
  gate_stop
done
GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/full.yaml" hold "$object" "held:
  max_clients: 4096"
gate_start "$TMP/full.yaml"
wait_until 10 verdict_is reject || fail "full gate does not reject"
python3 "$ROOT/tests/integration/held_clients.py" many "$PLAIN_PORT" 4096 >/dev/null || fail "4096 clients"
n=$(count_listed)
echo "1 worker: $n of max_clients 4096 listed, 4096 clients"
[ "$n" -ge 4055 ] && [ "$n" -le 4096 ] || fail "$n of 4096 stored"
gate_stop

note "clients without the token take no held node's room (issue 20.5)"
TOKEN=$(openssl rand -hex 32)
printf '%s\n' "$TOKEN" >"$TMP/token"
GATE_WORKERS=2 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/token.yaml" hold "$object" "held:
  max_clients: 64
admission:
  token:
    files: [$TMP/token]"
gate_start "$TMP/token.yaml"
wait_until 10 verdict_is reject || fail "token gate does not reject"
# fresh ADDRESS POOL: a request with the token from an address of its own
# (not one of the flood's 127.1.x.y: a node is its address, issue 26, and
# a later refusal of that address would be what it got last).
fresh() {
  curl -s -o /dev/null -w '%{http_code}' --interface "$1" -A 'Ignition/2.14.0' -H "Accept: $ACCEPT" \
    -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PLAIN_PORT/config/$2"
}
[ "$(fresh 127.0.0.8 worker)" = 503 ] || fail "the node before the flood is not held"
# 500 addresses, a pool each, no token: 403 TokenMissing.
answers=$(python3 "$ROOT/tests/integration/held_clients.py" many "$PLAIN_PORT" 500 'flood-%d') || fail "flood"
[ "$answers" = "403:500" ] || fail "the flood answered $answers"
held_check '
refused = [e for e in h["clients"] if e["reason"] == "TokenMissing"]
assert refused and all(e["pool"] == "" for e in refused), h
assert len(refused) <= 16, len(refused)
assert h["overflow"] >= 500 - 16, h
' || fail "refusals: $(held_json)"
# A node held by the verdict after the flood, from an address of its own.
[ "$(fresh 127.0.0.9 master)" = 503 ] || fail "the node after the flood is not held"
held_check '
c = {(e["address"], e["pool"]): e for e in h["clients"]}
assert ("127.0.0.8", "worker") in c and c[("127.0.0.8", "worker")]["reason"] == "OutOfSkew", h
assert ("127.0.0.9", "master") in c and c[("127.0.0.9", "master")]["reason"] == "OutOfSkew", h
assert all(e["state"] == "denied" and e["status"] == 403 for e in h["clients"] if e["pool"] == ""), h
assert h["held"] == sum(e["state"] == "held" for e in h["clients"]) == len(h["clients"]) - len(
    [e for e in h["clients"] if e["pool"] == ""]), h
' || fail "held nodes after the flood: $(held_json)"
# A refused token is a 403, which Ignition does not retry: listed, not held.
[ "$(metric 'skewgate_held_clients{pool="",reason="TokenMissing"}')" = 0 ] || fail "refusals counted as held"
curl -sf "$ADMIN/metrics" >"$TMP/metrics.txt"
promtool check metrics <"$TMP/metrics.txt" || fail "promtool check metrics: $(grep held "$TMP/metrics.txt")"
gate_stop

note "deny and explain: listed with what they were answered, not held; a hold after holds again"
set_object automatic-out-of-skew.yaml "$object"
for mode in deny explain hold; do
  ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" $mode "$object"
  if [ "$mode" = deny ]; then
    gate_start "$TMP/gate.yaml"
  else
    n=$(reloads success)
    kill -HUP "$GATE_PID"
    wait_until 10 reloads_are success $((n + 1)) || fail "reload to $mode not counted"
  fi
  want=$(case $mode in deny) echo 403;; explain) echo 200;; hold) echo 503;; esac)
  wait_until 10 fetch_is 127.0.0.4 "$want" || fail "$mode: 127.0.0.4 not answered $want"
  state=$(case $mode in deny) echo denied;; explain) echo explained;; hold) echo held;; esac)
  held_check "
c = [e for e in h['clients'] if e['address'] == '127.0.0.4']
assert len(c) == 1 and c[0]['status'] == $want and c[0]['state'] == '$state' and not c[0]['admitted'], h
assert h['held'] == (1 if '$mode' == 'hold' else 0), h
" || fail "$mode: $(held_json)"
  [ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = "$([ $mode = hold ] && echo 1 || echo 0)" ] ||
    fail "$mode: skewgate_held_clients says $(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')"
done
"$SKEWGATE_BIN" status -c "$TMP/gate.yaml" >"$TMP/status.txt" 2>&1 || true
grep -q '127.0.0.4 .* held$' "$TMP/status.txt" || fail "status: $(cat "$TMP/status.txt")"

note "a C1 control (U+009B, CSI) in a User-Agent or a pool reaches status as a space"
code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.5 -A $'Ignition/2.14.0 \xc2\x9b31m' \
  -H "Accept: $ACCEPT" "http://127.0.0.1:$PLAIN_PORT/config/w%C2%9B1m")
[ "$code" = 503 ] || fail "127.0.0.5 answered $code"
held_check '
c = [e for e in h["clients"] if e["address"] == "127.0.0.5"]
assert len(c) == 1 and c[0]["userAgent"] == "Ignition/2.14.0  31m" and c[0]["pool"] == "w 1m", h
' || fail "/held: $(held_json | od -c | head -40)"
for format in text json; do
  "$SKEWGATE_BIN" status -c "$TMP/gate.yaml" -o $format >"$TMP/status.$format" 2>&1 || true
  if LC_ALL=C grep -q $'\xc2\x9b' "$TMP/status.$format"; then
    fail "status -o $format prints a raw CSI: $(od -c "$TMP/status.$format" | grep -m3 302)"
  fi
done
grep -q '^127\.0\.0\.5  *w 1m  *Ignition/2\.14\.0  31m .* held$' "$TMP/status.text" ||
  fail "status row: $(grep 127.0.0.5 "$TMP/status.text" | od -c)"

note "skewgate_held_clients names only held.pools (default master, worker); others are \"other\"; live on reload"
[ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = 1 ] || fail "held worker not counted"
[ "$(metric 'skewgate_held_clients{pool="other",reason="OutOfSkew"}')" = 1 ] || fail "the made-up pool not other"
if curl -sf "$ADMIN/metrics" | grep '^skewgate_held_clients{' | has -v '{pool="\(master\|worker\|other\)"'; then
  fail "a made-up pool is a series: $(curl -sf "$ADMIN/metrics" | grep '^skewgate_held_clients{')"
fi
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "held:
  pools: [master]"
n=$(reloads success)
kill -HUP "$GATE_PID"
wait_until 10 reloads_are success $((n + 1)) || fail "reload of held.pools not taken"
[ "$(metric 'skewgate_held_clients{pool="other",reason="OutOfSkew"}')" = 2 ] ||
  fail "after held.pools [master]: $(curl -sf "$ADMIN/metrics" | grep '^skewgate_held_clients{')"
if curl -sf "$ADMIN/metrics" | has '^skewgate_held_clients{pool="worker"'; then fail "worker still named"; fi
echo "PASS"
