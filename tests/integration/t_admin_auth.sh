#!/usr/bin/env bash
# The admin API's credentials (issue 11.4): reads are open on loopback;
# a change (POST /override) needs the unix socket (mode 0600, the
# credential) or, over TCP, the bearer token of admin.token_file: none is
# 401 with WWW-Authenticate, a wrong one 403, the file re-read on every
# use (rotation, removal). A gate with neither refuses changes and says
# how to configure one. The token never appears in any output, debug log
# included.
. "$(dirname "$0")/lib.sh"

certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
TOKEN="adm-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
WRONG="bad-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
NEXT="nxt-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$TOKEN" >"$TMP/admin.token"
chmod 600 "$TMP/admin.token"

ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
SOCK="$TMP/admin.sock"
CLI_OUT="$TMP/cli.out"
: >"$CLI_OUT"
# tcp_post [CURL_ARGS...]: POST action=clear over TCP; the status code.
tcp_post() { curl -s -o "$TMP/answer" -w '%{http_code}' --max-time 10 -D "$TMP/head" -d action=clear "$@" "$ADMIN/override"; }
reason() { curl -sf "$ADMIN/verdict" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])'; }

note "check: a socket path longer than a sockaddr_un holds is refused with file:line:column"
long="/tmp/$(printf 'x%.0s' $(seq 1 120))/admin.sock"
ADMIN_SOCKET=$long gate_config "$TMP/long.yaml" hold "$object"
if "$SKEWGATE_BIN" check -c "$TMP/long.yaml" 2>"$TMP/long.err"; then fail "check took a 130-byte socket path"; fi
grep -qE 'long.yaml:[0-9]+:[0-9]+: admin.socket: a unix socket path is at most 107 bytes' "$TMP/long.err" ||
  fail "check did not say where and why: $(cat "$TMP/long.err")"

note "an unreadable token file: check --files names it, run refuses to start"
ADMIN_EXTRA="  token_file: $TMP/missing.token" gate_config "$TMP/missing.yaml" hold "$object"
"$SKEWGATE_BIN" check -c "$TMP/missing.yaml" >/dev/null || fail "check (without --files) opened the token file"
if "$SKEWGATE_BIN" check --files -c "$TMP/missing.yaml" 2>"$TMP/missing.err"; then fail "check --files took a missing token file"; fi
grep -q "admin.token_file: token file $TMP/missing.token: No such file" "$TMP/missing.err" || fail "check --files: $(cat "$TMP/missing.err")"
set +e
timeout 10 "$SKEWGATE_BIN" run -c "$TMP/missing.yaml" 2>"$TMP/missing.run"; rc=$?
set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "the gate started without its token file (exit $rc)"
grep -q "admin.token_file: token file" "$TMP/missing.run" || fail "run did not say why: $(cat "$TMP/missing.run")"

note "the gate: socket and token file, debug logs"
ADMIN_EXTRA="  token_file: $TMP/admin.token" gate_config "$TMP/gate.yaml" hold "$object" "log:
  level: debug"
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" || fail "check refuses socket + token_file"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "the gate is not ready"

note "the socket is mode 0600 (srw-------), owned by the gate's user"
[ -S "$SOCK" ] || fail "no socket at $SOCK"
[ "$(stat -c '%a %u' "$SOCK")" = "600 $(id -u)" ] || fail "socket mode/owner: $(stat -c '%a %u' "$SOCK")"
grep -q '"event":"admin_socket".*"mode":"0600"' "$GATE_LOG" || fail "no admin_socket log line"

note "reads are open over TCP, no credential"
for p in /healthz /readyz /verdict /metrics; do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$ADMIN$p")" = 200 ] || fail "GET $p over TCP without a token"
done

note "over the socket a change needs nothing more"
[ "$(admin_post /override action=admit)" = 200 ] || fail "socket override: $(cat "$TMP/answer")"
[ "$(reason)" = Override ] || fail "the socket's override did not take"
[ "$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' http://localhost/verdict)" = 200 ] || fail "GET /verdict over the socket"

