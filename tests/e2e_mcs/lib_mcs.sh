# Sourced by the real-MCS tests (tests/e2e_mcs/t_*.sh) after the
# integration library: the real Machine Config Server (MCS_BIN: `make
# e2e-mcs` unpacks the prebuilt 4.13 one, or builds one from MCO_SRC) in
# bootstrap mode, serving pool master. MCS_RELEASE ("4.13", "4.22": which
# one MCS_BIN is) becomes the gates' upstream.mcs_release and picks the
# differential's column of deliberate differences.
# The MCS binds its ports on every address (":PORT", pkg/server/api.go), so
# the runner puts each test in a network namespace of its own (unshare -n)
# whose only interface is loopback: nothing it serves leaves the namespace.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
: "${MCS_BIN:?MCS_BIN must name the machine-config-server binary}"
[ "$(ip -o link show | wc -l)" = 1 ] || fail "not in a network namespace of our own (run tests/e2e_mcs/run)"
: "${MCS_RELEASE:?MCS_RELEASE must say which release MCS_BIN is (4.13, 4.22)}"
export UPSTREAM_EXTRA="  mcs_release: \"$MCS_RELEASE\""

# real_mcs_start SIZE: the MCS serving a MachineConfig of about SIZE bytes
# of file contents; sets MCS_PORT (plain), MCS_TLS_PORT, MCS_PID, MCS_LOG.
# Needs certs (the secure port serves the test certificate).
real_mcs_start() {
  local base="$TMP/mcs-base"
  python3 "$ROOT/tests/e2e_mcs/mcs_basedir.py" "$base" "$1" "$CA"
  MCS_PORT=$(free_port)
  MCS_TLS_PORT=$(free_port)
  MCS_LOG="$TMP/mcs.log"
  # 4.22 logs every config it serves, and the ControllerConfig, in full:
  # those lines are dropped (the process substitution keeps $! the MCS's).
  "$MCS_BIN" bootstrap --server-basedir "$base" --bootstrap-kubeconfig "$base/kubeconfig" \
    --secure-port "$MCS_TLS_PORT" --insecure-port "$MCS_PORT" \
    --cert "$TMP/pki/tls.crt" --key "$TMP/pki/tls.key" \
    > >(grep --line-buffered -v -e '] got ignconf ' -e '] got controllerConfig: ' >"$MCS_LOG") 2>&1 &
  MCS_PID=$!
  PIDS+=($MCS_PID)
  wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$MCS_PORT/healthz" || { cat "$MCS_LOG"; fail "the MCS did not start"; }
  wait_until 20 curl -sf -o /dev/null --cacert "$CA" "https://127.0.0.1:$MCS_TLS_PORT/healthz" || fail "the MCS's TLS port did not start"
}

# mcs_renders: configs the MCS has rendered (it logs one line per request).
mcs_renders() { grep -c 'requested by address' "$MCS_LOG" || true; }

# mcs_cpu_ticks: the MCS process's user+system CPU so far, in clock ticks.
mcs_cpu_ticks() { sed -E 's/^[0-9]+ \(.*\) //' "/proc/$MCS_PID/stat" | awk '{print $12 + $13}'; }
