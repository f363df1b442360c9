#!/usr/bin/env bash
# The exchange's own promises: an upstream head of any size up to
# limits.max_header_bytes is relayed whole (and one over it is a 502); a
# request that waited in the upstream queue reaches the MCS as it was sent,
# whatever other requests the worker parsed meanwhile; a pooled upstream
# connection that died between two uses costs the node nothing (the request
# goes again, once, on a new connection, as it was).
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"


note "a 12 KiB upstream head is relayed whole, plain and TLS"
start_bad bighead --head-bytes 12288
MCS_PORT=$BAD_PORT
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
for url in "http://127.0.0.1:$PLAIN_PORT/config/worker" "https://127.0.0.1:$TLS_PORT/config/worker"; do
  curl -s --cacert "$CA" -D "$TMP/head" -o "$TMP/body" -w '%{http_code}' "$url" >"$TMP/code"
  [ "$(cat "$TMP/code")" = 200 ] || fail "12 KiB head via $url: $(cat "$TMP/code")"
  [ "$(cat "$TMP/body")" = ok ] || fail "12 KiB head via $url: body $(head -c 100 "$TMP/body")"
  pads=$(grep -c '^X-Pad-' "$TMP/head")
  [ "$pads" -ge 55 ] || fail "12 KiB head via $url: only $pads padding fields arrived"
  size=$(stat -c %s "$TMP/head")
  [ "$size" -ge 12000 ] || fail "12 KiB head via $url: $size bytes arrived"
done
gate_stop

note "a 20 KiB upstream head, over limits.max_header_bytes (16 KiB): 502"
start_bad bighead --head-bytes 20480
MCS_PORT=$BAD_PORT
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/worker")
[ "$code" = 502 ] || fail "20 KiB head: $code"
gate_stop

note "a queued request reaches the MCS as it was sent"
rm -f "$TMP/bad.count" "$TMP/release"
start_bad echo --release-file "$TMP/release"
MCS_PORT=$BAD_PORT
ADMIN_PORT=$(free_port)
GATE_WORKERS=1 ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" UPSTREAM_EXTRA="  max_concurrent: 1" \
  gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
# A holds the only upstream slot until the release file exists.
curl -s -o "$TMP/a.out" "http://127.0.0.1:$PLAIN_PORT/config/hold" &
PIDS+=($!); a_pid=$!
wait_until 10 test -s "$TMP/bad.count" || fail "the first request did not reach the upstream"
open_conns_are() { # N: the gate holds N plain client connections
  [ "$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | sed -n 's/^skewgate_connections{state="plain"} //p')" = "$1" ]
}
# B waits in the queue; then C, with other fields, is parsed by the same worker.
curl -s -o "$TMP/b.out" -H 'X-Who: bee' "http://127.0.0.1:$PLAIN_PORT/config/worker?queued=BBBBBBBB" &
PIDS+=($!); b_pid=$!
wait_until 10 open_conns_are 2 || fail "B was not accepted"
curl -s -o "$TMP/c.out" -H 'X-Other-Client: sea' -H 'X-Filler: cccccccccccccccccccccccccccccc' \
  "http://127.0.0.1:$PLAIN_PORT/config/master-with-a-longer-name" &
PIDS+=($!); c_pid=$!
wait_until 10 open_conns_are 3 || fail "C was not accepted"
[ "$(grep -c req "$TMP/bad.count")" = 1 ] || fail "B or C reached the upstream past the cap"
touch "$TMP/release"
wait "$a_pid" "$b_pid" "$c_pid" || fail "a client failed"
grep -q '^GET /config/worker?queued=BBBBBBBB HTTP/1.1' "$TMP/b.out" || fail "B reached the MCS as: $(head -c 300 "$TMP/b.out")"
grep -q '^X-Who: bee' "$TMP/b.out" || fail "B lost its fields: $(cat "$TMP/b.out")"
grep -q 'X-Other-Client' "$TMP/b.out" && fail "B carries C's fields: $(cat "$TMP/b.out")"
grep -q '^GET /config/master-with-a-longer-name HTTP/1.1' "$TMP/c.out" || fail "C reached the MCS as: $(head -c 300 "$TMP/c.out")"
grep -q '^X-Forwarded-For: 127.0.0.1' "$TMP/b.out" || fail "B has no X-Forwarded-For"
gate_stop

note "a pooled upstream connection that died unseen: the request is sent again, once, intact"
rm -f "$TMP/bad.count"
start_bad once --release-file "$TMP/never"
MCS_PORT=$BAD_PORT
GATE_WORKERS=1 gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
curl -s -o "$TMP/first.out" -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/worker?n=1" >"$TMP/code1"
[ "$(cat "$TMP/code1")" = 200 ] || fail "first request: $(cat "$TMP/code1")"
curl -s -o "$TMP/second.out" -w '%{http_code}' -H 'X-Second: yes' \
  "http://127.0.0.1:$PLAIN_PORT/config/worker?n=2" >"$TMP/code2"
[ "$(cat "$TMP/code2")" = 200 ] || fail "second request on the dead pooled connection: $(cat "$TMP/code2")"
grep -q '^GET /config/worker?n=2 HTTP/1.1' "$TMP/second.out" || fail "the retry sent: $(head -c 300 "$TMP/second.out")"
grep -q '^X-Second: yes' "$TMP/second.out" || fail "the retry lost a field: $(cat "$TMP/second.out")"
# the first request, the second on the dead connection, the second again
[ "$(grep -c req "$TMP/bad.count")" = 3 ] || fail "upstream saw $(grep -c req "$TMP/bad.count") requests, expected 3"
gate_stop
echo PASS
