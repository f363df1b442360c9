#!/usr/bin/env bash
# A rotated cluster CA is followed without a reload. In a cluster the
# kubelet rewrites the service account's ca.crt itself and nothing sends
# the gate a SIGHUP; the gate read its CA once, so once the API server
# served a certificate of the new CA the verdict source and the
# admission.machines watch failed "certificate verify failed" until a
# restart, and after max_staleness enforcement fell to when_unknown. Now a
# failed connection has its CA file looked at again before the retry.
# Here: the fake API server restarts on its port with a new CA, and the
# gate fails to verify it (its CA file still holds the old one); then the
# new CA is renamed into ca_file, no signal sent, and the source follows
# the object again, the watch sees a new Machine, /readyz is ok, and no
# reload happened. A CA file that is not PEM while failing is said in the
# log, the old trust stays, and the good file after it is taken.
. "$(dirname "$0")/lib_kube.sh"
need_kubectl

certs
mcs_start 4096
NS=openshift-machine-api
machine() {  # machine NAME IP: a pending Machine (no nodeRef) at IP
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}}" >/dev/null
}
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
machine pending-1 127.0.0.2
PORT=$FA_PORT
mkdir -p "$TMP/api"
cp "$FA_DIR/pki/ca.crt" "$TMP/api/ca.crt"
cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $TMP/api/ca.crt
    token_file: $GATE_TOKEN
  max_staleness: 5m" gate_config "$TMP/gate.yaml" hold unused "admission:
  machines:
    enabled: true
    namespace: $NS"
gate_start "$TMP/gate.yaml"

from() {  # from ADDR: the status a client at ADDR gets for /config/worker
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" || true
}
from_is() { [ "$(from "$1")" = "$2" ]; }
follows() {  # follows WHAT: the source sees the object patched out of skew and back
  patch_status "$STATUS_OUT_OF_SKEW"
  wait_until 20 from_is 127.0.0.2 503 || die "$1: patched out of skew, still $(from 127.0.0.2)"
  patch_status "$STATUS_COMPLIANT"
  wait_until 20 from_is 127.0.0.2 200 || die "$1: patched compliant, still $(from 127.0.0.2)"
}
ready() { [ "$(curl -s "$ADMIN/readyz")" = ok ]; }
reloads() { curl -sf "$ADMIN/config" | python3 -c 'import json, sys; r = json.load(sys.stdin)["reloads"]; print(r["success"] + r["failure"])'; }

wait_until 20 from_is 127.0.0.2 200 || die "the pending Machine is not admitted at start: $(from 127.0.0.2)"
follows "at start"

note "the API server restarts on its port with a new CA; ca_file still holds the old one"
fa_stop
rm -rf "$FA_DIR/pki"
fa_mkcerts "$FA_DIR/pki" >/dev/null || die "mkcerts failed"
errors_before=$(log_count source_error "certificate verify failed")
fa_spawn /dev/null "$FA_DIR/fakeapi.log" "$FA_PY" "$FA_SERVER" --cert "$FA_DIR/pki/server.crt" \
  --key "$FA_DIR/pki/server.key" --token-file "$FA_DIR/token" --port "$PORT" --port-file "$FA_DIR/port2" \
  --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
FA_PID=$FA_LAST_PID
wait_until 10 test -s "$FA_DIR/port2" || die "the fake did not start again on port $PORT"
fa_kubeconfig "$FA_DIR/kubeconfig"
machine pending-1 127.0.0.2
verify_failed() {  # the source and both watches failed on the old CA since the restart
  for what in "MachineConfiguration cluster" "Nodes" "Machines (machine.openshift.io)"; do
    grep '"event":"source_error"' "$GATE_LOG" | grep -F "\"what\":\"$what" | grep -qF "certificate verify failed" || return 1
  done
  [ "$(log_count source_error "certificate verify failed")" -gt "$errors_before" ]
}
wait_until 60 verify_failed || die "the old CA did not fail against the new server (nothing tested)"

note "ca_file rewritten with something that is not PEM: said, the old trust stays"
printf 'not a certificate\n' >"$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
wait_until 30 log_count_above source_tls 0 "the CA trusted so far stays" || die "a CA file that is not PEM went unsaid"

note "the new CA renamed into ca_file, no signal: the source and the watch follow it"
cp "$FA_DIR/pki/ca.crt" "$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
wait_until 30 ready || die "not ready after the CA file changed: $(curl -s "$ADMIN/readyz")"
follows "after the CA rotation"
machine pending-2 127.0.0.4
wait_until 20 from_is 127.0.0.4 200 || die "the machines watch does not follow the new server: $(from 127.0.0.4)"
[ "$(log_count source_tls "the CA file changed")" -ge 2 ] ||
  die "the source and the watch did not both say they took the new CA: $(grep '"event":"source_tls"' "$GATE_LOG")"
[ "$(reloads)" = 0 ] || die "a reload happened (nothing tested)"
gate_stop
echo PASS
