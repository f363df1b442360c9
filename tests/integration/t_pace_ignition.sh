#!/usr/bin/env bash
# Pacing a scale-up (issue 26): real Ignition is held as Paced while
# another node (127.1.0.1) has the only slot (pace.max_joining 1), and
# boots once that slot frees at join_timeout (3 s here).
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object" "pace:
  enabled: true
  max_joining: 1
  join_timeout: 3s"
gate_start "$TMP/gate.yaml"
wait_until 10 grep -q '"reason":"Compliant"' "$GATE_LOG" || fail "the verdict did not settle"

note "127.1.0.1 takes the only slot"
code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.1.0.1 "http://127.0.0.1:$PLAIN_PORT/config/worker")
[ "$code" = 200 ] || fail "the first node got $code"

note "Ignition (127.0.0.1) is held as Paced, then boots when the slot frees"
IGN_TIMEOUT=30 ign_run node || { cat "$TMP/node/out" >&2; fail "Ignition did not get its config"; }
grep -q 'GET result: Service Unavailable' "$TMP/node/out" || fail "Ignition was never held"
python3 - "$GATE_LOG" <<'PY' || fail "Ignition's answers"
import json, sys
mine = [j for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{"))
        if j.get("event") == "access" and str(j.get("user_agent", "")).startswith("Ignition/")]
seq = [(j["status"], j.get("reason")) for j in mine]
print("Ignition's answers:", seq)
assert seq[0] == (503, "Paced") and seq[-1][0] == 200, seq
assert all(s == (503, "Paced") for s in seq[:-1]), seq
PY
