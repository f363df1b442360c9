#!/usr/bin/env bash
# A reload that points the Kubernetes source at another API server is a
# reload to another cluster: the old cluster's view must not decide for
# the new one. It kept deciding for up to max_staleness, with lastSync at
# the reload's moment, while the machines watch already held every client
# (t_reload_machines_server). Two fake API servers: A out of skew, B
# compliant. The gate starts on A (held); the reload to B, while B does
# not answer, gives when_unknown (admit, SourceUnavailable), lastSync
# null, not ready; then B's own verdict. A reload to the same server (a
# new token path) while B does not answer keeps B's view.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-out-of-skew.yaml"
A_URL=$FA_URL
# B: the same certificates and token, its own state and log.
fa_spawn /dev/null "$FA_DIR/fakeapi-b.log" "$FA_PY" "$FA_SERVER" --cert "$FA_DIR/pki/server.crt" \
  --key "$FA_DIR/pki/server.key" --token-file "$FA_DIR/token" --port-file "$FA_DIR/port-b" \
  --object "$FIXTURES/automatic-compliant.yaml"
wait_until 10 test -s "$FA_DIR/port-b" || die "fake B did not start"
B_URL="https://127.0.0.1:$(cat "$FA_DIR/port-b")"

cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
gate_yaml() {  # gate_yaml SERVER_URL TOKEN_FILE
  ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $1
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $2" gate_config "$TMP/gate.yaml" hold unused "log:
  level: debug"
}
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
# verdict: "DECISION REASON LASTSYNC" from /verdict (LASTSYNC: None or set).
verdict() {
  curl -sf "$ADMIN/verdict" | python3 -c '
import json, sys
v = json.load(sys.stdin)
print(v["decision"], v["reason"], "set" if v["lastSync"] else v["lastSync"])'
}
verdict_is() { [ "$(verdict)" = "$1" ]; }
readyz() { curl -s -o "$TMP/readyz" -w '%{http_code}' --max-time 5 "$ADMIN/readyz" || true; }
last_sync_metric() { curl -sf "$ADMIN/metrics" | awk '$1 == "skewgate_source_last_sync_timestamp_seconds" {print $2}'; }

gate_yaml "$A_URL" "$GATE_TOKEN"
gate_start "$TMP/gate.yaml"
wait_until 10 verdict_is "reject OutOfSkew set" || die "A's object is not judged: $(verdict)"
code_is 503 || die "A's out-of-skew object is not held"

note "reload to B while B does not answer: when_unknown, lastSync never, not ready"
FA_URL=$B_URL fa_ctl '{"fault":"stall","seconds":120}' >/dev/null
gate_yaml "$B_URL" "$GATE_TOKEN"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
grep -q '"event":"reload".*verdict source now kubernetes (another server' "$GATE_LOG" ||
  die "the reload does not say it changed server"
# The commit publishes before the workers take the reload: no wait here.
verdict_is "admit SourceUnavailable None" || die "after the reload to B, A's view still decides: $(verdict)"
code_is 200 || die "when_unknown (admit) is not applied: $(gate_code)"
[ "$(last_sync_metric)" = 0.000 ] || die "the metric claims a sync of B: $(last_sync_metric)"
[ "$(readyz)" = 503 ] || die "ready before B synced: $(cat "$TMP/readyz")"
grep -q "not confirmed a view" "$TMP/readyz" || die "/readyz: $(cat "$TMP/readyz")"

note "B answers: its own verdict, ready"
FA_URL=$B_URL fa_ctl '{"fault":"clear"}' >/dev/null
wait_until 40 verdict_is "admit Compliant set" || die "B's object is not judged: $(verdict)"
wait_until 10 sh -c "curl -s $ADMIN/readyz | grep -qx ok" || die "not ready on B: $(curl -s "$ADMIN/readyz")"

note "reload to the same server with a new token path while B does not answer: B's view stays"
cp "$GATE_TOKEN" "$GATE_TOKEN-2"
FA_URL=$B_URL fa_ctl '{"fault":"stall","seconds":120}' >/dev/null
gate_yaml "$B_URL" "$GATE_TOKEN-2"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || die "the second reload was not taken: $(curl -s "$ADMIN/config")"
grep -q '"event":"reload".*verdict source now kubernetes"' "$GATE_LOG" || die "the source was not replaced (nothing tested)"
verdict_is "admit Compliant set" || die "the same server's view was dropped: $(verdict)"
[ "$(readyz)" = 503 ] || die "ready before the new source synced: $(cat "$TMP/readyz")"
FA_URL=$B_URL fa_ctl '{"fault":"clear"}' >/dev/null
gate_stop
echo PASS
