#!/usr/bin/env bash
# Coalescing, the path a request takes when it joins a fetch only after
# waiting for an upstream slot, and the fetch then goes unshared (its body
# over coalesce.max_body): it gave its slot and its config generation back
# when it joined, and must ask the MCS on its own under the generation
# serving now. That path crashed the gate (exchange_send read a NULL
# generation), seen only when ThreadSanitizer's timing led t_coalesce
# there; here the order is forced. One worker, two upstream slots:
#   C (/config/c) and D (/config/d) take both slots and are held upstream;
#   A and B (/config/worker) queue, in that order (the debug log says so);
#   C is released: A gets its slot and leads the fetch of /config/worker;
#   D is released: B gets its slot, finds A's fetch and joins it;
#   /config/worker is released: 64 KiB over a 1 KiB max_body, unshared.
# A gets the leader's response, B its own: both whole and byte-exact, the
# upstream sees /config/worker twice, and the gate is still serving.
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(64*1024+3))' >"$TMP/config.json"
mkdir -p "$TMP/release"
start_bad gated --file "$TMP/config.json" --release-dir "$TMP/release"
MCS_PORT=$BAD_PORT
GATE_WORKERS=1 UPSTREAM_EXTRA="  max_concurrent: 2
  max_queue: 8" gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug
coalesce:
  max_body: 1KiB"
gate_start "$TMP/gate.yaml"

upstream_saw() { [ "$(grep -c "^$1\$" "$TMP/bad.count" 2>/dev/null)" -ge "$2" ]; }
logged() { [ "$(grep -c "$1" "$GATE_LOG")" -ge "$2" ]; }
# fetch NAME PATH: GET PATH into $TMP/NAME.body, the status in $TMP/NAME.code
fetch() {
  curl -s --max-time 60 -o "$TMP/$1.body" -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT$2" >"$TMP/$1.code"
}

note "C and D hold both upstream slots"
fetch c /config/c &
fetch d /config/d &
wait_until 20 upstream_saw /config/c 1 || fail "C did not reach the upstream"
wait_until 20 upstream_saw /config/d 1 || fail "D did not reach the upstream"
note "A, then B, queue for a slot"
fetch a /config/worker &
wait_until 20 logged '"event":"upstream_queued"' 1 || fail "A did not queue"
fetch b /config/worker &
wait_until 20 logged '"event":"upstream_queued"' 2 || fail "B did not queue"
note "C ends: A takes its slot and leads"
touch "$TMP/release/c"
wait_until 20 logged '"msg":"leads /config/worker' 1 || fail "A did not lead"
wait_until 20 upstream_saw /config/worker 1 || fail "A's fetch did not reach the upstream"
note "D ends: B takes its slot and joins A's fetch"
touch "$TMP/release/d"
wait_until 20 logged '"msg":"joined /config/worker' 1 || fail "B did not join the fetch"
note "the fetch goes unshared: B asks on its own"
touch "$TMP/release/worker"
wait_until 60 test -s "$TMP/a.code" -a -s "$TMP/b.code" || fail "A and B did not finish"
kill -0 "$GATE_PID" 2>/dev/null || fail "the gate died"
for r in a b c d; do
  wait_until 60 test -s "$TMP/$r.code" || fail "$r did not finish"
  [ "$(cat "$TMP/$r.code")" = 200 ] || fail "$r: status $(cat "$TMP/$r.code")"
  cmp -s "$TMP/$r.body" "$TMP/config.json" || fail "$r: the body is not the upstream's"
done
[ "$(grep -c '^/config/worker$' "$TMP/bad.count")" = 2 ] ||
  fail "/config/worker reached the upstream $(grep -c '^/config/worker$' "$TMP/bad.count") times, not 2 (A's fetch, B's own)"
note "the gate still serves"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] ||
  fail "a later request was not served"
gate_stop
