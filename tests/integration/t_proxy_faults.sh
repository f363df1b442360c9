#!/usr/bin/env bash
# Upstream faults seen from outside (issue 12): an unframed body cut by a
# reset reaches the node as an error, never as a whole config; the
# response timeout is a deadline for the whole head, not a gap between
# bytes; a timeout mid-body is one reason in the access log and in the
# metrics, with the time spent on the upstream; a chunked answer reaches an
# HTTP/1.0 client as its payload, ended by the close.
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"


# fetch URL OUT: curl's exit status, bytes in OUT
fetch() {
  set +e
  curl -s --max-time 20 --cacert "$CA" -o "$2" "$1"
  local rc=$?
  set -e
  echo "$rc"
}

note "an unframed body that ends with a clean close is whole"
start_bad unframed
MCS_PORT=$BAD_PORT
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
for url in "http://127.0.0.1:$PLAIN_PORT/config/worker" "https://127.0.0.1:$TLS_PORT/config/worker"; do
  rc=$(fetch "$url" "$TMP/whole")
  [ "$rc" = 0 ] || fail "clean unframed body via $url: curl exit $rc"
  [ "$(stat -c %s "$TMP/whole")" = 100000 ] || fail "clean unframed body via $url: $(stat -c %s "$TMP/whole") bytes"
done
gate_stop

note "an unframed body cut by a reset: the node sees an error, plain and TLS"
start_bad unframed-reset
MCS_PORT=$BAD_PORT
ADMIN_PORT=$(free_port)
ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
for url in "http://127.0.0.1:$PLAIN_PORT/config/worker" "https://127.0.0.1:$TLS_PORT/config/worker"; do
  rc=$(fetch "$url" "$TMP/cut")
  [ "$rc" != 0 ] || fail "a reset unframed body passed as whole via $url ($(stat -c %s "$TMP/cut") bytes)"
done
# the gate goes on serving
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/healthz")
[ "$code" = 200 ] || fail "the gate stopped answering after the cut: $code"
gate_stop

note "upstream.response_timeout bounds the whole head, however slowly it trickles"
start_bad trickle-head
MCS_PORT=$BAD_PORT
UPSTREAM_EXTRA="  response_timeout: 1s" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$PLAIN_PORT/config/worker")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$code" = 504 ] || fail "a head trickled for 6 s passed a 1 s response timeout: $code after ${ms} ms"
[ "$ms" -ge 900 ] && [ "$ms" -lt 3000 ] || fail "the trickled head was cut after ${ms} ms, expected about 1000"
gate_stop

note "a timeout mid-body: one reason in the log and the metrics, and the upstream time"
start_bad stall-body
MCS_PORT=$BAD_PORT
ADMIN_PORT=$(free_port)
ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" UPSTREAM_EXTRA="  response_timeout: 500ms" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
rc=$(fetch "http://127.0.0.1:$PLAIN_PORT/config/worker" "$TMP/stalled")
[ "$rc" != 0 ] || fail "a body stalled mid-way passed as whole"
wait_until 5 grep -q '"reason":"UpstreamTimeout"' "$GATE_LOG" || fail "no UpstreamTimeout in the access log"
python3 - "$GATE_LOG" <<'PY' || fail "the access log line"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"event":"access"' in l]
cut = [l for l in lines if l.get("reason") == "UpstreamTimeout"]
assert len(cut) == 1, lines
assert cut[0]["upstream_time"] >= 0.4, cut[0]
assert cut[0]["status"] == 200 and 100000 <= cut[0]["bytes"] < 1000000, cut[0]
PY
metrics=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
grep -qx 'skewgate_upstream_errors_total{kind="timeout"} 1' <<<"$metrics" ||
  fail "metrics: $(grep upstream_errors <<<"$metrics")"
grep -qx 'skewgate_upstream_errors_total{kind="closed"} 0' <<<"$metrics" ||
  fail "metrics count the timeout as closed: $(grep upstream_errors <<<"$metrics")"
gate_stop

note "a chunked answer to an HTTP/1.0 client: de-chunked, delimited by the close"
start_bad chunked
MCS_PORT=$BAD_PORT
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
expected_sum=$(python3 -c 'import hashlib,sys; sys.stdout.write(hashlib.sha256(bytes((i * 7 + i // 251) % 256 for i in range(300000))).hexdigest())')
for url in "http://127.0.0.1:$PLAIN_PORT/config/worker" "https://127.0.0.1:$TLS_PORT/config/worker"; do
  set +e
  curl -s --http1.0 --max-time 20 --cacert "$CA" -D "$TMP/h10.head" -o "$TMP/h10.body" "$url"; rc=$?
  set -e
  [ "$rc" = 0 ] || fail "HTTP/1.0 via $url: curl exit $rc"
  grep -qi '^transfer-encoding' "$TMP/h10.head" && fail "chunked sent to an HTTP/1.0 client via $url: $(cat "$TMP/h10.head")"
  grep -qi '^connection: close' "$TMP/h10.head" || fail "no Connection: close via $url: $(cat "$TMP/h10.head")"
  sum=$(sha256sum "$TMP/h10.body" | cut -d' ' -f1)
  [ "$sum" = "$expected_sum" ] || fail "HTTP/1.0 via $url: the payload differs ($(stat -c %s "$TMP/h10.body") bytes)"
done
gate_stop
echo PASS
