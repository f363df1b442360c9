#!/usr/bin/env bash
# upstream.mcs_release auto with the kubernetes source follows the
# machine-config ClusterOperator on the fake API server (issue 32): while
# its list is forbidden, and while it does not exist, the default (4.22)
# with why; at 4.19.5, release 4.19 from the cluster, and an explain answer
# in 4.19's reading (Accept version=3.4.0-experimental: 3.3.0; 3.0.0:
# 400); patched to 4.22.1, release 4.22 within seconds and without a
# reload, and 4.22's reading (3.4.0; 500); deleted, the default again,
# saying why. /verdict, `skewgate status`, skewgate_mcs_release_info,
# `skewgate check`'s RBAC line, and the list and watch by
# fieldSelector=metadata.name%3Dmachine-config (what a resourceNames rule
# authorises).
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-out-of-skew.yaml" --bookmark-interval 0.5
fa_ctl '{"fault":"forbid","resource":"clusteroperators.config.openshift.io"}' >/dev/null
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
cp "$FA_DIR/token" "$GATE_TOKEN"
GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" UPSTREAM_EXTRA='  mcs_release: auto' gate_config "$TMP/gate.yaml" explain unused "log:
  level: debug"

note "check prints the ClusterOperator rule auto needs"
out=$("$SKEWGATE_BIN" check --files -c "$TMP/gate.yaml") || die "check refused the config: $out"
grep -qxF '  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)' <<<"$out" \
  || die "no ClusterOperator rule in: $out"
sed 's/mcs_release: auto/mcs_release: "4.22"/' "$TMP/gate.yaml" >"$TMP/pinned.yaml"
out=$("$SKEWGATE_BIN" check --files -c "$TMP/pinned.yaml") || die "check refused the pinned config: $out"
if grep -q clusteroperators <<<"$out"; then die "a pinned release asks for the ClusterOperator: $out"; fi

gate_start "$TMP/gate.yaml"

# mcs_is PYTHON_EXPR: the expression on /verdict's mcsRelease (m) holds.
mcs_is() { curl -sf --max-time 5 "$ADMIN/verdict" | python3 -c 'import json, sys; m = json.load(sys.stdin)["mcsRelease"]; sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"; }
mcs_show() { curl -s --max-time 5 "$ADMIN/verdict" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin).get("mcsRelease")))'; }
metric() { curl -sf --max-time 5 "$ADMIN/metrics" | awk -v k="$1" '$1 == k {v = $2} END {printf "%.0f\n", v}'; }
# explain ACCEPT: "STATUS SPEC" of the gate's explain answer (SPEC "-" without a body).
explain() {
  curl -s --max-time 5 -o "$TMP/explain.out" -w '%{http_code}' -H "Accept: application/vnd.coreos.ignition+json;version=$1" \
    "http://127.0.0.1:$PLAIN_PORT/config/worker" >"$TMP/explain.code" || true
  python3 - "$TMP/explain.code" "$TMP/explain.out" <<'PY'
import json, sys
code = open(sys.argv[1]).read().strip()
try:
    spec = json.load(open(sys.argv[2]))["ignition"]["version"]
except (ValueError, KeyError, TypeError):
    spec = "-"
print(code, spec)
PY
}
explain_is() { [ "$(explain "$1")" = "$2" ]; }
wait_until 20 reason_is OutOfSkew || die "the verdict did not settle"

note "the ClusterOperator forbidden: the default, saying why"
wait_until 10 mcs_is 'm["from"] == "default" and m["release"] == "4.22" and "forbidden" in m.get("why", "")' ||
  die "while forbidden: $(mcs_show)"
grep -qF 'needs get, list and watch on clusteroperators.config.openshift.io, resourceNames [machine-config]' "$GATE_LOG" ||
  die "the 403 did not name the rule"
fa_ctl '{"fault":"allow","resource":"clusteroperators.config.openshift.io"}' >/dev/null

note "allowed, but there is none: the default, saying so"
wait_until 10 mcs_is 'm["from"] == "default" and "does not exist" in m.get("why", "")' || die "absent: $(mcs_show)"
explain_is 3.4.0-experimental "200 3.4.0" || die "4.22's reading of 3.4.0-experimental: $(explain 3.4.0-experimental)"

co() {  # co VERSION: the machine-config ClusterOperator at that operator version
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"clusteroperators.config.openshift.io\",\"object\":{\"metadata\":{\"name\":\"machine-config\"},\"status\":{\"versions\":[{\"name\":\"operator\",\"version\":\"$1\"}]}}}" >/dev/null
}
other_co() {  # another ClusterOperator, which the watch must not see
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"clusteroperators.config.openshift.io\",\"object\":{\"metadata\":{\"name\":\"dns\"},\"status\":{\"versions\":[{\"name\":\"operator\",\"version\":\"$1\"}]}}}" >/dev/null
}

