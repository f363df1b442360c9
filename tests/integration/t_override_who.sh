#!/usr/bin/env bash
# Overrides say who and why, and the CLI's hints and errors work as
# printed: an override over the admin socket is logged and reported with
# the peer's uid and pid (SO_PEERCRED) and its --reason; over TCP with the
# token, with the token file's name (never the token). status prints the
# undo hint with the flags it was run with, and that hint works as printed.
# --for takes d (7d, at most 7d), and each wrong value is echoed with its
# own rule; a relative --admin socket path works.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object none.yaml "$object"
TOKEN="adm-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$TOKEN" >"$TMP/admin.token"
chmod 600 "$TMP/admin.token"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
SOCK="$TMP/admin.sock"
ADMIN_ADDR=$ADMIN_ADDR ADMIN_EXTRA="  token_file: $TMP/admin.token" gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "not ready"
# verdict_has PY_EXPR: /verdict (as v) satisfies it; the answer is in $TMP/verdict.json.
verdict_has() {
  curl -sf -o "$TMP/verdict.json" "$ADMIN/verdict" &&
    python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); sys.exit(not eval(sys.argv[2]))' "$TMP/verdict.json" "$1"
}
# usage_error EXPECTED ARGS...: skewgate override ARGS exits 2 with EXPECTED (fixed string) on stderr.
usage_error() {
  local want=$1 rc=0; shift
  "$SKEWGATE_BIN" override "$@" --admin "$SOCK" >/dev/null 2>"$TMP/usage.err" || rc=$?
  [ "$rc" = 2 ] || fail "override $* exited $rc: $(cat "$TMP/usage.err")"
  grep -qF -- "$want" "$TMP/usage.err" || fail "override $*: $(cat "$TMP/usage.err")"
}

note "over the socket with --reason: the log and /verdict name the peer's uid and pid, and the reason"
sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$TMP/cli.pid" \
  "$SKEWGATE_BIN" override reject --for 7d --reason 'draining rack 4 (ticket OPS-12)' --admin "$SOCK" >/dev/null ||
  fail "override reject --for 7d"
pid=$(cat "$TMP/cli.pid"); uid=$(id -u)
grep '"event":"override"' "$GATE_LOG" >"$TMP/override.log" || fail "no override log line"
python3 - "$TMP/override.log" "$uid" "$pid" <<'PY' || fail "override log line: $(cat "$TMP/override.log")"
import json, sys
line = json.loads(open(sys.argv[1]).read().splitlines()[-1])
uid, pid = int(sys.argv[2]), int(sys.argv[3])
assert line["by"] == {"via": "socket", "uid": uid, "pid": pid}, line
assert line["reason"] == "draining rack 4 (ticket OPS-12)" and line["action"] == "reject", line
assert "uid %d (pid %d) over the admin socket" % (uid, pid) in line["msg"], line
assert '"draining rack 4 (ticket OPS-12)"' in line["msg"], line
PY
verdict_has 'v["override"]["origin"] == "local" and v["override"]["setBy"] == {"via": "socket", "uid": '"$uid"', "pid": '"$pid"'} and v["override"]["reason"] == "draining rack 4 (ticket OPS-12)"' ||
  fail "/verdict override: $(cat "$TMP/verdict.json")"
