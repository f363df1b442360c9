#!/usr/bin/env bash
# The real client: Debian's Ignition (fetch stage) through the gate over
# TLS, in each reject mode, and across a verdict flip.
. "$(dirname "$0")/lib.sh"

[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
certs
mcs_start 307200
object="$TMP/mc.yaml"

note "admitted: Ignition finishes with the upstream's config"
set_object automatic-compliant.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
ign_run admitted || { cat "$TMP/admitted/out"; fail "Ignition failed while admitted"; }
grep -q "Ignition finished successfully" "$TMP/admitted/out" || fail "no success line"
python3 - "$MCS_DATA/spec3/worker" "$TMP/admitted/cache.json" <<'PY' || fail "cached config lacks the upstream's files"
import json, sys
served = json.load(open(sys.argv[1]))["storage"]["files"]
cached = {f["path"]: f["contents"]["source"] for f in json.load(open(sys.argv[2]))["storage"]["files"]}
for f in served:
    assert cached.get(f["path"]) == f["contents"]["source"], f["path"]
PY

note "hold: Ignition retries on one connection, then boots once the verdict admits"
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 grep -q '"reason":"OutOfSkew"' "$GATE_LOG" || fail "the gate did not pick up the out-of-skew object"
IGN_TIMEOUT=40 ign_run hold &
ign=$!
PIDS+=($ign)
held() { [ "$(access_count status 503)" -ge 3 ]; }
wait_until 20 held || fail "Ignition was not held (503s seen: $(access_count status 503))"
ports=$(python3 - "$GATE_LOG" <<'PY'
import json, sys
ports = set()
for line in open(sys.argv[1]):
    try: j = json.loads(line)
    except ValueError: continue
    if j.get("event") == "access" and j.get("status") == 503:
        ports.add(j.get("client_port"))
print(len(ports))
PY
)
[ "$ports" = 1 ] || fail "the held retries came on $ports connections, expected 1"
set_object automatic-compliant.yaml "$object"
wait "$ign" || { cat "$TMP/hold/out"; fail "held Ignition did not finish after the flip"; }
grep -q "Ignition finished successfully" "$TMP/hold/out" || fail "held Ignition: no success line"
grep -q "GET result: Service Unavailable" "$TMP/hold/out" || { cat "$TMP/hold/out"; fail "Ignition never saw the 503"; }
gate_stop

note "deny: Ignition fails at once"
set_object automatic-out-of-skew.yaml "$object"
gate_config "$TMP/gate.yaml" deny "$object"
gate_start "$TMP/gate.yaml"
if ign_run deny; then fail "Ignition succeeded against deny"; fi
grep -q "failed to fetch" "$TMP/deny/out" || { cat "$TMP/deny/out"; fail "no fetch failure in Ignition's output"; }
grep -q "GET result: Forbidden" "$TMP/deny/out" || { cat "$TMP/deny/out"; fail "Ignition did not see 403"; }
gate_stop

note "explain: Ignition finishes with a config that writes the reason to /etc/issue"
gate_config "$TMP/gate.yaml" explain "$object"
gate_start "$TMP/gate.yaml"
ign_run explain || { cat "$TMP/explain/out"; fail "Ignition failed against explain"; }
python3 - "$TMP/explain/cache.json" <<'PY' || fail "explain config does not write the reason to /etc/issue"
import json, sys, urllib.parse
files = {f["path"]: f for f in json.load(open(sys.argv[1]))["storage"]["files"]}
issue = urllib.parse.unquote(files["/etc/issue"]["contents"]["source"].split(",", 1)[1])
assert "4.12.0" in issue and "4.13.0" in issue, issue
assert "/etc/motd" in files
PY
curl -sf --cacert "$CA" -H 'Accept: application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1' \
  -o "$TMP/explain.ign" "https://127.0.0.1:$TLS_PORT/config/worker"
ignition-validate "$TMP/explain.ign" || fail "ignition-validate rejects the explain config"
curl -sf --cacert "$CA" -o "$TMP/explain22.ign" "https://127.0.0.1:$TLS_PORT/config/worker"
grep -q '"version":"2.2.0"' "$TMP/explain22.ign" || fail "no Accept did not give spec 2.2.0"
echo PASS
