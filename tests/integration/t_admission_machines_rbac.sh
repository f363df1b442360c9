#!/usr/bin/env bash
# admission.machines whose Machines list the API server refuses (403: the
# service account lacks the RBAC rule). The watch never lists, so every
# gated client is held (503 UnknownMachine), while /readyz said ok,
# `skewgate status` said healthy and no metric told. Now: /readyz is 503
# and says why, `skewgate status` (JSON and text) shows the watch failing
# with the 403 and when, skewgate_machines_watch_synced is 0 (on the
# admin and the metrics listener; promtool accepts both). Once the rule
# is granted: ready, the watch synced with its last list time, the metric
# 1, the pending Machine admitted.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
NS=openshift-machine-api
fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"pending-1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.2\"}]}}}" >/dev/null
fa_ctl '{"fault":"forbid","resource":"machines.machine.openshift.io"}' >/dev/null

ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
METRICS_ADDR="127.0.0.1:$(free_port)"
kube_gate_start hold "admission:
  machines:
    enabled: true
    namespace: $NS
metrics:
  enabled: true
  address: \"$METRICS_ADDR\""

readyz() { curl -s -o "$TMP/readyz" -w '%{http_code}' --max-time 5 "$ADMIN/readyz" || true; }
ready_is() { [ "$(readyz)" = "$1" ]; }
answer() {
  curl -s -D - -o /dev/null --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" |
    tr -d '\r' | awk '/^HTTP/ {c = $2} /^Skewgate-Reason:/ {r = $2} END {print c, r}'
}
answer_is() { [ "$(answer "$1")" = "$2" ]; }
status_json() { "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" -o json >"$TMP/status.json" || true; }
# watch EXPR: EXPR (Python, on the status JSON's machinesWatch as w) after a fresh `status -o json`.
watch_says() {
  status_json
  python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["machinesWatch"]; sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$TMP/status.json" "$1" 2>/dev/null
}
metric() {  # metric BASE_URL NAME: its value, as printed
  curl -sf --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n {print $2}'
}
verdict_synced() { curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["lastSync"] else 1)'; }

note "the verdict source syncs; the Machines list is refused (403), again after the backoff"
wait_until 20 verdict_synced || die "the verdict source never synced"
wait_until 20 log_count_above source_error 1 "HTTP 403" || die "the Machines list was not refused twice"

note "/readyz is 503 and says why"
[ "$(readyz)" = 503 ] || die "ready while the machines watch never listed: $(cat "$TMP/readyz")"
grep -q "admission.machines" "$TMP/readyz" || die "/readyz does not name the watch: $(cat "$TMP/readyz")"
[ "$(answer 127.0.0.2)" = "503 UnknownMachine" ] || die "the pending machine was not held: $(answer 127.0.0.2)"

note "skewgate status -o json: the watch is failing, with the 403 and since when; never listed"
watch_says 'w["state"] == "failing"' || die "machinesWatch is not failing: $(cat "$TMP/status.json")"
watch_says 'w["lastList"] is None and w["since"].endswith("Z")' || die "machinesWatch lastList/since: $(cat "$TMP/status.json")"
watch_says '"HTTP 403" in w["lastError"]["message"] and "RBAC" in w["lastError"]["message"] and w["lastError"]["at"]' ||
  die "machinesWatch.lastError: $(cat "$TMP/status.json")"

note "skewgate status (text): not ready, the watch failing with the 403"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || true
grep -q "^Source: *kubernetes, healthy" "$TMP/status.txt" || die "the source is not shown healthy: $(cat "$TMP/status.txt")"
grep -q "^Machines: *NOT READY: failing since .*; never listed: every gated client is held" "$TMP/status.txt" || die "no failing Machines line: $(cat "$TMP/status.txt")"
grep -q "^ \{13\}last error: .*HTTP 403.* ago))$" "$TMP/status.txt" || die "no 403 in the text: $(cat "$TMP/status.txt")"

note "skewgate_machines_watch_synced is 0, on both listeners; promtool accepts them"
for url in "$ADMIN" "http://$METRICS_ADDR"; do
  [ "$(metric "$url" skewgate_machines_watch_synced)" = 0 ] || die "$url: skewgate_machines_watch_synced is not 0"
  [ "$(metric "$url" skewgate_machines_watch_last_list_timestamp_seconds)" = 0.000 ] ||
    die "$url: last list timestamp $(metric "$url" skewgate_machines_watch_last_list_timestamp_seconds)"
  curl -sf "$url/metrics" >"$TMP/metrics.txt"
  promtool check metrics <"$TMP/metrics.txt" || die "promtool check metrics on $url"
done

note "the rule is granted: ready, synced, the metric 1, the pending Machine admitted"
fa_ctl '{"fault":"allow","resource":"machines.machine.openshift.io"}' >/dev/null
wait_until 40 ready_is 200 || die "not ready once the list is allowed: $(cat "$TMP/readyz")"
watch_says 'w["state"] == "synced" and w["lastList"].endswith("Z")' || die "machinesWatch once allowed: $(cat "$TMP/status.json")"
watch_says '"HTTP 403" in w["lastError"]["message"]' || die "the last error was not kept: $(cat "$TMP/status.json")"
wait_until 5 answer_is 127.0.0.2 "200 " || die "the pending machine is not admitted: $(answer 127.0.0.2)"
for url in "$ADMIN" "http://$METRICS_ADDR"; do
  [ "$(metric "$url" skewgate_machines_watch_synced)" = 1 ] || die "$url: skewgate_machines_watch_synced is not 1"
  now=$(date +%s)
  ts=$(metric "$url" skewgate_machines_watch_last_list_timestamp_seconds)
  [ "${ts%.*}" -gt $((now - 60)) ] && [ "${ts%.*}" -le "$now" ] || die "$url: last list at $ts, now $now"
done
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || true
grep -q "^Machines: *synced since .*; last list 20" "$TMP/status.txt" || die "no synced Machines line: $(cat "$TMP/status.txt")"
grep -q "NOT READY" "$TMP/status.txt" && die "status text still not ready: $(cat "$TMP/status.txt")"
gate_stop
echo PASS
