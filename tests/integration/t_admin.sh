#!/usr/bin/env bash
# The admin listener (/healthz, /readyz, /verdict, /metrics, /override) and
# the CLI that asks it (skewgate status, skewgate override).
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"

note "the admin listener is loopback only: check refuses 0.0.0.0"
ADMIN_ADDR="0.0.0.0:$(free_port)" gate_config "$TMP/open.yaml" hold "$object"
if "$SKEWGATE_BIN" check -c "$TMP/open.yaml" 2>"$TMP/check.err"; then fail "check passed admin on 0.0.0.0"; fi
grep -qi loopback "$TMP/check.err" || fail "check did not say why: $(cat "$TMP/check.err")"

ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
admin_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
gate_code() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT$1"; }
# metric SERIES: its value on /metrics, rounded (0 when the series is absent).
metric() { curl -sf "$ADMIN/metrics" | awk -v k="$1" '$1 == k {v = $2} END {printf "%.0f\n", v}'; }
metric_at_least() { [ "$(metric "$1")" -ge "$2" ]; }
status_is() { "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >/dev/null 2>&1; [ $? -eq "$1" ]; }

note "a source with no view yet: healthy but not ready"
echo "{ this is not yaml" >"$object"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" || fail "check refuses the admin config"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/healthz" || fail "no /healthz"
[ "$(curl -s "$ADMIN/healthz")" = ok ] || fail "/healthz body"
[ "$(admin_code "$ADMIN/readyz")" = 503 ] || fail "/readyz ready without a view"
curl -s "$ADMIN/readyz" | has "not confirmed a view" || fail "/readyz gives no reason: $(curl -s "$ADMIN/readyz")"

note "the source confirms a view: ready"
set_object none.yaml "$object"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "/readyz not ready after the object appeared"

note "/verdict: the verdict, its source and last sync"
curl -sf "$ADMIN/verdict" | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert v["decision"] == "admit" and v["reason"] == "EnforcementDisabled", v
assert v["mode"] == "None" and v["source"] == "file", v
assert v["lastSync"] and v["lastSync"].endswith("Z"), v
assert v["mcsRelease"] == {"release": "4.22", "family": "4.21+", "from": "default"}, v
' || fail "/verdict"

note "other paths 404, other methods 405"
[ "$(admin_code "$ADMIN/nope")" = 404 ] || fail "unknown path"
[ "$(admin_code -X DELETE "$ADMIN/metrics")" = 405 ] || fail "DELETE /metrics"
[ "$(admin_code "$ADMIN/override")" = 405 ] || fail "GET /override"
[ "$(admin_post /override action=maybe)" = 400 ] || fail "bad override action"

note "counters move: admit, error, pass, an odd pool name"
for _ in 1 2 3; do [ "$(gate_code /config/worker)" = 200 ] || fail "admit"; done
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 405 ] || fail "POST"
[ "$(gate_code /healthz)" = 200 ] || fail "pass"
gate_code '/config/we%22ird%5Cpo%C3%A9ol' >/dev/null
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/master")" = 200 ] || fail "tls admit"
wait_until 5 metric_at_least 'skewgate_requests_total{pool="worker",decision="admit",code="200"}' 3 ||
  fail "admit counter: $(curl -s "$ADMIN/metrics" | grep requests_total)"
metric_at_least 'skewgate_requests_total{pool="master",decision="admit",code="200"}' 1 || fail "master pool"
metric_at_least 'skewgate_requests_total{pool="",decision="error",code="405"}' 1 || fail "error counter"
metric_at_least 'skewgate_requests_total{pool="",decision="pass",code="200"}' 1 || fail "pass counter"
metric_at_least 'skewgate_request_duration_seconds_count' 6 || fail "histogram count"
[ "$(metric skewgate_verdict_admit)" = 1 ] || fail "verdict_admit"
[ "$(metric skewgate_skew_enforcement_none)" = 1 ] || fail "enforcement_none"
[ "$(metric 'skewgate_verdict_info{reason="EnforcementDisabled",mode="None"}')" = 1 ] || fail "verdict_info"
metric_at_least skewgate_source_last_sync_timestamp_seconds 1 || fail "last sync"
[ "$(metric 'skewgate_mcs_release_info{release="4.22",family="4.21+",from="default"}')" = 1 ] || fail "mcs_release_info"

note "promtool accepts the exposition"
curl -sf "$ADMIN/metrics" >"$TMP/metrics.txt"
promtool check metrics <"$TMP/metrics.txt" || fail "promtool check metrics: $(cat "$TMP/metrics.txt")"
! grep -q skewgate_machines_watch "$TMP/metrics.txt" || fail "machines watch metrics with admission.machines off"
curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; sys.exit("machinesWatch" in json.load(sys.stdin))' ||
  fail "/verdict has machinesWatch with admission.machines off"
