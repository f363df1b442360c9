# shellcheck shell=bash
# Sourced after lib.sh by the coalescing tests (t_coalesce*.sh): a bad
# upstream (start_bad, bad_upstream.py) and a gate in front with a debug
# log, whose "coalesce" lines say which requests attached to a fetch.

# attached N: the gate's log shows at least N requests attached to a fetch.
attached() { [ "$(grep -c '"event":"coalesce"' "$GATE_LOG")" -ge "$1" ]; }

# coalesce_gate EXTRA_YAML MODE_ARGS...: a bad upstream in MODE (holding
# its answers until $TMP/release when MODE_ARGS say --release-file), and a
# gate (2 workers, debug log, admin on ADMIN_PORT) in front.
coalesce_gate() {
  local extra=$1; shift
  rm -f "$TMP/release" "$TMP/bad.count" "$TMP"/res*.json
  start_bad "$@"
  MCS_PORT=$BAD_PORT
  ADMIN_PORT=$(free_port)
  ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug
$extra"
  gate_start "$TMP/gate.yaml"
}

# stop_all: the gate, then the bad upstream (the newest process but one).
stop_all() { gate_stop; kill "${PIDS[-2]}" 2>/dev/null || true; }
