#!/usr/bin/env bash
# The bytes kept for slow readers have a budget (limits.max_buffered, an
# address's max_buffered_per_client); a reader that would pass it while
# nobody waits for an upstream slot is held back, as before the store, not
# cut: a 4 MB/s reader of a 16 MiB config with a 1 MiB budget gets it all
# (it was cut, ClientOverBudget, at 7 MB: found in review). And a budget
# that holds fewer than four relay buffers is refused by check, with the
# figure (it kept nothing, and cut every reader that fell behind at all).
. "$(dirname "$0")/lib.sh"

certs
mcs_start 16777216
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"

note "a budget of fewer than four relay buffers is refused"
GATE_WORKERS=1 gate_config "$TMP/small.yaml" hold "$object" "limits:
  max_header_bytes: 1MiB
  max_uri_bytes: 8KiB
  max_buffered: 64MiB
  max_buffered_per_client: 2MiB"
rc=0; "$SKEWGATE_BIN" check -c "$TMP/small.yaml" >"$TMP/check.out" 2>&1 || rc=$?
cat "$TMP/check.out"
[ "$rc" = 2 ] || [ "$rc" = 1 ] || fail "check accepted it (exit $rc)"
grep -q 'limits.max_buffered_per_client: holds fewer than four relay buffers' "$TMP/check.out" || fail "the message"

note "over the budget with nobody waiting for a slot: held back, served whole"
GATE_WORKERS=1 gate_config "$TMP/gate.yaml" hold "$object" "limits:
  max_buffered: 1MiB
  max_buffered_per_client: 1MiB
coalesce:
  enabled: false"
gate_start "$TMP/gate.yaml"
out=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' --limit-rate 4M --max-time 30 \
  "http://127.0.0.1:$PLAIN_PORT/config/worker?x") || out="$out curl:$?"
echo "a 4 MB/s reader of 16 MiB got: $out"
[ "${out%% *}" = 200 ] && [ "$(access_count reason ClientOverBudget)" = 0 ] || fail "the reader was cut: $out"
