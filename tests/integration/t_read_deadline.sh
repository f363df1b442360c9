#!/usr/bin/env bash
# Every reader has a deadline (issue 27), counted from when the bytes were
# there to read: a client waiting on a slow MCS is not too slow. Here the
# MCS sends its 200 bytes one every 10 ms (2 s), while send_timeout (1 s)
# plus the body at coalesce.min_read_rate is about 1.2 s: a client that
# reads at once gets the whole answer, shared or relayed. Before, a shared
# reader's deadline ran from its head and it was cut, ClientTooSlow.
# run: alone: the reader must take 200 bytes within send_timeout (1 s) of their arrival
. "$(dirname "$0")/lib.sh"

certs
start_bad trickle-body
MCS_PORT=$BAD_PORT
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
for coalesce in true false; do
  note "coalesce.enabled: $coalesce"
  gate_config "$TMP/gate.yaml" hold "$object" "limits:
  send_timeout: 1s
coalesce:
  enabled: $coalesce
  min_read_rate: 1KiB"
  gate_start "$TMP/gate.yaml"
  body=$(curl -sf --max-time 10 "http://127.0.0.1:$PLAIN_PORT/config/worker") || fail "the reader was cut (curl $?)"
  [ "$body" = "$(printf 't%.0s' $(seq 200))" ] || fail "the body is not the MCS's 200 bytes: ${#body}"
  [ "$(access_count reason ClientTooSlow)" = 0 ] || fail "a reader waiting on the MCS was logged ClientTooSlow"
  gate_stop
done
