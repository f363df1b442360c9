#!/usr/bin/env bash
# The fake API server's coordination.k8s.io/v1 Leases (what the gates share
# the pacing line through), checked with the real kubectl: discovery, create
# twice (AlreadyExists as kubectl prints it), get by label selector, get -w
# seeing an update, replace with a stale resourceVersion (Conflict), a bad
# MicroTime (400), delete.
set -euo pipefail
. "$(dirname "$0")/lib_fakeapi.sh"

need_kubectl
fa_init
fa_start --bookmark-interval 0.5

step() { fa_log "== $*"; }
expect_fail() {  # expect_fail PATTERN CMD...: CMD must fail and print PATTERN
  local pat=$1 out
  shift
  if out=$("$@" 2>&1); then fa_fail "expected failure from: $* (got: $out)"; fi
  grep -qE -- "$pat" <<<"$out" || fa_fail "expected /$pat/ from: $*; got: $out"
  fa_log "   failed as expected: $(head -1 <<<"$out")"
}
NS=openshift-skewgate
lease_yaml() {  # lease_yaml NAME HOLDER [LINE]
  cat <<YAML
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: $1
  namespace: $NS
  labels:
    skewgate.openshift.io/line: "${3:-joining}"
spec:
  holderIdentity: $2
  leaseDurationSeconds: 30
  acquireTime: "2026-12-04T19:20:30.123456Z"
  renewTime: "2026-12-04T19:20:30.123456Z"
YAML
}

step "discovery: leases, namespaced, no short names"
res=$(fa_kubectl api-resources --api-group=coordination.k8s.io 2>&1) || fa_fail "api-resources failed: $res"
grep -qE '^leases +coordination.k8s.io/v1 +true +Lease' <<<"$res" || fa_fail "leases not discovered: $res"

step "create, then create again: AlreadyExists"
lease_yaml node-1 gate-a >"$FA_DIR/lease.yaml"
out=$(fa_kubectl create -f "$FA_DIR/lease.yaml" 2>&1) || fa_fail "create failed: $out"
grep -q '^lease.coordination.k8s.io/node-1 created$' <<<"$out" || fa_fail "create said: $out"
expect_fail '^Error from server \(AlreadyExists\): error when creating ".*lease.yaml": leases.coordination.k8s.io "node-1" already exists$' \
  fa_kubectl create -f "$FA_DIR/lease.yaml"
lease_yaml node-2 gate-b | fa_kubectl create -f - >/dev/null || fa_fail "create node-2"
lease_yaml node-3 gate-a waiting | fa_kubectl create -f - >/dev/null || fa_fail "create node-3"

step "get -l: equality and existence selectors, -o json"
names=$(fa_kubectl get leases -n $NS -l skewgate.openshift.io/line=joining -o json |
  fa_json '" ".join(i["metadata"]["name"] for i in d["items"])')
[ "$names" = "node-1 node-2" ] || fa_fail "label-selected leases: $names"
n=$(fa_kubectl get leases -n $NS -l skewgate.openshift.io/line -o name | wc -l)
[ "$n" = 3 ] || fa_fail "existence selector: $n"
tbl=$(fa_kubectl get leases -n $NS) || fa_fail "table get failed"
grep -qE '^NAME +HOLDER +AGE' <<<"$tbl" && grep -qE '^node-2 +gate-b +[0-9]' <<<"$tbl" || fa_fail "table: $tbl"
[ "$(fa_kubectl get leases -A -o name | wc -l)" = 3 ] || fa_fail "all namespaces"

step "get -w sees an update"
fa_spawn "$FA_DIR/watch.out" "$FA_DIR/watch.err" env KUBECONFIG="$FA_DIR/kubeconfig" \
  KUBECACHEDIR="$FA_DIR/kube-cache" kubectl get lease node-1 -n $NS --watch --output-watch-events \
  -o 'custom-columns=EVENT:.type,NAME:.object.metadata.name,HOLDER:.object.spec.holderIdentity'
watch_pid=$FA_LAST_PID
seen() { grep -qE "$1" "$FA_DIR/watch.out"; }
fa_wait 15 "the watch lists node-1" seen '^ADDED +node-1 +gate-a'
stale=$(fa_kubectl get lease node-1 -n $NS -o json)
fa_kubectl patch lease node-1 -n $NS --type=merge -p '{"spec":{"holderIdentity":"gate-c"}}' >/dev/null \
  || fa_fail "patch failed"
fa_wait 10 "the watch sees the new holder" seen '^MODIFIED +node-1 +gate-c'
fa_kubectl patch lease node-2 -n $NS -p '{"spec":{"holderIdentity":"gate-a"}}' >/dev/null \
  || fa_fail "a strategic merge patch (kubectl's default) failed"
if seen node-2; then fa_fail "the watch of node-1 saw node-2: $(cat "$FA_DIR/watch.out")"; fi
fa_stop "$watch_pid"

step "replace with a stale resourceVersion: Conflict"
sed 's/"gate-a"/"gate-d"/' <<<"$stale" >"$FA_DIR/stale.json"
expect_fail '^Error from server \(Conflict\): error when replacing ".*stale.json": Operation cannot be fulfilled on leases.coordination.k8s.io "node-1": the object has been modified; please apply your changes to the latest version and try again$' \
  fa_kubectl replace -f "$FA_DIR/stale.json"
fa_kubectl get lease node-1 -n $NS -o json >"$FA_DIR/fresh.json"
sed -i 's/"gate-c"/"gate-d"/' "$FA_DIR/fresh.json"
fa_kubectl replace -f "$FA_DIR/fresh.json" >/dev/null || fa_fail "replace with the current resourceVersion"
[ "$(fa_kubectl get lease node-1 -n $NS -o jsonpath='{.spec.holderIdentity}')" = gate-d ] || fa_fail "replace"

step "a MicroTime without 6 fractional digits is a 400"
lease_yaml bad gate-a | sed 's/30.123456Z/30Z/' >"$FA_DIR/bad.yaml"
expect_fail 'BadRequest.*cannot be handled as a Lease: parsing time "2026-12-04T19:20:30Z"' \
  fa_kubectl create -f "$FA_DIR/bad.yaml"

step "delete, then delete again: NotFound"
out=$(fa_kubectl delete lease node-1 -n $NS 2>&1) || fa_fail "delete failed: $out"
grep -q 'lease.coordination.k8s.io "node-1" deleted' <<<"$out" || fa_fail "delete said: $out"
expect_fail 'NotFound.*leases.coordination.k8s.io "node-1" not found' fa_kubectl delete lease node-1 -n $NS
fa_stats | fa_json 'd["requestsByResource"]["leases.coordination.k8s.io"]' >"$FA_DIR/verbs.json"
fa_log "   lease requests by verb: $(cat "$FA_DIR/verbs.json")"
fa_log "PASS"
