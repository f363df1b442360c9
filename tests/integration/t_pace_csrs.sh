#!/usr/bin/env bash
# The CSR ceiling counts node CSRs as cluster-machine-approver does (issue
# 31 item 4): the gate watches Nodes and CSRs on the fake API server
# (kubernetes source, admitting; no admission.machines: Machines are not
# counted). Counted in /held's pace.pendingCsrs: Denied and Failed
# node-bootstrapper client CSRs, pending serving CSRs of group
# system:nodes, a pending client CSR (also young, in V), one approved by
# another controller 20 s ago. Not counted: a serving CSR without the
# group, a client CSR of another user, one the approver approved itself,
# one another approved 40 s ago, one created 2 h ago, one created 20 s
# ahead. approverLimit is Nodes + 100; at pace.max_pending_csrs 7 the
# ceiling holds and a node asking is paced. /metrics passes promtool. Then
# a gate with admission.machines counts its Machines in the limit
# (max(Machines, Nodes) + 100), and follows a Machine added.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
ADMIN_ADDR="127.0.0.1:$(free_port)"
pace_gate_config "$TMP/gate.yaml" "  enabled: true
  max_joining: 10
  join_timeout: 10m
  max_pending_csrs: 7"
gate_start "$TMP/gate.yaml"

held() { curl -sf --max-time 5 "http://$ADMIN_ADDR/held"; }
pace_is() { held | python3 -c 'import json, sys; p = json.load(sys.stdin)["pace"]; sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"; }
pace_show() { held | python3 -c 'import json, sys; p = json.load(sys.stdin)["pace"]; p.pop("line"); print(json.dumps(p))'; }
wait_until 20 reason_is Compliant || die "the verdict did not settle"
wait_until 20 pace_is 'p["counting"] == "api" and p["pendingCsrs"] == 0 and p["approverLimit"] == 100' ||
  die "the watch never listed: $(pace_show)"
pace_is 'p["machinesCounted"] is False and p["approverHeadroom"] == 100' || die "$(pace_show)"

ago() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
BOOT=system:serviceaccount:openshift-machine-config-operator:node-bootstrapper
CLIENT=kubernetes.io/kube-apiserver-client-kubelet
SERVING=kubernetes.io/kubelet-serving
# csr NAME CREATED SIGNER USER GROUPS CONDITIONS: one set_resource line.
csr() {
  printf '{"fault":"set_resource","resource":"certificatesigningrequests.certificates.k8s.io","object":{"metadata":{"name":"%s","creationTimestamp":"%s"},"spec":{"signerName":"%s","username":"%s","groups":%s},"status":{"conditions":%s}}}\n' "$@"
}
node_line() {  # NAME IP
  printf '{"fault":"set_resource","resource":"nodes","object":{"metadata":{"name":"%s"},"status":{"addresses":[{"type":"InternalIP","address":"%s"}],"conditions":[{"type":"Ready","status":"True"}]}}}\n' "$1" "$2"
}
t10=$(ago '-10 min')
approved() {  # MESSAGE WHEN
  printf '[{"type":"Approved","status":"True","reason":"Approved","message":"%s","lastTransitionTime":"%s"}]' "$1" "$(ago "$2")"
}
note "node CSRs of both kinds, Denied and Failed included, are counted; the others are not"
{
  for i in 1 2; do csr "denied-$i" "$t10" "$CLIENT" "$BOOT" '["system:serviceaccounts"]' '[{"type":"Denied","status":"True","reason":"Refused"}]'; done
  csr failed-1 "$t10" "$CLIENT" "$BOOT" '[]' '[{"type":"Failed","status":"True","reason":"SignerFailed"}]'
  for i in 1 2; do csr "serving-$i" "$t10" "$SERVING" "system:node:worker-$i" '["system:nodes","system:authenticated"]' '[]'; done
  csr serving-nogroup "$t10" "$SERVING" system:node:worker-9 '["system:authenticated"]' '[]'
  csr client-other "$t10" "$CLIENT" system:admin '["system:masters"]' '[]'
  csr by-approver "$t10" "$CLIENT" "$BOOT" '[]' "$(approved 'This CSR was approved by the Node CSR Approver (cluster-machine-approver)' '-2 sec')"
  csr by-other-old "$t10" "$CLIENT" "$BOOT" '[]' "$(approved 'approved by an operator' '-40 sec')"
  csr old "$(ago '-2 hours')" "$CLIENT" "$BOOT" '[]' '[]'
  csr ahead "$(ago '+20 sec')" "$SERVING" system:node:worker-8 '["system:nodes"]' '[]'
  node_line node-a 127.3.0.1
  node_line node-b 127.3.0.2
} | fa_ctl_many
wait_until 10 pace_is 'p["pendingCsrs"] == 5 and p["approverLimit"] == 102 and p["approverHeadroom"] == 97' ||
  die "want 5 counted (2 Denied, 1 Failed, 2 serving), limit 102: $(pace_show)"
pace_is 'p["youngPendingCsrs"] == 0 and not p["csrCeiling"]' || die "Denied, Failed or serving CSRs taken for joining nodes: $(pace_show)"

note "a pending client CSR (counted, and young: a joining node) and one approved by another 20 s ago reach the ceiling"
{
  csr pending-1 "$(ago '-1 min')" "$CLIENT" "$BOOT" '[]' '[]'
  csr by-other "$t10" "$SERVING" system:node:worker-3 '["system:nodes"]' "$(approved 'approved by an operator' '-20 sec')"
} | fa_ctl_many
# The approval counts 30 s: within the next 10 s whatever the load.
wait_until 8 pace_is 'p["pendingCsrs"] == 7 and p["youngPendingCsrs"] == 1 and p["csrCeiling"]' ||
  die "want 7 counted, 1 young, at the ceiling: $(pace_show)"
got=$(python3 "$ROOT/tests/integration/pace_ask.py" "$PLAIN_PORT" 9 9 --net 127.3.0)
[ "$got" = "9 503 Paced" ] || die "a node asked at the ceiling and got: $got"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
grep -qx 'skewgate_pace_approver_limit 102' <<<"$metrics" || die "skewgate_pace_approver_limit: $(grep pace_ <<<"$metrics")"
# 7, or 6 once the approval of 20 s ago has lapsed.
grep -Eqx 'skewgate_pace_approver_pending_csrs [67]' <<<"$metrics" || die "skewgate_pace_approver_pending_csrs: $(grep pace_ <<<"$metrics")"
promtool check metrics <<<"$metrics" || die "promtool refuses /metrics"
gate_stop_checked

note "with admission.machines the limit counts its Machines: max(5 Machines, 2 Nodes) + 100, then a 6th"
NS=openshift-machine-api
machine_line() {  # NAME IP
  printf '{"fault":"set_resource","resource":"machines.machine.openshift.io","object":{"metadata":{"name":"%s","namespace":"%s"},"status":{"addresses":[{"type":"InternalIP","address":"%s"}]}}}\n' "$1" "$NS" "$2"
}
for i in 1 2 3 4 5; do machine_line "m-$i" "127.3.1.$i"; done | fa_ctl_many
GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate-machines.yaml" hold unused "pace:
  enabled: true
  max_joining: 10
  join_timeout: 10m
  max_pending_csrs: 7
admission:
  machines:
    enabled: true
    namespace: $NS"
gate_start "$TMP/gate-machines.yaml"
wait_until 20 pace_is 'p["counting"] == "api" and p["machinesCounted"] and p["approverLimit"] == 105' ||
  die "the Machines are not counted: $(pace_show)"
machine_line m-6 127.3.1.6 | fa_ctl_many
wait_until 10 pace_is 'p["approverLimit"] == 106' || die "a Machine added is not counted: $(pace_show)"
gate_stop_checked
echo PASS