note "--for 7d: it lapses in 7 days"
python3 - "$TMP/verdict.json" <<'PY' || fail "7d until: $(cat "$TMP/verdict.json")"
import datetime, json, sys
v = json.load(open(sys.argv[1]))
until = datetime.datetime.strptime(v["override"]["until"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
left = (until - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
assert 7 * 86400 - 60 < left <= 7 * 86400 + 2, left
PY

note "status shows who and why, and the undo hint with the flags it was run with; the hint works as printed"
rc=0; "$SKEWGATE_BIN" status --admin "$SOCK" >"$TMP/status.txt" || rc=$?
[ "$rc" = 3 ] || fail "status exit $rc under a reject override"
grep -qx " *set by uid $uid (pid $pid) over the admin socket at 20.*Z (.* ago)" "$TMP/status.txt" || fail "setter: $(cat "$TMP/status.txt")"
grep -qx ' *reason: draining rack 4 (ticket OPS-12)' "$TMP/status.txt" || fail "reason: $(cat "$TMP/status.txt")"
grep -qx " *undo: skewgate override clear --admin $SOCK" "$TMP/status.txt" || fail "undo hint: $(cat "$TMP/status.txt")"
"$SKEWGATE_BIN" status -c "$TMP/gate.yaml" >"$TMP/status-c.txt" || [ $? = 3 ] || fail "status -c"
grep -qx " *undo: skewgate override clear -c $TMP/gate.yaml" "$TMP/status-c.txt" || fail "undo hint with -c: $(cat "$TMP/status-c.txt")"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status-tcp.txt" || [ $? = 3 ] || fail "status --admin TCP"
grep -q "undo: skewgate override clear --admin $ADMIN_ADDR --token-file FILE" "$TMP/status-tcp.txt" ||
  fail "undo hint over TCP: $(cat "$TMP/status-tcp.txt")"
hint=$(sed -n 's/^ *undo: //p' "$TMP/status.txt")
eval "$SKEWGATE_BIN${hint#skewgate}" >/dev/null || fail "the printed hint failed: $hint"
verdict_has 'v["override"] is None' || fail "the hint did not clear: $(cat "$TMP/verdict.json")"

note "a relative socket path works, from the current directory"
(cd "$(dirname "$TMP")" && "$SKEWGATE_BIN" override admit --admin "$(basename "$TMP")/admin.sock" >/dev/null) ||
  fail "override --admin with a relative socket path"
verdict_has 'v["override"]["decision"] == "admit"' || fail "relative socket: $(cat "$TMP/verdict.json")"
rc=0; "$SKEWGATE_BIN" status --admin admin.sock >/dev/null 2>"$TMP/addr.err" || rc=$?
[ "$rc" = 2 ] || fail "--admin admin.sock exited $rc"
grep -qF -- "--admin admin.sock: expected IP:PORT (127.0.0.1:22625) or the path of the admin socket, with a '/'" "$TMP/addr.err" ||
  fail "--admin admin.sock: $(cat "$TMP/addr.err")"

note "over TCP with the token: the credential is its file's name, never the token"
"$SKEWGATE_BIN" override reject --admin "$ADMIN_ADDR" --token-file "$TMP/admin.token" --reason 'tcp test' >/dev/null ||
  fail "override over TCP"
verdict_has 'v["override"]["setBy"] == {"via": "token", "credential": "'"$TMP/admin.token"'"} and v["override"]["reason"] == "tcp test"' ||
  fail "/verdict override over TCP: $(cat "$TMP/verdict.json")"
grep '"event":"override"' "$GATE_LOG" | tail -1 >"$TMP/override.log"
grep -qF "the token of admin.token_file $TMP/admin.token over TCP" "$TMP/override.log" || fail "TCP log line: $(cat "$TMP/override.log")"
"$SKEWGATE_BIN" status --admin "$SOCK" >"$TMP/status.txt" || [ $? = 3 ] || fail "status"
grep -qx " *set with the token of admin.token_file $TMP/admin.token at 20.*" "$TMP/status.txt" || fail "status TCP setter: $(cat "$TMP/status.txt")"
! grep -qF "$TOKEN" "$GATE_LOG" "$TMP/status.txt" "$TMP/verdict.json" || fail "the token was shown"

note "each wrong --for says the value and the rule it broke"
usage_error '--for: "5 minutes" is not a duration: expected a whole number and a unit (d, h, m, s, ms)' reject --for "5 minutes"
usage_error '--for: "-1m" is negative' reject --for -1m
usage_error '--for: "0s" is no time' reject --for 0s
usage_error '--for: "90" is not a duration: a number needs a unit' reject --for 90
usage_error '--for: "1.5h" is not a duration: whole numbers of each unit: 1h30m, not 1.5h' reject --for 1.5h
usage_error '--for: "10d" is over the limit: at most 7d (168h)' reject --for 10d
usage_error '--reason: holds a control character' reject --reason "$(printf 'two\nlines')"
usage_error '--reason: 201 bytes: at most 200' reject --reason "$(printf 'x%.0s' $(seq 1 201))"

note "the API: for=8d is over the limit, reason= with a control character refused; the rule is in the 400"
[ "$(admin_post /override 'action=admit&for=8d')" = 400 ] || fail "for=8d: $(cat "$TMP/answer")"
grep -qF 'for: "8d" is over the limit: at most 7d (168h)' "$TMP/answer" || fail "for=8d answer: $(cat "$TMP/answer")"
[ "$(admin_post /override 'action=admit&for=7d')" = 200 ] || fail "for=7d: $(cat "$TMP/answer")"
[ "$(admin_post /override 'action=admit&reason=a%1b%5b31mred')" = 400 ] || fail "reason with ESC: $(cat "$TMP/answer")"
grep -qF 'reason: holds a control character' "$TMP/answer" || fail "reason answer: $(cat "$TMP/answer")"
[ "$(admin_post /override 'action=clear&reason=done')" = 200 ] || fail "clear with a reason: $(cat "$TMP/answer")"
grep '"event":"override"' "$GATE_LOG" | tail -1 | grep -q '"action":"clear".*"reason":"done"' || fail "clear log line: $(grep '"event":"override"' "$GATE_LOG" | tail -1)"
echo PASS
