#!/usr/bin/env bash
# Coalescing across a reload (found in review): two requests share one
# answer only when they go to the same MCS. The table of shared fetches is
# the process's and outlives reloads, and its key was the forwarded bytes
# alone, so after a reload that moved the upstream from MCS A to MCS B a
# new request joined the fetch still in flight to A (coalesce.ttl 0s) or
# was served A's kept answer (coalesce.ttl 30s). The key now holds the
# upstream's gate-wide epoch too. Here, on 2 workers:
#   1. ttl 0s: a fetch to A held in flight, with a follower that joined
#      before the reload; reload to B; new requests go to B and get B's
#      answer at once, while A's is still held; the two that asked before
#      the reload get A's when it comes.
#   2. ttl 0s: a reload that keeps the upstream (a timeout changed) keeps
#      sharing: a request after it joins the fetch in flight.
#   3. ttl 30s: A's answer kept; reload to B; requests get B's; the worker
#      that kept A's lets it go at the reload, not 30 s later (its debug
#      log says so); a reload that keeps B still serves B's kept answer
#      without asking B again.
#   4. ttl 30s: a fetch in flight to A when the reload moves the upstream
#      to B ends for its reader and is not kept (the log says so).
#   5. ttl 30s, the upstream kept: a reload to ttl 0s lets the kept answer
#      go at once, one to a 1s ttl within a second, one to coalescing off
#      at once (the kept answer lived on for the old 30 s before).
# The upstreams hold their answers until the test releases them, and every
# step waits on the gate's log or the upstream's request count: no timing
# guesses.
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
printf '{"from":"MCS-A"}' >"$TMP/a.json"
printf '{"from":"MCS-B"}' >"$TMP/b.json"

count_of() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# bad_at MODE_ARGS...: a bad upstream counting its requests in its own file;
# prints its port.
bad_at() {
  local name=$1; shift
  python3 "$ROOT/tests/integration/bad_upstream.py" --port-file "$TMP/$name.port" --count-file "$TMP/$name.count" "$@" &
  PIDS+=($!)
  wait_until 10 test -s "$TMP/$name.port" || fail "upstream $name did not start"
}
logged() { [ "$(grep -c "$1" "$GATE_LOG")" -ge "$2" ]; }
reloaded() { logged '"msg":"configuration reloaded' "$1"; }
requests_at() { [ "$(count_of "$TMP/$1.count")" -ge "$2" ]; }
get() { curl -s --max-time 30 -H "Accept: $IGNITION_ACCEPT" "http://127.0.0.1:$PLAIN_PORT/config/worker"; }
# to_upstream PORT: the gate's file now points at 127.0.0.1:PORT; SIGHUP.
to_upstream() {
  sed -i "s/^  address: \"127.0.0.1:[0-9]*\"\$/  address: \"127.0.0.1:$1\"/" "$TMP/gate.yaml"
  grep -q "^  address: \"127.0.0.1:$1\"\$" "$TMP/gate.yaml" || fail "the upstream address was not rewritten"
  kill -HUP "$GATE_PID"
}
gate_on() {
  MCS_PORT=$1 gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug
coalesce:
  ttl: $2"
  gate_start "$TMP/gate.yaml"
}

note "1. a fetch in flight to A when a reload moves the upstream to B: requests after it go to B"
bad_at a1 --mode file --file "$TMP/a.json" --release-file "$TMP/release_a1"
bad_at b1 --mode file --file "$TMP/b.json"
A1=$(cat "$TMP/a1.port") B1=$(cat "$TMP/b1.port")
gate_on "$A1" 0s
get >"$TMP/leader" &
leader=$!
wait_until 10 requests_at a1 1 || fail "the leader's fetch did not reach A"
get >"$TMP/follower" &
follower=$!
wait_until 10 logged '"msg":"joined /config/worker' 1 || fail "the follower did not join before the reload"
to_upstream "$B1"
wait_until 10 reloaded 1 || fail "the reload was not taken by every worker"
# A still holds its answer: a request that joined A's fetch would wait here.
for i in 1 2 3 4; do get >"$TMP/after$i" & done
wait_until 20 sh -c "for i in 1 2 3 4; do test -s $TMP/after\$i || exit 1; done" ||
  fail "requests after the reload are waiting for A's answer: $(grep '"event":"coalesce"' "$GATE_LOG" | tail -4)"
