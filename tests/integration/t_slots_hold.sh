#!/usr/bin/env bash
# No client holds the MCS, even when its address may keep no more (issue
# 27, found by an adversarial review): a client that never reads asks for
# an 8 MiB config over a max_buffered_per_client of 1 MiB, relayed on its
# own (a 5 KiB query). Its store fills, it is the slowest reader, and
# nobody waits for a slot yet, so it keeps its one upstream slot and stops
# reading the MCS (back-pressure). A request that then queues for that slot is served
# at once: the holder is cut (ClientOverBudget, short of its length).
# Before, the holder was looked at again only when its client read, which
# it never does: the request waited out queue_timeout, 503.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 8388608
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN_ADDR=$ADMIN_ADDR GATE_WORKERS=1 UPSTREAM_EXTRA="  max_concurrent: 1
  queue_timeout: 3s" gate_config "$TMP/gate.yaml" hold "$object" "limits:
  max_buffered_per_client: 1MiB"
gate_start "$TMP/gate.yaml"
buffered() { curl -sf "http://$ADMIN_ADDR/metrics" | awk '$1 == "skewgate_buffered_bytes" {print $2}'; }
store_full() { [ "$(buffered)" -ge 1048576 ]; }

note "127.0.0.2 asks with a 5 KiB query and never reads: its 1 MiB store fills"
python3 "$ROOT/tests/integration/idle_clients.py" "$PLAIN_PORT" --ready "$TMP/idle.ready" --query 1 --limit 60 &
PIDS+=($!)
wait_until 30 store_full || fail "the idle client's store did not fill: skewgate_buffered_bytes $(buffered)"
echo "skewgate_buffered_bytes $(buffered)"

note "127.0.0.1 asks for the one slot: served, and the holder is cut"
# curl exits 18 on a body short of its Content-Length.
out=$(curl -s -o /dev/null -w '%{http_code} %{size_download} B in %{time_total} s' --interface 127.0.0.1 \
  --max-time 10 "http://127.0.0.1:$PLAIN_PORT/config/worker") || fail "curl exited $? ($out)"
echo "127.0.0.1: $out"
[ "${out%% *}" = 200 ] || fail "the waiting request got ${out%% *} (the slot was held by a client that never reads)"
python3 - "$GATE_LOG" <<'PY' || fail "the holder's access line"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
idle = [j for j in lines if j.get("event") == "access" and j.get("user_agent") == "idle-query"]
print("the idle client:", [(j["status"], j.get("reason"), j["bytes"]) for j in idle])
assert len(idle) == 1, idle
assert idle[0]["reason"] == "ClientOverBudget" and idle[0]["bytes"] < 8388608, idle
PY
echo PASS
