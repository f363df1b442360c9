#!/usr/bin/env bash
# make run (conf/demo/run) checks every port it binds before it starts
# anything or prints its banner: with the admin port taken it fails at once,
# exit 1, naming the port and the variable that moves it, and prints no
# banner (it used to print the banner and then fail in the gate).
. "$(dirname "$0")/lib.sh"

tls=$(free_port) plain=$(free_port) mcs=$(free_port) admin=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
time.sleep(120)' "$admin" &
PIDS+=($!)
taken() { (exec 3<>"/dev/tcp/127.0.0.1/$admin") 2>/dev/null; }
wait_until 10 taken || fail "the stand-in listener on $admin did not start"

note "a taken admin port: a clear error, no banner"
set +e
DEMO_DIR="$TMP/demo" DEMO_TLS_PORT=$tls DEMO_PLAIN_PORT=$plain DEMO_MCS_PORT=$mcs DEMO_ADMIN_PORT=$admin \
  timeout 60 "$ROOT/conf/demo/run" >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "the demo exited $rc, expected 1; stdout: $(cat "$TMP/out"); stderr: $(cat "$TMP/err")"
! grep -q "skewgate demo" "$TMP/out" || fail "the demo printed its banner before failing: $(cat "$TMP/out")"
grep -q "port $admin on 127.0.0.1 is in use.*DEMO_ADMIN_PORT=PORT" "$TMP/err" || fail "the error: $(cat "$TMP/err")"
[ ! -e "$TMP/demo" ] || fail "the demo set things up before checking its ports"
echo PASS