for i in 1 2 3 4; do
  [ "$(cat "$TMP/after$i")" = '{"from":"MCS-B"}' ] || fail "request $i after the reload got $(cat "$TMP/after$i")"
done
[ "$(count_of "$TMP/a1.count")" = 1 ] || fail "A was asked $(count_of "$TMP/a1.count") times"
touch "$TMP/release_a1"
wait "$leader" "$follower"
[ "$(cat "$TMP/leader")" = '{"from":"MCS-A"}' ] || fail "the leader got $(cat "$TMP/leader")"
[ "$(cat "$TMP/follower")" = '{"from":"MCS-A"}' ] ||
  fail "the follower that asked before the reload got $(cat "$TMP/follower")"
gate_stop

note "2. a reload that keeps the upstream keeps sharing the fetch in flight"
bad_at a2 --mode file --file "$TMP/a.json" --release-file "$TMP/release_a2"
A2=$(cat "$TMP/a2.port")
gate_on "$A2" 0s
get >"$TMP/leader" &
leader=$!
wait_until 10 requests_at a2 1 || fail "the leader's fetch did not reach A"
sed -i 's/^upstream:$/upstream:\n  response_timeout: 29s/' "$TMP/gate.yaml"
grep -q '^  response_timeout: 29s$' "$TMP/gate.yaml" || fail "the upstream section was not changed"
kill -HUP "$GATE_PID"
wait_until 10 reloaded 1 || fail "the reload was not taken by every worker"
get >"$TMP/follower" &
follower=$!
wait_until 10 logged '"msg":"joined /config/worker' 1 ||
  fail "a request after a reload that kept the upstream did not join: $(grep '"event":"coalesce"' "$GATE_LOG")"
touch "$TMP/release_a2"
wait "$leader" "$follower"
[ "$(cat "$TMP/leader")" = '{"from":"MCS-A"}' ] && [ "$(cat "$TMP/follower")" = '{"from":"MCS-A"}' ] ||
  fail "leader $(cat "$TMP/leader"), follower $(cat "$TMP/follower")"
[ "$(count_of "$TMP/a2.count")" = 1 ] || fail "A was asked $(count_of "$TMP/a2.count") times"
gate_stop

note "3. coalesce.ttl 30s: A's kept answer is not B's"
bad_at a3 --mode file --file "$TMP/a.json"
bad_at b3 --mode file --file "$TMP/b.json"
A3=$(cat "$TMP/a3.port") B3=$(cat "$TMP/b3.port")
gate_on "$A3" 30s
[ "$(get)" = '{"from":"MCS-A"}' ] || fail "before the reload"
[ "$(get)" = '{"from":"MCS-A"}' ] || fail "before the reload, kept"
[ "$(count_of "$TMP/a3.count")" = 1 ] || fail "A's answer was not kept (A asked $(count_of "$TMP/a3.count") times)"
to_upstream "$B3"
wait_until 10 reloaded 1 || fail "the reload was not taken by every worker"
[ "$(grep -c '"event":"coalesce_dropped"' "$GATE_LOG")" = 1 ] || fail "A's kept answer was not let go at the reload"
for i in 1 2 3; do
  got=$(get)
  [ "$got" = '{"from":"MCS-B"}' ] || fail "request $i after the reload got $got"
done
[ "$(count_of "$TMP/b3.count")" = 1 ] || fail "B's answer was not kept (B asked $(count_of "$TMP/b3.count") times)"
note "... and a reload that keeps B serves B's kept answer"
sed -i 's/^upstream:$/upstream:\n  response_timeout: 29s/' "$TMP/gate.yaml"
kill -HUP "$GATE_PID"
wait_until 10 reloaded 2 || fail "the second reload was not taken by every worker"
[ "$(get)" = '{"from":"MCS-B"}' ] || fail "after a reload that kept B"
[ "$(count_of "$TMP/b3.count")" = 1 ] || fail "a reload that kept the upstream dropped B's kept answer"
[ "$(grep -c '"event":"coalesce_dropped"' "$GATE_LOG")" = 1 ] || fail "a reload that kept the upstream dropped a fetch"
[ "$(count_of "$TMP/a3.count")" = 1 ] || fail "A was asked again"
gate_stop

