# shellcheck shell=bash
# lib_fakeapi.sh: shell helpers for integration tests that need the fake
# Kubernetes API server (tests/fakeapi/fakeapi.py).  Source it, then:
#
#   fa_init                      # temp dir $FA_DIR, cleanup trap on exit
#   fa_start --object FILE ...   # certs, token, start the fake; sets FA_PORT FA_URL FA_PID
#   fa_kubeconfig FILE [TOKEN]   # kubeconfig for the fake (default token: $FA_TOKEN)
#   fa_kubectl ARGS...           # kubectl against the fake ($FA_DIR/kubeconfig)
#   fa_ctl '{"fault":"drop_watches"}'   # control endpoint (POST /_fake/fault)
#   ... | fa_ctl_many            # one fault per line of stdin, over one connection
#   fa_stats                     # GET /_fake/stats (JSON on stdout)
#   fa_stop [PID]                # stop the fake (or PID) now
#   fa_spawn OUT ERR CMD...      # start CMD in the background, killed at exit
#   fa_wait SECONDS WHAT CMD...  # poll CMD every 50 ms until it succeeds, or fail
#   fa_fail MSG                  # print MSG, fail the test
#
# After fa_start, point a client (skewgate) at: server $FA_URL, CA file
# $FA_DIR/pki/ca.crt, token file $FA_DIR/token (rewrite it to rotate the token;
# the fake re-reads it on every request).  The fake's log is $FA_DIR/fakeapi.log.
#
# Everything runs on loopback; every process started here is killed by id at
# exit; every wait is bounded.  Needs bash, python3 (+ python3-yaml for YAML
# seeds), openssl, curl, kubectl (only for fa_kubectl).

FA_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$FA_LIB_DIR/lib_need.sh"
FA_ROOT=$(cd "$FA_LIB_DIR/../.." && pwd)
FA_PY=${FA_PY:-/usr/bin/python3}
FA_SERVER="$FA_ROOT/tests/fakeapi/fakeapi.py"
FA_MKCERTS="$FA_ROOT/tests/fakeapi/mkcerts.sh"
FA_FIXTURES=${FA_FIXTURES:-}
for _d in "$FA_ROOT/tests/fixtures/machineconfiguration" \
          "$FA_ROOT/../shared/fixtures/machineconfiguration"; do
  if [ -z "$FA_FIXTURES" ] && [ -d "$_d" ]; then FA_FIXTURES=$(cd "$_d" && pwd); fi
done
unset _d
FA_PIDS=()
FA_DIR=
FA_PORT=
FA_URL=
FA_PID=
FA_TOKEN=

fa_log() { printf '[%s] %s\n' "$(date +%H:%M:%S.%3N)" "$*" >&2; }

fa_fail() {
  printf 'FAIL: %s\n' "$*" >&2
  if [ -n "$FA_DIR" ] && [ -s "$FA_DIR/fakeapi.log" ]; then
    echo "--- fakeapi log (last 30 lines) ---" >&2
    tail -30 "$FA_DIR/fakeapi.log" >&2
  fi
  exit 1
}

