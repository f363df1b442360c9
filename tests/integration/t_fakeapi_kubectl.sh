#!/usr/bin/env bash
# The fake API server's fidelity, checked with the real kubectl: discovery,
# get, get --watch, merge and JSON patch (main resource and /status),
# validation, auth (wrong token, rotated token), delete, create.
set -euo pipefail
. "$(dirname "$0")/lib_fakeapi.sh"

need_kubectl
fa_init

# A seed object in the fixtures' shape: a comment line, YAML, an unquoted
# timestamp, no status.bootImageSkewEnforcementStatus yet.
cat >"$FA_DIR/seed.yaml" <<'EOF'
# expected: admit, reason StatusUnset
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
  resourceVersion: "4200"
  labels:
    team: mco
spec:
  logLevel: Normal
  operatorLogLevel: Normal
status:
  observedGeneration: 3
  conditions:
  - type: BootImageUpdateProgressing
    status: "False"
    reason: Idle
    message: ""
    lastTransitionTime: 2026-11-01T10:00:00Z
EOF
fa_start --object "$FA_DIR/seed.yaml" --bookmark-interval 0.5

step() { fa_log "== $*"; }
expect_fail() {  # expect_fail PATTERN CMD...: CMD must fail and print PATTERN
  local pat=$1 out
  shift
  if out=$("$@" 2>&1); then fa_fail "expected failure from: $* (got: $out)"; fi
  grep -qE -- "$pat" <<<"$out" || fa_fail "expected /$pat/ from: $*; got: $out"
  fa_log "   failed as expected: $(head -1 <<<"$out")"
}
get_json() { fa_kubectl get machineconfiguration cluster -o json; }

step "kubectl version talks to the fake"
ver=$(fa_kubectl version 2>&1) || fa_fail "kubectl version failed: $ver"
grep -q '^Server Version: v1\.' <<<"$ver" || fa_fail "no server version in: $ver"
fa_log "   $(tr '\n' ' ' <<<"$ver")"

step "kubectl get -o json returns the seeded object"
obj=$(fa_kubectl get machineconfigurations.operator.openshift.io cluster -o json) \
  || fa_fail "kubectl get failed"
