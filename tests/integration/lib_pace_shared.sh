# Three gates on the shared line (pace.replicas 3, pace.line auto with the
# kubernetes source), max_joining $MAX (6 unless set), on one fake API
# server that serves the Leases: t_pace_shared*.sh. Sourced after
# lib_kube.sh; leaves PORTS[g] (the plain listeners, kept across a
# restart), ADMINS[g], GPIDS[g], start_gate G, line_is ADMIN MODE, and every
# gate on the shared line with its verdict settled and the fake's counters
# zeroed.
certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
cp "$FA_DIR/token" "$GATE_TOKEN"
chmod 600 "$GATE_TOKEN"
MAX=${MAX:-6}
REPLICAS=3
PORTS=()
ADMINS=()
GPIDS=()
start_gate() {   # start_gate G: gate G on its config, its log appended
  GATE_LOG="$TMP/gate$1.log"
  "$SKEWGATE_BIN" run -c "$TMP/gate$1.yaml" 2>>"$GATE_LOG" &
  GATE_PID=$!
  GPIDS[$1]=$GATE_PID
  PIDS+=("$GATE_PID")
  wait_until 10 gate_listening || { cat "$GATE_LOG" >&2; die "gate $1 did not start"; }
}
for g in 1 2 3; do
  ADMINS[$g]="127.0.0.1:$(free_port)"
  ADMIN_ADDR=${ADMINS[$g]} ADMIN_SOCKET= GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate$g.yaml" hold unused "pace:
  enabled: true
  max_joining: $MAX
  replicas: $REPLICAS
  namespace: skewgate
  join_timeout: 10m
log:
  level: info"
  # The plain listener on a port of its own, kept across the restart.
  PORTS[$g]=$(free_port)
  python3 - "$TMP/gate$g.yaml" "${PORTS[$g]}" <<'PY'
import sys
p, port = sys.argv[1], sys.argv[2]
s = open(p).read()
first = s.index('"127.0.0.1:0"')
second = s.index('"127.0.0.1:0"', first + 1)
open(p, "w").write(s[:second] + '"127.0.0.1:%s"' % port + s[second + len('"127.0.0.1:0"'):])
PY
  : >"$TMP/gate$g.log"
  start_gate "$g"
  [ "$(gate_port false)" = "${PORTS[$g]}" ] || die "gate $g listens on $(gate_port false), not ${PORTS[$g]}"
done
GATE_PID=
line_is() {   # line_is ADMIN MODE: /held's pace.lineMode
  curl -sf --max-time 5 "http://$1/held" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["pace"]["lineMode"] != sys.argv[1])' "$2"
}
for g in 1 2 3; do
  wait_until 20 line_is "${ADMINS[$g]}" api || die "gate $g is not on the shared line: $(curl -sf "http://${ADMINS[$g]}/held")"
  GATE_LOG="$TMP/gate$g.log" wait_until 10 reason_is Compliant || die "gate $g: the verdict did not settle"
done
curl -sf "http://${ADMINS[1]}/metrics" | grep -x "skewgate_pace_shared_line 1" >/dev/null || die "skewgate_pace_shared_line is not 1"
fa_ctl '{"fault":"reset_stats"}' >/dev/null
stop_gates() {   # SIGTERM every gate, and their logs into GATE_LOG
  local g
  for g in 1 2 3; do kill -TERM "${GPIDS[$g]}" 2>/dev/null || true; done
  for g in 1 2 3; do wait_until 20 proc_gone "${GPIDS[$g]}" || kill -KILL "${GPIDS[$g]}"; wait "${GPIDS[$g]}" 2>/dev/null || true; done
}