note "at 4.19.5: release 4.19 from the cluster, read as 4.19"
co 4.19.5
other_co 4.13.0
wait_until 10 mcs_is 'm == {"release": "4.19", "family": "4.19", "from": "cluster", "version": "4.19.5"}' ||
  die "at 4.19.5: $(mcs_show)"
[ "$(metric 'skewgate_mcs_release_info{release="4.19",family="4.19",from="cluster"}')" = 1 ] || die "mcs_release_info at 4.19"
status_has() { local out; out=$("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR") || true; grep -qxF "$1" <<<"$out"; }
status_has 'MCS release: 4.19, Accept read as 4.19 (from cluster: ClusterOperator version 4.19.5)' ||
  die "status text: $("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR")"
# The snapshot the workers read moved with it (published on the verdict loop).
wait_until 5 explain_is 3.4.0-experimental "200 3.3.0" || die "4.19's reading of 3.4.0-experimental: $(explain 3.4.0-experimental)"
explain_is 3.0.0 "400 -" || die "4.19's reading of 3.0.0: $(explain 3.0.0)"

note "the upgrade to 4.22.1: release 4.22, without a reload"
reloads_before=$(grep -cF '"event":"reload"' "$GATE_LOG" || true)
co 4.22.1
wait_until 5 mcs_is 'm == {"release": "4.22", "family": "4.21+", "from": "cluster", "version": "4.22.1"}' ||
  die "after the upgrade: $(mcs_show)"
wait_until 5 explain_is 3.4.0-experimental "200 3.4.0" || die "4.22's reading of 3.4.0-experimental: $(explain 3.4.0-experimental)"
explain_is 3.0.0 "500 -" || die "4.22's reading of 3.0.0: $(explain 3.0.0)"
[ "$(metric 'skewgate_mcs_release_info{release="4.22",family="4.21+",from="cluster"}')" = 1 ] || die "mcs_release_info at 4.22"
[ "$(grep -cF '"event":"reload"' "$GATE_LOG" || true)" = "$reloads_before" ] || die "the gate reloaded"

note "a version the gate cannot read: the default, naming it"
co "not-a-version"
wait_until 5 mcs_is 'm["from"] == "default" and "not-a-version" in m.get("why", "")' || die "unparseable: $(mcs_show)"

note "a release newer than any known: the newest family, logged once"
co 4.30.2
wait_until 5 mcs_is 'm == {"release": "4.30", "family": "4.21+", "from": "cluster", "version": "4.30.2"}' ||
  die "at 4.30.2: $(mcs_show)"
other_co 4.30.3
lists=$(log_count mcs_release_listed present)
fa_ctl '{"fault":"drop_watches"}' >/dev/null   # a relist reads 4.30.2 again: no second line
wait_until 10 log_count_above mcs_release_listed "$lists" "present" || die "no relist after the dropped watch"
[ "$(grep -cF 'MCS release 4.30 is newer than any this gate knows' "$GATE_LOG")" = 1 ] || die "the newer release was not logged once"

note "deleted: back to the default, saying why"
fa_ctl '{"fault":"delete_resource","resource":"clusteroperators.config.openshift.io","name":"machine-config"}' >/dev/null
wait_until 5 mcs_is 'm["from"] == "default" and m["release"] == "4.22" and "does not exist" in m.get("why", "")' ||
  die "after the delete: $(mcs_show)"
[ "$(metric 'skewgate_mcs_release_info{release="4.22",family="4.21+",from="default"}')" = 1 ] || die "mcs_release_info after the delete"
status_has 'MCS release: 4.22, Accept read as 4.21+ (from default): the ClusterOperator machine-config does not exist' ||
  die "status text after the delete: $("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR")"

note "the list and the watch carry fieldSelector=metadata.name%3Dmachine-config"
grep -E 'clusteroperators\?' "$FA_DIR/fakeapi.log" >"$TMP/co-requests" || die "no ClusterOperator request in the fake's log"
if grep -vqF 'fieldSelector=metadata.name%3Dmachine-config' "$TMP/co-requests"; then
  die "a ClusterOperator request without the field selector: $(grep -vF 'fieldSelector=metadata.name%3Dmachine-config' "$TMP/co-requests" | head -3)"
fi
grep -q 'watch=1' "$TMP/co-requests" || die "no ClusterOperator watch: $(head -5 "$TMP/co-requests")"

note "a reload to a pinned release stops the watch; back to auto, it follows again"
co 4.19.5
sed -i 's/mcs_release: auto/mcs_release: "4.13"/' "$TMP/gate.yaml"
kill -HUP "$GATE_PID"
wait_until 10 mcs_is 'm == {"release": "4.13", "family": "4.13-4.18", "from": "config"}' || die "pinned: $(mcs_show)"
sed -i 's/mcs_release: "4.13"/mcs_release: auto/' "$TMP/gate.yaml"
kill -HUP "$GATE_PID"
wait_until 10 mcs_is 'm == {"release": "4.19", "family": "4.19", "from": "cluster", "version": "4.19.5"}' ||
  die "auto again: $(mcs_show)"
gate_stop_checked
echo PASS
