#!/usr/bin/env bash
# A reload judges staleness again against its enforcement.max_staleness,
# from the same last sync (bug 5 of the review). Stale under 2s, a reload
# to 10m kept the verdict at when_unknown (SourceUnavailable, admitted)
# and /readyz at "failing for longer than enforcement.max_staleness",
# though under 10m the last good view (out of skew: held) is to be trusted
# again. Here: that, then a reload back to 1s, which has long passed: stale
# again at once; then the file is fixed: its view, and ready.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4096
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"

# gate_yaml MAX_STALENESS: hold mode, the file source on $object.
gate_yaml() {
  ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: file
  file:
    path: $object
  max_staleness: $1" gate_config "$TMP/gate.yaml" hold unused
}
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
verdict() { curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; v = json.load(sys.stdin); print(v["decision"], v["reason"])'; }
verdict_is() { [ "$(verdict)" = "$1" ]; }
readyz() { curl -s -o "$TMP/readyz" -w '%{http_code}' --max-time 5 "$ADMIN/readyz" || true; }
ready_is() { [ "$(readyz)" = "$1" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PLAIN_PORT/config/worker"; }

gate_yaml 2s
gate_start "$TMP/gate.yaml"
wait_until 10 ready_is 200 || fail "never ready: $(cat "$TMP/readyz")"
verdict_is "reject OutOfSkew" || fail "start: $(verdict)"
[ "$(code)" = 503 ] || fail "the out-of-skew object is not held"

note "the file breaks; after max_staleness 2s: when_unknown, not ready"
printf 'this: is: not: yaml: [\n' >"$object.tmp"; mv "$object.tmp" "$object"
wait_until 10 verdict_is "admit SourceUnavailable" || fail "not stale: $(verdict)"
[ "$(readyz)" = 503 ] || fail "ready while stale"
grep -q "longer than enforcement.max_staleness" "$TMP/readyz" || fail "/readyz: $(cat "$TMP/readyz")"
[ "$(code)" = 200 ] || fail "when_unknown (admit) is not applied"

note "reload to max_staleness 10m: the last good view decides again, ready"
gate_yaml 10m
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || fail "the reload was not taken: $(curl -s "$ADMIN/config")"
# The commit publishes before the workers take the reload, which /config
# counts once all have: no wait here.
verdict_is "reject OutOfSkew" || fail "after raising max_staleness: $(verdict)"
[ "$(code)" = 503 ] || fail "the last good view (out of skew) is not enforced again"
[ "$(readyz)" = 200 ] || fail "not ready under 10m: $(cat "$TMP/readyz")"

note "reload to max_staleness 1s, long passed since the last sync: stale at once"
gate_yaml 1s
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || fail "the second reload was not taken: $(curl -s "$ADMIN/config")"
verdict_is "admit SourceUnavailable" || fail "after lowering max_staleness: $(verdict)"
[ "$(readyz)" = 503 ] || fail "ready although failing for longer than 1s"
[ "$(code)" = 200 ] || fail "when_unknown (admit) is not applied"

note "the file is fixed: its view, ready"
set_object automatic-compliant.yaml "$object"
wait_until 10 verdict_is "admit Compliant" || fail "the fixed file is not followed: $(verdict)"
wait_until 10 ready_is 200 || fail "not ready once the file is fixed: $(cat "$TMP/readyz")"
gate_stop
echo PASS