note "over TCP: no token 401 with WWW-Authenticate: Bearer, a wrong one 403, the right one 200"
[ "$(tcp_post)" = 401 ] || fail "no token: $(cat "$TMP/answer")"
grep -qi '^WWW-Authenticate: Bearer' "$TMP/head" || fail "401 without WWW-Authenticate: $(cat "$TMP/head")"
grep -q 'admin.token_file' "$TMP/answer" || fail "the 401 does not say what to send: $(cat "$TMP/answer")"
[ "$(tcp_post -H 'Authorization: Basic Zm9vOmJhcg==')" = 401 ] || fail "a Basic credential is not a bearer token"
[ "$(tcp_post -H "Authorization: Bearer $WRONG")" = 403 ] || fail "wrong token: $(cat "$TMP/answer")"
[ "$(tcp_post -H "Authorization: Bearer ${TOKEN}x")" = 403 ] || fail "the token plus a byte was taken"
[ "$(tcp_post -H "Authorization: Bearer ${TOKEN%?}")" = 403 ] || fail "the token less a byte was taken"
[ "$(reason)" = Override ] || fail "a refused request changed the verdict"
[ "$(tcp_post -H "Authorization: Bearer $TOKEN")" = 200 ] || fail "right token: $(cat "$TMP/answer")"
[ "$(reason)" = OutOfSkew ] || fail "the token's clear did not take"
[ "$(tcp_post -H "Authorization: bearer $TOKEN")" = 200 ] || fail "the scheme is case-insensitive (RFC 6750)"

note "the token file is re-read: a rotation takes effect at the next request, a removal revokes"
printf '%s\n' "$NEXT" >"$TMP/admin.token.new" && mv "$TMP/admin.token.new" "$TMP/admin.token"
[ "$(tcp_post -H "Authorization: Bearer $TOKEN")" = 403 ] || fail "the old token still works after rotation"
[ "$(tcp_post -H "Authorization: Bearer $NEXT")" = 200 ] || fail "the new token is refused"
rm "$TMP/admin.token"
[ "$(tcp_post -H "Authorization: Bearer $NEXT")" = 503 ] || fail "a removed token file still allows: $(cat "$TMP/answer")"
grep -q '"event":"admin_token"' "$GATE_LOG" || fail "the unreadable token file is not logged"
printf '%s\n' "$TOKEN" >"$TMP/admin.token"
[ "$(tcp_post -H "Authorization: Bearer $TOKEN")" = 200 ] || fail "the restored token is refused"

note "skewgate override: the socket with -c, the token over TCP with --token-file or the config"
"$SKEWGATE_BIN" override reject -c "$TMP/gate.yaml" >>"$CLI_OUT" 2>&1 || fail "override -c (socket): $(tail -3 "$CLI_OUT")"
[ "$(reason)" = Override ] || fail "override over the socket did not take"
"$SKEWGATE_BIN" override clear --admin "$ADMIN_ADDR" --token-file "$TMP/admin.token" >>"$CLI_OUT" 2>&1 ||
  fail "override --admin --token-file: $(tail -3 "$CLI_OUT")"
[ "$(reason)" = OutOfSkew ] || fail "override over TCP did not clear"
set +e
"$SKEWGATE_BIN" override admit --admin "$ADMIN_ADDR" >>"$CLI_OUT" 2>&1; rc_none=$?
printf '%s\n' "$WRONG" >"$TMP/wrong.token"
"$SKEWGATE_BIN" override admit --admin "$ADMIN_ADDR" --token-file "$TMP/wrong.token" >"$TMP/wrong.out" 2>&1; rc_wrong=$?
set -e
cat "$TMP/wrong.out" >>"$CLI_OUT"
[ "$rc_none" = 1 ] && [ "$rc_wrong" = 1 ] || fail "override without/with a wrong token: exit $rc_none/$rc_wrong"
grep -q 'answered 403' "$TMP/wrong.out" || fail "the CLI does not say 403: $(cat "$TMP/wrong.out")"
[ "$(reason)" = OutOfSkew ] || fail "a refused CLI override changed the verdict"
# The config with the token file and no socket: the CLI sends the token.
ADMIN_SOCKET= ADMIN_EXTRA="  token_file: $TMP/admin.token" gate_config "$TMP/tcp-only.yaml" hold "$object"
"$SKEWGATE_BIN" override admit --for 1h -c "$TMP/tcp-only.yaml" >>"$CLI_OUT" 2>&1 || fail "override -c (token): $(tail -3 "$CLI_OUT")"
[ "$(reason)" = Override ] || fail "override with the config's token did not take"
"$SKEWGATE_BIN" status -c "$TMP/gate.yaml" >>"$CLI_OUT" 2>&1 || [ $? = 0 ] || fail "status over the socket"
grep -q '"reason": "Override"' "$CLI_OUT" || fail "status over the socket printed no verdict"

