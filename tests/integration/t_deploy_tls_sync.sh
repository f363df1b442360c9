#!/usr/bin/env bash
# deploy/kubernetes/base/tls-sync.sh, the sidecar that brings the MCS serving
# certificate to the gate and a rotation with it, run against a real gate:
# the first sync puts the files in place; an unchanged secret changes
# nothing and signals no one; a rotated secret is swapped in whole and the
# gate (only the gate run with that config) gets SIGHUP and serves the new
# certificate without a restart and without dropping a kept connection; a
# failed read keeps what is served. `oc` is a stand-in that answers
# `oc extract` from a directory and refuses any other arguments: the real
# one needs a cluster.
. "$(dirname "$0")/lib.sh"

SYNC="$ROOT/deploy/kubernetes/base/tls-sync.sh"
certs                                   # $TMP/pki: CA 1 and its leaf: the secret before the rotation
"$ROOT/tools/mkcert.sh" "$TMP/pki2"     # CA 2 and its leaf: after the rotation
mcs_start
object="$TMP/mc.yaml"
set_object none.yaml "$object"

# The secret, as a directory the stand-in reads through one symlink, so
# that a rotation is one rename.
secret="$TMP/secret"
mkdir -p "$secret/v1" "$secret/v2"
cp "$TMP/pki/tls.crt" "$TMP/pki/tls.key" "$secret/v1/"
cp "$TMP/pki2/tls.crt" "$TMP/pki2/tls.key" "$secret/v2/"
ln -sfn v1 "$secret/current"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/oc" <<'EOF'
#!/bin/bash
# oc stand-in: `oc extract -n openshift-machine-config-operator
# secret/machine-config-server-tls --keys=tls.crt,tls.key --to=DIR`, nothing else.
set -euo pipefail
echo "$*" >>"$FAKE_SECRET/calls"
[ $# -eq 6 ] && [ "$1" = extract ] && [ "$2" = -n ] && [ "$3" = openshift-machine-config-operator ] &&
  [ "$4" = secret/machine-config-server-tls ] && [ "$5" = --keys=tls.crt,tls.key ] && [[ "$6" == --to=* ]] ||
  { echo "oc stand-in: unexpected arguments: $*" >&2; exit 64; }
if [ -e "$FAKE_SECRET/fail" ]; then echo "error: the server is currently unable to handle the request" >&2; exit 1; fi
to=${6#--to=}
[ -d "$to" ] || { echo "error: $to is not a directory" >&2; exit 1; }
for k in tls.crt tls.key; do cp "$FAKE_SECRET/current/$k" "$to/$k"; echo "$k"; done
EOF
chmod +x "$TMP/bin/oc"
export FAKE_SECRET=$secret OC="$TMP/bin/oc" TLS_DIR="$TMP/tls"
mkdir -m 700 "$TLS_DIR"
calls() { [ -f "$secret/calls" ] && wc -l <"$secret/calls" || echo 0; }
called_at_least() { [ "$(calls)" -ge "$1" ]; }
fingerprint() { openssl x509 -noout -fingerprint -sha256 -in "$1"; }
served() {
  openssl s_client -connect "127.0.0.1:$TLS_PORT" -servername localhost </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256
}

note "once: the first sync puts tls.crt and tls.key under current/"
GATE_CONFIG="$TMP/gate.yaml" bash "$SYNC" once 2>"$TMP/sync-once.log" || fail "once: $(cat "$TMP/sync-once.log")"
[ "$(fingerprint "$TLS_DIR/current/tls.crt")" = "$(fingerprint "$TMP/pki/tls.crt")" ] || fail "current/tls.crt is not the secret's"
cmp -s "$TLS_DIR/current/tls.key" "$TMP/pki/tls.key" || fail "current/tls.key is not the secret's"
[ -L "$TLS_DIR/current" ] || fail "current is not a symlink"

note "once: with no files yet and the API failing, it says so"
mkdir -m 700 "$TMP/tls-empty"
touch "$secret/fail"
if TLS_DIR="$TMP/tls-empty" bash "$SYNC" once 2>"$TMP/sync-fail.log"; then fail "once succeeded without a certificate"; fi
grep -q '"event":"read_failed"' "$TMP/sync-fail.log" || fail "no read_failed: $(cat "$TMP/sync-fail.log")"
[ -z "$(ls -A "$TMP/tls-empty")" ] || fail "a failed read left files: $(ls -A "$TMP/tls-empty")"
rm -f "$secret/fail"

note "the gate serves the synced certificate"
gate_config "$TMP/gate.yaml" hold "$object"
sed -i "s|$TMP/pki/tls\.crt|$TLS_DIR/current/tls.crt|; s|$TMP/pki/tls\.key|$TLS_DIR/current/tls.key|" "$TMP/gate.yaml"
grep -q "certificate: $TLS_DIR/current/tls.crt" "$TMP/gate.yaml" || fail "config: $(cat "$TMP/gate.yaml")"
gate_start "$TMP/gate.yaml"
gate_pid=$GATE_PID
[ "$(served)" = "$(fingerprint "$TMP/pki/tls.crt")" ] || fail "the gate does not serve the synced certificate"

# Another gate, run with another config: the sidecar must leave it alone.
other_log="$TMP/other.log"
cp "$TMP/gate.yaml" "$TMP/other.yaml"
"$SKEWGATE_BIN" run -c "$TMP/other.yaml" 2>"$other_log" &
other_pid=$!
PIDS+=("$other_pid")
wait_until 10 grep -q '"event":"started"' "$other_log" || fail "the other gate did not start: $(cat "$other_log")"

note "a connection kept across the rotation"
python3 - "$TLS_PORT" "$CA" "$TMP/go" >"$TMP/kept.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
port, ca, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20), server_hostname="localhost")
f = s.makefile("rb")
def get():
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    status = f.readline()
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    f.read(length)
    return status.split()[1].decode()
