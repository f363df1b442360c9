#!/usr/bin/env bash
# The differential (issue 19): generated Accept headers and path spellings,
# each sent to the real MCS directly, through the gate admitting (coalescing
# on, as by default, with 48 requests in flight so fetches are shared), and
# to a gate in reject.mode explain; differential.py compares the answers
# and fails on any difference not listed in docs/mcs-fidelity.md.
. "$(dirname "$0")/lib_mcs.sh"
certs
real_mcs_start 4096
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_PORT=$(free_port)
ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" ADMIN_SOCKET= gate_config "$TMP/admit.yaml" hold "$object"
gate_start "$TMP/admit.yaml"
admit_pid=$GATE_PID admit_log=$GATE_LOG admit_port=$PLAIN_PORT
GATE_PID= ; mv "$GATE_LOG" "$TMP/admit.log"; admit_log="$TMP/admit.log"
PIDS+=($admit_pid)
set_object automatic-out-of-skew.yaml "$TMP/mc-reject.yaml"
gate_config "$TMP/explain.yaml" explain "$TMP/mc-reject.yaml"
gate_start "$TMP/explain.yaml"
explain_port=$PLAIN_PORT
python3 "$ROOT/tests/e2e_mcs/differential.py" --release "$MCS_RELEASE" --direct "$MCS_PORT" --gate "$admit_port" --explain "$explain_port" \
  --cases "${DIFF_CASES:-2400}" --inflight 48 --report "$TMP/report.json" || {
  mkdir -p "$ROOT/build"; cp "$TMP/report.json" "$ROOT/build/e2e-mcs-differential-$MCS_RELEASE.json"
  fail "differences the docs do not explain (build/e2e-mcs-differential-$MCS_RELEASE.json)"; }
shared=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '$1 == "skewgate_coalesce_followers_total" {print $2}')
note "requests answered from a shared fetch: $shared"
[ "$shared" -gt 0 ] || fail "no request shared a fetch: the differential did not exercise coalescing"
echo PASS
