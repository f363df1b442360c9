#!/usr/bin/env bash
# Coalescing's memory (issue 14.1): 8 slow readers of one shared fetch (3 MiB,
# read at 100 KiB/s over TLS) hold the body once, not once per reader: the
# gate's RSS grows by less than 6 MiB while they crawl (one body per reader
# would be 24 MiB), and the 8 make one upstream request.
# The RSS measured is the gate's own, which other tests' load does not move: it runs beside them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_coalesce.sh"

certs
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(3*1024*1024+17))' >"$TMP/config.json"
WANT_LEN=$(stat -c %s "$TMP/config.json")

# gate EXTRA_YAML MODE_ARGS...: coalesce_gate, the upstream holding its
# answers until $TMP/release.
gate() { local extra=$1; shift; coalesce_gate "$extra" "$@" --release-file "$TMP/release"; }

note "8 slow readers of one shared fetch: the body is held once, not once per reader"
gate "" file --file "$TMP/config.json"
readers=()
for i in $(seq 8); do
  curl -s -o /dev/null --limit-rate 100k --max-time 6 --cacert "$CA" "https://127.0.0.1:$TLS_PORT/config/worker" &
  readers+=($!)
done
wait_until 30 attached 8 || fail "the slow readers did not attach"
base=$(gate_rss)
touch "$TMP/release"
peak=$(gate_rss_peak 60)  # about 3 s while the readers crawl
for p in "${readers[@]}"; do wait "$p" || true; done
growth=$(( peak - base ))
echo "RSS base ${base} KiB, peak ${peak} KiB, growth ${growth} KiB for 8 slow readers of one $((WANT_LEN / 1024)) KiB fetch"
# One body is 3 MiB; one per reader would be 24 MiB. A sanitizer build
# keeps freed memory in quarantine, so RSS says nothing there.
if [ -z "${SKEWGATE_SAN:-}" ]; then
  [ "$growth" -lt 6144 ] || fail "RSS grew by ${growth} KiB: more than one body for 8 readers"
fi
[ "$(wc -l <"$TMP/bad.count")" = 1 ] || fail "the slow readers made $(wc -l <"$TMP/bad.count") upstream requests"
stop_all

echo PASS
