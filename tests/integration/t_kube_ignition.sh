#!/usr/bin/env bash
# Real Ignition held by a 503 (hold mode) while the cluster is out of skew,
# booting on its own once `kubectl patch` makes the cluster compliant.
. "$(dirname "$0")/lib_kube.sh"
need_kubectl

[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
certs
mcs_start 307200
fa_start --object "$FIXTURES/automatic-out-of-skew.yaml"
kube_gate_start hold
wait_until 5 reason_is OutOfSkew || die "the gate did not read the out-of-skew object"

note "Ignition is held with 503s on one connection"
IGN_TIMEOUT=40 ign_run hold &
ign=$!
PIDS+=($ign)
held() { [ "$(access_count status 503)" -ge 3 ]; }
wait_until 20 held || die "Ignition was not held (503s seen: $(access_count status 503))"

note "kubectl patch makes the cluster compliant: Ignition boots by itself"
patch_status "$STATUS_COMPLIANT"
wait "$ign" || { cat "$TMP/hold/out"; die "held Ignition did not finish after the patch"; }
grep -q "Ignition finished successfully" "$TMP/hold/out" || die "no success line from Ignition"
grep -q "GET result: Service Unavailable" "$TMP/hold/out" || die "Ignition never saw the 503"
[ "$(access_count status 200)" -ge 1 ] || die "no admitted request in the access log"
echo PASS
