#!/usr/bin/env bash
# SIGTERM while a worker drives a fetch that readers on another worker
# are reading (found in review): the worker's own clients are gone, so it
# had no connection left and left its loop at once; its fetch stopped,
# and the readers elsewhere were cut though the MCS was still answering.
# A stopping worker now runs on until the fetches it drives land.
#   - 2 workers; the upstream sends the head and 8 of 12 MiB, then waits;
#   - the leader, and followers on its worker, never read: they are
#     dropped at limits.send_timeout (1 s), and that worker has no
#     connection left; followers on the other worker read;
#   - SIGTERM; once no listener accepts (every worker took the stop),
#     the upstream sends the rest;
#   - the readers get the whole body, byte-exact, and the gate exits 0.
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(12*1024*1024))' >"$TMP/config.json"
mkdir -p "$TMP/release"
start_bad split --file "$TMP/config.json" --release-dir "$TMP/release" --split-bytes $((8 * 1024 * 1024))
MCS_PORT=$BAD_PORT
GATE_WORKERS=2 gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug
limits:
  send_timeout: 1s
  drain_timeout: 30s"
gate_start "$TMP/gate.yaml"

python3 "$ROOT/tests/integration/coalesce_shutdown_clients.py" "$PLAIN_PORT" "$GATE_LOG" "$TMP/ready" \
  "$TMP/results.json" "$(sha256sum <"$TMP/config.json" | cut -d' ' -f1)" "$(stat -c %s "$TMP/config.json")" &
clients=$!
PIDS+=($clients)
wait_until 60 test -s "$TMP/ready" || fail "the clients were not placed"
read -r stalled readers < <(python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); print(r["stalled"], r["readers"])' "$TMP/ready")
note "$stalled stalled on the leader's worker, $readers reading on the other"

touch "$TMP/release/worker"
cut_lines() { [ "$(grep -c '"reason":"ClientSendTimeout"' "$GATE_LOG")" -ge "$1" ]; }
wait_until 20 cut_lines "$stalled" || fail "the stalled clients were not cut at send_timeout"
note "SIGTERM, then the rest of the body once every worker stopped listening"
kill -TERM "$GATE_PID"
refused() { ! curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PLAIN_PORT/healthz"; }
wait_until 20 refused || fail "the gate still accepts after SIGTERM"
touch "$TMP/release/worker.rest"
wait "$clients" || fail "the clients failed"
python3 - "$TMP/results.json" "$readers" <<'PY' || fail "the readers: $(cat "$TMP/results.json")"
import json, sys
rs, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert len(rs) == n and all(r["status"] == 200 and r["complete"] and r["sha256_ok"] for r in rs), rs
PY
rc=0
wait "$GATE_PID" || rc=$?
[ "$rc" = 0 ] || fail "the gate exited $rc after SIGTERM"