print("first", get(), flush=True)
deadline = time.time() + 30
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.02)
print("second", get(), flush=True)
PY
kept_pid=$!
PIDS+=("$kept_pid")
wait_until 10 grep -q '^first 200' "$TMP/kept.out" || fail "kept connection: $(cat "$TMP/kept.out")"

note "watch: an unchanged secret is read again and changes nothing"
GATE_CONFIG="$TMP/gate.yaml" SYNC_INTERVAL=0.1 bash "$SYNC" watch 2>"$TMP/sync-watch.log" &
PIDS+=($!)
before=$(calls)
wait_until 10 called_at_least $((before + 3)) || fail "watch does not poll: $(cat "$TMP/sync-watch.log")"
if grep -q '"event":"reload"' "$GATE_LOG"; then fail "the gate was reloaded with nothing changed"; fi
if grep -q '"event":"reload"' "$TMP/sync-watch.log"; then fail "SIGHUP with nothing changed"; fi
[ "$(ls "$TLS_DIR" | grep -c '^gen-')" = 1 ] || fail "generations left behind: $(ls "$TLS_DIR")"

note "rotation: the new pair is swapped in, the gate gets SIGHUP and serves it"
ln -sfn v2 "$secret/current.new" && mv -T "$secret/current.new" "$secret/current"
rotated() { [ "$(served)" = "$(fingerprint "$TMP/pki2/tls.crt")" ]; }
wait_until 15 rotated || fail "the gate still serves the old certificate: $(cat "$TMP/sync-watch.log")"
grep -q "\"event\":\"reload\",\"msg\":\"SIGHUP to the gate (pid $gate_pid)\"" "$TMP/sync-watch.log" ||
  fail "no SIGHUP logged for pid $gate_pid: $(cat "$TMP/sync-watch.log")"
grep -q '"event":"reload"' "$GATE_LOG" || fail "the gate logged no reload"
[ "$GATE_PID" = "$gate_pid" ] && kill -0 "$gate_pid" || fail "the gate was restarted"
cmp -s "$TLS_DIR/current/tls.key" "$TMP/pki2/tls.key" || fail "current/tls.key is not the new key"
[ "$(ls "$TLS_DIR" | grep -c '^gen-')" = 1 ] || fail "the old generation was not removed: $(ls "$TLS_DIR")"
curl -sf --cacert "$TMP/pki2/ca.crt" -o /dev/null "https://localhost:$TLS_PORT/healthz" --resolve "localhost:$TLS_PORT:127.0.0.1" ||
  fail "a new connection does not verify against the new CA"
touch "$TMP/go"
wait_until 10 grep -q '^second' "$TMP/kept.out" || fail "kept connection: $(cat "$TMP/kept.out")"
grep -q '^second 200' "$TMP/kept.out" || fail "the kept connection did not survive the reload: $(cat "$TMP/kept.out")"
if grep -q '"event":"reload"' "$other_log"; then fail "the other gate (another config) was signalled"; fi
kill -0 "$other_pid" || fail "the other gate died"

note "a failed read keeps what is served"
touch "$secret/fail"
before=$(calls)
wait_until 10 called_at_least $((before + 2)) || fail "watch stopped polling"
grep -q '"event":"read_failed"' "$TMP/sync-watch.log" || fail "no read_failed logged"
rotated || fail "a failed read changed the served certificate"
cmp -s "$TLS_DIR/current/tls.key" "$TMP/pki2/tls.key" || fail "a failed read changed the files"
[ "$(ls "$TLS_DIR" | grep -c '^gen-')" = 1 ] || fail "a failed read left a generation: $(ls "$TLS_DIR")"
echo PASS