grep -qF 'skewgate_requests_total{pool="we\"ird\\po\\xc3\\xa9ol",decision="admit",' "$TMP/metrics.txt" ||
  fail "odd pool name not escaped: $(grep requests_total "$TMP/metrics.txt")"

note "an upstream error is counted by kind"
UPSTREAM_PORT_SAVED=$MCS_PORT
gate_stop
MCS_PORT=$(free_port)     # nothing listens there: connection refused
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "not ready after restart"
[ "$(gate_code /config/worker)" = 502 ] || fail "refused upstream: no 502"
wait_until 5 metric_at_least 'skewgate_upstream_errors_total{kind="connect"}' 1 || fail "connect error not counted"
metric_at_least 'skewgate_requests_total{pool="worker",decision="admit",code="502"}' 1 || fail "502 not counted"
gate_stop
MCS_PORT=$UPSTREAM_PORT_SAVED

note "upstream.mcs_release: a release newer than the gate knows reads as the newest family, and says so"
UPSTREAM_EXTRA='  mcs_release: "4.30"' ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "not ready after restart"
curl -sf "$ADMIN/verdict" | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert v["mcsRelease"] == {"release": "4.30", "family": "4.21+", "from": "config"}, v
' || fail "/verdict mcsRelease from config: $(curl -s "$ADMIN/verdict")"
[ "$(metric 'skewgate_mcs_release_info{release="4.30",family="4.21+",from="config"}')" = 1 ] || fail "mcs_release_info"
grep -q 'newer than any this gate knows' "$GATE_LOG" || fail "no log line for a release newer than known"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" | grep -qx 'MCS release: 4.30, Accept read as 4.21+ (from config)' ||
  fail "status text: $("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR")"
note "a reload moves it"
UPSTREAM_EXTRA='  mcs_release: "4.19"' ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
kill -HUP "$GATE_PID"
release_is() {
  curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys
sys.exit(json.load(sys.stdin)["mcsRelease"] != {"release": "4.19", "family": "4.19", "from": "config"})'
}
wait_until 10 release_is || fail "mcsRelease after a reload: $(curl -s "$ADMIN/verdict")"
[ "$(metric 'skewgate_mcs_release_info{release="4.19",family="4.19",from="config"}')" = 1 ] || fail "mcs_release_info after a reload"
gate_stop
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "not ready after restart"

note "skewgate status: 0 admit, 3 reject, 1 unreachable"
"$SKEWGATE_BIN" status -c "$TMP/gate.yaml" -o json >"$TMP/status.json" || fail "status exit $? while admitting"
grep -q '"decision": "admit"' "$TMP/status.json" || fail "status output: $(cat "$TMP/status.json")"
set_object automatic-out-of-skew.yaml "$object"
wait_until 10 status_is 3 || fail "status does not exit 3 while rejecting"
[ "$(gate_code /config/worker)" = 503 ] || fail "out of skew not held"
metric_at_least 'skewgate_requests_total{pool="worker",decision="reject",code="503"}' 1 || fail "reject counter"
[ "$(metric skewgate_verdict_admit)" = 0 ] || fail "verdict_admit while rejecting"
set_object none.yaml "$object"
wait_until 10 status_is 0 || fail "status does not exit 0 once admitting again"
if "$SKEWGATE_BIN" status --admin "127.0.0.1:$(free_port)" 2>/dev/null; then fail "status reached nothing"; fi
"$SKEWGATE_BIN" status --admin "127.0.0.1:$(free_port)" >/dev/null 2>&1 || [ $? -eq 1 ] || fail "unreachable: not exit 1"

note "skewgate override reject --for 2s holds, then lapses by itself"
"$SKEWGATE_BIN" override reject --for 2s --admin "$TMP/admin.sock" >"$TMP/override.json" || fail "override exit $?"
grep -q '"reason": "Override"' "$TMP/override.json" || fail "override output: $(cat "$TMP/override.json")"
[ "$(gate_code /config/worker)" = 503 ] || fail "override reject did not hold"
status_is 3 || fail "status during the override"
admitting() { [ "$(gate_code /config/worker)" = 200 ]; }
wait_until 6 admitting || fail "override did not lapse"
status_is 0 || fail "status after the override lapsed"

note "skewgate override clear ends an override without expiry"
"$SKEWGATE_BIN" override reject -c "$TMP/gate.yaml" >/dev/null || fail "override reject"
[ "$(gate_code /config/worker)" = 503 ] || fail "override reject did not hold"
"$SKEWGATE_BIN" override clear -c "$TMP/gate.yaml" >/dev/null || fail "override clear"
[ "$(gate_code /config/worker)" = 200 ] || fail "override clear did not admit"
if "$SKEWGATE_BIN" override sometimes --admin "$TMP/admin.sock" 2>/dev/null; then fail "override took a bad action"; fi

note "connections are counted by transport"
[ "$(metric 'skewgate_connections{state="tls"}')" = 0 ] || fail "open TLS connections after all closed"
metric_at_least skewgate_connections_accepted_total 1 || fail "accepted counter"
