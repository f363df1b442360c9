#!/usr/bin/env bash
# 200 nodes fetching at once (bench/storm.c: one TLS connection each,
# Ignition's Accept and retry rules: 10 s for the head, retry on 5xx and
# transport errors), straight at the real MCS's TLS port and then through
# the gate (coalescing on, the default). Through the gate every node must
# get the whole body, byte-identical to the MCS's (size and SHA-256, which
# storm checks for every node), and the storm must cost at most one render
# per 20 nodes (measured: 1 to 4 renders for 200 nodes with coalesce.ttl
# 0s: the nodes' TLS handshakes spread their arrivals over 0.3-0.45 s, a
# render takes about 70 ms, and a fetch finished is not shared again).
# The MCS's renders (one log line per request), the wall time to the last
# node's last byte and the CPU time of the MCS and the gate (/proc/PID/stat)
# go to build/e2e-mcs-storm-RELEASE.json for bench/RESULTS.md. Directly, the MCS
# may not serve every node in time (that is a measurement, not a failure).
# STORM_NODES, STORM_MC_BYTES (MachineConfig file bytes) change the run.
. "$(dirname "$0")/lib_mcs.sh"
nodes=${STORM_NODES:-200}
certs
real_mcs_start "${STORM_MC_BYTES:-131072}"
cc -std=c11 -O2 -o "$TMP/storm" "$ROOT/bench/storm.c" -lssl -lcrypto
curl -sf -H "Accept: $IGNITION_ACCEPT" -o "$TMP/body" "http://127.0.0.1:$MCS_PORT/config/master"
size=$(stat -c %s "$TMP/body")
sha=$(sha256sum "$TMP/body" | cut -d' ' -f1)
note "the MCS's config for Ignition 3.4.0: $size bytes"
hz=$(getconf CLK_TCK)
ticks() { sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# storm_run NAME PORT GATE_PID: one storm; prints its figures as JSON.
storm_run() {
  local renders0 cpu0 gcpu0=0 t0 t1
  renders0=$(mcs_renders); cpu0=$(ticks "$MCS_PID")
  [ -z "$3" ] || gcpu0=$(ticks "$3")
  t0=$(date +%s%N)
  "$TMP/storm" "$2" /config/master "$nodes" "$size" "$sha" "$IGNITION_ACCEPT" "${STORM_DEADLINE:-120}" \
    >"$TMP/$1.json" || true
  t1=$(date +%s%N)
  python3 - "$TMP/$1.json" "$1" "$(( $(mcs_renders) - renders0 ))" "$(( $(ticks "$MCS_PID") - cpu0 ))" \
    "$([ -z "$3" ] && echo 0 || echo $(( $(ticks "$3") - gcpu0 )))" "$hz" "$(( (t1 - t0) / 1000000 ))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
name, renders, mcs, gate, hz, wall = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
print(json.dumps({"run": name, "nodes": r["nodes"], "ok": r["ok"], "bad_bodies": r["bad_bodies"],
                  "retries": r["retries"], "statuses": r["statuses"], "renders": renders,
                  "last_node_s": round(r["done_ms"][-1] / 1000, 2) if r["done_ms"] else None,
                  "wall_s": round(wall / 1000, 2), "mcs_cpu_s": round(mcs / hz, 2), "gate_cpu_s": round(gate / hz, 2)}))
PY
}

# The gate first: abandoned direct requests keep the MCS rendering for a
# while after a direct storm, which would count against the gate.
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
note "through the gate: $nodes nodes at its TLS listener, coalescing on"
gated=$(storm_run gate "$TLS_PORT" "$GATE_PID")
echo "$gated"
note "direct: $nodes nodes at the MCS's TLS port"
direct=$(storm_run direct "$MCS_TLS_PORT" "")
echo "$direct"
python3 - "$direct" "$gated" "$nodes" <<'PY' || fail "through the gate every node must get the MCS's bytes, in at most nodes/20 renders"
import json, sys
d, g, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
assert d["renders"] >= d["ok"], d
assert g["ok"] == n and g["bad_bodies"] == 0 and g["retries"] == 0, g
assert 1 <= g["renders"] <= n // 20, g
PY
mkdir -p "$ROOT/build"
printf '%s\n%s\n' "$direct" "$gated" >"$ROOT/build/e2e-mcs-storm-$MCS_RELEASE.json"
echo PASS
