#!/usr/bin/env bash
# admission.machines turned on and off by SIGHUP (issue 31 item 2). It
# used to need a restart: the Machines and Nodes watch was made at start
# only. The gate starts with the policy off: a stranger (127.0.1.1) is
# admitted. A reload turns it on while the fake refuses the Machines
# (403): every client, the Machine's address (127.0.0.42) too, is held
# UnknownMachine until the new watch has listed; once the Machines are
# granted, the Machine's address is admitted and the stranger still held.
# A reload turns it off: the watch stops, the stranger is admitted. While
# off, the Machine gets a nodeRef; turned on again, its old pending
# address must not admit from the set of the watch a reload freed: it is
# held until the new watch has listed, then refused (ActiveNode). Run
# under ASan by `make SAN=1` (SKEWGATE_SAN=1), where a watch or a set
# read after the reload that freed it would be reported.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
NS=openshift-machine-api
MACHINES=machines.machine.openshift.io
machine() {  # machine NAME IP [NODE]: a Machine at IP, with a nodeRef to NODE if given
  local ref=""
  [ -n "${3:-}" ] && ref=",\"nodeRef\":{\"kind\":\"Node\",\"name\":\"$3\"}"
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"$MACHINES\",\"object\":{\"metadata\":{\"name\":\"$1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]$ref}}}" >/dev/null
}
machine pending-42 127.0.0.42
cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
gate_yaml() {  # gate_yaml ENABLED
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "admission:
  machines:
    enabled: $1
    namespace: $NS
log:
  level: debug"
}
# answer ADDR: "STATUS REASON" for /config/worker from ADDR.
answer() {
  curl -s -D - -o /dev/null --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" |
    tr -d '\r' | awk '/^HTTP/ {c = $2} /^Skewgate-Reason:/ {r = $2} END {print c, r}'
}
answer_is() { [ "$(answer "$1")" = "$2" ]; }
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
reload_to() {  # reload_to ENABLED N: the file with the policy ENABLED, the Nth reload taken
  gate_yaml "$1"
  kill -HUP "$GATE_PID"
  wait_until 10 reloads_are "$2" || die "reload $2 (admission.machines.enabled: $1) was not taken: $(curl -s "$ADMIN/config")"
}
ready() { [ "$(curl -s --max-time 5 "$ADMIN/readyz")" = ok ]; }

gate_yaml false
gate_start "$TMP/gate.yaml"
wait_until 20 reason_is Compliant || die "the verdict did not settle"
wait_until 10 ready || die "not ready: $(curl -s "$ADMIN/readyz")"
answer_is 127.0.1.1 "200 " || die "the policy is off, yet the stranger got: $(answer 127.0.1.1)"
[ "$(log_count machines_watch)" = 0 ] || die "a machines watch runs with the policy off"

note "a reload turns it on while the Machines are refused: everyone is held until the watch has listed"
fa_ctl "{\"fault\":\"forbid\",\"resource\":\"$MACHINES\"}" >/dev/null
reload_to true 1
grep -q 'admission.machines: admission.machines.enabled is true: the Machines and Nodes watch starts; every client is held' \
  "$GATE_LOG" || die "the reload did not start the watch"
answer_is 127.0.0.42 "503 UnknownMachine" || die "before the Machines were listed, 127.0.0.42 got: $(answer 127.0.0.42)"
answer_is 127.0.1.1 "503 UnknownMachine" || die "after the reload, the stranger got: $(answer 127.0.1.1)"
not_ready_for_machines() { curl -s --max-time 5 "$ADMIN/readyz" | has "^admission.machines: "; }
wait_until 10 not_ready_for_machines || die "/readyz while the watch cannot list: $(curl -s "$ADMIN/readyz")"

note "the Machines are granted: the Machine's address is admitted, the stranger still held"
fa_ctl "{\"fault\":\"allow\",\"resource\":\"$MACHINES\"}" >/dev/null
wait_until 30 answer_is 127.0.0.42 "200 " || die "the pending Machine is not admitted: $(answer 127.0.0.42)"
answer_is 127.0.1.1 "503 UnknownMachine" || die "the stranger once the watch listed: $(answer 127.0.1.1)"
wait_until 10 ready || die "not ready once the watch listed: $(curl -s "$ADMIN/readyz")"

note "a reload turns it off: the watch stops, the stranger is admitted"
reload_to false 2
grep -q 'admission.machines: admission.machines.enabled is false: the Machines and Nodes watch stops' "$GATE_LOG" \
  || die "the reload did not stop the watch"
answer_is 127.0.1.1 "200 " || die "the policy is off again, yet the stranger got: $(answer 127.0.1.1)"
ready || die "not ready with the policy off: $(curl -s "$ADMIN/readyz")"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" -o json >"$TMP/status.json" || true
python3 -c 'import json, sys; sys.exit("machinesWatch" in json.load(open(sys.argv[1])))' "$TMP/status.json" \
  || die "machinesWatch is still shown with the policy off: $(cat "$TMP/status.json")"

note "on again while the Machines are refused: the freed watch's addresses admit nobody"
machine pending-42 127.0.0.42 worker-42
fa_ctl "{\"fault\":\"forbid\",\"resource\":\"$MACHINES\"}" >/dev/null
reload_to true 3
answer_is 127.0.0.42 "503 UnknownMachine" || die "the old watch's address admitted: $(answer 127.0.0.42)"
fa_ctl "{\"fault\":\"allow\",\"resource\":\"$MACHINES\"}" >/dev/null
wait_until 30 answer_is 127.0.0.42 "403 ActiveNode" || die "the Machine with a nodeRef: $(answer 127.0.0.42)"
answer_is 127.0.1.1 "503 UnknownMachine" || die "the stranger, on again: $(answer 127.0.1.1)"
gate_stop_checked
echo PASS
