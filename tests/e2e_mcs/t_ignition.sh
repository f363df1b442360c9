#!/usr/bin/env bash
# Debian's Ignition (fetch stage) through the gate over TLS in front of the
# real MCS: held (503, on one connection) while the verdict rejects, then
# it boots once the verdict admits, with the very bytes the MCS serves it
# (Ignition logs the SHA-512 of the config it fetched); and reject.mode
# explain answers a config this Ignition accepts, in the spec the MCS
# gives for Ignition's Accept.
. "$(dirname "$0")/lib_mcs.sh"
[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
certs
real_mcs_start 65536
object="$TMP/mc.yaml"
IGN_URL_PATH=/config/master

# direct ACCEPT: the MCS's own answer for ACCEPT, asked without the gate.
direct() { curl -sf -H "Accept: $1" "http://127.0.0.1:$MCS_PORT$IGN_URL_PATH"; }
# the Accept header the MCS saw last (it logs it %q-quoted)
last_accept() { sed -n 's/.*Accept-Header: "\(.*\)"$/\1/p' "$MCS_LOG" | tail -1; }

note "hold: Ignition is answered 503 on one connection while the verdict rejects"
set_object automatic-out-of-skew.yaml "$object"
gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
before=$(mcs_renders)
IGN_URL="https://127.0.0.1:$TLS_PORT$IGN_URL_PATH" IGN_TIMEOUT=60 ign_run hold &
ign=$!
PIDS+=($ign)
held() { [ "$(access_count status 503)" -ge 3 ]; }
wait_until 30 held || fail "Ignition was not held (503s seen: $(access_count status 503))"
[ "$(mcs_renders)" = "$before" ] || fail "a held request reached the MCS"
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
note "the verdict admits: Ignition boots"
set_object automatic-compliant.yaml "$object"
wait "$ign" || { cat "$TMP/hold/out"; fail "held Ignition did not finish after the flip"; }
grep -q "Ignition finished successfully" "$TMP/hold/out" || { cat "$TMP/hold/out"; fail "no success line"; }
grep -q "GET result: Service Unavailable" "$TMP/hold/out" || fail "Ignition never saw the 503"
accept=$(last_accept)
case "$accept" in application/vnd.coreos.ignition+json*) ;; *) fail "the MCS saw Accept '$accept'";; esac
want=$(direct "$accept" | sha512sum | cut -d' ' -f1)
grep -q "fetched referenced config at https://127.0.0.1:$TLS_PORT$IGN_URL_PATH with SHA512: $want" "$TMP/hold/out" ||
  { grep 'SHA512' "$TMP/hold/out"; fail "Ignition did not parse the MCS's bytes (want SHA-512 $want)"; }
note "Ignition asked with '$accept' and fetched the MCS's config, SHA-512 ${want:0:16}..."
python3 - "$TMP/hold/cache.json" <<'PY' || fail "the cached config lacks the MCS's files"
import json, sys
paths = {f["path"] for f in json.load(open(sys.argv[1]))["storage"]["files"]}
assert "/etc/skewgate-e2e/file0" in paths, sorted(paths)[:10]
PY
gate_stop

note "explain: Ignition accepts the gate's config, in the MCS's spec for its Accept"
set_object automatic-out-of-skew.yaml "$object"
gate_config "$TMP/gate.yaml" explain "$object"
gate_start "$TMP/gate.yaml"
IGN_URL="https://127.0.0.1:$TLS_PORT$IGN_URL_PATH" ign_run explain || { cat "$TMP/explain/out"; fail "Ignition failed against explain"; }
grep -q "Ignition finished successfully" "$TMP/explain/out" || fail "explain: no success line"
spec=$(direct "$accept" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ignition"]["version"])')
got=$(curl -sf --cacert "$CA" -H "Accept: $accept" "https://127.0.0.1:$TLS_PORT$IGN_URL_PATH" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["ignition"]["version"])')
[ "$got" = "$spec" ] || fail "explain answered spec $got, the MCS serves $spec for '$accept'"
python3 - "$TMP/explain/cache.json" <<'PY' || fail "the explain config does not write the reason to /etc/issue"
import json, sys, urllib.parse
files = {f["path"]: f for f in json.load(open(sys.argv[1]))["storage"]["files"]}
issue = urllib.parse.unquote(files["/etc/issue"]["contents"]["source"].split(",", 1)[1])
assert "4.12.0" in issue and "4.13.0" in issue, issue
PY
echo PASS
