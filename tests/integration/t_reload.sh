#!/usr/bin/env bash
# SIGHUP reloads the whole configuration (DESIGN 2, issue 11.1): under
# load with 1 MiB downloads in flight, nothing fails or is cut; a reject
# mode change, listeners added and removed, another verdict source file
# and another upstream take effect once /config says the reload is done;
# a broken file or a restart-only change is refused and changes nothing.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 1048576
BODY_SHA=$(sha256sum <"$MCS_DATA/spec2/worker")
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
P_TLS=$(free_port); P_PLAIN=$(free_port); P_EXTRA=$(free_port)
OBJECT="$TMP/mc.yaml"
set_object none.yaml "$OBJECT"

# The configuration, from these (each test changes some and reloads).
MODE=hold UP_PORT=$MCS_PORT WORKERS=2 EXTRA_LISTENER="" IDLE=120s MAX_IDLE=16 LEVEL=info BAD=""
write_cfg() {
  cat >"$TMP/gate.yaml.tmp" <<YAML
workers: $WORKERS
listeners:
  - address: "127.0.0.1:$P_TLS"
    tls:
      certificate: $TMP/pki/tls.crt
      key: $TMP/pki/tls.key
  - address: "127.0.0.1:$P_PLAIN"
$EXTRA_LISTENER
upstream:
  address: "127.0.0.1:$UP_PORT"
  max_idle: $MAX_IDLE
reject:
  mode: $MODE
enforcement:
  source: file
  file:
    path: $OBJECT
limits:
  idle_timeout: $IDLE
log:
  level: $LEVEL
admin:
  enabled: true
  address: "$ADMIN_ADDR"
$BAD
YAML
  mv "$TMP/gate.yaml.tmp" "$TMP/gate.yaml"
}