"$FA_PY" -c '
import json, sys, yaml
seed = yaml.safe_load(open(sys.argv[1]))
got = json.loads(sys.argv[2])
assert got["apiVersion"] == "operator.openshift.io/v1" and got["kind"] == "MachineConfiguration", got
assert got["metadata"]["name"] == "cluster"
assert got["metadata"]["resourceVersion"] == "4200", got["metadata"]
assert got["metadata"]["labels"] == {"team": "mco"}
assert got["metadata"].get("uid") and got["metadata"].get("creationTimestamp")
assert got["metadata"]["generation"] == 1
assert got["spec"] == seed["spec"], (got["spec"], seed["spec"])
assert got["status"]["observedGeneration"] == 3
assert got["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-01T10:00:00Z"
' "$FA_DIR/seed.yaml" "$obj" || fa_fail "get -o json differs from the seed: $obj"

step "short and plural names, table output, selectors, api-resources"
fa_kubectl get machineconfiguration -o name | has -x 'machineconfiguration.operator.openshift.io/cluster' \
  || fa_fail "get -o name"
tbl=$(fa_kubectl get machineconfigurations) || fa_fail "get (table) failed"
grep -qE '^NAME +AGE$' <<<"$tbl" && grep -qE '^cluster +[0-9]' <<<"$tbl" || fa_fail "table output: $tbl"
[ "$(fa_kubectl get machineconfiguration -l team=mco -o name)" = machineconfiguration.operator.openshift.io/cluster ] \
  || fa_fail "label selector team=mco did not match"
[ -z "$(fa_kubectl get machineconfiguration -l team=other -o name 2>/dev/null)" ] \
  || fa_fail "label selector team=other matched"
fa_kubectl get machineconfiguration --field-selector metadata.name=cluster -o name | has cluster \
  || fa_fail "field selector"
fa_kubectl api-resources --api-group=operator.openshift.io | has -E '^machineconfigurations +operator.openshift.io/v1 +false +MachineConfiguration' \
  || fa_fail "api-resources: $(fa_kubectl api-resources 2>&1)"

step "kubectl get --watch sees the MODIFIED object after a status patch"
fa_spawn "$FA_DIR/watch.out" "$FA_DIR/watch.err" \
  env KUBECONFIG="$FA_DIR/kubeconfig" KUBECACHEDIR="$FA_DIR/kube-cache" \
  kubectl get machineconfiguration cluster --watch -o json
watch_pid=$FA_LAST_PID
# the watch is open once the fake counts a watcher (a condition, not a sleep)
watching() { [ "$(fa_stats | fa_json 'd["currentWatchers"]')" -ge 1 ]; }
fa_wait 10 "kubectl's watch to be open" watching
out=$(fa_kubectl patch machineconfiguration cluster --type merge \
  -p '{"status":{"bootImageSkewEnforcementStatus":{"mode":"None"}}}' --subresource=status) \
  || fa_fail "status merge patch failed: $out"
grep -q 'patched' <<<"$out" || fa_fail "unexpected patch output: $out"
saw_none() {
  fa_json_stream_has "$FA_DIR/watch.out" \
    'd["status"]["bootImageSkewEnforcementStatus"]["mode"] == "None" and int(d["metadata"]["resourceVersion"]) > 4200'
}
fa_wait 10 "the MODIFIED object in kubectl --watch output" saw_none
kill "$watch_pid" 2>/dev/null || true
fa_log "   watch output has $(grep -c '"resourceVersion"' "$FA_DIR/watch.out") objects"

step "the status patch did not bump generation; the main resource ignores status"
[ "$(get_json | fa_json 'd["metadata"]["generation"]')" = 1 ] || fa_fail "generation changed on a status write"
out=$(fa_kubectl patch machineconfiguration cluster --type merge \
  -p '{"status":{"bootImageSkewEnforcementStatus":{"mode":"Manual"}}}') || fa_fail "main patch failed: $out"
grep -q 'no change' <<<"$out" || fa_fail "status write via the main resource was not ignored: $out"
[ "$(get_json | fa_json 'd["status"]["bootImageSkewEnforcementStatus"]["mode"]')" = None ] \
  || fa_fail "status changed through the main resource"

step "kubectl patch --type json (spec: generation bumps; status subresource)"
rv_before=$(get_json | fa_json 'd["metadata"]["resourceVersion"]')
fa_kubectl patch machineconfiguration cluster --type json \
  -p '[{"op":"add","path":"/spec/bootImageSkewEnforcement","value":{"mode":"Manual","manual":{"mode":"OCPVersion","ocpVersion":"4.16.3"}}}]' \
  >/dev/null || fa_fail "json patch on spec failed"
fa_kubectl patch machineconfiguration cluster --type json --subresource=status \
  -p '[{"op":"replace","path":"/status/bootImageSkewEnforcementStatus","value":{"mode":"Manual","manual":{"mode":"OCPVersion","ocpVersion":"4.16.3"}}},{"op":"test","path":"/metadata/name","value":"cluster"}]' \
  >/dev/null || fa_fail "json patch on status failed"
got=$(get_json)
[ "$(fa_json 'd["metadata"]["generation"]' <<<"$got")" = 2 ] || fa_fail "generation did not bump on a spec change: $got"
[ "$(fa_json 'd["spec"]["bootImageSkewEnforcement"]["manual"]["ocpVersion"]' <<<"$got")" = 4.16.3 ] || fa_fail "spec not patched"
[ "$(fa_json 'd["status"]["bootImageSkewEnforcementStatus"]["mode"]' <<<"$got")" = Manual ] || fa_fail "status not patched"
rv_after=$(fa_json 'd["metadata"]["resourceVersion"]' <<<"$got")
[ "$rv_after" -gt "$rv_before" ] || fa_fail "resourceVersion did not increase ($rv_before -> $rv_after)"
expect_fail 'test failed|rejected our request' fa_kubectl patch machineconfiguration cluster --type json \
  -p '[{"op":"test","path":"/spec/logLevel","value":"Debug"}]'

step "the CRD's validation and patch types"
expect_fail 'is invalid: .*ocpVersion must match' fa_kubectl patch machineconfiguration cluster --type merge \
  -p '{"spec":{"bootImageSkewEnforcement":{"manual":{"ocpVersion":"4.16.x"}}}}'
expect_fail 'is invalid: .*automatic is required when mode is Automatic' fa_kubectl patch machineconfiguration cluster \
  --type merge --subresource=status -p '{"status":{"bootImageSkewEnforcementStatus":{"mode":"Automatic","manual":null}}}'
expect_fail 'Unsupported value: "Automatic"' fa_kubectl patch machineconfiguration cluster --type merge \
  -p '{"spec":{"bootImageSkewEnforcement":{"mode":"Automatic","manual":null}}}'
expect_fail 'strategic-merge-patch\+json is not supported|unknown format' fa_kubectl patch machineconfiguration cluster \
  -p '{"spec":{"logLevel":"Debug"}}'

step "a wrong token gives kubectl's Unauthorized error; the token file is re-read"
fa_kubeconfig "$FA_DIR/kubeconfig.bad" "not-the-token"
kubectl_bad() { FA_KUBECONFIG="$FA_DIR/kubeconfig.bad" fa_kubectl "$@"; }
expect_fail 'error: You must be logged in to the server \(Unauthorized\)' kubectl_bad get machineconfiguration cluster
[ "$(fa_stats | fa_json 'd["lastTokenValid"]')" = false ] || fa_fail "stats did not record the bad token"
grep -q 'not-the-token' "$FA_DIR/fakeapi.log" && fa_fail "the fake logged a token"
grep -qF "$FA_TOKEN" "$FA_DIR/fakeapi.log" && fa_fail "the fake logged the token"
printf 'not-the-token\n' >"$FA_DIR/token"      # rotate: the bad one is now good
kubectl_bad get machineconfiguration cluster -o name >/dev/null || fa_fail "rotated token not accepted"
expect_fail 'Unauthorized' fa_kubectl get machineconfiguration cluster
printf '%s\n' "$FA_TOKEN" >"$FA_DIR/token"
fa_kubectl get machineconfiguration cluster -o name >/dev/null || fa_fail "original token not accepted again"

step "kubectl delete, then get gives NotFound"
out=$(fa_kubectl delete machineconfiguration cluster) || fa_fail "delete failed: $out"
grep -q 'deleted' <<<"$out" || fa_fail "unexpected delete output: $out"
expect_fail 'NotFound.*machineconfigurations.operator.openshift.io "cluster" not found' \
  fa_kubectl get machineconfiguration cluster

step "kubectl create -f brings it back (status is dropped on create, as with a real CRD)"
cat >"$FA_DIR/new.yaml" <<'EOF'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  bootImageSkewEnforcement:
    mode: None
status:
  bootImageSkewEnforcementStatus:
    mode: None
EOF
fa_kubectl create -f "$FA_DIR/new.yaml" >/dev/null || fa_fail "create failed"
got=$(get_json)
[ "$(fa_json 'd["spec"]["bootImageSkewEnforcement"]["mode"]' <<<"$got")" = None ] || fa_fail "created object: $got"
[ "$(fa_json '"status" in d' <<<"$got")" = false ] || fa_fail "create kept status: $got"
expect_fail 'AlreadyExists|already exists' fa_kubectl create -f "$FA_DIR/new.yaml"

step "the shared fixtures load through the control endpoint"
if [ -n "$FA_FIXTURES" ]; then
  n=0
  for f in "$FA_FIXTURES"/*.yaml "$FA_FIXTURES"/*.json; do
    [ -e "$f" ] || continue
    fa_ctl "{\"fault\":\"set_object\",\"file\":\"$f\"}" >/dev/null || fa_fail "set_object $f"
    mode=$(get_json | fa_json 'd.get("status", {}).get("bootImageSkewEnforcementStatus", {}).get("mode", "unset")')
    fa_log "   $(basename "$f"): status mode $mode"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || fa_fail "no fixtures in $FA_FIXTURES"
else
  fa_log "   (no shared fixtures found; skipped)"
fi

# Google's kubectl package is a dispatcher: it asks /version and runs the
# kubectl.1.N beside it that matches the server's minor version.  Run the
# core checks against every kubectl it ships by changing the reported version.
smoke() {
  local minor=$1 ver out
  fa_stop
  fa_start --object "$FA_DIR/seed.yaml" --server-version "v1.$minor.0"
  ver=$(fa_kubectl version -o json 2>/dev/null | fa_json 'd["clientVersion"]["gitVersion"]') \
    || fa_fail "kubectl version -o json failed against a v1.$minor server"
  case $ver in
    v1.$minor.*) ;;
    *) fa_fail "the dispatcher ran kubectl $ver against a v1.$minor server" ;;
  esac
  fa_log "   kubectl $ver"
  fa_kubectl get machineconfiguration cluster -o json | fa_json 'd["spec"]["logLevel"]' | has -x Normal \
    || fa_fail "kubectl $ver: get -o json"
  : >"$FA_DIR/watch.out"
  fa_spawn "$FA_DIR/watch.out" "$FA_DIR/watch.err" \
    env KUBECONFIG="$FA_DIR/kubeconfig" KUBECACHEDIR="$FA_DIR/kube-cache" \
    kubectl get machineconfiguration cluster --watch -o json
  fa_wait 10 "kubectl $ver's watch to be open" watching
  fa_kubectl patch machineconfiguration cluster --type merge \
    -p '{"status":{"bootImageSkewEnforcementStatus":{"mode":"None"}}}' --subresource=status >/dev/null \
    || fa_fail "kubectl $ver: status merge patch"
  fa_wait 10 "kubectl $ver: the MODIFIED object in --watch output" saw_none
  fa_stop "$FA_LAST_PID"
  fa_kubectl patch machineconfiguration cluster --type json \
    -p '[{"op":"replace","path":"/spec/logLevel","value":"Debug"}]' >/dev/null || fa_fail "kubectl $ver: json patch"
  [ "$(get_json | fa_json 'd["metadata"]["generation"]')" = 2 ] || fa_fail "kubectl $ver: generation"
  fa_kubeconfig "$FA_DIR/kubeconfig.bad" "not-the-token"
  expect_fail 'Unauthorized' kubectl_bad get machineconfiguration cluster
  fa_kubectl delete machineconfiguration cluster >/dev/null || fa_fail "kubectl $ver: delete"
  expect_fail 'NotFound' fa_kubectl get machineconfiguration cluster
  # kubectl <= 1.28 learns whether the server validates fields from the
  # protobuf OpenAPI v2 document, which the fake does not serve (it serves v3).
  local validate=()
  [ "$minor" -ge 29 ] || validate=(--validate=false)
  fa_kubectl create "${validate[@]}" -f "$FA_DIR/new.yaml" >/dev/null || fa_fail "kubectl $ver: create"
}
kdir=$(dirname "$(readlink -f "$(command -v kubectl)")")
minors=$(find "$kdir" -maxdepth 1 -name 'kubectl.1.*' -printf '%f\n' 2>/dev/null | sed 's/^kubectl\.1\.//' | sort -n | tr '\n' ' ')
if [ -n "$minors" ]; then
  for m in $minors; do
    step "core checks with the kubectl the dispatcher picks for a v1.$m server"
    smoke "$m"
  done
else
  fa_log "kubectl is not Google's dispatcher; only $(kubectl version --client 2>/dev/null | head -1) tested"
fi

echo "t_fakeapi_kubectl: all checks passed"
