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

# pace_gate_config FILE PACE_YAML: a gate's config (hold) with the
# Kubernetes source pointed at the fake and the given pace: block (its
# keys, indented); the admin API on $ADMIN_ADDR as lib.sh's gate_config
# takes it. The pacing tests' one setup.
pace_gate_config() {
  [ -e "$GATE_TOKEN" ] || cp "$FA_DIR/token" "$GATE_TOKEN"
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$1" hold unused "pace:
$2"
}

die() {
  echo "--- gate log (last 30 lines, access lines left out) ---" >&2
  grep -v '"event":"access"' "${GATE_LOG:-/dev/null}" | tail -30 >&2 || true
  fa_fail "$*"
}

# gate_stop_checked: gate_stop, then a sanitizer report in the stopped
# gate's log fails the test (the next gate_start starts a new log).
gate_stop_checked() {
  gate_stop
  if grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$GATE_LOG"; then
    die "sanitizer report from the stopped gate"
  fi
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
# patch_status_fast JSON: the merge patch kubectl sends, by curl: ~10 ms
# where kubectl takes ~250 ms to start, for a test that patches many times.
patch_status_fast() {
  curl -sf -o /dev/null --cacert "$FA_DIR/pki/ca.crt" -H "Authorization: Bearer $FA_TOKEN" \
    -H 'Content-Type: application/merge-patch+json' -X PATCH --data-binary "$1" \
    "$FA_URL/apis/operator.openshift.io/v1/machineconfigurations/cluster/status"
}

# The loopback address for silent_dns_start, one per test block (lib_ports.sh):
# tests running at once cannot both have 127.0.0.X:53.
SILENT_DNS_IP=127.0.53.$(( PORT_BLOCK + 1 ))

# silent_dns_start IP: a DNS server on UDP IP:53 (a loopback address) that
# reads every query and answers none, as a resolver gone dark; each name
# asked is appended to $TMP/dns.queries as "UNIX_TIME NAME", NAME in
# lower case (evdns randomises the case of the letters it sends). Writes
# $TMP/resolv.conf pointing at it, for a mount namespace to bind over
# /etc/resolv.conf (callers check `unshare -m` first).
silent_dns_start() {
  python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 53))
open(sys.argv[2] + ".ready", "w").write("ready\n")
while True:
    q, _ = s.recvfrom(512)
    labels, i = [], 12
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace")); i += 1 + q[i]
    with open(sys.argv[2], "a") as f:
        f.write("%.3f %s\n" % (time.time(), ".".join(labels).lower()))' "$1" "$TMP/dns.queries" &
  PIDS+=($!)
  wait_until 5 test -s "$TMP/dns.queries.ready" || fail "the silent DNS server did not start"
  printf 'nameserver %s\noptions timeout:5 attempts:2\n' "$1" >"$TMP/resolv.conf"
}

# gate_start_resolving CONFIG [WRAPPER...]: skewgate (under WRAPPER, e.g.
# valgrind, if given) in a mount namespace whose /etc/resolv.conf is
# $TMP/resolv.conf; appends to $GATE_LOG, sets GATE_PID (unshare and sh
# exec, so the PID is the gate's).
gate_start_resolving() {
  local config=$1; shift
  unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh \
    "$TMP/resolv.conf" "$@" "$SKEWGATE_BIN" run -c "$config" 2>>"$GATE_LOG" &
  GATE_PID=$!
  PIDS+=($GATE_PID)
}
