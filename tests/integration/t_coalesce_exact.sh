#!/usr/bin/env bash
# Shared fetches are exact (issue 19): a request shares another's answer
# only when the MCS would receive the same in every byte it reads (the
# request line and the Accept lines, as forwarded), and only a complete
# 200 that any asker may have is shared; every other answer belongs to the
# request that caused it, and followers ask the MCS on their own. A
# trickling reader is cut at coalesce.min_read_rate's deadline, so slow
# readers cannot hold the body budget. Each upstream holds its answers
# until the test releases them, once the gate's debug log shows every
# request attached: no timing guesses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_coalesce.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
CLIENTS="$ROOT/tests/integration/coalesce_clients.py"
upstream_requests() { wc -l <"$TMP/bad.count" 2>/dev/null || echo 0; }

gate() { coalesce_gate "$@"; }

note "48 requests with Accept bytes of every kind, all in flight at once: each gets the answer to its own forwarded request"
# The echo upstream answers with the head it received, so a body shows
# which request it was rendered for. 11 distinct forwarded keys: the
# ?token= requests forward as the plain ones (the parameter is stripped),
# and Connection: Accept forwards as no Accept at all.
python3 - "$TMP/cases.json" <<'PY'
import json, random, sys
ign = "application/vnd.coreos.ignition+json;version=%s, */*;q=0.1"
kinds = [
    (10, {"fields": [["Accept", ign % "3.4.0"]]}),
    (3, {"fields": [["Accept", ign % "3.4.0"]], "target": "/config/hold?token=s3cret", "want_target": "/config/hold"}),
    (5, {"fields": [["Accept", ign % "3.5.0"]]}),
    (3, {"fields": [["Accept", "Application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"]]}),
    (3, {"fields": [["Accept", "application/vnd.coreos.ignition+json; version=3.4.0, */*;q=0.1"]]}),
    (3, {"fields": [["accept", ign % "3.4.0"]]}),
    (3, {"fields": []}),
    (3, {"fields": [["Connection", "Accept"], ["Accept", ign % "3.4.0"]]}),
    (3, {"fields": [["Accept", ign % "3.4.0"], ["Accept", ign % "3.5.0"]]}),
    (3, {"fields": [["Accept", ign % "1.0.0"]]}),
    (3, {"fields": [["Accept", "application/vnd.coreos.ignition+json;version=3.4.0;q=0.5, */*;q=0.1"]]}),
    (3, {"fields": [["Accept", ign % "3.4.0"]], "target": "/config/hold?x=1"}),
    (3, {"fields": [["Accept", "*/*"]]}),
]
assert len(cases := [dict(c) for n, c in kinds for _ in range(n)]) == 48
random.Random(19).shuffle(cases)
# The issue's repro first: a 3.5.0 leader, then 3.4.0 followers.
cases.sort(key=lambda c: c["fields"] != [["Accept", ign % "3.5.0"]])
json.dump(cases, open(sys.argv[1], "w"))
PY
gate "" echo --release-file "$TMP/release"
python3 "$ROOT/tests/integration/coalesce_exact_clients.py" --port "$PLAIN_PORT" --cases "$TMP/cases.json" \
  >"$TMP/exact.json" &
clients=$!
wait_until 60 attached 48 || fail "only $(grep -c '"event":"coalesce"' "$GATE_LOG") of 48 requests attached"
touch "$TMP/release"
wait "$clients" || fail "the clients failed"
cat "$TMP/exact.json"
python3 - "$TMP/exact.json" "$(upstream_requests)" <<'PY' || fail "a request got an answer made for another"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["answers"] == 48, r
assert r["mismatches"] == 0, r["bad"]
assert int(sys.argv[2]) == r["keys"] == 11, ("upstream requests", sys.argv[2], "distinct keys", r["keys"])
PY
stop_all

# storm N STATUSES [EXTRA_HEADER]: N identical requests while the scripted
# upstream holds its first answer; prints the statuses the clients got.
storm() {
  local n=$1 statuses=$2 header=${3:-}
  gate "" scripted --release-file "$TMP/release" --statuses "$statuses" ${header:+--extra-header "$header"}
  python3 "$CLIENTS" --port "$PLAIN_PORT" -n "$n" --out "$TMP/res.json" &
  wait_until 60 attached "$n" || fail "only $(grep -c '"event":"coalesce"' "$GATE_LOG") of $n requests attached"
  touch "$TMP/release"
  wait_until 60 test -s "$TMP/res.json" || fail "the clients did not finish"
}
statuses() { python3 -c 'import json,sys; print(" ".join(sorted(str(json.loads(l)["status"]) for l in open(sys.argv[1]))))' "$1"; }
distinct_bodies() { python3 -c 'import json,sys; print(len({json.loads(l).get("sha256") for l in open(sys.argv[1])}))' "$1"; }

