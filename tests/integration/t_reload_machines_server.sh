#!/usr/bin/env bash
# A reload that points enforcement.kubernetes at another API server moves
# the admission.machines watch there too, with the verdict source. The
# watch used to keep the start-up configuration's server, CA and token for
# good, so the verdict followed one cluster and the Machine admission
# another (a pending Machine of the new cluster held as UnknownMachine, one
# of the old admitted). Two fake API servers: A has a pending Machine at
# 127.0.0.3, B one at 127.0.0.2. The gate starts on A; the reload to B
# must, while B does not answer yet, hold both addresses (no set, as at
# start: A's addresses no longer count, B's are not known), then admit B's
# Machine only, and follow B's watch. Ready means synced: while B refuses
# the Machines (403) and answers the rest, the verdict source syncs on B
# but the new watch does not, and the gate is not ready until it has
# listed. Then a SIGHUP that changes nothing keeps the running watch: no
# relist, no hold.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
NS=openshift-machine-api
# machine URL NAME IP: a pending Machine (no nodeRef) at IP on the fake at URL.
machine() {
  FA_URL=$1 fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$2\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$3\"}]}}}" >/dev/null
}

fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
A_URL=$FA_URL A_PID=$FA_PID
# B: the same certificates and token, its own state and log.
fa_spawn /dev/null "$FA_DIR/fakeapi-b.log" "$FA_PY" "$FA_SERVER" --cert "$FA_DIR/pki/server.crt" \
  --key "$FA_DIR/pki/server.key" --token-file "$FA_DIR/token" --port-file "$FA_DIR/port-b" \
  --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
wait_until 10 test -s "$FA_DIR/port-b" || die "fake B did not start"
B_URL="https://127.0.0.1:$(cat "$FA_DIR/port-b")"
machine "$A_URL" a-pending 127.0.0.3
machine "$B_URL" b-pending 127.0.0.2

cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
gate_yaml() {  # gate_yaml SERVER_URL
  ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $1
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "admission:
  machines:
    enabled: true
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
# watches_on URL: how many machines watch start lines name URL's host:port.
watches_on() { log_count machines_watch "\"server\":\"${1#https://}\""; }

gate_yaml "$A_URL"
gate_start "$TMP/gate.yaml"
wait_until 20 answer_is 127.0.0.3 "200 " || die "A's pending Machine is not admitted: $(answer 127.0.0.3)"
answer_is 127.0.0.2 "503 UnknownMachine" || die "B's Machine is known on A: $(answer 127.0.0.2)"
[ "$(watches_on "$A_URL")" = 1 ] || die "the machines watch did not start on A"

note "reload to B while B does not answer: both addresses held, as at start"
published=$(log_count machines_published)
FA_URL=$B_URL fa_ctl '{"fault":"stall","seconds":120}' >/dev/null
FA_URL=$B_URL fa_ctl '{"fault":"forbid","resource":"machines.machine.openshift.io"}' >/dev/null
gate_yaml "$B_URL"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
got3=$(answer 127.0.0.3)
got2=$(answer 127.0.0.2)
[ "$(log_count machines_published)" = "$published" ] || die "a set was published during B's stall (nothing tested)"
[ "$got3" = "503 UnknownMachine" ] || die "after the reload to B, A's Machine 127.0.0.3 still gets: $got3"
[ "$got2" = "503 UnknownMachine" ] || die "before B listed, 127.0.0.2 got: $got2"
[ "$(watches_on "$B_URL")" = 1 ] || die "the machines watch did not start again on B"
machines_watch_is() {  # machines_watch_is STATE: the new watch's, never listed
  "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" -o json >"$TMP/status.json" || true
  python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["machinesWatch"]; sys.exit(w["state"] != sys.argv[2] or w["lastList"] is not None)' \
    "$TMP/status.json" "$1"
}
machines_watch_is syncing || die "machinesWatch while B stalls: $(cat "$TMP/status.json")"

note "B answers all but the Machines: the source syncs, the gate is not ready until the watch lists"
FA_URL=$B_URL fa_ctl '{"fault":"stall","seconds":0}' >/dev/null
# The verdict source is asked first: a reason of the watch's says the source is ready.
not_ready_for_machines() { curl -s --max-time 5 "$ADMIN/readyz" | has "^admission.machines: "; }
wait_until 20 not_ready_for_machines || die "/readyz once the source synced on B: $(curl -s "$ADMIN/readyz")"
machines_watch_is failing || die "machinesWatch while B refuses the Machines: $(cat "$TMP/status.json")"
[ "$(answer 127.0.0.2)" = "503 UnknownMachine" ] || die "before B's Machines were listed, 127.0.0.2 got: $(answer 127.0.0.2)"

note "B grants the Machines: its Machine is admitted, A's is not"
FA_URL=$B_URL fa_ctl '{"fault":"allow","resource":"machines.machine.openshift.io"}' >/dev/null
wait_until 20 answer_is 127.0.0.2 "200 " || die "B's pending Machine is not admitted: $(answer 127.0.0.2)"
answer_is 127.0.0.3 "503 UnknownMachine" || die "A's Machine after B listed: $(answer 127.0.0.3)"
wait_until 20 sh -c "curl -s $ADMIN/readyz | grep -qx ok" || die "not ready on B: $(curl -s "$ADMIN/readyz")"

note "A goes away; the watch follows B's events"
fa_stop "$A_PID"
machine "$B_URL" b-pending-2 127.0.0.4
wait_until 10 answer_is 127.0.0.4 "200 " || die "a Machine added on B is not followed: $(answer 127.0.0.4)"
grep '"event":"source_error"' "$GATE_LOG" | has -F "\"server\":\"${A_URL#https://}\"" &&
  die "something still talks to A: $(grep '"event":"source_error"' "$GATE_LOG" | tail -1)"

note "a SIGHUP that changes nothing keeps the running watch"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || die "the second reload was not taken"
answer_is 127.0.0.2 "200 " || die "the kept watch's addresses were dropped: $(answer 127.0.0.2)"
[ "$(watches_on "$B_URL")" = 1 ] || die "a reload that changed nothing started the watch again"
machine "$B_URL" b-pending-3 127.0.0.5
wait_until 10 answer_is 127.0.0.5 "200 " || die "the kept watch does not follow B: $(answer 127.0.0.5)"
gate_stop
echo PASS
