#!/usr/bin/env bash
# The held table forgets (issue 11.3, 20.3): with max_clients 2, four
# clients fill it and two overflow, the quiet ones are forgotten after
# forget_after and their slots take new clients; a node held again after
# an admission on another worker shows as held. The rest of the table's
# promises are t_held.sh's.
# run: alone: forget_after is 2 s: the checks of the bounded table must land within it
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_held.sh"

certs
mcs_start
object="$TMP/mc.yaml"

note "a bounded table: max_clients 2, four clients; forgotten after forget_after"
set_object automatic-out-of-skew.yaml "$object"
GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/small.yaml" hold "$object" "held:
  max_clients: 2
  forget_after: 2s"
gate_start "$TMP/small.yaml"
wait_until 10 verdict_is reject || fail "small gate does not reject"
for a in 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5; do [ "$(fetch $a)" = 503 ] || fail "$a not held"; done
held_check '
assert len(h["clients"]) == 2 and h["maxClients"] == 2, h
assert h["overflow"] == 2, h
assert {e["address"] for e in h["clients"]} <= {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, h
' || fail "bounded /held: $(held_json)"
[ "$(metric skewgate_held_overflow_total)" = 2 ] || fail "overflow metric"
no_clients() { held_check 'assert not h["clients"], h' 2>/dev/null; }
wait_until 10 no_clients || fail "quiet clients not forgotten: $(held_json)"
[ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = 0 ] || fail "forgotten clients in the gauge"
note "forgotten slots take new clients"
[ "$(fetch 127.0.0.6)" = 503 ] && [ "$(fetch 127.0.0.7)" = 503 ] || fail "new clients not held"
held_check '
assert {e["address"] for e in h["clients"]} == {"127.0.0.6", "127.0.0.7"}, h
assert all(e["attempts"] == 1 for e in h["clients"]) and h["overflow"] == 2, h
' || fail "reuse: $(held_json)"
gate_stop

note "held again after an admission on another worker: held now (issue 20.3)"
set_object automatic-out-of-skew.yaml "$object"
GATE_WORKERS=2 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/again.yaml" hold "$object" "held:
  max_clients: 4
  forget_after: 3s"
gate_start "$TMP/again.yaml"
wait_until 10 verdict_is reject || fail "again gate does not reject"
python3 "$ROOT/tests/integration/held_clients.py" again "$PLAIN_PORT" "$ADMIN_ADDR" "$TMP/admin.sock" ||
  fail "held again: $(held_json)"
[ "$(metric 'skewgate_held_clients{pool="worker",reason="OutOfSkew"}')" = 1 ] ||
  fail "held again, not in the gauge: $(curl -sf "$ADMIN/metrics" | grep held_clients)"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || rc=$?
[ "$rc" = 3 ] || fail "status exited $rc"
grep -q '^127\.0\.0\.2  *worker .* held$' "$TMP/status.txt" || fail "status row: $(cat "$TMP/status.txt")"
grep -q '^Held nodes: *[0-9]* held, 1 admitted after a hold' "$TMP/status.txt" || fail "status summary"
gate_stop

echo "PASS"