# config_json EXPR: a Python expression over /config's JSON, j.
config_json() { curl -sf "$ADMIN/config" | python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# reloads_count success|failure: /config's count (the JSON is indented, one key a line).
reloads_count() { curl -sf "$ADMIN/config" | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p"; }
reloads_are() { [ "$(reloads_count "$1")" = "$2" ]; }
# reload [success|failure]: SIGHUP, then wait until /config counts it.
reload() {
  local want=${1:-success} n
  n=$(reloads_count "$want")
  [ -n "$n" ] || fail "no reload count in /config: $(curl -s "$ADMIN/config")"
  kill -HUP "$GATE_PID"
  wait_until 10 reloads_are "$want" $((n + 1)) || { tail -5 "$GATE_LOG" >&2; fail "reload not counted as $want"; }
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
code_is() { [ "$(code "$1")" = "$2" ]; }   # a function, so wait_until asks again

write_cfg
"$SKEWGATE_BIN" check --files -c "$TMP/gate.yaml"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/config" || fail "no /config"

note "/config: path, the file's sha256, loaded_at, reloads; no last_error"
config_json '(j["path"], j["sha256"], j["reloads"], "last_error" in j)' >"$TMP/config.out"
[ "$(cat "$TMP/config.out")" = "('$TMP/gate.yaml', '$(sha256sum <"$TMP/gate.yaml" | cut -d' ' -f1)', {'success': 0, 'failure': 0}, False)" ] ||
  fail "/config: $(cat "$TMP/config.out")"
config_json 'j["loaded_at"]' | has -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' || fail "loaded_at is not RFC 3339"

note "20 reloads under wrk with admitted 1 MiB downloads in flight: nothing fails or is cut"
mkdir -p "$TMP/dl"
# download_loop NAME URL CURL_ARGS...: 1 MiB bodies, each checked, until $TMP/dl/stop.
download_loop() {
  local name=$1 url=$2 i=0; shift 2
  while [ ! -e "$TMP/dl/stop" ] && [ $i -lt 400 ]; do
    i=$((i + 1))
    local got
    got=$(curl -s --limit-rate 4m -o "$TMP/dl/$name.body" -w '%{http_code}' "$@" "$url" || echo "curl-exit-$?")
    if [ "$got" != 200 ] || [ "$(sha256sum <"$TMP/dl/$name.body")" != "$BODY_SHA" ]; then
      echo "$name #$i: $got, $(wc -c <"$TMP/dl/$name.body") bytes" >>"$TMP/dl/failures"
    fi
    echo . >>"$TMP/dl/done"
  done
}
download_loop plain "http://127.0.0.1:$P_PLAIN/config/worker" &
PIDS+=($!); dl_plain=$!
download_loop tls "https://127.0.0.1:$P_TLS/config/worker" --cacert "$CA" &
PIDS+=($!); dl_tls=$!
# Bounded by -d; stopped (SIGINT: it prints its summary) once the reloads are done.
wrk -t1 -c8 -d120s "http://127.0.0.1:$P_PLAIN/healthz" >"$TMP/wrk.out" 2>&1 &
PIDS+=($!); wrk_pid=$!
downloads() { [ -e "$TMP/dl/done" ] && wc -l <"$TMP/dl/done" || echo 0; }
more_downloads_than() { [ "$(downloads)" -gt "$1" ]; }
for i in $(seq 1 20); do
  # Every reload changes something the workers serve by, and reloads the certificate.
  if [ $((i % 2)) = 1 ]; then IDLE=119s MAX_IDLE=8 LEVEL=warn; else IDLE=120s MAX_IDLE=16 LEVEL=info; fi
  write_cfg
  reload
  # A download finishes between two reloads: they overlap downloads in flight.
  d=$(downloads)
  wait_until 20 more_downloads_than "$d" || fail "downloads stalled after reload $i"
done
kill -0 "$wrk_pid" 2>/dev/null || fail "wrk ended before the 20 reloads did: they were not all under load"
kill -INT "$wrk_pid"
touch "$TMP/dl/stop"
wait "$dl_plain" "$dl_tls"
wait "$wrk_pid" || fail "wrk failed: $(cat "$TMP/wrk.out")"
[ ! -e "$TMP/dl/failures" ] || fail "downloads failed or were cut: $(head "$TMP/dl/failures")"
[ "$(downloads)" -ge 20 ] || fail "only $(downloads) downloads"
if grep -qE 'Socket errors|Non-2xx' "$TMP/wrk.out"; then fail "wrk saw errors: $(cat "$TMP/wrk.out")"; fi
grep -qE '^ +[0-9]+ requests in' "$TMP/wrk.out" || fail "wrk made no requests: $(cat "$TMP/wrk.out")"
echo "wrk: $(grep -E 'requests in|Requests/sec' "$TMP/wrk.out" | tr -s ' ' | tr '\n' ' '); downloads: $(downloads)"
[ "$(config_json "j['reloads']")" = "{'success': 20, 'failure': 0}" ] || fail "reloads: $(config_json "j['reloads']")"
[ "$(config_json 'j["sha256"]')" = "$(sha256sum <"$TMP/gate.yaml" | cut -d' ' -f1)" ] || fail "/config sha256 is not the file's"

note "reject mode hold -> deny: the next request after the acknowledgement, also on a kept-alive connection"
set_object automatic-out-of-skew.yaml "$OBJECT"
wait_until 10 code_is "http://127.0.0.1:$P_PLAIN/config/worker" 503 || fail "hold did not answer 503"
mkfifo "$TMP/ka.fifo" "$TMP/ka.fifo.go"
python3 - "$P_PLAIN" "$TMP/ka.fifo" <<'PY' &
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/config/worker"); r = c.getresponse(); r.read()
assert r.status == 503, r.status
open(sys.argv[2], "w").close()          # connected, held
open(sys.argv[2] + ".go").read()        # the reload is acknowledged
c.request("GET", "/config/worker"); r = c.getresponse(); r.read()
assert r.status == 403, "kept-alive connection after the reload: %d" % r.status
PY
ka=$!; PIDS+=($ka)
cat "$TMP/ka.fifo" >/dev/null
MODE=deny; write_cfg; reload
[ "$(code "http://127.0.0.1:$P_PLAIN/config/worker")" = 403 ] || fail "deny not in effect on the next request"
echo go >"$TMP/ka.fifo.go"
wait "$ka" || fail "the kept-alive connection did not get deny's 403"

note "a broken file changes nothing: file:line:column logged, result=\"failure\" counted"
sha_before=$(config_json 'j["sha256"]')
MODE=sometimes; write_cfg
line=$(grep -n 'mode: sometimes' "$TMP/gate.yaml" | cut -d: -f1)
reload failure
grep -q "\"event\":\"reload\".*gate.yaml:$line:[0-9]*:" "$GATE_LOG" || fail "no reload log line with gate.yaml:$line:COL: $(grep reload "$GATE_LOG" | tail -2)"
config_json 'j["last_error"]' | has "gate.yaml:$line:" || fail "/config last_error: $(config_json 'j.get("last_error")')"
[ "$(config_json 'j["sha256"]')" = "$sha_before" ] || fail "the refused file's sha256 is in /config"
[ "$(code "http://127.0.0.1:$P_PLAIN/config/worker")" = 403 ] || fail "the refused reload changed the answer"
curl -sf "$ADMIN/metrics" | has -x 'skewgate_config_reloads_total{result="failure"} 1' || fail "no failure in /metrics"
curl -sf "$ADMIN/metrics" | has -x 'skewgate_config_reloads_total{result="success"} 21' || fail "successes in /metrics"

note "workers needs a restart: refused, named"
MODE=deny WORKERS=3; write_cfg
reload failure
grep -q 'workers needs a restart (2 -> 3)' "$GATE_LOG" || fail "no 'workers needs a restart' line"
WORKERS=2; write_cfg; reload
config_json '"last_error" in j' | has -x False || fail "last_error kept after a good reload"

note "a listener added is served; removed, it finishes its download, closes, and refuses new connections"
EXTRA_LISTENER="  - address: \"127.0.0.1:$P_EXTRA\""
MODE=hold; set_object none.yaml "$OBJECT"; write_cfg; reload
wait_until 10 code_is "http://127.0.0.1:$P_EXTRA/config/worker" 200 || fail "the added listener does not serve"
curl -s --limit-rate 1m -o "$TMP/extra.body" "http://127.0.0.1:$P_EXTRA/config/worker" &
slow=$!; PIDS+=($slow)
wait_until 10 test -s "$TMP/extra.body" || fail "the slow download did not start"
# An idle kept-alive connection on it: closed by the gate once the listener goes.
mkfifo "$TMP/idle.fifo"
python3 - "$P_EXTRA" "$TMP/idle.fifo" <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
first = s.recv(65536)
assert first.startswith(b"HTTP/1.1 200"), first[:40]
open(sys.argv[2], "w").close()          # answered, now idle
assert s.recv(65536) == b"", "the idle connection was not closed"
PY
idle=$!; PIDS+=($idle)
cat "$TMP/idle.fifo" >/dev/null
EXTRA_LISTENER=""; write_cfg; reload
wait "$idle" || fail "an idle connection of the removed listener stayed open"
[ "$(code --max-time 5 "http://127.0.0.1:$P_EXTRA/healthz")" = 000 ] || fail "the removed listener still accepts"
[ "$(code "http://127.0.0.1:$P_PLAIN/healthz")" = 200 ] || fail "an unchanged listener stopped serving"
wait "$slow" || fail "the download on the removed listener failed"
[ "$(sha256sum <"$TMP/extra.body")" = "$BODY_SHA" ] || fail "the download on the removed listener was cut"

note "an unchanged listener refuses no connection while listeners come and go"
: >"$TMP/conn.fail"
python3 - "$P_PLAIN" "$P_TLS" "$TMP/conn.stop" "$TMP/conn.fail" "$TMP/conn.count" <<'PY' &
import os, socket, sys
plain, tls, stop, failf, countf = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
n = 0
while not os.path.exists(stop) and n < 200000:
    for port in (plain, tls):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError as e:
            open(failf, "a").write("port %d: %s\n" % (port, e))
        n += 1
open(countf, "w").write(str(n))
PY
conn=$!; PIDS+=($conn)
for i in 1 2 3 4 5; do
  EXTRA_LISTENER="  - address: \"127.0.0.1:$P_EXTRA\""; write_cfg; reload
  EXTRA_LISTENER=""; write_cfg; reload
done
touch "$TMP/conn.stop"; wait "$conn"
[ ! -s "$TMP/conn.fail" ] || fail "an unchanged listener refused: $(head -3 "$TMP/conn.fail")"
echo "connections during 10 reloads: $(cat "$TMP/conn.count")"

note "the verdict source: another file"
set_object automatic-out-of-skew.yaml "$TMP/other.yaml"
OBJECT="$TMP/other.yaml"; write_cfg; reload
verdict_reason() { curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reason"])'; }
# A function, so that wait_until asks again each time.
reason_is() { [ "$(verdict_reason)" = "$1" ]; }
wait_until 10 reason_is OutOfSkew || fail "the new source file is not followed: $(verdict_reason)"
[ "$(code "http://127.0.0.1:$P_PLAIN/config/worker")" = 503 ] || fail "the new file's verdict is not enforced"
set_object none.yaml "$TMP/mc.yaml"   # the old file changes: no longer watched
set_object none.yaml "$TMP/other.yaml"
wait_until 10 reason_is EnforcementDisabled || fail "the new source file's change is not followed"

note "another upstream: new requests go there"
MCS2_PORT=$(free_port)
cmd=$("$ROOT/tools/mcs-standin.sh" "$TMP/mcs2" "$MCS2_PORT" 4096)
$cmd >"$TMP/mcs2.out" 2>&1 &
PIDS+=($!)
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$MCS2_PORT/healthz" || fail "second MCS stand-in did not start"
# A download from the old upstream is under way: it finishes from there.
curl -s --limit-rate 1m -o "$TMP/up1.body" "http://127.0.0.1:$P_PLAIN/config/worker" &
up1=$!; PIDS+=($up1)
wait_until 10 test -s "$TMP/up1.body" || fail "the download from the old upstream did not start"
UP_PORT=$MCS2_PORT; write_cfg; reload
curl -sf -o "$TMP/up2.body" "http://127.0.0.1:$P_PLAIN/config/worker"
[ "$(sha256sum <"$TMP/up2.body")" = "$(sha256sum <"$TMP/mcs2/data/spec2/worker")" ] || fail "the request did not go to the new upstream"
wait "$up1" || fail "the download from the old upstream failed"
[ "$(sha256sum <"$TMP/up1.body")" = "$BODY_SHA" ] || fail "the download under way was not finished by the old upstream"

gate_stop
grep -q '"event":"stopped"' "$GATE_LOG" || fail "no clean stop"
echo PASS
