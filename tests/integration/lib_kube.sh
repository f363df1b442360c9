# shellcheck shell=bash
# Sourced by the tests of the Kubernetes source: skewgate (lib.sh) against
# the fake API server (lib_fakeapi.sh); patch_status is kubectl as the
# operator (a test that calls it calls need_kubectl first).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib_fakeapi.sh"
fa_init
# Both cleanups, the gate's (sanitizer check) with the test's exit status.
trap 'rc=$?; fa_cleanup; set +e; (exit $rc); cleanup' EXIT   # set +e: a failing (exit) would end the trap before cleanup

# The gate reads its own copy of the token, so that tests can break it
# without breaking the fake (or kubectl).
GATE_TOKEN="$TMP/gate-token"

# kube_gate_start MODE [ENFORCEMENT_EXTRA]: a gate with the Kubernetes
# source pointed at the fake ($FA_URL), debug logs, then gate_start.
kube_gate_start() {
  local mode=$1 extra=${2:-}
  [ -e "$GATE_TOKEN" ] || cp "$FA_DIR/token" "$GATE_TOKEN"
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN
    watch_timeout: ${KUBE_WATCH_TIMEOUT:-5m}
$extra" gate_config "$TMP/gate.yaml" "$mode" unused "log:
  level: debug"
  gate_start "$TMP/gate.yaml"
}

die() {
  echo "--- gate log (last 30 lines, access lines left out) ---" >&2
  grep -v '"event":"access"' "${GATE_LOG:-/dev/null}" | tail -30 >&2 || true
  fa_fail "$*"
}

# The status a node gets for /config/worker (plain listener).
gate_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PLAIN_PORT/config/worker" || true; }
code_is() { [ "$(gate_code)" = "$1" ]; }

# The reason of the last verdict the gate logged.
verdict_reason() {
  python3 - "$GATE_LOG" <<'PY'
import json, sys
reason = ""
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "verdict":
        reason = j.get("reason", "")
print(reason)
PY
}
reason_is() { [ "$(verdict_reason)" = "$1" ]; }

# log_count EVENT [TEXT]: gate log lines of that event (containing TEXT).
log_count() { grep -F "\"event\":\"$1\"" "$GATE_LOG" | grep -cF -- "${2:-}" || true; }
log_count_above() { [ "$(log_count "$1" "${3:-}")" -gt "$2" ]; }

# Status patches, as an operator (or the MCO) would write them.
STATUS_OUT_OF_SKEW='{"status":{"bootImageSkewEnforcementStatus":{"mode":"Automatic","automatic":{"ocpVersion":"4.12.0","rhcosVersion":null}}}}'
STATUS_COMPLIANT='{"status":{"bootImageSkewEnforcementStatus":{"mode":"Automatic","automatic":{"ocpVersion":"4.18.2","rhcosVersion":null}}}}'
STATUS_NONE='{"status":{"bootImageSkewEnforcementStatus":{"mode":"None","automatic":null}}}'
patch_status() { fa_kubectl patch machineconfiguration cluster --subresource=status --type merge -p "$1" >/dev/null; }
