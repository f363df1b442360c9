#!/usr/bin/env bash
# A reload frees the configuration it replaces once no request holds it.
# Coalesced requests (admitted GETs, coalescing on by default) never gave
# their configuration generation back, so every reload after one left the
# old configuration in each worker's memory for good (found in review).
# Here: admitted GETs of every kind (coalesced, HEAD, with a query), then
# a reload, three times over; each time the worker frees the old
# generation at once, as its debug log says. Then a request under way
# across a reload keeps the old generation until it ends, and it goes
# with it. One worker, so one line per reload.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/config" || fail "no /config"

reloads() { curl -sf "$ADMIN/config" | sed -n 's/^ *"success": \([0-9]*\).*/\1/p'; }
reloads_are() { [ "$(reloads)" = "$1" ]; }
freed() { [ "$(grep -c '"event":"config_generation_freed"' "$GATE_LOG")" -ge "$1" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

for round in 1 2 3; do
  note "round $round: admitted requests, then a reload"
  [ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] || fail "GET"
  [ "$(code --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/master")" = 200 ] || fail "GET over TLS"
  [ "$(code -I "http://127.0.0.1:$PLAIN_PORT/config/worker")" = 200 ] || fail "HEAD"
  [ "$(code "http://127.0.0.1:$PLAIN_PORT/config/worker?x=$round")" = 200 ] || fail "GET with a query"
  grep -q '"msg":"leads /config/worker' "$GATE_LOG" || fail "the GET was not coalesced (nothing tested)"
  kill -HUP "$GATE_PID"
  wait_until 10 reloads_are "$round" || fail "reload $round not counted: $(curl -s "$ADMIN/config")"
  wait_until 10 freed "$round" ||
    fail "after reload $round the old configuration is still held: $(grep -c config_generation_freed "$GATE_LOG") freed"
done
grep -q '"msg":"the configuration before a reload is freed at once: no exchange holds it"' "$GATE_LOG" ||
  fail "not freed at once: $(grep config_generation_freed "$GATE_LOG" | head -3)"
gate_stop

note "a coalesced request under way across a reload keeps the old configuration until it ends"
python3 -c 'import sys; sys.stdout.write("x" * 100000)' >"$TMP/body"
mkdir -p "$TMP/release"
start_bad gated --file "$TMP/body" --release-dir "$TMP/release"
MCS_PORT=$BAD_PORT GATE_WORKERS=1 ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/config" || fail "no /config"
upstream_saw() { grep -q "^$1\$" "$TMP/bad.count" 2>/dev/null; }
curl -s -o "$TMP/slow.body" -w '%{http_code}' --max-time 30 "http://127.0.0.1:$PLAIN_PORT/config/worker" >"$TMP/slow.code" &
slow=$!
wait_until 10 upstream_saw /config/worker || fail "the request did not reach the upstream"
grep -q '"msg":"leads /config/worker' "$GATE_LOG" || fail "the request was not coalesced"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || fail "the reload was not counted"
! freed 1 || fail "the configuration of a request under way was freed"
touch "$TMP/release/worker"
wait "$slow"
[ "$(cat "$TMP/slow.code")" = 200 ] && cmp -s "$TMP/slow.body" "$TMP/body" || fail "the request across the reload: $(cat "$TMP/slow.code")"
wait_until 10 freed 1 || fail "the old configuration outlived its last request"
grep -q '"msg":"the configuration before a reload is freed with the last exchange that held it"' "$GATE_LOG" ||
  fail "freed, but not with its last exchange: $(grep config_generation_freed "$GATE_LOG")"
gate_stop
