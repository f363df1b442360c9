#!/usr/bin/env bash
# No client holds the MCS (issue 27): one address that opens 200
# connections to a slow MCS cannot make another address's request wait
# behind all of its own, nor keep it out of a full queue. A freed upstream
# slot goes to the longest waiter of an address under its share
# (upstream.max_per_client) first, and a full queue puts out the newest
# waiter of the address with the most to make room. Before, the queue was
# first come, first served: the other address's request waited behind 64
# renders of 2 s each and got 503 UpstreamQueueTimeout, or found the queue
# full, 503 UpstreamQueueFull. Each of those connections pipelines 4
# requests: the 503 of the one put out starts its next at once, which must
# not take the room back (found in review).
. "$(dirname "$0")/lib.sh"

certs
start_bad trickle-body     # 200 body bytes, one every 10 ms: 2 s a request
MCS_PORT=$BAD_PORT BAD_PID=${PIDS[-1]}
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
GATE_WORKERS=1 UPSTREAM_EXTRA="  max_concurrent: 4
  max_queue: 64
  max_per_client: 2" gate_config "$TMP/gate.yaml" hold "$object" "coalesce:
  enabled: false
log:
  level: debug"
gate_start "$TMP/gate.yaml"

queued() { [ "$(grep -c '"event":"upstream_queued"' "$GATE_LOG")" -ge "$1" ]; }

note "200 connections from 127.0.0.2, 4 requests pipelined on each: 4 in flight, 64 queued, the rest refused"
python3 "$ROOT/tests/integration/idle_clients.py" "$PLAIN_PORT" --ready "$TMP/hog.ready" \
  --query 200 --query-bytes 8 --pipeline 4 --limit 60 &
HOG=$!
PIDS+=($HOG)
full() { [ "$(access_count reason UpstreamQueueFull)" -ge 132 ]; }
wait_until 30 queued 64 || fail "the requests were not queued: $(grep -c upstream_queued "$GATE_LOG")"
wait_until 30 full || fail "the queue was not full: $(access_count reason UpstreamQueueFull) refused"

note "one request from 127.0.0.1: room in the full queue, then the next free slot"
code=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 20 "http://127.0.0.1:$PLAIN_PORT/config/worker")
echo "127.0.0.1 got: $code"
[ "${code%% *}" = 200 ] || fail "127.0.0.1 waited behind 127.0.0.2's requests: $code"
# The upstream goes first: the queued requests of clients that are gone
# then fail at their connect instead of each starting a render.
kill "$BAD_PID" 2>/dev/null || true
kill "$HOG" 2>/dev/null || true
