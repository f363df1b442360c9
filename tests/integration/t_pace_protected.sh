#!/usr/bin/env bash
# Pacing with admission.machines (issue 31 item 2): the policy judges
# before the line, so strangers take no slot and no place. The fake API
# server has one pending Machine (127.0.0.42, no nodeRef) and one Node
# (127.0.1.16); pace.max_joining is 2. 16 strangers (127.0.1.1..16) ask
# once each, one after the other: none is admitted (503 UnknownMachine,
# 403 ActiveNode for the Node's address); /held's pace shows joining 0 and
# waiting 0 and protection "machines", no warning; `skewgate status` says
# it is protected. Then the real node 127.0.0.42 is admitted at once (200
# from the stand-in MCS), and joins.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
NS=openshift-machine-api
fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"worker-42\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.42\"}]}}}" >/dev/null
fa_ctl '{"fault":"set_resource","resource":"nodes","object":{"metadata":{"name":"node-16"},"status":{"addresses":[{"type":"InternalIP","address":"127.0.1.16"}],"conditions":[{"type":"Ready","status":"True"}]}}}' >/dev/null
ADMIN_ADDR="127.0.0.1:$(free_port)"
cp "$FA_DIR/token" "$GATE_TOKEN"
GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "pace:
  enabled: true
  max_joining: 2
admission:
  machines:
    enabled: true
    namespace: $NS
log:
  level: debug"
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" >/dev/null 2>"$TMP/check.err" || die "check refused: $(cat "$TMP/check.err")"
grep -q 'without an admission policy' "$TMP/check.err" && die "check warned with admission.machines on: $(cat "$TMP/check.err")"
gate_start "$TMP/gate.yaml"
grep -q '"event":"pace_unprotected"' "$GATE_LOG" && die "the gate warned that the line is open"

held() { curl -sf --max-time 5 "http://$ADMIN_ADDR/held"; }
pace_is() { held | python3 -c 'import json, sys; p = json.load(sys.stdin).get("pace"); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"; }
pace_show() { held | python3 -c 'import json, sys; p = json.load(sys.stdin).get("pace") or {}; print(json.dumps(p))'; }
ready() { [ "$(curl -s --max-time 5 "http://$ADMIN_ADDR/readyz")" = ok ]; }
wait_until 20 reason_is Compliant || die "the verdict did not settle"
wait_until 20 ready || die "not ready: $(curl -s "http://$ADMIN_ADDR/readyz")"
wait_until 20 pace_is 'p["counting"] == "api"' || die "the pace watch never listed: $(pace_show)"

note "16 strangers ask once each: none admitted, none joining, none waiting"
python3 "$ROOT/tests/integration/pace_ask.py" "$PLAIN_PORT" 1 16 --net 127.0.1 >"$TMP/strangers"
[ "$(wc -l <"$TMP/strangers")" = 16 ] || die "not 16 answers: $(cat "$TMP/strangers")"
awk '$1 < 16 && !($2 == 503 && $3 == "UnknownMachine") {exit 1} $1 == 16 && !($2 == 403 && $3 == "ActiveNode") {exit 1}' \
  "$TMP/strangers" || die "a stranger was not refused by the policy: $(cat "$TMP/strangers")"
pace_is 'p["joining"] == 0 and p["waiting"] == 0 and p["line"] == [] and p["admittedTotal"] == 0' \
  || die "strangers took slots or places: $(pace_show)"
pace_is 'p["protection"] == "machines" and "warning" not in p' || die "/held pace protection: $(pace_show)"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status" || true
grep -qF '  protected: machines (admission.machines: only addresses of pending Machines enter the line)' "$TMP/status" \
  || die "skewgate status does not say what protects the line: $(cat "$TMP/status")"

note "the real node is admitted at once"
got=$(python3 "$ROOT/tests/integration/pace_ask.py" "$PLAIN_PORT" 42 42 --net 127.0.0)
[ "$got" = "42 200 -" ] || die "the pending Machine's node got: $got"
pace_is 'p["joining"] == 1 and p["waiting"] == 0 and p["admittedTotal"] == 1' || die "after the real node: $(pace_show)"
gate_stop_checked
echo PASS
