#!/usr/bin/env bash
# The command line as people meet it: --version (and -V) print the version
# and the commit the binary was built from; an unknown output format or
# override action says what it is and what to use before the usage (exit 2);
# a file the config names that cannot be opened (certificate, key, CA,
# token file) is named with its key and the key's file:line:column, by
# `check --files` and by `run`; an admin.socket whose directory does not
# exist is refused by `check --files` as `run` refuses it; a token file
# that group or others may read is warned about by `check --files`, at
# start and at each reload.
. "$(dirname "$0")/lib.sh"

note "--version and -V"
out=$("$SKEWGATE_BIN" --version) || fail "--version failed"
[ "$("$SKEWGATE_BIN" -V)" = "$out" ] || fail "-V differs from --version"
grep -qE '^skewgate [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]{7,}(-dirty)?\))?$' <<<"$out" || fail "--version: $out"
# A build from this checkout knows its commit; the binary names the HEAD it was built from.
if commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) && [ -z "${SKEWGATE_SAN:-}" ] &&
   [ "$(realpath "$SKEWGATE_BIN")" = "$ROOT/build/skewgate" ]; then
  grep -q "(commit $commit" <<<"$out" || fail "--version names no commit $commit: $out"
fi
"$SKEWGATE_BIN" --help | has -- "--version" || fail "--help does not mention --version"

note "status -o yaml: the format named, exit 2"
set +e
"$SKEWGATE_BIN" status -o yaml --admin 127.0.0.1:1 >"$TMP/out" 2>"$TMP/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "status -o yaml exited $rc"
[ "$(head -1 "$TMP/err")" = "skewgate status: unknown output format 'yaml': use text or json" ] ||
  fail "status -o yaml: $(cat "$TMP/err")"
grep -q "^usage: skewgate status" "$TMP/err" || fail "no usage after the error"

note "override frob: the action named, exit 2"
set +e
"$SKEWGATE_BIN" override frob --admin 127.0.0.1:1 >"$TMP/out" 2>"$TMP/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "override frob exited $rc"
[ "$(head -1 "$TMP/err")" = "skewgate override: unknown override action 'frob': use admit, reject or clear" ] ||
  fail "override frob: $(cat "$TMP/err")"
grep -q "^usage: skewgate override" "$TMP/err" || fail "no usage after the error"
note "a missing file: its key and file:line:column, from check --files and from run"
printf 'hello\n' >"$TMP/mc.yaml"
base() {   # the lines every config below starts with
  printf 'listeners:\n  - address: "127.0.0.1:0"\nenforcement:\n  source: file\n  file:\n    path: %s\n' "$TMP/mc.yaml"
}
refused() {   # refused FILE EXPECTED: check --files and run both say EXPECTED (run after "skewgate run: ")
  local rc
  "$SKEWGATE_BIN" check -c "$1" >/dev/null || fail "check (without --files) refused $1"
  set +e
  "$SKEWGATE_BIN" check --files -c "$1" >/dev/null 2>"$TMP/err"; rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(cat "$TMP/err")" = "$2" ] || fail "check --files (exit $rc): $(cat "$TMP/err"); expected: $2"
  set +e
  timeout 10 "$SKEWGATE_BIN" run -c "$1" >/dev/null 2>"$TMP/err"; rc=$?
  set -e
  [ "$rc" = 1 ] && grep -qxF "skewgate run: $2" "$TMP/err" || fail "run (exit $rc): $(cat "$TMP/err"); expected: $2"
}
printf 'listeners:\n  - address: "127.0.0.1:0"\n    tls:\n      certificate: %s\n      key: %s\n' \
  "$TMP/no.crt" "$TMP/no.key" >"$TMP/cert.yaml"
printf 'enforcement:\n  source: file\n  file:\n    path: %s\n' "$TMP/mc.yaml" >>"$TMP/cert.yaml"
refused "$TMP/cert.yaml" "$TMP/cert.yaml:4:20: listeners[0].tls.certificate: $TMP/no.crt: cannot open: No such file or directory"
certs
sed -i "s|$TMP/no.crt|$TMP/pki/tls.crt|" "$TMP/cert.yaml"
refused "$TMP/cert.yaml" "$TMP/cert.yaml:5:12: listeners[0].tls.key: $TMP/no.key: cannot open: No such file or directory"
{ base; printf 'admin:\n  token_file: %s\n' "$TMP/no.token"; } >"$TMP/admin-token.yaml"
refused "$TMP/admin-token.yaml" "$TMP/admin-token.yaml:8:15: admin.token_file: token file $TMP/no.token: No such file or directory"
{ base; printf 'admission:\n  token:\n    files:\n      - %s\n' "$TMP/no.tokens"; } >"$TMP/adm-token.yaml"
refused "$TMP/adm-token.yaml" "$TMP/adm-token.yaml:10:9: admission.token.files[0]: token file $TMP/no.tokens: No such file or directory"
# The Kubernetes source's files: check --files only (run retries the source).
printf 'listeners:\n  - address: "127.0.0.1:0"\nenforcement:\n  kubernetes:\n    server: https://127.0.0.1:1\n    ca_file: %s\n' \
  "$TMP/no-ca.crt" >"$TMP/kube.yaml"
