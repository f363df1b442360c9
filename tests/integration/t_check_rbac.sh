#!/usr/bin/env bash
# skewgate check -c FILE prints the RBAC rules for every configuration
# that talks to the API server, as the runbook says (issue 33): the
# Kubernetes source alone too, not only with pacing or admission.machines;
# a file source without admission.machines prints none.
. "$(dirname "$0")/lib.sh"

# config FILE ENFORCEMENT [EXTRA]: a minimal configuration.
config() {
  printf 'listeners:\n  - address: "127.0.0.1:0"\nenforcement:\n%s\n%s\n' "$2" "${3:-}" >"$1"
}
# check_out FILE: check's stdout in $TMP/check.out (exit 0 required).
check_out() { "$SKEWGATE_BIN" check -c "$1" >"$TMP/check.out" || fail "check $1: exit $?"; }

note "the Kubernetes source alone: the rules on machineconfigurations"
config "$TMP/kube.yaml" "  source: kubernetes"
check_out "$TMP/kube.yaml"
grep -qx 'rbac: the service account needs get, list and watch on:' "$TMP/check.out" || fail "no rbac: $(cat "$TMP/check.out")"
grep -q 'resources \[machineconfigurations\] verbs \[get list watch\] (enforcement.source: kubernetes)' "$TMP/check.out" ||
  fail "no machineconfigurations rule: $(cat "$TMP/check.out")"

note "with pacing: nodes and certificatesigningrequests too"
config "$TMP/pace.yaml" "  source: kubernetes" "pace:
  enabled: true
admission:
  token:
    files: [$TMP/provisioning.token]"
check_out "$TMP/pace.yaml"
grep -q 'resources \[nodes\] verbs \[get list watch\] (pace)' "$TMP/check.out" || fail "no nodes rule: $(cat "$TMP/check.out")"
grep -q 'resources \[certificatesigningrequests\]' "$TMP/check.out" || fail "no CSR rule: $(cat "$TMP/check.out")"

note "the file source: no API server, no rules"
config "$TMP/file.yaml" "  source: file
  file:
    path: $TMP/mc.yaml"
check_out "$TMP/file.yaml"
! grep -q rbac "$TMP/check.out" || fail "rbac rules for the file source: $(cat "$TMP/check.out")"
echo PASS
