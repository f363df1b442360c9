#!/usr/bin/env bash
# The data path with curl and raw sockets: byte-exact bodies over TLS, HEAD,
# keep-alive, pipelining, strict request parsing, and the error answers.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 307200
python3 "$ROOT/tools/mcs-data.py" "$MCS_DATA" $((4 * 1024 * 1024)) big
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
https="https://127.0.0.1:$TLS_PORT"
http="http://127.0.0.1:$PLAIN_PORT"

note "a 4 MiB body over TLS arrives byte-exact"
want=$(sha256sum "$MCS_DATA/spec3/big" | cut -d' ' -f1)
got=$(curl -sf --cacert "$CA" -H "Accept: $IGNITION_ACCEPT" "$https/config/big" | sha256sum | cut -d' ' -f1)
[ "$want" = "$got" ] || fail "4 MiB body differs: $got != $want"
got=$(curl -sf "$http/config/big" | sha256sum | cut -d' ' -f1)
[ "$(sha256sum "$MCS_DATA/spec2/big" | cut -d' ' -f1)" = "$got" ] || fail "plain 4 MiB body (spec 2) differs"

note "40 plain 4 MiB bodies back to back arrive whole (spliced; a short splice must not stall)"
# A short splice to the client right after the upstream's last bytes once
# left the relay waiting for nothing, about one fetch in 13 on this path.
for i in $(seq 40); do
  curl -s --max-time 5 -o "$TMP/big.plain" "$http/config/big" || fail "plain 4 MiB fetch $i: curl exit $?"
  cmp -s "$TMP/big.plain" "$MCS_DATA/spec2/big" || fail "plain 4 MiB fetch $i differs"
done

note "HEAD returns the upstream's Content-Length and no body"
head_out=$(curl -sf -I --cacert "$CA" "$https/config/worker" | tr -d '\r')
grep -qix "content-length: $(stat -c %s "$MCS_DATA/spec2/worker")" <<<"$head_out" || fail "HEAD Content-Length: $head_out"
# Read to the close the gate makes after the head (Connection: close), so
# that no wait for bytes that never come stands in for the check.
n=$(python3 - "$CA" "$TLS_PORT" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=5),
                    server_hostname="127.0.0.1")
s.sendall(b"HEAD /config/worker HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
got = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    got += c
head, sep, body = got.partition(b"\r\n\r\n")
print(len(body) if sep and head.startswith(b"HTTP/1.1 200 ") else "no 200 head: %r" % got[:200])
PY
)
[ "$n" = 0 ] || fail "HEAD carried a body of $n bytes"

note "100 sequential requests on one keep-alive connection"
urls=(); for i in $(seq 100); do urls+=(-o /dev/null "$https/config/worker"); done
out=$(curl -s --cacert "$CA" -w '%{http_code} %{num_connects}\n' "${urls[@]}")
[ "$(echo "$out" | grep -c '^200 ')" = 100 ] || fail "not 100 x 200"
[ "$(echo "$out" | awk '{s+=$2} END {print s}')" = 1 ] || fail "more than one connection: $(echo "$out" | awk '{s+=$2} END {print s}')"

note "pipelined requests are answered in order"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" \
  'GET /config/worker HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
[ "$(echo "$out" | head -3 | cut -d' ' -f2 | tr '\n' ' ')" = "200 404 200 " ] || fail "pipelining: $out"

note "the upstream's answers pass through: unknown pool 500, unknown path 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$http/config/nosuchpool")" = 500 ] || fail "unknown pool"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$http/other")" = 404 ] || fail "unknown path"

note "malformed requests: their status, the connection closed, nothing upstream"
before=$(wc -l < "$TMP/mcs/access.log")
check_bad() { # STATUS REQUEST
  local out; out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" "$2")
  [[ "${out%%$'\n'*}" == "HTTP/1.1 $1 "* ]] || fail "expected $1 for $2, got: $out"
  [[ "${out##*$'\n'}" == CLOSED ]] || fail "connection left open after $1 for $2"
}
check_bad 400 'GET /config/worker HTTP/1.1\nHost: a\n\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\rX: y\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nX: y\r\n  folded\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost : a\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc'
check_bad 400 'GET /config/%zz HTTP/1.1\r\nHost: a\r\n\r\n'
check_bad 400 'GET /config/worker HTTP/1.1\r\n\r\n'
check_bad 405 'POST /config/worker HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n'
check_bad 414 "GET /config/$(head -c 9000 /dev/zero | tr '\0' a) HTTP/1.1\r\nHost: a\r\n\r\n"
check_bad 431 "GET /config/worker HTTP/1.1\r\nHost: a\r\nX: $(head -c 17000 /dev/zero | tr '\0' a)\r\n\r\n"
check_bad 505 'GET /config/worker HTTP/2.0\r\nHost: a\r\n\r\n'
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n')
[[ "$out" == "HTTP/1.1 405 "* ]] || fail "405 on a non-gated path: $out"
allow=$(curl -s -i -X PUT "$http/config/worker" | tr -d '\r' | grep -i '^allow:')
[ "$allow" = "Allow: GET, HEAD" ] || fail "405 without Allow: GET, HEAD ($allow)"
[ "$(wc -l < "$TMP/mcs/access.log")" = "$before" ] || fail "a malformed request reached the upstream"

note "hold: 500 pipelined gated requests get 500 empty 503s on the open connection"
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 grep -q '"reason":"OutOfSkew"' "$GATE_LOG" || fail "verdict did not flip"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" "$(for i in $(seq 500); do printf 'GET /config/worker HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n'; done)" --timeout 2)
[ "$(grep -c '^HTTP/1.1 503 Service Unavailable$' <<<"$out")" = 500 ] || fail "expected 500 x 503, got: $(sort <<<"$out" | uniq -c)"
[ "${out##*$'\n'}" = OPEN ] || fail "hold closed the connection"
curl -s -D "$TMP/h" -o /dev/null "$http/config/worker"
grep -qi '^skewgate-reason: OutOfSkew' "$TMP/h" || fail "no Skewgate-Reason header"
grep -qi '^content-length: 0' "$TMP/h" || fail "hold body is not empty"

note "header timeout: 408 and close"
gate_stop
gate_config "$TMP/gate.yaml" hold "$object" "limits:
  header_timeout: 300ms
  idle_timeout: 1s"
gate_start "$TMP/gate.yaml"
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" 'GET /config/worker HTTP/1.1\r\nHost: a\r\n' --timeout 5)
[[ "$out" == "HTTP/1.1 408 "* ]] || fail "expected 408: $out"
[[ "${out##*$'\n'}" == CLOSED ]] || fail "408 left the connection open"

note "idle keep-alive timeout: closed after limits.idle_timeout, not before"
t0=$(date +%s%N)
out=$(python3 "$ROOT/tests/integration/rawhttp.py" "$PLAIN_PORT" 'GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n' --timeout 5)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[[ "$out" == "HTTP/1.1 200 "* && "${out##*$'\n'}" == CLOSED ]] || fail "idle connection: $out"
[ "$ms" -ge 900 ] && [ "$ms" -lt 4000 ] || fail "idle close after ${ms} ms, expected about 1000"
echo PASS
