#!/usr/bin/env bash
# A reload whose workers cannot allocate (fail_alloc.c, preloaded: every
# malloc of a thread other than the main one fails while it is armed).
# What /config and the reload count say must be what every worker
# serves: a worker that acknowledged a reload it did not apply left
# /config showing the new sha256 while it judged by the old file. The
# allocation a worker needed is made on the main thread before the
# commit, so the workers apply the reload without allocating.
. "$(dirname "$0")/lib.sh"

ldd "$SKEWGATE_BIN" | has -E "lib[at]san" && skip "a sanitizer build's allocator comes first: fail_alloc.c cannot interpose it"
cc -shared -fPIC -O2 -o "$TMP/fail_alloc.so" "$ROOT/tests/integration/fail_alloc.c" || fail "cannot build fail_alloc.c"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
gate_config "$TMP/gate.yaml" hold "$object" 'gate:
  prefixes: ["/config/"]'
SKEWGATE_BIN_REAL=$SKEWGATE_BIN
SKEWGATE_BIN="$TMP/skewgate-fail-alloc"
# env execs the gate: GATE_PID is the gate's.
printf '#!/bin/sh\nexec env LD_PRELOAD="%s" SKEWGATE_FAIL_ALLOC="%s" "%s" "$@"\n' \
  "$TMP/fail_alloc.so" "$TMP/fail-alloc.armed" "$SKEWGATE_BIN_REAL" >"$SKEWGATE_BIN"
chmod +x "$SKEWGATE_BIN"
gate_start "$TMP/gate.yaml"

config_json() { curl -sf "$ADMIN/config" | python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
reloads_are() { [ "$(config_json '(j["reloads"]["success"], j["reloads"]["failure"])')" = "($1, $2)" ]; }
# codes N: the status of N requests for /config/worker, each on a
# connection of its own, so that SO_REUSEPORT spreads them over both
# workers (all on one: 2^-19), as one line of distinct codes.
codes() {
  local i
  for i in $(seq "$1"); do curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PLAIN_PORT/config/worker"; done | sort -u | tr '\n' ' '
}
wait_until 10 reloads_are 0 0 || fail "no /config: $(curl -s "$ADMIN/config")"
[ "$(codes 20)" = "503 " ] || fail "out of skew and gated: $(codes 20)"

note "the workers cannot allocate during the reload: /config, the count and what every worker serves agree"
sed -i 's|prefixes: \["/config/"\]|prefixes: ["/elsewhere/"]|' "$TMP/gate.yaml"
new_sha=$(sha256sum <"$TMP/gate.yaml" | cut -d' ' -f1)
touch "$TMP/fail-alloc.armed"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 0 || fail "the reload was not taken: $(grep '"event":"reload"' "$GATE_LOG" | tail -2)"
rm "$TMP/fail-alloc.armed"
[ "$(config_json 'j["sha256"]')" = "$new_sha" ] || fail "/config does not show the file now served"
got=$(codes 20)
[ "$got" = "200 " ] || fail "a worker still gates /config/ after the reload was counted: $got; $(grep '"level":"error"' "$GATE_LOG" | tail -2)"
if grep -q '"level":"error"' "$GATE_LOG"; then fail "errors: $(grep '"level":"error"' "$GATE_LOG" | tail -2)"; fi

echo PASS
