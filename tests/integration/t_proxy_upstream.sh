#!/usr/bin/env bash
# Upstream failures are answered (502, 504), a cut body never passes as
# complete, and a slow reader does not make the gate buffer the body.
# The RSS measured is the gate's own, which other tests' load does not move: it runs beside them.
. "$(dirname "$0")/lib.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"

note "upstream down -> 502, and the connection stays usable"
MCS_PORT=$(free_port)   # nothing listens there
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
out=$(curl -s -o /dev/null -w '%{http_code} %{size_download}\n' "http://127.0.0.1:$PLAIN_PORT/config/worker" "http://127.0.0.1:$PLAIN_PORT/config/worker")
[ "$out" = $'502 0\n502 0' ] || fail "upstream down: $out"
gate_stop


note "upstream stalls -> 504 within upstream.response_timeout"
start_bad stall
MCS_PORT=$BAD_PORT
UPSTREAM_EXTRA="  response_timeout: 400ms" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PLAIN_PORT/config/worker")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$code" = 504 ] || fail "stall: got $code"
[ "$ms" -ge 350 ] && [ "$ms" -lt 3000 ] || fail "stall answered after ${ms} ms, expected about 400"
gate_stop

note "upstream closes mid-body -> the client sees a truncated transfer"
start_bad cut
MCS_PORT=$BAD_PORT
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
set +e
curl -s -o "$TMP/cut.out" --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/worker"; rc=$?
set -e
[ "$rc" = 18 ] || fail "curl exit $rc on a cut body, expected 18 (partial file)"
[ "$(stat -c %s "$TMP/cut.out")" -lt 1000000 ] || fail "cut body arrived whole?"
grep -q '"reason":"UpstreamClosedEarly"' "$GATE_LOG" || fail "no UpstreamClosedEarly in the access log"
# plain to plain the body is spliced through a pipe: the cut must show there too
set +e
curl -s -o "$TMP/cut.plain" "http://127.0.0.1:$PLAIN_PORT/config/worker"; rc=$?
set -e
[ "$rc" = 18 ] || fail "plain: curl exit $rc on a cut body, expected 18 (partial file)"
gate_stop

expected_sum=$(python3 -c 'import hashlib,sys; sys.stdout.write(hashlib.sha256(bytes((i * 7 + i // 251) % 256 for i in range(300000))).hexdigest())')
for mode in chunked interim; do
  note "upstream answers $mode: relayed intact, twice on one connection"
  rm -f "$TMP/bad.count"
  start_bad "$mode"
  MCS_PORT=$BAD_PORT
  gate_config "$TMP/gate.yaml" hold "$object"
  gate_start "$TMP/gate.yaml"
  for url in "https://127.0.0.1:$TLS_PORT/config/worker" "http://127.0.0.1:$PLAIN_PORT/config/worker"; do
    curl -sf --cacert "$CA" -o "$TMP/$mode.1" -o "$TMP/$mode.2" "$url" "$url" || fail "$mode via $url"
    for f in "$TMP/$mode.1" "$TMP/$mode.2"; do
      [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$expected_sum" ] || fail "$mode body differs via $url"
    done
  done
  [ "$(wc -l <"$TMP/bad.count")" = 4 ] || fail "$mode: upstream saw $(wc -l <"$TMP/bad.count") requests, expected 4"
  gate_stop
done

note "slow readers: the gate's memory stays within its watermarks"
mcs_start 307200
python3 "$ROOT/tools/mcs-data.py" "$MCS_DATA" $((4 * 1024 * 1024)) big
# The relay's watermarks, each reader with a fetch of its own: a shared
# fetch holds its body once (t_coalesce checks that bound).
gate_config "$TMP/gate.yaml" hold "$object" "coalesce:
  enabled: false"
gate_start "$TMP/gate.yaml"
curl -sf -o /dev/null --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/worker"  # warm up pools
base=$(gate_rss)
readers=()
for i in $(seq 8); do
  curl -s -o /dev/null --limit-rate 100k --max-time 4 --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/big" &
  readers+=($!)
done
peak=$(gate_rss_peak 60)  # about 3 s while the readers crawl
for p in "${readers[@]}"; do wait "$p" || true; done
# a slow plain reader (the spliced path) still gets every byte
curl -s --max-time 20 -o "$TMP/slow.plain" --limit-rate 2m "http://127.0.0.1:$PLAIN_PORT/config/big" ||
  fail "slow plain reader of 4 MiB: curl exit $? (a stall?)"
cmp -s "$TMP/slow.plain" "$MCS_DATA/spec2/big" || fail "slow plain reader got a different body"
growth=$(( peak - base ))
echo "RSS base ${base} KiB, peak ${peak} KiB, growth ${growth} KiB for 8 slow readers of 4 MiB"
# Whole bodies would be 32 MiB; watermarks allow 64 KiB relay + TLS buffers each.
# A sanitizer build keeps freed memory in quarantine, so RSS says nothing there.
if [ -n "${SKEWGATE_SAN:-}" ]; then
  echo "sanitizer build: RSS bound not checked"
else
  [ "$growth" -lt 6144 ] || fail "RSS grew by ${growth} KiB with 8 slow readers"
fi
echo PASS
