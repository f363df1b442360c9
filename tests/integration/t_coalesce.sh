#!/usr/bin/env bash
# Coalescing (issue 14.1): concurrent admitted GETs for the same pool and
# spec share one upstream fetch, byte-exact; a leader cut mid-body or
# failed before its head fails every follower; a slow follower holds up
# no one; HEAD, coalesce.enabled: false and max_followers overflow go
# upstream on their own. The upstream holds every answer until the test
# releases it, once the gate's debug log shows every request attached (or
# the upstream has counted every request it must get): no timing guesses.
# The memory bound (8 slow readers hold one body) is t_coalesce_rss.sh's,
# alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_coalesce.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
CLIENTS="$ROOT/tests/integration/coalesce_clients.py"
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(3*1024*1024+17))' >"$TMP/config.json"
WANT_SHA=$(sha256sum "$TMP/config.json" | cut -d' ' -f1)
WANT_LEN=$(stat -c %s "$TMP/config.json")

upstream_count() { [ "$(wc -l <"$TMP/bad.count" 2>/dev/null || echo 0)" -ge "$1" ]; }
metric() { curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# gate EXTRA_YAML MODE_ARGS...: coalesce_gate, the upstream holding its
# answers until $TMP/release.
gate() { local extra=$1; shift; coalesce_gate "$extra" "$@" --release-file "$TMP/release"; }

# exact N FILE...: the N results in the FILEs are all 200, whole and
# byte-exact, each with the close head it asked for.
exact() {
  python3 - "$WANT_SHA" "$@" <<'PY'
import json, sys
sha, n = sys.argv[1], int(sys.argv[2])
rs = [json.loads(l) for f in sys.argv[3:] for l in open(f)]
bad = [r for r in rs if not (r and r.get("status") == 200 and r.get("complete") and r.get("sha256") == sha
                              and r.get("conn_close"))]
assert len(rs) == n and not bad, (len(rs), bad[:3])
PY
}

note "100 concurrent fetches (plain and TLS, across 2 workers): 1 upstream request, every body byte-exact"
gate "" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 50 --out "$TMP/res_plain.json" &
python3 "$CLIENTS" --port "$TLS_PORT" --ca "$CA" -n 50 --out "$TMP/res_tls.json" &
wait_until 60 attached 100 || fail "only $(grep -c '"event":"coalesce"' "$GATE_LOG") of 100 requests attached"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" -a -s "$TMP/res_tls.json" || fail "the clients did not finish"
exact 100 "$TMP/res_plain.json" "$TMP/res_tls.json" || fail "a body was not byte-exact"
[ "$(wc -l <"$TMP/bad.count")" = 1 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests for 100 coalesced fetches"
[ "$(grep -c '"msg":"leads /config/worker' "$GATE_LOG")" = 1 ] || fail "not exactly one leader"
[ "$(metric skewgate_coalesce_followers_total)" = 99 ] || fail "followers_total $(metric skewgate_coalesce_followers_total)"
[ "$(metric skewgate_coalesce_renders_saved_total)" = 99 ] || fail "renders_saved_total $(metric skewgate_coalesce_renders_saved_total)"
[ "$(access_count status 200)" = 100 ] || fail "$(access_count status 200) access lines with 200"
note "a later request, with the fetch over, goes upstream again (coalesce.ttl is 0)"
code=$(curl -s -o "$TMP/again" -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/worker")
[ "$code" = 200 ] && cmp -s "$TMP/again" "$TMP/config.json" || fail "the later request: $code"
[ "$(wc -l <"$TMP/bad.count")" = 2 ] || fail "a completed fetch was reused with ttl 0"
note "another spec is another fetch"
curl -s -o /dev/null -H 'Accept: application/vnd.coreos.ignition+json;version=2.2.0' "http://127.0.0.1:$PLAIN_PORT/config/worker"
[ "$(wc -l <"$TMP/bad.count")" = 3 ] || fail "a spec 2.2 request did not go upstream"
stop_all

note "a leader cut mid-body: every follower gets a short body, never a complete one"
gate "" cut --cut-file "$TMP/cut"
mkdir -p "$TMP/marks_plain" "$TMP/marks_tls"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 10 --mark-dir "$TMP/marks_plain" --out "$TMP/res_plain.json" &
python3 "$CLIENTS" --port "$TLS_PORT" --ca "$CA" -n 10 --mark-dir "$TMP/marks_tls" --out "$TMP/res_tls.json" &
wait_until 60 attached 20 || fail "the cut clients did not attach"
touch "$TMP/release"
heads_in() { [ "$(ls "$TMP/marks_plain" "$TMP/marks_tls" | grep -c '^[0-9]')" = 20 ]; }
wait_until 60 heads_in || fail "the followers did not get the head before the cut"
touch "$TMP/cut"
wait_until 60 test -s "$TMP/res_plain.json" -a -s "$TMP/res_tls.json" || fail "the cut clients did not finish"
python3 - "$TMP/res_plain.json" "$TMP/res_tls.json" <<'PY' || fail "a cut body passed as complete"
import json, sys
rs = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
assert len(rs) == 20
for r in rs:
    assert r["status"] == 200 and r["length"] == 1000000, r
    assert not r["complete"] and r["got"] < 1000000 and r["end"] != "complete", r

PY
[ "$(wc -l <"$TMP/bad.count")" = 1 ] || fail "the cut fetch was asked $(wc -l <"$TMP/bad.count") times"
stop_all

note "a leader that fails before its head: its 502 is its own, every follower asks the MCS on its own"
gate "" drop
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 10 --out "$TMP/res_plain.json" &
wait_until 60 attached 10 || fail "the drop clients did not attach"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" || fail "the drop clients did not finish"
python3 - "$TMP/res_plain.json" <<'PY' || fail "followers of a failed fetch"
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 10 and all(r["status"] == 502 for r in rs), rs
PY
[ "$(wc -l <"$TMP/bad.count")" = 10 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests: the followers took the leader's failure"
stop_all

note "a slow follower (the leader's own client, 4 KiB receive buffer, not reading) holds up no one"
gate "" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" --slow --go-file "$TMP/go" --slow-mark-file "$TMP/slow_mark" --out "$TMP/res_slow.json" &
wait_until 30 attached 1 || fail "the slow client did not attach"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 4 --out "$TMP/res_plain.json" &
python3 "$CLIENTS" --port "$TLS_PORT" --ca "$CA" -n 4 --out "$TMP/res_tls.json" &
wait_until 30 attached 9 || fail "the fast clients did not attach"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" -a -s "$TMP/res_tls.json" || fail "the fast clients were held up"
# The fast ones have every byte; the slow one is still connected, behind.
exact 8 "$TMP/res_plain.json" "$TMP/res_tls.json" || fail "a fast client"
[ ! -e "$TMP/res_slow.json" ] || fail "the slow client ended early"
slow_conns=$(ss -tn state established "( dport = :$PLAIN_PORT )" | tail -n +2 | wc -l)
[ "$slow_conns" -ge 1 ] || fail "the slow client is not connected"
touch "$TMP/go"
wait_until 60 test -s "$TMP/res_slow.json" || fail "the slow client did not finish"
behind=$(cat "$TMP/slow_mark")
[ "$behind" -lt "$WANT_LEN" ] || fail "the slow client had all $behind bytes before it read"
exact 1 "$TMP/res_slow.json" || fail "the slow client's body"
[ "$(wc -l <"$TMP/bad.count")" = 1 ] || fail "the slow test made $(wc -l <"$TMP/bad.count") upstream requests"
stop_all

note "coalesce.enabled: false: N concurrent fetches make N upstream requests"
gate "coalesce:
  enabled: false" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 10 --out "$TMP/res_plain.json" &
wait_until 60 upstream_count 10 || fail "only $(wc -l <"$TMP/bad.count" 2>/dev/null) of 10 requests went upstream"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" || fail "the clients did not finish"
[ "$(wc -l <"$TMP/bad.count")" = 10 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests with coalescing off"
[ "$(metric skewgate_coalesce_followers_total)" = 0 ] || fail "followers with coalescing off"
stop_all

note "HEAD is not coalesced"
gate "" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" --head -n 5 --out "$TMP/res_plain.json" &
wait_until 60 upstream_count 5 || fail "only $(wc -l <"$TMP/bad.count" 2>/dev/null) of 5 HEADs went upstream"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" || fail "the HEAD clients did not finish"
! grep -q '"event":"coalesce"' "$GATE_LOG" || fail "a HEAD was coalesced"
stop_all

note "max_followers: 2: the leader and 2 followers share, and the overflow shares a second fetch"
gate "coalesce:
  max_followers: 2" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 9 --out "$TMP/res_plain.json" &
wait_until 60 attached 9 || fail "only $(grep -c '"event":"coalesce"' "$GATE_LOG") of 9 requests attached"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" || fail "the clients did not finish"
exact 9 "$TMP/res_plain.json" || fail "max_followers bodies"
[ "$(wc -l <"$TMP/bad.count")" = 3 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests, expected 3 fetches of 1 + 2"
[ "$(grep -c '"msg":"leads /config/worker' "$GATE_LOG")" = 3 ] || fail "not 3 leaders"
[ "$(metric skewgate_coalesce_followers_total)" = 6 ] || fail "followers_total $(metric skewgate_coalesce_followers_total)"
stop_all

note "coalesce.max_body below the body: unshared, the leader gets its own response, followers ask on their own"
gate "coalesce:
  max_body: 1MiB" file --file "$TMP/config.json"
python3 "$CLIENTS" --port "$PLAIN_PORT" -n 3 --out "$TMP/res_plain.json" &
wait_until 60 attached 3 || fail "the clients did not attach"
touch "$TMP/release"
wait_until 60 test -s "$TMP/res_plain.json" || fail "the clients did not finish"
exact 3 "$TMP/res_plain.json" || fail "max_body bodies"
[ "$(wc -l <"$TMP/bad.count")" = 3 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests, expected 3 (the leader's is reused)"
stop_all

note "coalesce.ttl keeps a completed body: a later request is served from it"
gate "coalesce:
  ttl: 30s" file --file "$TMP/config.json"
touch "$TMP/release"
for i in 1 2 3; do
  curl -s -o "$TMP/ttl$i" "http://127.0.0.1:$PLAIN_PORT/config/worker"
  cmp -s "$TMP/ttl$i" "$TMP/config.json" || fail "ttl fetch $i"
done
[ "$(wc -l <"$TMP/bad.count")" = 1 ] || fail "$(wc -l <"$TMP/bad.count") upstream requests with ttl 30s"
stop_all
