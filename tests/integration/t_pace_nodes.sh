#!/usr/bin/env bash
# Pacing that follows the API (issue 26): the gate watches Nodes and node
# CSRs on the fake API server (kubernetes source, admitting). 50 nodes
# (127.2.0.1..50) ask at once with pace.max_joining 10 and a long
# join_timeout (10m, so that nothing here frees by time): exactly 1..10 are
# admitted. Their Nodes appear not Ready (the API counts them now), then 3
# turn Ready: exactly the next 3 of the line (11, 12, 13) are admitted,
# though the line asks last first. 90 pending kubelet CSRs of 40 minutes
# ago (pace.max_pending_csrs 90) hold everyone though 3 more Nodes turn
# Ready; approving them admits the next 3 (14, 15, 16). The API server
# stops: /held says counting join_timeout and why, and nobody is admitted
# past the budget (10 of ours joining). /held, status, metrics (promtool).
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
ADMIN_ADDR="127.0.0.1:$(free_port)"
pace_gate_config "$TMP/gate.yaml" "  enabled: true
  max_joining: 10
  join_timeout: 10m
  head_hold: 10m
  max_pending_csrs: 90
log:
  level: debug"
note "check prints the RBAC pacing needs"
out=$("$SKEWGATE_BIN" check --files -c "$TMP/gate.yaml") || die "check refused the config: $out"
grep -qxF '  ClusterRole: apiGroups [certificates.k8s.io] resources [certificatesigningrequests] verbs [get list watch] (pace)' <<<"$out" \
  || die "no CSR rule in: $out"
grep -qxF '  ClusterRole: apiGroups [""] resources [nodes] verbs [get list watch] (pace)' <<<"$out" || die "no nodes rule in: $out"
gate_start "$TMP/gate.yaml"

