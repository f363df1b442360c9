#!/usr/bin/env bash
# A refused reload is visible where an operator looks first: skewgate
# status says DEGRADED with when, FILE:LINE:COL and why, and what serves
# instead; /verdict has it as reloadRefused and the status page shows it.
# A reload that takes clears it.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object none.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
cp "$TMP/gate.yaml" "$TMP/good.yaml"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "not ready"

# reloads KIND: /config's reloads.KIND count.
reloads() { curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"][sys.argv[1]])' "$1"; }
reloads_reach() { [ "$(reloads "$1")" -ge "$2" ]; }

note "no refused reload yet: reloadRefused is null, status says nothing of it"
curl -sf -o "$TMP/verdict.json" "$ADMIN/verdict" || fail "/verdict"
python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); assert v["reloadRefused"] is None, v' "$TMP/verdict.json" ||
  fail "reloadRefused before any reload: $(cat "$TMP/verdict.json")"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || fail "status exit $?"
! grep -q DEGRADED "$TMP/status.txt" || fail "DEGRADED without a refused reload: $(cat "$TMP/status.txt")"

note "the file breaks, SIGHUP: refused, counted"
printf 'bogus_key: 1\n' >>"$TMP/gate.yaml"
line=$(wc -l <"$TMP/gate.yaml")
kill -HUP "$GATE_PID"
wait_until 10 reloads_reach failure 1 || fail "the reload was not refused: $(curl -s "$ADMIN/config")"

note "/verdict: reloadRefused with when, where and why"
curl -sf -o "$TMP/verdict.json" "$ADMIN/verdict" || fail "/verdict"
python3 - "$TMP/verdict.json" "$TMP/gate.yaml" "$line" <<'PY' || fail "reloadRefused: $(cat "$TMP/verdict.json")"
import json, re, sys
v = json.load(open(sys.argv[1]))
r = v["reloadRefused"]
path, line = sys.argv[2], int(sys.argv[3])
assert r["file"] == path and r["line"] == line and r["column"] == 1, r
assert r["location"] == "%s:%d:1" % (path, line), r
assert "bogus_key" in r["message"] and not r["message"].startswith(path), r
rfc3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
assert re.match(rfc3339, r["at"]) and re.match(rfc3339, r["servingSince"]) and r["servingSince"] <= r["at"], r
assert len(r["sha256"]) == 64, r
PY
curl -sf -o "$TMP/config.json" "$ADMIN/config" || fail "/config"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); assert c["last_error"] and c["last_error_at"].endswith("Z"), c' \
  "$TMP/config.json" || fail "/config last_error_at: $(cat "$TMP/config.json")"

note "skewgate status: DEGRADED first, with when, FILE:LINE:COL and why; the exit status is still the verdict's"
rc=0; "$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || rc=$?
[ "$rc" = 0 ] || fail "status exit $rc with a refused reload while admitting"
head -1 "$TMP/status.txt" | grep -q "^DEGRADED: *the last reload (at 20[0-9-]*T[0-9:]*Z ([0-9ms]* ago)) was refused: $TMP/gate.yaml:$line:1: .*bogus_key" ||
  fail "status first line: $(cat "$TMP/status.txt")"
sed -n 2p "$TMP/status.txt" | grep -q "the gate serves the configuration loaded at 20.*Z (.* ago)" ||
  fail "status second line: $(cat "$TMP/status.txt")"

note "the status page shows it"
curl -sf -o "$TMP/page.html" "$ADMIN/" || fail "GET /"
curl -sf -o "$TMP/status.js" "$ADMIN/status.js" || fail "GET /status.js"
grep -q 'id="degraded"' "$TMP/page.html" || fail "no degraded element on the page"
grep -q 'v.reloadRefused' "$TMP/status.js" || fail "status.js does not read reloadRefused"
grep -q "'DEGRADED: the last reload (at '" "$TMP/status.js" || fail "status.js does not say DEGRADED"

note "a reload that takes clears it"
cp "$TMP/good.yaml" "$TMP/gate.yaml"
kill -HUP "$GATE_PID"
wait_until 10 reloads_reach success 1 || fail "the fixed file did not reload: $(curl -s "$ADMIN/config")"
curl -sf -o "$TMP/verdict.json" "$ADMIN/verdict" || fail "/verdict"
python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); assert v["reloadRefused"] is None, v' "$TMP/verdict.json" ||
  fail "reloadRefused after a good reload: $(cat "$TMP/verdict.json")"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status.txt" || fail "status exit $?"
! grep -q DEGRADED "$TMP/status.txt" || fail "DEGRADED after a good reload: $(cat "$TMP/status.txt")"
echo PASS
