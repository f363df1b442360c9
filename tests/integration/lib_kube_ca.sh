# shellcheck shell=bash
# Sourced by the CA rotation tests (t_reload_kube_ca, t_kube_ca_follow):
# the fake API server with one pending Machine at 127.0.0.2, the gate on
# it (Kubernetes source and admission.machines) trusting a copy of the
# fake's CA at $TMP/api/ca.crt, and the looks both tests take.
. "$(dirname "${BASH_SOURCE[0]}")/lib_kube.sh"
need_kubectl

NS=openshift-machine-api
machine() {  # machine NAME IP: a pending Machine (no nodeRef) at IP
  fa_ctl "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"$1\",\"namespace\":\"$NS\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}}" >/dev/null
}
from() {  # from ADDR: the status a client at ADDR gets for /config/worker
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface "$1" "http://127.0.0.1:$PLAIN_PORT/config/worker" || true
}
from_is() { [ "$(from "$1")" = "$2" ]; }
# follows WHAT: the source sees the object patched out of skew and back.
follows() {
  patch_status "$STATUS_OUT_OF_SKEW"
  wait_until 20 from_is 127.0.0.2 503 || die "$1: patched out of skew, still $(from 127.0.0.2)"
  patch_status "$STATUS_COMPLIANT"
  wait_until 20 from_is 127.0.0.2 200 || die "$1: patched compliant, still $(from 127.0.0.2)"
}
# verify_failed: the source and both watches have failed on the CA since
# the count $errors_before was taken.
verify_failed() {
  for what in "MachineConfiguration cluster" "Nodes" "Machines (machine.openshift.io)"; do
    grep '"event":"source_error"' "$GATE_LOG" | grep -F "\"what\":\"$what" | has -F "certificate verify failed" || return 1
  done
  [ "$(log_count source_error "certificate verify failed")" -gt "$errors_before" ]
}

# ca_stage_start: all of the above up, the pending Machine admitted and
# the source following the object; sets ADMIN (the admin API's URL) and
# PORT (the fake's).
ca_stage_start() {
  certs
  mcs_start 4096
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
    namespace: $NS
log:
  level: debug"
  gate_start "$TMP/gate.yaml"
  wait_until 20 from_is 127.0.0.2 200 || die "the pending Machine is not admitted at start: $(from 127.0.0.2)"
  follows "at start"
}

# fa_restart_with PKI: the fake API server again on its port, serving the
# certificate of the directory PKI (fa_mkcerts's), which becomes
# $FA_DIR/pki (where kubectl's kubeconfig looks), with the pending Machine.
fa_restart_with() {
  fa_stop
  rm -rf "$FA_DIR/pki"
  mv "$1" "$FA_DIR/pki"
  rm -f "$FA_DIR/port2"
  fa_spawn /dev/null "$FA_DIR/fakeapi.log" "$FA_PY" "$FA_SERVER" --cert "$FA_DIR/pki/server.crt" \
    --key "$FA_DIR/pki/server.key" --token-file "$FA_DIR/token" --port "$PORT" --port-file "$FA_DIR/port2" \
    --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
  FA_PID=$FA_LAST_PID
  wait_until 10 test -s "$FA_DIR/port2" || die "the fake did not start again on port $PORT"
  fa_kubeconfig "$FA_DIR/kubeconfig"
  machine pending-1 127.0.0.2
}