note "4. coalesce.ttl 30s: a fetch in flight to A across the reload to B is not kept"
bad_at a4 --mode file --file "$TMP/a.json" --release-file "$TMP/release_a4"
bad_at b4 --mode file --file "$TMP/b.json"
A4=$(cat "$TMP/a4.port") B4=$(cat "$TMP/b4.port")
gate_on "$A4" 30s
get >"$TMP/leader" &
leader=$!
wait_until 10 requests_at a4 1 || fail "the leader's fetch did not reach A"
to_upstream "$B4"
wait_until 10 reloaded 1 || fail "the reload was not taken by every worker"
touch "$TMP/release_a4"
wait "$leader"
[ "$(cat "$TMP/leader")" = '{"from":"MCS-A"}' ] || fail "the leader got $(cat "$TMP/leader")"
wait_until 10 logged '"event":"coalesce_dropped"' 1 || fail "A's answer, come after the reload, was kept"
[ "$(get)" = '{"from":"MCS-B"}' ] || fail "after the reload"
gate_stop

note "5. a reload that lowers coalesce.ttl applies to the answer already kept"
bad_at a5 --mode file --file "$TMP/a.json"
A5=$(cat "$TMP/a5.port")
gate_on "$A5" 30s
# set_ttl VALUE: the gate's coalesce.ttl now says so; SIGHUP.
set_ttl() {
  sed -i "s/^  ttl: .*\$/  ttl: $1/" "$TMP/gate.yaml"
  grep -q "^  ttl: $1\$" "$TMP/gate.yaml" || fail "the ttl was not rewritten"
  kill -HUP "$GATE_PID"
}
# coalesce_off: coalesce.enabled false (a ttl is refused with it); SIGHUP.
coalesce_off() {
  sed -i -e '/^  ttl: /d' -e 's/^coalesce:$/coalesce:\n  enabled: false/' "$TMP/gate.yaml"
  grep -q '^  enabled: false$' "$TMP/gate.yaml" || fail "coalescing was not turned off"
  kill -HUP "$GATE_PID"
}
kept_then_asked() {   # N: the answer is kept (A asked N times), then the reload's effect
  [ "$(get)" = '{"from":"MCS-A"}' ] && [ "$(get)" = '{"from":"MCS-A"}' ] || fail "the answers before the reload"
  [ "$(count_of "$TMP/a5.count")" = "$1" ] || fail "A's answer was not kept (A asked $(count_of "$TMP/a5.count") times, want $1)"
}
kept_then_asked 1
set_ttl 0s
wait_until 10 reloaded 1 || fail "the reload to ttl 0s was not taken by every worker"
[ "$(get)" = '{"from":"MCS-A"}' ] || fail "after the reload to ttl 0s"
[ "$(count_of "$TMP/a5.count")" = 2 ] ||
  fail "the answer kept for 30 s outlived a reload to ttl 0s (A asked $(count_of "$TMP/a5.count") times, want 2)"
logged 'the reload lowered the ttl to 0' 1 || fail "the log does not say why the kept answer went"
set_ttl 30s
wait_until 10 reloaded 2 || fail "the reload back to 30s was not taken by every worker"
kept_then_asked 3
set_ttl 1s
wait_until 10 reloaded 3 || fail "the reload to ttl 1s was not taken by every worker"
asked_again() { get >/dev/null; [ "$(count_of "$TMP/a5.count")" -ge 4 ]; }
wait_until 10 asked_again || fail "the answer kept for 30 s outlived a reload to ttl 1s by 10 s"
set_ttl 30s
wait_until 10 reloaded 4 || fail "the reload back to 30s was not taken by every worker"
# The answer of the last get may be kept for what is left of its 1 s.
fetched_fresh() { local n; n=$(count_of "$TMP/a5.count"); get >/dev/null; [ "$(count_of "$TMP/a5.count")" -gt "$n" ]; }
wait_until 10 fetched_fresh || fail "no fresh fetch after the reload to 30s"
n=$(count_of "$TMP/a5.count")
get >/dev/null
[ "$(count_of "$TMP/a5.count")" = "$n" ] || fail "the fresh fetch after the reload to 30s was not kept"
coalesce_off
wait_until 10 reloaded 5 || fail "the reload turning coalescing off was not taken by every worker: $(grep '"event":"reload"' "$GATE_LOG" | tail -1)"
logged 'the reload lowered the ttl to 0 or turned coalescing off' 2 ||
  fail "the answer kept for 30 s was not let go at the reload that turned coalescing off"
get >/dev/null
[ "$(count_of "$TMP/a5.count")" = $((n + 1)) ] || fail "a request with coalescing off was not its own fetch"
echo "PASS"
