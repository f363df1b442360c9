#!/usr/bin/env bash
# Per-node evidence of an old boot image (evidence.*) with the real client:
# Debian's Ignition 2.14 asks for spec 3.3.0. Off, or with a minimum at or
# below 3.3.0, it boots; with a minimum above, it is held with
# ClientBootImageTooOld while the cluster's verdict admits, and boots once
# the admin turns enforcement off. Bad values are refused by check.
. "$(dirname "$0")/lib.sh"

[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
certs
mcs_start 307200
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
ADMIN_PORT=$(free_port)
ADMIN_ADDR="127.0.0.1:$ADMIN_PORT"
ACCEPT_33='application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1'

# evidence_gate MODE ENABLED MIN_SPEC [OCP_LIMIT]: a gate in front of the
# stand-in, judged by $object.
evidence_gate() {
  local limits=""
  [ -z "${4:-}" ] || limits=$'\n  limits:\n    ocp_version: "'"$4"'"'
  GATE_ENFORCEMENT="  source: file
  file:
    path: $object$limits" gate_config "$TMP/gate.yaml" "$1" "$object" "evidence:
  enabled: $2
  min_spec: $3"
  gate_start "$TMP/gate.yaml"
}

# answer ACCEPT: "STATUS REASON" of one GET /config/worker over TLS.
answer() {
  curl -s --cacert "$CA" -H "Accept: $1" -H 'User-Agent: Ignition/2.14.0' -o /dev/null \
    -D "$TMP/head" -w '%{http_code}' "https://127.0.0.1:$TLS_PORT/config/worker" >"$TMP/code"
  printf '%s %s\n' "$(cat "$TMP/code")" "$(tr -d '\r' <"$TMP/head" | sed -n 's/^[Ss]kewgate-[Rr]eason: //p')"
}

booted() {
  ign_run "$1" || { cat "$TMP/$1/out"; fail "$2: Ignition failed"; }
  grep -q "Ignition finished successfully" "$TMP/$1/out" || fail "$2: no success line"
}

note "off: a minimum above Ignition's spec changes nothing"
evidence_gate hold false '"3.4.0"'
booted off "evidence off"
[ "$(access_count reason ClientBootImageTooOld)" = 0 ] || fail "evidence off held a request"
gate_stop

note "on, min_spec 3.3.0 (and auto: OCP 4.13 -> 3.3.0): Ignition 2.14 boots"
evidence_gate hold true '"3.3.0"'
booted at-min "min_spec 3.3.0"
gate_stop
evidence_gate hold true auto
booted auto "min_spec auto"
[ "$(access_count reason ClientBootImageTooOld)" = 0 ] || fail "auto held Ignition 2.14"
gate_stop

note "on, min_spec 3.4.0: Ignition 2.14 is held with ClientBootImageTooOld, boots once enforcement is off"
evidence_gate hold true '"3.4.0"'
IGN_TIMEOUT=40 ign_run held &
ign=$!
PIDS+=($ign)
held() { [ "$(access_count reason ClientBootImageTooOld)" -ge 2 ]; }
wait_until 20 held || { cat "$GATE_LOG" >&2; fail "Ignition was not held"; }
[ "$(access_count status 503)" -ge 2 ] || fail "the evidence hold was not a 503"
[ "$(access_count decision reject)" -ge 2 ] || fail "the evidence hold was not logged as a reject"
[ "$(answer "$ACCEPT_33")" = "503 ClientBootImageTooOld" ] || fail "Skewgate-Reason: $(answer "$ACCEPT_33")"
[ "$(answer "$IGNITION_ACCEPT")" = "200 " ] || fail "a 3.4.0 client was not admitted: $(answer "$IGNITION_ACCEPT")"
[ "$(answer '*/*')" = "200 " ] || fail "a client naming no spec was held: $(answer '*/*')"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
n=$(sed -n 's/^skewgate_evidence_held_total //p' <<<"$metrics")
[ "${n:-0}" -ge 3 ] || fail "skewgate_evidence_held_total is '${n:-}'"
set_object none.yaml "$object"
wait "$ign" || { cat "$TMP/held/out"; fail "held Ignition did not boot after enforcement was turned off"; }
grep -q "GET result: Service Unavailable" "$TMP/held/out" || fail "Ignition never saw the 503"
grep -q "Ignition finished successfully" "$TMP/held/out" || fail "held Ignition: no success line"

note "the cluster's reject comes first: its own reason"
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 grep -q '"reason":"OutOfSkew"' "$GATE_LOG" || fail "the gate did not pick up the out-of-skew object"
[ "$(answer "$ACCEPT_33")" = "503 OutOfSkew" ] || fail "cluster reject: $(answer "$ACCEPT_33")"
gate_stop

note "auto follows the OCP limit: 4.14 -> 3.4.0; deny mode answers 403"
set_object automatic-compliant.yaml "$object"
evidence_gate deny true auto 4.14.0
[ "$(answer "$ACCEPT_33")" = "403 ClientBootImageTooOld" ] || fail "deny: $(answer "$ACCEPT_33")"
if ign_run denied; then fail "Ignition booted against deny"; fi
grep -q "GET result: Forbidden" "$TMP/denied/out" || { cat "$TMP/denied/out"; fail "Ignition did not see 403"; }
gate_stop

note "check refuses bad values with file:line:column"
check() {
  cat >"$TMP/bad.yaml" <<YAML
listeners:
  - address: "127.0.0.1:0"
enforcement:
  source: file
  file:
    path: $object
  limits:
    ocp_version: "${2:-4.13.0}"
evidence:
  enabled: ${3:-true}
  min_spec: $1
YAML
  "$SKEWGATE_BIN" check -c "$TMP/bad.yaml" 2>&1
}
for bad in '"3.x"' '"4.0.0"' '"3.4.0-experimental"' '3.4' '[3]'; do
  if out=$(check "$bad"); then fail "check accepted min_spec $bad"; fi
  grep -q "bad.yaml:11:13: " <<<"$out" || fail "min_spec $bad: no position in: $out"
done
if out=$(check auto 4.7.0); then fail "check accepted auto below the table"; fi
grep -q "bad.yaml:11:13: .*no Ignition is known for OCP 4.7.*evidence.min_spec" <<<"$out" || fail "auto below the table: $out"
check auto 4.7.0 false >/dev/null || fail "auto below the table refused while evidence is off"
check '"3.2.0"' 4.7.0 >/dev/null || fail "an explicit spec with an old limit was refused"
echo PASS