for status in 400 404 500; do
  note "a leader answered $status: the $status is its own; 9 followers ask the MCS on their own and get its 200"
  storm 10 "$status,200"
  got=$(statuses "$TMP/res.json")
  [ "$got" = "200 200 200 200 200 200 200 200 200 $status" ] || fail "statuses: $got"
  [ "$(upstream_requests)" = 10 ] || fail "$(upstream_requests) upstream requests, expected 10"
  stop_all
done

note "a 200 with Set-Cookie is not shared: 9 clients, 9 renders, 9 cookies"
storm 9 200 "Set-Cookie: s=%d"
[ "$(statuses "$TMP/res.json")" = "200 200 200 200 200 200 200 200 200" ] || fail "statuses: $(statuses "$TMP/res.json")"
[ "$(upstream_requests)" = 9 ] && [ "$(distinct_bodies "$TMP/res.json")" = 9 ] || fail "one cookie answer was shared"
stop_all

note "a 200 with Cache-Control: no-store is not shared"
storm 5 200 "Cache-Control: no-store"
[ "$(upstream_requests)" = 5 ] && [ "$(distinct_bodies "$TMP/res.json")" = 5 ] || fail "a no-store answer was shared"
stop_all

note "a plain 200 still is: 10 clients, 1 render"
storm 10 200
[ "$(upstream_requests)" = 1 ] && [ "$(distinct_bodies "$TMP/res.json")" = 1 ] || fail "$(upstream_requests) renders"
stop_all

note "readers trickling bytes are cut at coalesce.min_read_rate's deadline, and free the body budget"
# Shared bodies held at once stay within 4 x max_body: 64 MiB. Five
# readers of five 12 MiB fetches hold 60 MiB; at 400 KiB/s they would
# take 31 s, fast enough for send_timeout (an idle timer: the kernel's
# send buffer takes a few MiB, so writes go on every 2-3 s) never to cut
# them. Their deadline is send_timeout 5s + 12 MiB at 1 MiB/s: 17 s.
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(12*1024*1024))' >"$TMP/config.json"
mkdir -p "$TMP/gates"
gate "coalesce:
  min_read_rate: 1MiB
limits:
  send_timeout: 5s" gated --file "$TMP/config.json" --release-dir "$TMP/gates"
for i in 1 2 3 4 5; do
  python3 "$CLIENTS" --port "$PLAIN_PORT" --path "/config/slow$i" --trickle 409600 --out "$TMP/slow$i.json" &
done
wait_until 30 attached 5 || fail "the slow readers did not attach"
start=$(date +%s%N)
touch "$TMP"/gates/slow{1,2,3,4,5}
too_slow() { [ "$(grep -c '"reason":"ClientTooSlow"' "$GATE_LOG")" -ge 5 ]; }
wait_until 40 too_slow || fail "the trickling readers were not cut: $(grep -c ClientTooSlow "$GATE_LOG") of 5 ($(grep -c ClientSendTimeout "$GATE_LOG") by send_timeout)"
took=$(( ($(date +%s%N) - start) / 1000000 ))
echo "5 trickling readers cut after ${took} ms (deadline 17000 ms)"
[ "$took" -ge 16500 ] || fail "cut before their deadline (${took} ms)"
for i in 1 2 3 4 5; do
  wait_until 30 test -s "$TMP/slow$i.json" || fail "trickling reader $i did not end"
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read()); assert r["status"] == 200 and not r["complete"], r' \
    "$TMP/slow$i.json" || fail "a cut reader took its body as complete"
done
note "then a storm of 3 shares one render again (the budget is free)"
python3 "$CLIENTS" --port "$PLAIN_PORT" --path /config/after -n 3 --out "$TMP/res.json" &
wait_until 30 attached 8 || fail "the storm did not attach"
touch "$TMP/gates/after"
wait_until 60 test -s "$TMP/res.json" || fail "the storm did not finish"
[ "$(grep -c '^/config/after$' "$TMP/bad.count")" = 1 ] || fail "the storm made $(grep -c '^/config/after$' "$TMP/bad.count") renders: the budget was still held"
note "a reader at full speed is not cut"
code=$(curl -s -o "$TMP/fast" -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/slow1")
[ "$code" = 200 ] && cmp -s "$TMP/fast" "$TMP/config.json" || fail "the fast reader: $code"
stop_all
