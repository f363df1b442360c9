#!/usr/bin/env bash
# The admin API refuses what an operator would not mean (issue 12): an
# override longer than 7 days, and a field given twice
# (action=admit&action=reject), each with a 400 that says why, and the
# verdict unchanged.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "the gate is not ready"

# post FORM: status code, body in $TMP/answer
post() { admin_post /override "$1"; }
verdict_reason() { curl -s "$ADMIN/verdict" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])'; }

note "for= is capped at 7 days"
[ "$(post 'action=admit&for=999999999h')" = 400 ] || fail "a 999999999h override was taken: $(cat "$TMP/answer")"
grep -q '7d' "$TMP/answer" || fail "the refusal does not say the cap: $(cat "$TMP/answer")"
[ "$(post 'action=admit&for=169h')" = 400 ] || fail "a 169h override was taken"
[ "$(verdict_reason)" = OutOfSkew ] || fail "a refused override changed the verdict"
[ "$(post 'action=admit&for=168h')" = 200 ] || fail "a 7-day override was refused: $(cat "$TMP/answer")"
[ "$(verdict_reason)" = Override ] || fail "the 7-day override did not take"
[ "$(post 'action=clear')" = 200 ] || fail "clear"

note "a field given twice is refused"
[ "$(post 'action=admit&action=reject')" = 400 ] || fail "action given twice was taken: $(cat "$TMP/answer")"
grep -q 'twice' "$TMP/answer" || fail "the refusal does not say why: $(cat "$TMP/answer")"
[ "$(post 'action=admit&for=1h&for=2h')" = 400 ] || fail "for given twice was taken"
[ "$(verdict_reason)" = OutOfSkew ] || fail "a refused override changed the verdict"
gate_stop
echo PASS
