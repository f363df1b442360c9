#!/usr/bin/env bash
# The pace watch across reloads (issue 26). Pacing unchanged (the same
# file, twice): the watch and its view are kept, though the configuration
# they started with is freed by the workers (the watch holds its own
# reference): a Node turning Ready afterwards still frees its node's slot
# for the head of the line. pace.enabled off then on: the watch stops and
# starts again, the room keeps who is joining and the line. Another
# watch_timeout (another connection): the watch is replaced, and the new
# one is used. Run under ASan by `make SAN=1` (SKEWGATE_SAN=1), where a
# watch reading a freed configuration would be reported.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
# gate_yaml ENABLED WATCH_TIMEOUT
gate_yaml() {
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN
    watch_timeout: $2" gate_config "$TMP/gate.yaml" hold unused "pace:
  enabled: $1
  max_joining: 3
  join_timeout: 10m
  head_hold: 10m
log:
  level: debug"
}
gate_yaml true 5m
gate_start "$TMP/gate.yaml"
held() { curl -sf --max-time 5 "http://$ADMIN_ADDR/held"; }
pace_is() { held | python3 -c 'import json, sys; p = json.load(sys.stdin).get("pace"); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"; }
pace_show() { held | python3 -c 'import json, sys; p = json.load(sys.stdin).get("pace") or {}; p.pop("line", None); print(json.dumps(p))'; }
reloads_are() {
  [ "$(curl -sf "http://$ADMIN_ADDR/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
freed_at_least() { [ "$(grep -c '"event":"config_generation_freed"' "$GATE_LOG")" -ge "$1" ]; }
ask() { python3 "$ROOT/tests/integration/pace_ask.py" "$PLAIN_PORT" "$@" | awk '$2 == 200 {print $1}' | tr '\n' ' ' | sed 's/ $//'; }
ready() {  # ready I: node I's Node is Ready
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"nodes\",\"object\":{\"metadata\":{\"name\":\"node-$1\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.2.0.$1\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}}" >/dev/null
}
wait_until 20 reason_is Compliant || die "the verdict did not settle"
wait_until 20 pace_is 'p["counting"] == "api"' || die "the watch never listed: $(pace_show)"
[ "$(ask 1 8)" = "1 2 3" ] || die "not the first 3 admitted"

note "SIGHUP twice with the same file: the watch is kept, the old configuration freed"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || die "the second reload was not taken"
wait_until 10 freed_at_least 2 || die "the configuration before the reloads was not freed"
grep -q 'the Nodes and CSRs watch starts' "$GATE_LOG" && die "the watch was replaced (nothing tested)"
pace_is 'p["counting"] == "api"' || die "after the reloads: $(pace_show)"
ready 1
wait_until 10 pace_is 'p["joinedTotal"] == 1' || die "a Node Ready after the reloads did not free its slot: $(pace_show)"
[ "$(ask 4 8 --reverse)" = "4" ] || die "the head of the line was not admitted after the reloads"

note "pace.enabled off, then on: the watch stops and starts again; the room keeps who joins and the line"
gate_yaml false 5m
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 3 || die "the reload (pacing off) was not taken"
grep -q 'pace: pace.enabled is false: the Nodes and CSRs watch stops' "$GATE_LOG" || die "the watch did not stop"
pace_is 'p is None' || die "/held still shows pacing: $(pace_show)"
gate_yaml true 5m
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 4 || die "the reload (pacing on) was not taken"
wait_until 20 pace_is 'p["counting"] == "api" and p["joining"] == 3 and p["waiting"] == 4' || die "after pacing on again: $(pace_show)"
ready 2
wait_until 10 pace_is 'p["joining"] == 2' || die "the new watch did not free node 2's slot: $(pace_show)"
[ "$(ask 5 8 --reverse)" = "5" ] || die "the head of the line was not admitted after pacing on again"

note "another watch_timeout: the watch is replaced against the new configuration, and used"
gate_yaml true 4m
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 5 || die "the reload (watch_timeout) was not taken"
grep -q 'pace: enforcement.kubernetes changed: the Nodes and CSRs watch starts' "$GATE_LOG" || die "the watch was not replaced"
wait_until 20 pace_is 'p["counting"] == "api"' || die "the new watch never listed: $(pace_show)"
ready 3
wait_until 10 pace_is 'p["joining"] == 2 and p["joinedTotal"] >= 1' || die "node 3's slot: $(pace_show)"
[ "$(ask 6 8 --reverse)" = "6" ] || die "the head of the line was not admitted after the watch was replaced"
echo PASS
