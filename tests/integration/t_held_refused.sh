#!/usr/bin/env bash
# One node, two kinds of answer (found in review): the held table keeps a
# verdict's hold and an admission policy's refusal in two parts, both by
# address, and each entry used to count on its own. So a node held
# (503 OutOfSkew) whose token was then rotated out (403 TokenInvalid from
# then on: Ignition fails at once) was still counted held by /held,
# skewgate_held_clients and `skewgate status` until held.forget_after, and
# the operator was told it would boot by itself. Now what the node got
# last is what counts: here it is denied, not held, and listed once; held
# by the verdict again (the token rotated back), it is held, once.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4096
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
printf 'token-one\n' >"$TMP/token"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "admission:
  token:
    files: [$TMP/token]"
gate_start "$TMP/gate.yaml"

fetch() {  # the status 127.0.0.3 gets with token-one
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface 127.0.0.3 -H "Authorization: Bearer token-one" \
    -H "Accept: $IGNITION_ACCEPT" "http://127.0.0.1:$PLAIN_PORT/config/worker" || true
}
fetch_is() { [ "$(fetch)" = "$1" ]; }
# held_is HELD STATE: /held counts HELD held, and lists 127.0.0.3 once, in STATE.
held_is() {
  curl -sf "$ADMIN/held" | python3 -c '
import json, sys
h = json.load(sys.stdin)
c = [e for e in h["clients"] if e["address"] == "127.0.0.3"]
assert h["held"] == int(sys.argv[1]) and len(c) == 1 and c[0]["state"] == sys.argv[2], h
' "$@"
}
gauge() { curl -sf "$ADMIN/metrics" | awk '$1 ~ /^skewgate_held_clients[{ ]/ {n += $2} END {printf "%d\n", n}'; }
status_says_held() {  # the row of 127.0.0.3 in `skewgate status` ends in state "held"
  local out rc=0
  out=$("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR") || rc=$?
  [ "$rc" = 3 ] || fail "skewgate status: exit $rc, want 3 (the gate rejects)"
  awk '$1 == "127.0.0.3" && $NF == "held" {found = 1} END {exit !found}' <<<"$out"
}

note "held by the verdict"
wait_until 10 fetch_is 503 || fail "not held: $(fetch)"
held_is 1 held || fail "/held: $(curl -s "$ADMIN/held")"
[ "$(gauge)" = 1 ] || fail "skewgate_held_clients: $(gauge)"
status_says_held || fail "skewgate status does not say held: $("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" 2>&1)"

note "its token rotated out: 403 from then on, so denied, not held"
printf 'token-two\n' >"$TMP/token.new" && mv "$TMP/token.new" "$TMP/token"
wait_until 10 fetch_is 403 || fail "the rotated token is still accepted: $(fetch)"
held_is 0 denied || fail "a node answered 403 is counted held: $(curl -s "$ADMIN/held")"
[ "$(gauge)" = 0 ] || fail "skewgate_held_clients counts a denied node: $(gauge)"
! status_says_held || fail "skewgate status says held: $("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR")"

note "the token rotated back: held by the verdict again, listed once"
printf 'token-one\n' >"$TMP/token.new" && mv "$TMP/token.new" "$TMP/token"
wait_until 10 fetch_is 503 || fail "not held again: $(fetch)"
held_is 1 held || fail "/held: $(curl -s "$ADMIN/held")"
[ "$(gauge)" = 1 ] || fail "skewgate_held_clients: $(gauge)"
gate_stop
echo PASS
