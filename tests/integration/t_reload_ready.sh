#!/usr/bin/env bash
# Ready means the verdict source has synced since the last change of
# source. A reload from the file source to a Kubernetes API that cannot be
# reached answered /readyz 200 and `skewgate status` said "healthy; last
# sync never", where a fresh start with the same file says not ready
# (issue 20, item 2). Here: synced on the file source, reload to an
# unreachable API server: 503 and "not synced" (while the file's last view
# still decides); then the API server comes up on that port: ready.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
# The fake's certificates and token now; the fake itself comes later, on
# the port the gate is told about.
fa_mkcerts "$FA_DIR/pki" || fail "mkcerts"
printf 'fa-%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$FA_DIR/token"
cp "$FA_DIR/token" "$GATE_TOKEN"
API_PORT=$(free_port)
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"

readyz() { curl -s -o "$TMP/readyz" -w '%{http_code}' --max-time 5 "$ADMIN/readyz" || true; }
ready_is() { [ "$(readyz)" = "$1" ]; }
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
status_text() { "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" 2>&1 || true; }

ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 ready_is 200 || die "the file source never made the gate ready: $(cat "$TMP/readyz")"
code_is 503 || die "the file's out-of-skew object is not held"

note "reload to a Kubernetes API server that cannot be reached: not ready"
ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: https://127.0.0.1:$API_PORT
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "log:
  level: debug"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
[ "$(readyz)" = 503 ] || die "ready after switching to a source that never synced: $(cat "$TMP/readyz")"
grep -q "has not synced" "$TMP/readyz" || die "/readyz does not say why: $(cat "$TMP/readyz")"
status_text >"$TMP/status"
grep -q "NOT READY: .*has not synced" "$TMP/status" || die "status does not say not synced: $(cat "$TMP/status")"
grep -q "healthy" "$TMP/status" && die "status says healthy: $(cat "$TMP/status")"
# Still so once the source has failed and retried.
wait_until 10 log_count_above source_error 1 "127.0.0.1:$API_PORT" || die "the source did not try the API server twice"
[ "$(readyz)" = 503 ] || die "ready while the API server cannot be reached: $(cat "$TMP/readyz")"
code_is 503 || die "the last view (the file's, out of skew) no longer decides"
# That view was confirmed up to the reload: lastSync and the metric say
# so, not "never" (0), which SkewgateSourceStale reads as 56 years stale.
last_sync_metric() { curl -sf "$ADMIN/metrics" | awk '$1 == "skewgate_source_last_sync_timestamp_seconds" {printf "%d\n", $2}'; }
now=$(date +%s)
m=$(last_sync_metric)
[ -n "$m" ] && [ "$m" -gt $((now - 60)) ] && [ "$m" -le "$now" ] ||
  die "skewgate_source_last_sync_timestamp_seconds after the reload: '$m' (now $now)"
curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; v = json.load(sys.stdin); assert v["lastSync"], v' ||
  die "/verdict's lastSync after the reload: $(curl -s "$ADMIN/verdict")"

note "the API server comes up on that port: ready"
fa_start --port "$API_PORT" --object "$FIXTURES/automatic-compliant.yaml"
[ "$FA_PORT" = "$API_PORT" ] || die "the fake is on $FA_PORT, not $API_PORT"
wait_until 40 ready_is 200 || die "not ready once the API server answers: $(cat "$TMP/readyz")"
wait_until 5 code_is 200 || die "the API's compliant object is not admitted"
status_text >"$TMP/status"
grep -q "healthy; last sync" "$TMP/status" || die "status once synced: $(cat "$TMP/status")"
gate_stop
echo PASS
