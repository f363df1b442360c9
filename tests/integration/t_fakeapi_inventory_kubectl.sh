#!/usr/bin/env bash
# The fake API server's Nodes and Machines (tests/fakeapi/inventory.py),
# checked with the real kubectl: discovery of both Machine groups and the
# core group, paged lists (--chunk-size: limit and continue, one request
# per page), get by name, get --watch seeing a Machine appear and change,
# ClusterOperators listed and watched by --field-selector metadata.name,
# and a continue token the server no longer holds (410 Expired).
set -euo pipefail
. "$(dirname "$0")/lib_fakeapi.sh"

need_kubectl
fa_init
fa_start --bookmark-interval 0.5

step() { fa_log "== $*"; }
NS=openshift-machine-api
machine() {  # machine GROUP NAME IP [NODE]: a Machine with an InternalIP, and a nodeRef if NODE
  local ref=""
  [ -n "${4:-}" ] && ref=",\"nodeRef\":{\"kind\":\"Node\",\"name\":\"$4\"}"
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.$1\",\"object\":{\"metadata\":{\"name\":\"$2\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$3\"}]$ref}}}" >/dev/null
}

step "discovery: nodes, machines.machine.openshift.io, machines.cluster.x-k8s.io"
res=$(fa_kubectl api-resources 2>&1) || fa_fail "api-resources failed: $res"
grep -qE '^nodes +no +v1 +false +Node' <<<"$res" || fa_fail "nodes not discovered: $res"
grep -qE '^machines +ma +machine.openshift.io/v1beta1 +true +Machine' <<<"$res" || fa_fail "OpenShift machines: $res"
grep -qE '^machines +ma +cluster.x-k8s.io/v1beta1 +true +Machine' <<<"$res" || fa_fail "CAPI machines: $res"

step "a paged list of 5 Machines with --chunk-size=2 takes 3 requests"
for i in 1 2 3 4 5; do machine machine.openshift.io "worker-$i" "10.0.0.$i"; done
machine cluster.x-k8s.io capi-1 10.1.0.1
fa_ctl '{"fault":"reset_stats"}' >/dev/null
names=$(fa_kubectl get machines.machine.openshift.io -n $NS --chunk-size=2 -o name) || fa_fail "chunked get failed"
[ "$(wc -l <<<"$names")" = 5 ] || fa_fail "expected 5 machines, got: $names"
[ "$(head -1 <<<"$names")" = machine.machine.openshift.io/worker-1 ] || fa_fail "order: $names"
lists=$(fa_stats | "$FA_PY" -c 'import json,sys; print(json.load(sys.stdin)["requestsByKind"].get("list", 0))')
[ "$lists" = 3 ] || fa_fail "expected 3 list requests (pages of 2), got $lists"
grep -qE 'machines\?continue=[^ ]*limit=2' "$FA_DIR/fakeapi.log" || fa_fail "no continue request in the log"
tbl=$(fa_kubectl get machines.machine.openshift.io -n $NS --chunk-size=2) || fa_fail "table get failed"
[ "$(grep -cE '^worker-[1-5] +[0-9]' <<<"$tbl")" = 5 ] || fa_fail "table of pages: $tbl"
[ "$(fa_kubectl get machines.cluster.x-k8s.io -n $NS -o name)" = machine.cluster.x-k8s.io/capi-1 ] \
  || fa_fail "the CAPI group lists its own machines only"

step "get by name: the addresses as written"
ip=$(fa_kubectl get machines.machine.openshift.io -n $NS worker-3 -o jsonpath='{.status.addresses[0].address}')
[ "$ip" = 10.0.0.3 ] || fa_fail "worker-3 address: $ip"
if fa_kubectl get machines.machine.openshift.io -n $NS nope >/dev/null 2>"$FA_DIR/nf.err"; then
  fa_fail "a missing machine was found"
fi
grep -q 'NotFound\|not found' "$FA_DIR/nf.err" || fa_fail "missing machine: $(cat "$FA_DIR/nf.err")"