if "$SKEWGATE_BIN" check --files -c "$TMP/kube.yaml" 2>"$TMP/err"; then fail "check --files took a missing CA"; fi
[ "$(cat "$TMP/err")" = "$TMP/kube.yaml:6:14: enforcement.kubernetes.ca_file: $TMP/no-ca.crt: cannot open: No such file or directory" ] ||
  fail "missing CA: $(cat "$TMP/err")"
sed -i "s|$TMP/no-ca.crt|$TMP/pki/ca.crt|" "$TMP/kube.yaml"
if "$SKEWGATE_BIN" check --files -c "$TMP/kube.yaml" 2>"$TMP/err"; then fail "check --files took a missing default token"; fi
[ "$(cat "$TMP/err")" = "$TMP/kube.yaml: enforcement.kubernetes.token_file (default): token file /var/run/secrets/kubernetes.io/serviceaccount/token: No such file or directory" ] ||
  [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ] || fail "missing default token: $(cat "$TMP/err")"

note "admin.socket in a directory that does not exist: check --files refuses it, as run does"
{ base; printf 'admin:\n  socket: %s\n' "$TMP/no-such-dir/admin.sock"; } >"$TMP/sock.yaml"
refused "$TMP/sock.yaml" "$TMP/sock.yaml:8:11: admin.socket: the socket's directory $TMP/no-such-dir: No such file or directory (the gate creates the socket, not its directory)"

note "a token file group or others may read: a warning from check --files, at start and at each reload"
printf 'tok-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$TMP/admin.token"
chmod 0644 "$TMP/admin.token"
ADMIN_ADDR="127.0.0.1:$(free_port)"
{ base; printf 'admin:\n  address: "%s"\n  token_file: %s\n' "$ADMIN_ADDR" "$TMP/admin.token"; } >"$TMP/mode.yaml"
"$SKEWGATE_BIN" check --files -c "$TMP/mode.yaml" >"$TMP/out" 2>"$TMP/err" || fail "check --files refused a 0644 token: $(cat "$TMP/err")"
[ "$(cat "$TMP/err")" = "warning: $TMP/mode.yaml:9:15: admin.token_file: $TMP/admin.token is mode 0644: every local user may read the token; chmod 0600 it, owned by the gate's user" ] ||
  fail "check --files warning: $(cat "$TMP/err")"
chmod 0640 "$TMP/admin.token"
"$SKEWGATE_BIN" check --files -c "$TMP/mode.yaml" >/dev/null 2>"$TMP/err"
grep -q "is mode 0640: its group may read the token" "$TMP/err" || fail "0640: $(cat "$TMP/err")"
chmod 0600 "$TMP/admin.token"
"$SKEWGATE_BIN" check --files -c "$TMP/mode.yaml" >/dev/null 2>"$TMP/err"
[ ! -s "$TMP/err" ] || fail "a 0600 token file was warned about: $(cat "$TMP/err")"
chmod 0644 "$TMP/admin.token"
GATE_LOG="$TMP/gate.log"
"$SKEWGATE_BIN" run -c "$TMP/mode.yaml" 2>"$GATE_LOG" &
GATE_PID=$!
PIDS+=($GATE_PID)
warnings() { grep -c '"event":"token_file_mode".*admin.token is mode 0644' "$GATE_LOG" || true; }
started() { grep -q '"event":"started"' "$GATE_LOG"; }
wait_until 10 started || fail "the gate did not start: $(cat "$GATE_LOG")"
[ "$(warnings)" = 1 ] || fail "start: $(warnings) token_file_mode warnings: $(cat "$GATE_LOG")"
kill -HUP "$GATE_PID"
reloaded() { [ "$(warnings)" = 2 ]; }
wait_until 10 reloaded || fail "reload: $(warnings) token_file_mode warnings: $(cat "$GATE_LOG")"

note "status shows the source's last error (the object file holds no MachineConfiguration)"
"$SKEWGATE_BIN" status --admin "$ADMIN_ADDR" >"$TMP/status" 2>&1 || true
why=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["msg"].replace(" (keeping the last good view)", ""))' \
  "$(grep -m1 '"event":"source_error"' "$GATE_LOG")")
[ -n "$why" ] || fail "the gate logged no source_error: $(cat "$GATE_LOG")"
grep -qF "Last error:  $why (" "$TMP/status" || fail "status shows no last error ($why): $(cat "$TMP/status")"
"$SKEWGATE_BIN" status -o json --admin "$ADMIN_ADDR" >"$TMP/status.json" 2>/dev/null || true
python3 - "$TMP/status.json" "$why" <<'PY' || fail "status -o json: $(cat "$TMP/status.json")"
import json, sys
e = json.load(open(sys.argv[1]))["lastError"]
assert e["message"] == sys.argv[2] and e["at"].endswith("Z"), e
PY
gate_stop
echo PASS