held() { curl -sf --max-time 5 "http://$ADMIN_ADDR/held"; }
# pace_is EXPR: the Python expression on /held's pace object (p) holds.
pace_is() { held | python3 -c 'import json, sys; p = json.load(sys.stdin)["pace"]; sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"; }
pace_show() { held | python3 -c 'import json, sys; p = json.load(sys.stdin)["pace"]; p.pop("line"); print(json.dumps(p))'; }
wait_until 20 reason_is Compliant || die "the verdict did not settle"
wait_until 20 pace_is 'p["counting"] == "api"' || die "the watch never listed: $(pace_show)"
# ask FIRST LAST [--reverse]: each node asks once; prints the admitted ones, in order asked.
ask() { python3 "$ROOT/tests/integration/pace_ask.py" "$PLAIN_PORT" "$@" | awk '$2 == 200 {print $1}' | tr '\n' ' ' | sed 's/ $//'; }
node_line() {  # NAME IP READY(True|False)
  printf '{"fault":"set_resource","resource":"nodes","object":{"metadata":{"name":"%s"},"status":{"addresses":[{"type":"InternalIP","address":"%s"}],"conditions":[{"type":"Ready","status":"%s"}]}}}\n' "$1" "$2" "$3"
}

note "50 nodes ask at once: exactly the first 10 are admitted"
got=$(ask 1 50)
[ "$got" = "1 2 3 4 5 6 7 8 9 10" ] || die "admitted at once: '$got'"
[ -z "$(ask 11 50 --reverse)" ] || die "a node of the line got in with no slot free"

note "their Nodes appear, not Ready: counted by the API now, nobody else admitted"
for i in $(seq 1 10); do node_line "node-$i" "127.2.0.$i" False; done | fa_ctl_many
wait_until 10 pace_is 'p["youngNotReadyNodes"] == 10 and p["unseenAdmissions"] == 0 and p["budgetUsed"] == 10' \
  || die "the Nodes are not counted: $(pace_show)"
[ -z "$(ask 11 50 --reverse)" ] || die "admitted past the budget"

note "3 of them turn Ready: exactly the next 3 of the line are admitted, whatever order they ask in"
for i in 1 2 3; do node_line "node-$i" "127.2.0.$i" True; done | fa_ctl_many
wait_until 10 pace_is 'p["joining"] == 7 and p["joinedTotal"] == 3' || die "Ready did not free the slots: $(pace_show)"
got=$(ask 11 50 --reverse)
[ "$got" = "13 12 11" ] || die "after 3 Ready, admitted: '$got' (want 13 12 11: the head of the line)"

note "90 pending kubelet CSRs (40 minutes old) hold everyone, though slots are free"
created=$(date -u -d '-40 min' +%Y-%m-%dT%H:%M:%SZ)
for i in $(seq 1 90); do
  printf '{"fault":"set_resource","resource":"certificatesigningrequests.certificates.k8s.io","object":{"metadata":{"name":"csr-%d","creationTimestamp":"%s"},"spec":{"signerName":"kubernetes.io/kube-apiserver-client-kubelet","username":"system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"},"status":{}}}\n' "$i" "$created"
done | fa_ctl_many
# Another signer's CSR does not count.
printf '{"fault":"set_resource","resource":"certificatesigningrequests.certificates.k8s.io","object":{"metadata":{"name":"serving-1"},"spec":{"signerName":"kubernetes.io/kubelet-serving"}}}\n' | fa_ctl_many
wait_until 10 pace_is 'p["pendingCsrs"] == 90 and p["csrCeiling"]' || die "the CSR ceiling does not hold: $(pace_show)"
for i in 4 5 6; do node_line "node-$i" "127.2.0.$i" True; done | fa_ctl_many
wait_until 10 pace_is 'p["joinedTotal"] == 6' || die "Ready did not free the slots: $(pace_show)"
[ -z "$(ask 14 50 --reverse)" ] || die "admitted at the CSR ceiling"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || true
grep -q 'node CSRs: 90 as the approver counts them (both kinds, Denied and Failed included), ceiling 90: at the ceiling' "$TMP/status.txt" || die "status: $(grep -A4 Pacing "$TMP/status.txt")"
grep -q 'counting:  by the API' "$TMP/status.txt" || die "status: $(grep -A4 Pacing "$TMP/status.txt")"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
grep -qx 'skewgate_pace_pending_csrs 90' <<<"$metrics" || die "skewgate_pace_pending_csrs: $(grep pace_ <<<"$metrics")"
grep -qx 'skewgate_pace_api_view 1' <<<"$metrics" || die "skewgate_pace_api_view"
grep -qx 'skewgate_pace_join_seconds_count 6' <<<"$metrics" || die "skewgate_pace_join_seconds: $(grep join_seconds <<<"$metrics")"
grep -qx 'skewgate_pace_join_seconds_bucket{le="30"} 6' <<<"$metrics" || die "skewgate_pace_join_seconds buckets: $(grep join_seconds <<<"$metrics")"
promtool check metrics <<<"$metrics" || die "promtool refuses /metrics"

note "the CSRs are approved: the next 3 of the line are admitted"
for i in $(seq 1 90); do
  printf '{"fault":"set_resource","resource":"certificatesigningrequests.certificates.k8s.io","object":{"metadata":{"name":"csr-%d","creationTimestamp":"%s"},"spec":{"signerName":"kubernetes.io/kube-apiserver-client-kubelet"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"NodeCSRApprove"}]}}}\n' "$i" "$created"
done | fa_ctl_many
wait_until 10 pace_is 'p["pendingCsrs"] == 0 and not p["csrCeiling"]' || die "the ceiling stays: $(pace_show)"
got=$(ask 14 50 --reverse)
[ "$got" = "16 15 14" ] || die "after the approvals, admitted: '$got'"

note "the API server stops: counting by join_timeout, with why, and nobody past the budget"
fa_stop
wait_until 20 pace_is 'p["counting"] == "join_timeout" and "failing" in p["why"]' || die "still counting by the API: $(pace_show)"
pace_show
[ -z "$(ask 17 50 --reverse)" ] || die "admitted blind past the budget (10 of ours joining)"
pace_is 'p["joining"] == 10 and p["budgetUsed"] == 10' || die "$(pace_show)"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || true
grep -q 'counting:  by join_timeout alone (10 of 10 used): the API watch is failing' "$TMP/status.txt" ||
  die "status: $(grep -A4 Pacing "$TMP/status.txt")"
grep -qx 'skewgate_pace_api_view 0' <<<"$(curl -sf "http://$ADMIN_ADDR/metrics")" || die "skewgate_pace_api_view stays 1"
echo PASS
