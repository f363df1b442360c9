#!/usr/bin/env bash
# skewgate check warns when pacing is on without an admission policy (issue
# 31 item 2): any address that can reach the gate could take the joining
# slots. The warning is on stderr, naming both keys that protect the line,
# with or without --files, and the exit status stays 0; with
# admission.machines or admission.token on, or pacing off, there is none.
# The running gate logs it too (pace_unprotected), at start, and /held's
# pace says protection "none" with a warning, as `skewgate status` does.
. "$(dirname "$0")/lib.sh"

base() {  # base FILE EXTRA: a valid config, EXTRA appended
  printf 'listeners:\n  - address: "127.0.0.1:0"\nupstream:\n  address: "127.0.0.1:1"\nenforcement:\n  source: file\n  file:\n    path: %s\n%s\n' \
    "$FIXTURES/automatic-compliant.yaml" "$2" >"$1"
}
check() {  # check FILE [ARGS]: stdout to $TMP/out, stderr to $TMP/err; fails unless exit 0
  "$SKEWGATE_BIN" check "${@:2}" -c "$1" >"$TMP/out" 2>"$TMP/err" || fail "check refused $1: $(cat "$TMP/err")"
  grep -qx "$1: ok" "$TMP/out" || fail "check of $1 printed: $(cat "$TMP/out")"
}
warned() { grep -q 'pace.enabled without an admission policy' "$TMP/err"; }

note "pacing on, no policy: the warning, exit 0"
base "$TMP/open.yaml" "pace:
  enabled: true"
for args in "" --files; do
  check "$TMP/open.yaml" $args
  warned || fail "no warning (check $args): $(cat "$TMP/err")"
  grep -qF "warning: $TMP/open.yaml: pace.enabled without an admission policy: any address that can reach the gate can take a joining slot or a place in the line;" "$TMP/err" \
    || fail "the warning does not say who can take a slot: $(cat "$TMP/err")"
  grep -qF 'admission.machines.enabled' "$TMP/err" && grep -qF 'admission.token.files' "$TMP/err" \
    || fail "the warning does not name both keys: $(cat "$TMP/err")"
  [ "$(wc -l <"$TMP/err")" -le 2 ] || fail "more than two lines: $(cat "$TMP/err")"
done

note "pacing on with admission.machines, or with admission.token: no warning"
base "$TMP/machines.yaml" "pace:
  enabled: true
admission:
  machines:
    enabled: true"
check "$TMP/machines.yaml"
warned && fail "warned with admission.machines on: $(cat "$TMP/err")"
printf 'a-provisioning-token\n' >"$TMP/token"
chmod 0600 "$TMP/token"
base "$TMP/token.yaml" "pace:
  enabled: true
admission:
  token:
    files: [$TMP/token]"
check "$TMP/token.yaml" --files
warned && fail "warned with admission.token on: $(cat "$TMP/err")"

note "pacing off, no policy: no warning"
base "$TMP/off.yaml" ""
check "$TMP/off.yaml"
warned && fail "warned with pacing off: $(cat "$TMP/err")"
[ -s "$TMP/err" ] && fail "stderr with pacing off: $(cat "$TMP/err")"

note "the running gate logs it at start; /held, status and the page say the line is open"
certs
mcs_start
ADMIN_ADDR="127.0.0.1:$(free_port)"
GATE_WORKERS=1 gate_config "$TMP/gate.yaml" hold "$FIXTURES/automatic-compliant.yaml" "pace:
  enabled: true"
gate_start "$TMP/gate.yaml"
grep '"event":"pace_unprotected"' "$GATE_LOG" | has 'any address that can reach the gate can take a joining slot' \
  || fail "no pace_unprotected warning in the log: $(grep -c . "$GATE_LOG") lines"
curl -sf --max-time 5 "http://$ADMIN_ADDR/held" >"$TMP/held.json" || fail "no /held"
python3 - "$TMP/held.json" <<'PY' || fail "/held pace: $(cat "$TMP/held.json")"
import json, sys
p = json.load(open(sys.argv[1]))["pace"]
assert p["protection"] == "none", p
assert p["warning"].startswith("open to any address: "), p
assert "admission.token.files" in p["warning"] and "admission.machines.enabled" in p["warning"], p
PY
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status" || true
grep -qF '  protected: NO, open to any address: without admission.token.files or admission.machines.enabled' "$TMP/status" \
  || fail "skewgate status does not say the line is open: $(cat "$TMP/status")"
# To a file first: grep -q quits at its match, and curl, still writing,
# would die of SIGPIPE and fail the pipeline.
curl -sf --max-time 5 "http://$ADMIN_ADDR/status.js" >"$TMP/status.js" || fail "no /status.js"
grep -qF "showPaceProtection(h.pace)" "$TMP/status.js" || fail "the status page does not show what protects the line"
gate_stop
echo PASS
