#!/usr/bin/env bash
# admission.machines against the fake API server, with clients on distinct
# loopback addresses (curl --interface): held (503 UnknownMachine) until the
# first full list; a pending Machine's address admitted; a Node's refused
# (403 ActiveNode); an unknown address held, then admitted once its Machine
# appears through the watch; refused once the Machine gets its nodeRef;
# Nodes listed in pages (4000 generated, ~14 MB as one answer, past the
# client's 8 MiB limit; pages of 500, ~1.8 MB each) within bounded memory; the reason in the answer,
# the access log and skewgate_admission_rejects_total; `check` prints the
# RBAC the config needs.
# The peak RSS measured is the gate's own (VmHWM), which other tests' load does not move: it runs beside them.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
NS=openshift-machine-api
machine() {  # machine NAME IP [NODE]
  local ref=""
  [ -n "${3:-}" ] && ref=",\"nodeRef\":{\"kind\":\"Node\",\"name\":\"$3\"}"
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"},{\"type\":\"InternalDNS\",\"address\":\"$1.example\"}]$ref}}}" >/dev/null
}
fa_ctl '{"fault":"generate_nodes","count":4000,"prefix":"node","base":"10.128"}' >/dev/null
fa_ctl '{"fault":"set_resource","resource":"nodes","object":{"metadata":{"name":"active-1"},"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.3"},{"type":"ExternalIP","address":"::1"}]}}}' >/dev/null
machine pending-1 127.0.0.2
# The CAPI Machine of an active node: refused as well.
fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.cluster.x-k8s.io\",\"object\":{\"metadata\":{\"name\":\"capi-1\",\"namespace\":\"openshift-cluster-api\"},\"status\":{\"addresses\":[{\"type\":\"ExternalIP\",\"address\":\"127.0.0.6\"}],\"nodeRef\":{\"name\":\"capi-node\"}}}}" >/dev/null

ADMIN_ADDR="127.0.0.1:$(free_port)"
MACHINES="admission:
  machines:
    enabled: true
    namespace: $NS
    page_size: 500
    cluster_api:
      enabled: true"

note "check prints the RBAC the config needs"
cp "$FA_DIR/token" "$GATE_TOKEN"
GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/check.yaml" hold unused "$MACHINES"
out=$("$SKEWGATE_BIN" check --files -c "$TMP/check.yaml") || die "check refused the config: $out"
grep -qx "  ClusterRole: apiGroups \[\"\"\] resources \[nodes\] verbs \[get list watch\] (admission.machines)" <<<"$out" \
  || die "no nodes rule in: $out"
grep -qx "  Role in $NS: apiGroups \[machine.openshift.io\] resources \[machines\] verbs \[get list watch\] (admission.machines)" <<<"$out" \
  || die "no machines rule in: $out"
grep -q "Role in openshift-cluster-api: apiGroups \[cluster.x-k8s.io\]" <<<"$out" || die "no CAPI rule in: $out"

note "until the first full list every client is held (UnknownMachine)"
fa_ctl '{"fault":"stall","seconds":8}' >/dev/null
kube_gate_start hold "$MACHINES"
from() {  # from ADDR: the status a client at ADDR gets for /config/worker
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" || true
}
reason_from() {
  curl -s -D - -o /dev/null --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" |
    tr -d '\r' | sed -n 's/^Skewgate-Reason: //p'
}
[ "$(from 127.0.0.2)" = 503 ] || die "a pending machine was not held before the first list"
[ "$(reason_from 127.0.0.2)" = UnknownMachine ] || die "held without UnknownMachine"
published() { [ "$(log_count machines_published)" -ge 1 ]; }
wait_until 60 published || die "the address set was never published"

note "the Nodes came in pages of 500"
grep '"event":"source_listed"' "$GATE_LOG" | has 'Nodes: 4001 objects in 9 pages' || die "the Nodes list was not paged as expected"
grep '"event":"machines_published"' "$GATE_LOG" | has '"pending":1' || die "not one pending address"

