#!/usr/bin/env bash
# SIGHUP switches the verdict source between a file and the Kubernetes API
# (the fake API server) and back; the running source keeps judging until
# the reload is taken, and a Kubernetes section that fails `check --files`
# (a missing token file) is refused with the file source still serving.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-out-of-skew.yaml"
cp "$FA_DIR/token" "$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
object="$TMP/mc.yaml"
set_object none.yaml "$object"
KUBE="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN"

reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"][sys.argv[1]])' "$1")" = "$2" ]
}
source_is() { [ "$(curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; print(json.load(sys.stdin)["source"])')" = "$1" ]; }

ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 code_is 200 || die "the file source's mode None is not admitted"
source_is file || die "not the file source"

note "file -> kubernetes: the API's out-of-skew object is enforced"
ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT=$KUBE gate_config "$TMP/gate.yaml" hold unused
kill -HUP "$GATE_PID"
wait_until 10 reloads_are success 1 || die "the reload to kubernetes was not taken"
source_is kubernetes || die "the source is not kubernetes after the reload"
wait_until 10 reason_is OutOfSkew || die "the API's object is not judged: $(verdict_reason)"
code_is 503 || die "not held after the switch"
wait_until 5 grep -q '"event":"source_sync"\|"event":"verdict".*OutOfSkew' "$GATE_LOG" || die "no sign of the list"

note "a kubernetes section whose token file is missing is refused; kubernetes keeps serving"
ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="${KUBE/$GATE_TOKEN/$TMP/no-such-token}" gate_config "$TMP/gate.yaml" deny unused
kill -HUP "$GATE_PID"
wait_until 10 reloads_are failure 1 || die "the reload with a missing token file was not refused"
grep -q "\"event\":\"reload\".*no-such-token" "$GATE_LOG" || die "the refusal does not name the token file"
code_is 503 || die "the refused reload changed the answer"

note "kubernetes -> file: back to the file's verdict"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are success 2 || die "the reload back to the file was not taken"
source_is file || die "the source is not the file after the reload"
wait_until 10 code_is 200 || die "the file's mode None is not admitted after the switch back"
echo PASS
