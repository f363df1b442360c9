#!/usr/bin/env bash
# Pacing across replicas (issue 26, docs/pacing.md "Replicas"): three gates
# in front of one cluster (the fake API server), pace.replicas 3,
# max_joining 12, share no memory: each counts the cluster's joining nodes
# through the API (young Nodes not Ready, pending kubelet CSRs) and its own
# admissions the API does not show yet, 3 times. 48 nodes ask any gate at
# random; each admitted one joins on the fake API as a real one does (a
# kubelet CSR, then its Node not Ready, then Ready), and after every step
# pace_cluster.py checks that the nodes admitted and not Ready yet,
# cluster-wide, are at most the documented bound:
#   max_joining + (replicas - 1) x (floor(max_joining / replicas) - 1) = 18
# (12 while the replicas' unseen admissions are even). Every node must be
# Ready within 50 s (about 25 s here). This is the gates' own line
# (pace.line local); t_pace_shared.sh runs the shared line's.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
cp "$FA_DIR/token" "$GATE_TOKEN"
chmod 600 "$GATE_TOKEN"
MAX=12
REPLICAS=3
BOUND=$(( MAX + (REPLICAS - 1) * (MAX / REPLICAS - 1) ))
PORTS=()
ADMINS=()
GPIDS=()
for g in 1 2 3; do
  ADMINS+=("127.0.0.1:$(free_port)")
  ADMIN_ADDR=${ADMINS[-1]} ADMIN_SOCKET= GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate$g.yaml" hold unused "pace:
  enabled: true
  max_joining: $MAX
  replicas: $REPLICAS
  line: local
  join_timeout: 10m
log:
  level: info"
  GATE_LOG="$TMP/gate$g.log"
  : >"$GATE_LOG"
  "$SKEWGATE_BIN" run -c "$TMP/gate$g.yaml" 2>>"$GATE_LOG" &
  GATE_PID=$!
  GPIDS+=("$GATE_PID")
  PIDS+=("$GATE_PID")
  wait_until 10 gate_listening || { cat "$GATE_LOG" >&2; die "gate $g did not start"; }
  PORTS+=("$(gate_port false)")
done
GATE_PID=
counting_api() {
  curl -sf --max-time 5 "http://$1/held" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["pace"]["counting"] != "api")'
}
for a in "${ADMINS[@]}"; do
  wait_until 20 counting_api "$a" || die "gate $a does not count by the API"
done
for g in 1 2 3; do
  GATE_LOG="$TMP/gate$g.log" wait_until 10 reason_is Compliant || die "gate $g: the verdict did not settle"
done

note "48 nodes through 3 gates (replicas $REPLICAS, max_joining $MAX): at most $BOUND joining at any step"
started=$(date +%s%N)
python3 "$ROOT/tests/integration/pace_cluster.py" --ports "$(IFS=,; echo "${PORTS[*]}")" --nodes 48 \
  --fake-port "$FA_PORT" --ca "$FA_DIR/pki/ca.crt" --bound "$BOUND" --limit 50 --out "$TMP/summary.json" ||
  die "the bound or the scale-up failed: $(cat "$TMP/summary.json" 2>/dev/null)"
echo "scale-up took $(( ($(date +%s%N) - started) / 1000000 )) ms"
python3 - "$TMP/summary.json" "$MAX" <<'PY' || die "summary"
import json, sys
s = json.load(open(sys.argv[1]))
print("highest count of nodes admitted and not Ready, cluster-wide: %d (max_joining %s, bound %d)"
      % (s["max_joining_seen"], sys.argv[2], s["bound"]))
# pacing did pace: never fewer than... the budget was used, not left idle
assert s["max_joining_seen"] >= int(sys.argv[2]) // 2, s
PY
for a in "${ADMINS[@]}"; do
  curl -sf "http://$a/metrics" | grep -E '^skewgate_pace_(admitted_total|join_seconds_count|api_view) ' | tr '\n' ' '
  echo
done
# The gates' logs for the sanitizer check at exit (cleanup reads GATE_LOG).
for p in "${GPIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${GPIDS[@]}"; do wait_until 20 proc_gone "$p" || kill -KILL "$p"; wait "$p" 2>/dev/null || true; done
cat "$TMP"/gate[123].log >"$TMP/gate.log"
GATE_LOG="$TMP/gate.log"
echo PASS