note "a pending machine is admitted; a node and an active CAPI machine are refused"
from_is() { [ "$(from "$1")" = "$2" ]; }
wait_until 5 from_is 127.0.0.2 200 || die "pending machine 127.0.0.2 got $(from 127.0.0.2)"
[ "$(from 127.0.0.3)" = 403 ] || die "node address 127.0.0.3 was not refused"
[ "$(reason_from 127.0.0.3)" = ActiveNode ] || die "node refused without ActiveNode"
[ "$(from 127.0.0.6)" = 403 ] || die "the CAPI machine with a nodeRef was not refused"
[ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 "http://127.0.0.1:$PLAIN_PORT/healthz")" != 403 ] \
  || die "an ungated path was judged by the admission policy"

note "an unknown address is held on one connection, then admitted once its Machine appears"
curl -s -o "$TMP/held.out" -w '%{http_code}\n' --interface 127.0.0.4 --max-time 30 --retry 20 --retry-delay 1 \
  --retry-all-errors "http://127.0.0.1:$PLAIN_PORT/config/worker" >"$TMP/held.code" 2>/dev/null &
held=$!
PIDS+=($held)
held_seen() { [ "$(access_count reason UnknownMachine)" -ge 3 ]; }
wait_until 10 held_seen || die "the unknown address was not held"
machine pending-2 127.0.0.4
wait "$held" || die "the held client gave up"
[ "$(cat "$TMP/held.code")" = 200 ] || die "the held client got $(cat "$TMP/held.code") in the end"
[ -s "$TMP/held.out" ] || die "the held client got no config"

note "the machine gets its nodeRef: its address is refused"
machine pending-1 127.0.0.2 worker-a
wait_until 5 from_is 127.0.0.2 403 || die "127.0.0.2 still gets $(from 127.0.0.2) after its nodeRef"

note "the reasons in the access log and the metrics"
[ "$(access_count reason ActiveNode)" -ge 3 ] || die "ActiveNode missing from the access log"
metrics=$(curl -s --max-time 5 "http://$ADMIN_ADDR/metrics")
grep -qE '^skewgate_admission_rejects_total\{reason="UnknownMachine"\} [1-9]' <<<"$metrics" || die "no UnknownMachine metric"
grep -qE '^skewgate_admission_rejects_total\{reason="ActiveNode"\} [1-9]' <<<"$metrics" || die "no ActiveNode metric"
note "the held-nodes view and skewgate status name the policy's reason"
held_reasons=$(curl -s --max-time 5 "http://$ADMIN_ADDR/held" |
  python3 -c 'import json, sys; print(" ".join(sorted({c["address"] + "=" + c["reason"] for c in json.load(sys.stdin)["clients"]})))')
grep -q '127.0.0.2=ActiveNode' <<<"$held_reasons" || die "/held has no ActiveNode row for 127.0.0.2: $held_reasons"
grep -q '=UnknownMachine' <<<"$held_reasons" || die "/held has no UnknownMachine row: $held_reasons"
status_text=$("$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" || true)
grep -q 'ActiveNode' <<<"$status_text" || die "skewgate status does not show ActiveNode: $status_text"

note "the watch resumes after a 410 by listing again"
lists=$(log_count source_listed Nodes)
fa_ctl '{"fault":"watch_error","code":410,"reason":"Expired"}' >/dev/null
wait_until 60 log_count_above source_listed "$lists" Nodes || die "no relist of the Nodes after 410"
machine pending-3 127.0.0.5
wait_until 5 from_is 127.0.0.5 200 || die "a machine added after the relist is not admitted"

if [ -z "${SKEWGATE_SAN:-}" ]; then
  note "bounded memory: peak RSS with 4000 Nodes"
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$GATE_PID/status")
  echo "peak RSS ${hwm} kB"
  [ "$hwm" -lt 65536 ] || die "peak RSS ${hwm} kB: the Nodes list is not bounded"
fi
grep -qF "$(cat "$FA_DIR/token")" "$GATE_LOG" && die "the API token is in the gate log"
echo PASS
