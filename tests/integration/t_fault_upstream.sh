#!/usr/bin/env bash
# Upstream faults of issue 12 item 3 that t_proxy_upstream.sh,
# t_proxy_exchange.sh and t_proxy_faults.sh leave out: a reset during the
# head, more bytes than Content-Length, a chunked body cut before the last
# chunk, a body a byte at a time. For each, plain and TLS: the status the
# node sees, that no cut body is presented as complete (curl exits
# non-zero), and that the gate still serves others (the admin /healthz,
# and a second gate request answered).
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"

# fetch URL: "CURL_EXIT HTTP_CODE BYTES"
fetch() {
  local out rc
  set +e
  out=$(curl -s --max-time 20 --cacert "$CA" -o "$TMP/body" -w '%{http_code}' "$1")
  rc=$?
  set -e
  echo "$rc $out $(stat -c %s "$TMP/body" 2>/dev/null || echo 0)"
}

# with_bad MODE: a gate in front of the misbehaving upstream MODE.
with_bad() {
  start_bad "$1"
  MCS_PORT=$BAD_PORT
  ADMIN_PORT=$(free_port)
  ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" UPSTREAM_EXTRA="  response_timeout: 2s" gate_config "$TMP/gate.yaml" hold "$object"
  gate_start "$TMP/gate.yaml"
}

# on_both NAME CHECK: /config/worker on the plain and the TLS listener;
# CHECK CURL_EXIT HTTP_CODE BYTES must hold for each.
on_both() {
  local name=$1 check=$2 url rc code bytes
  for url in "http://127.0.0.1:$PLAIN_PORT/config/worker" "https://127.0.0.1:$TLS_PORT/config/worker"; do
    read -r rc code bytes <<<"$(fetch "$url")"
    "$check" "$rc" "$code" "$bytes" || fail "$name via $url: curl exit $rc, status $code, $bytes bytes"
  done
}
is_502() { [ "$1" = 0 ] && [ "$2" = 502 ]; }
# exactly the 100000 bytes of e the upstream framed, none of its surplus
is_framed_part() { [ "$1" = 0 ] && [ "$2" = 200 ] && [ "$3" = 100000 ] && [ -z "$(tr -d e <"$TMP/body")" ]; }
is_cut() { [ "$1" != 0 ]; }

still_serving() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/healthz")" = 200 ] ||
    fail "$1: the gate stopped serving"
  kill -0 "$GATE_PID" || fail "$1: the gate died"
}

note "the upstream resets during the head: 502, plain and TLS"
with_bad reset-head
on_both "reset during the head" is_502
still_serving "reset during the head"
gate_stop

note "more bytes than Content-Length: exactly Content-Length reach the node, the rest is dropped"
with_bad extra-bytes
on_both "extra bytes" is_framed_part
# the surplus must not be taken for the next answer on a reused connection
on_both "after extra bytes" is_framed_part
still_serving "extra bytes"
gate_stop

note "a chunked body cut before the last chunk: the node sees an error, never a whole body"
with_bad chunked-cut
on_both "a chunked body without its last chunk passed as whole" is_cut
# and an HTTP/1.0 client (de-chunked, delimited by the close) too
set +e
curl -s --http1.0 --max-time 20 -o "$TMP/body" "http://127.0.0.1:$PLAIN_PORT/config/worker"; rc=$?
set -e
[ "$rc" != 0 ] || fail "a cut chunked body reached an HTTP/1.0 client as whole ($(stat -c %s "$TMP/body") bytes)"
still_serving "chunked cut"
gate_stop

note "a body a byte every 10 ms: whole, each byte within the response timeout"
with_bad trickle-body
read -r rc code bytes <<<"$(fetch "https://127.0.0.1:$TLS_PORT/config/worker")"
[ "$rc" = 0 ] && [ "$code" = 200 ] && [ "$bytes" = 200 ] || fail "trickled body: curl $rc, $code, $bytes bytes"
still_serving "trickled body"
gate_stop
echo PASS