note "a second gate cannot take a live socket; a stale one (gate killed) is replaced"
ADMIN_ADDR="127.0.0.1:$(free_port)" gate_config "$TMP/second.yaml" hold "$object"
set +e
timeout 10 "$SKEWGATE_BIN" run -c "$TMP/second.yaml" 2>"$TMP/second.err"; rc=$?
set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "a second gate started on a live socket (exit $rc)"
grep -q 'another process serves it' "$TMP/second.err" || fail "second gate: $(cat "$TMP/second.err")"
[ "$(admin_post /override action=clear)" = 200 ] || fail "the first gate lost its socket"
cat "$GATE_LOG" "$TMP/second.err" >"$TMP/all-logs"
kill -KILL "$GATE_PID"; wait "$GATE_PID" 2>/dev/null || true
[ -S "$SOCK" ] || fail "a killed gate removed its socket?"
gate_start "$TMP/gate.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "the gate did not restart over a stale socket"
[ "$(admin_post /override action=clear)" = 200 ] || fail "the restarted gate's socket"
gate_stop
[ ! -e "$SOCK" ] || fail "a stopped gate left its socket"
cat "$GATE_LOG" >>"$TMP/all-logs"

note "neither socket nor token: changes refused (403) with how to configure one; reads still open"
ADMIN_SOCKET= gate_config "$TMP/bare.yaml" hold "$object" "log:
  level: debug"
gate_start "$TMP/bare.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "bare gate not ready"
[ "$(tcp_post -H "Authorization: Bearer $TOKEN")" = 403 ] || fail "a change without configured credentials"
grep -q 'admin.socket' "$TMP/answer" && grep -q 'admin.token_file' "$TMP/answer" || fail "the 403 does not say how: $(cat "$TMP/answer")"
grep -q '"event":"admin_readonly"' "$GATE_LOG" || fail "no warning at start"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$ADMIN/verdict")" = 200 ] || fail "reads closed too"
gate_stop
cat "$GATE_LOG" >>"$TMP/all-logs"

note "socket but no token: a change over TCP is refused (403) saying to use the socket"
gate_config "$TMP/sock-only.yaml" hold "$object"
gate_start "$TMP/sock-only.yaml"
wait_until 10 curl -sf -o /dev/null "$ADMIN/readyz" || fail "socket-only gate not ready"
[ "$(tcp_post)" = 403 ] || fail "a change over TCP with no token configured: $(cat "$TMP/answer")"
grep -q "send them to the admin socket $SOCK instead" "$TMP/answer" || fail "the 403 does not point at the socket: $(cat "$TMP/answer")"
! grep -q "none is configured" "$TMP/answer" || fail "the 403 says nothing is configured: $(cat "$TMP/answer")"
[ "$(admin_post /override action=clear)" = 200 ] || fail "the socket it points at refuses: $(cat "$TMP/answer")"
gate_stop
cat "$GATE_LOG" >>"$TMP/all-logs"

note "no token in any log line or output (debug logs, right and wrong tokens sent)"
cat "$CLI_OUT" >>"$TMP/all-logs"
[ "$(grep -c '"level":"debug"' "$TMP/all-logs")" -gt 0 ] || fail "the logs hold no debug line: the check would prove little"
for t in "$TOKEN" "$WRONG" "$NEXT"; do
  if grep -qF "$t" "$TMP/all-logs"; then fail "a token appears in the output: $(grep -F "$t" "$TMP/all-logs" | head -3)"; fi
done
echo PASS
