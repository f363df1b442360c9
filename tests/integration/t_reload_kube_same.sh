#!/usr/bin/env bash
# A SIGHUP that keeps the Kubernetes source (the same file, as the
# DaemonSet's tls-sync sends after a certificate rotation, or only a log
# level edited) must leave the source following the object. The source
# borrowed its strings from the configuration it was made from, which the
# workers free once they take the new one: is_ours then compared event
# names against freed memory, every event was dropped, and a cluster
# patched out of skew kept being admitted (issue 20, item 1). Here: after
# each reload, and once the old configuration is gone, the object is
# patched out of skew and back: 503, then 200.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml"
cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"

# gate_yaml LEVEL: the same gate, kubernetes source, at that log level.
gate_yaml() {
  ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "log:
  level: $1"
}
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
# Each of the two workers says when it frees the generation it dropped.
freed_at_least() { [ "$(grep -c '"event":"config_generation_freed"' "$GATE_LOG")" -ge "$1" ]; }

# follows WHAT: the source still sees the object change, both ways.
follows() {
  patch_status "$STATUS_OUT_OF_SKEW"
  wait_until 5 code_is 503 || die "$1: patched out of skew, still $(gate_code)"
  reason_is OutOfSkew || die "$1: reason $(verdict_reason)"
  patch_status "$STATUS_COMPLIANT"
  wait_until 5 code_is 200 || die "$1: patched compliant, still $(gate_code)"
}

gate_yaml debug
gate_start "$TMP/gate.yaml"
wait_until 10 reason_is Compliant || die "no Compliant verdict from the list"
code_is 200 || die "not admitted while compliant"
follows "before any reload"

note "SIGHUP with the same file: the source is kept and still follows the object"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
wait_until 10 freed_at_least 2 || die "the old configuration was not freed (nothing tested)"
grep -q '"event":"reload","msg":"verdict source now' "$GATE_LOG" && die "the source was replaced (nothing tested)"
follows "after a reload with the same file"

note "SIGHUP with only the log level changed"
gate_yaml info
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || die "the second reload was not taken: $(curl -s "$ADMIN/config")"
follows "after a reload that changed the log level"

note "and a third, the same file again"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 3 || die "the third reload was not taken"
follows "after a third reload"
gate_stop
echo PASS