# Kills every process started through this library, by pid, then removes
# the temp dir (kept when FA_KEEP=1).
fa_cleanup() {
  local pid i
  for pid in "${FA_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${FA_PIDS[@]}"; do
    # bounded: up to 2 s for a graceful exit, then SIGKILL
    for ((i = 0; i < 40; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
  done
  FA_PIDS=()
  if [ -n "$FA_DIR" ] && [ -d "$FA_DIR" ]; then
    if [ "${FA_KEEP:-0}" = 1 ]; then
      echo "fakeapi: kept $FA_DIR" >&2
    else
      rm -rf "$FA_DIR"
    fi
  fi
}

fa_init() {
  FA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fakeapi.XXXXXX")
  trap fa_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

fa_mkcerts() { "$FA_MKCERTS" "${1:-$FA_DIR/pki}"; }

# fa_spawn OUT ERR CMD...: CMD must be an external command (it is exec'd, so
# the recorded pid is CMD's own).
fa_spawn() {
  local out=$1 err=$2
  shift 2
  "$@" >"$out" 2>"$err" &
  FA_PIDS+=("$!")
  FA_LAST_PID=$!
}

# fa_wait SECONDS WHAT CMD...: runs CMD every 50 ms until it succeeds.
fa_wait() {
  local secs=$1 what=$2 i n
  shift 2
  n=$(awk -v s="$secs" 'BEGIN { printf "%d", s * 20 }')
  for ((i = 0; i < n; i++)); do
    if "$@"; then return 0; fi
    sleep 0.05
  done
  fa_fail "timed out after ${secs}s waiting for: $what"
}

# fa_start [fakeapi args...]: makes certs and a token (once), starts the fake
# on a loopback port and waits (bounded) for its port file. The port is
# the kernel's choice, or free_port's when lib.sh is sourced too (a port of
# the test's own block: a test that stops the fake and starts it again on
# the same port, --port "$FA_PORT", finds it free; one the kernel chose
# could meanwhile be any connection's source port). A --port in the
# arguments wins.
fa_start() {
  local port=()
  [ -n "$FA_DIR" ] || fa_init
  ! declare -F free_port >/dev/null || port=(--port "$(free_port)")
  [ -s "$FA_DIR/pki/ca.crt" ] || fa_mkcerts "$FA_DIR/pki" || fa_fail "mkcerts failed"
  if [ ! -s "$FA_DIR/token" ]; then
    FA_TOKEN="fa-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$FA_TOKEN" >"$FA_DIR/token"
  fi
  FA_TOKEN=$(cat "$FA_DIR/token")
  rm -f "$FA_DIR/port"
  fa_spawn /dev/null "$FA_DIR/fakeapi.log" "$FA_PY" "$FA_SERVER" \
    --cert "$FA_DIR/pki/server.crt" --key "$FA_DIR/pki/server.key" \
    --token-file "$FA_DIR/token" --port-file "$FA_DIR/port" "${port[@]}" "$@"
  FA_PID=$FA_LAST_PID
  local i
  for ((i = 0; i < 200; i++)); do   # up to 10 s
    [ -s "$FA_DIR/port" ] && break
    kill -0 "$FA_PID" 2>/dev/null || fa_fail "fakeapi exited during start-up"
    sleep 0.05
  done
  [ -s "$FA_DIR/port" ] || fa_fail "fakeapi did not write its port file within 10 s"
  FA_PORT=$(cat "$FA_DIR/port")
  FA_URL="https://127.0.0.1:$FA_PORT"
  fa_kubeconfig "$FA_DIR/kubeconfig"
  fa_log "fakeapi pid $FA_PID on $FA_URL"
}

# fa_stop [PID]: stops a process started here (default: the fake), bounded.
fa_stop() {
  local pid=${1:-$FA_PID} i keep=()
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
  for i in "${FA_PIDS[@]}"; do [ "$i" = "$pid" ] || keep+=("$i"); done
  FA_PIDS=("${keep[@]}")
  if [ "$pid" = "$FA_PID" ]; then FA_PID=; fi
}

# fa_kubeconfig FILE [TOKEN]
fa_kubeconfig() {
  local file=$1 token=${2:-$FA_TOKEN}
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fakeapi
  cluster:
    server: $FA_URL
    certificate-authority: $FA_DIR/pki/ca.crt
users:
- name: fakeapi-user
  user:
    token: "$token"
contexts:
- name: fakeapi
  context:
    cluster: fakeapi
    user: fakeapi-user
current-context: fakeapi
EOF
}

# fa_kubectl ARGS...: kubectl with our kubeconfig and a private discovery cache.
# Set FA_KUBECONFIG to use another kubeconfig.
fa_kubectl() {
  KUBECONFIG=${FA_KUBECONFIG:-$FA_DIR/kubeconfig} KUBECACHEDIR="$FA_DIR/kube-cache" \
    kubectl --request-timeout=20s "$@"
}

# fa_ctl JSON: POST /_fake/fault; prints the JSON answer; fails on non-2xx.
fa_ctl() {
  curl -sS --fail-with-body --max-time 10 --cacert "$FA_DIR/pki/ca.crt" \
    -H 'Content-Type: application/json' -d "$1" "$FA_URL/_fake/fault"
}

fa_stats() {
  curl -sS --fail-with-body --max-time 10 --cacert "$FA_DIR/pki/ca.crt" "$FA_URL/_fake/stats"
}

# fa_curl ARGS...: curl against the fake with the CA and the bearer token.
fa_curl() {
  curl -sS --max-time 20 --cacert "$FA_DIR/pki/ca.crt" -H "Authorization: Bearer $FA_TOKEN" "$@"
}

# fa_json EXPR [FILE]: evaluates a Python expression on JSON (stdin or FILE)
# bound to `d`; prints the result (strings bare, others as JSON).
fa_json() {
  "$FA_PY" -c '
import json, sys
src = open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin
d = json.load(src)
r = eval(sys.argv[1], {"d": d})
print(r if isinstance(r, str) else json.dumps(r))
' "$@"
}

# fa_json_stream_has FILE EXPR: true if some JSON value in FILE (concatenated
# or one per line, as kubectl --watch -o json and watch streams print them)
# makes the Python expression on `d` true.
fa_json_stream_has() {
  "$FA_PY" -c '
import json, sys
text = open(sys.argv[1]).read()
dec, i, n = json.JSONDecoder(), 0, len(text)
while i < n:
    while i < n and text[i].isspace():
        i += 1
    if i >= n:
        break
    try:
        d, i = dec.raw_decode(text, i)
    except ValueError:
        j = text.find("\n", i)
        if j < 0:
            break
        i = j + 1
        continue
    try:
        if eval(sys.argv[2], {"d": d}):
            sys.exit(0)
    except Exception:
        pass
sys.exit(1)
' "$@"
}

# fa_ctl_many: POSTs each line of stdin (one JSON fault each) to the
# control API over one connection: tens of objects in well under a second
# (a curl each takes tens of milliseconds).
fa_ctl_many() {
  "$FA_PY" -c '
import http.client, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[2]), context=ctx, timeout=10)
for line in sys.stdin:
    if not line.strip():
        continue
    c.request("POST", "/_fake/fault", body=line.encode(), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    if r.status // 100 != 2:
        sys.exit("fa_ctl_many: %d %s" % (r.status, body[:300]))
' "$FA_DIR/pki/ca.crt" "$FA_PORT"
}