step "nodes: a generated fleet of 1200, paged by 500"
fa_ctl '{"fault":"generate_nodes","count":1200,"prefix":"node","base":"10.128"}' >/dev/null
n=$(fa_kubectl get nodes --chunk-size=500 -o name | wc -l)
[ "$n" = 1200 ] || fa_fail "expected 1200 nodes, got $n"

step "get --watch sees a Machine appear and get its nodeRef"
fa_spawn "$FA_DIR/watch.out" "$FA_DIR/watch.err" env KUBECONFIG="$FA_DIR/kubeconfig" \
  KUBECACHEDIR="$FA_DIR/kube-cache" kubectl get machines.machine.openshift.io -n $NS --watch \
  --output-watch-events -o 'custom-columns=EVENT:.type,NAME:.object.metadata.name,NODE:.object.status.nodeRef.name'
watch_pid=$FA_LAST_PID
seen() { grep -qE "$1" "$FA_DIR/watch.out"; }
fa_wait 15 "the watch lists worker-5" seen '^ADDED +worker-5 '
machine machine.openshift.io new-1 10.0.0.9
fa_wait 10 "the watch sees new-1 added" seen '^ADDED +new-1 +<none>'
machine machine.openshift.io new-1 10.0.0.9 node-new-1
fa_wait 10 "the watch sees new-1 get its node" seen '^MODIFIED +new-1 +node-new-1'
fa_stop "$watch_pid"

step "clusteroperators: discovered, listed and watched by metadata.name"
res=$(fa_kubectl api-resources --api-group=config.openshift.io 2>&1) || fa_fail "api-resources failed: $res"
grep -qE '^clusteroperators +co +config.openshift.io/v1 +false +ClusterOperator' <<<"$res" || fa_fail "clusteroperators: $res"
co() {  # co NAME VERSION
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"clusteroperators.config.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$1\"},\"status\":{\"versions\":[{\"name\":\"operator\",\"version\":\"$2\"}]}}}" >/dev/null
}
co machine-config 4.19.5
co dns 4.19.5
v=$(fa_kubectl get co --field-selector metadata.name=machine-config -o jsonpath='{.items[*].status.versions[0].version}')
[ "$v" = 4.19.5 ] || fa_fail "field-selected clusteroperators: $v"
fa_spawn "$FA_DIR/cowatch.out" "$FA_DIR/cowatch.err" env KUBECONFIG="$FA_DIR/kubeconfig" \
  KUBECACHEDIR="$FA_DIR/kube-cache" kubectl get co --field-selector metadata.name=machine-config --watch \
  --output-watch-events -o 'custom-columns=EVENT:.type,NAME:.object.metadata.name,V:.object.status.versions[0].version'
watch_pid=$FA_LAST_PID
coseen() { grep -qE "$1" "$FA_DIR/cowatch.out"; }
fa_wait 15 "the watch lists machine-config" coseen '^ADDED +machine-config +4.19.5'
co dns 4.22.1
co machine-config 4.22.1
fa_wait 10 "the watch sees machine-config move" coseen '^MODIFIED +machine-config +4.22.1'
if grep -q dns "$FA_DIR/cowatch.out"; then fa_fail "the field-selected watch saw dns: $(cat "$FA_DIR/cowatch.out")"; fi
fa_stop "$watch_pid"

step "an expired continue token is 410 Expired"
cont=$(fa_curl "$FA_URL/apis/machine.openshift.io/v1beta1/namespaces/$NS/machines?limit=2" |
  "$FA_PY" -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["continue"])')
machine machine.openshift.io worker-1 10.0.0.1   # history moves past the token, then is compacted
fa_ctl '{"fault":"expire"}' >/dev/null
code=$(fa_curl -o "$FA_DIR/gone.json" -w '%{http_code}' \
  "$FA_URL/apis/machine.openshift.io/v1beta1/namespaces/$NS/machines?limit=2&continue=$cont")
[ "$code" = 410 ] && grep -q '"reason": *"Expired"' "$FA_DIR/gone.json" || fa_fail "expired continue: $code $(cat "$FA_DIR/gone.json")"
fa_log "PASS"
