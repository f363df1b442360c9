# Sourced by the integration tests: temp dirs, process cleanup, bounded
# condition waits, the nginx MCS stand-in, certificates and skewgate itself
# (GATE_START_WAIT: seconds gate_start waits for the listeners, default 10).
# Everything listens on loopback only.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib_need.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${SKEWGATE_BIN:?SKEWGATE_BIN must name the skewgate binary}"
TMP=$(mktemp -d /tmp/skewgate-test.XXXXXX)
chmod 755 "$TMP"
PIDS=()
# Commands run at exit once the processes are gone (e.g. deleting a
# network namespace), each evaluated whatever happened before.
CLEANUPS=()

# proc_gone PID: exited (a zombie counts: it is ours to reap).
proc_gone() {
  [ ! -e "/proc/$1" ] || [ "$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# gate_stop: SIGTERM, then a bounded wait for the drain to finish.
gate_stop() {
  [ -n "${GATE_PID:-}" ] || return 0
  kill -TERM "$GATE_PID" 2>/dev/null || true
  wait_until 20 proc_gone "$GATE_PID" || kill -KILL "$GATE_PID" 2>/dev/null || true
  wait "$GATE_PID" 2>/dev/null || true
  GATE_PID=
}

cleanup() {
  local rc=$? p
  gate_stop
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${CLEANUPS[@]}"; do eval "$p" || true; done
  # A sanitizer build reports leaks and errors at exit, into the gate's log.
  if [ -n "${GATE_LOG:-}" ] && grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$GATE_LOG"; then
    echo "FAIL: sanitizer report from skewgate:" >&2
    grep -A30 -E 'Sanitizer|runtime error:' "$GATE_LOG" | head -60 >&2
    rc=1
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
# The ports this test may pick (free_port), a block of its own.
. "$(dirname "${BASH_SOURCE[0]}")/lib_ports.sh"
port_block_claim
# Under set -e a failing command ends the test; say which one.
set -o errtrace
trap '_err_rc=$?; [[ $- == *e* ]] && echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $_err_rc" >&2' ERR

fail() { echo "FAIL: $*" >&2; exit 1; }
# note TEXT: a step of the test, with the seconds since it started (where
# a slow test spends its time, read off its log).
LIB_T0=${EPOCHREALTIME/./}
note() { local us=$(( ${EPOCHREALTIME/./} - LIB_T0 )); printf -- '--- %d.%01ds %s\n' $((us / 1000000)) $((us / 100000 % 10)) "$*"; }

# wait_until SECONDS COMMAND...: polls the condition every 20 ms, bounded.
wait_until() {
  local deadline=$(( $(date +%s%N) + $1 * 1000000000 )); shift
  until "$@"; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.02
  done
}

# certs [ecdsa|rsa [SAN...]]: CA and server certificate for 127.0.0.1/localhost
# (and the extra SANs, IP:ADDR or DNS:NAME) in $TMP/pki.
certs() {
  "$ROOT/tools/mkcert.sh" "$TMP/pki" "${1:-ecdsa}" "${@:2}"
  CA="$TMP/pki/ca.crt"
}

# mcs_start [SIZE]: the nginx MCS stand-in; sets MCS_PORT and MCS_DATA, and
# MCS_TLS_PORT (TLS with the test certificate) once certs has run.
mcs_start() {
  local size=${1:-307200} cmd tls=()
  MCS_PORT=$(free_port)
  if [ -n "${CA:-}" ]; then
    MCS_TLS_PORT=$(free_port)
    tls=("$MCS_TLS_PORT" "$TMP/pki/tls.crt" "$TMP/pki/tls.key")
  fi
  cmd=$("$ROOT/tools/mcs-standin.sh" "$TMP/mcs" "$MCS_PORT" "$size" "${tls[@]}")
  MCS_DATA="$TMP/mcs/data"
  $cmd >"$TMP/mcs/stdout" 2>&1 &
  PIDS+=($!)
  wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$MCS_PORT/healthz" || fail "MCS stand-in did not start"
}

# start_bad MODE [ARGS...]: the misbehaving upstream (bad_upstream.py says
# what each mode does) on a free loopback port; sets BAD_PORT. It counts
# the requests it reads in $TMP/bad.count.
start_bad() {
  local mode=$1; shift
  python3 "$ROOT/tests/integration/bad_upstream.py" --mode "$mode" --port-file "$TMP/bad.port" \
    --count-file "$TMP/bad.count" "$@" &
  PIDS+=($!)
  wait_until 10 test -s "$TMP/bad.port" || fail "bad upstream did not start"
  BAD_PORT=$(cat "$TMP/bad.port"); rm -f "$TMP/bad.port"
}

# gate_config FILE MODE OBJECT [EXTRA_YAML]: a gate on 127.0.0.1 port 0
# (TLS and plain), in front of the stand-in, with the file source.
# EXTRA_YAML adds top-level sections; UPSTREAM_EXTRA (indented lines) adds
# keys to the upstream section; LISTENER_EXTRA (lines indented by four)
# adds keys to both listeners; GATE_ENFORCEMENT (indented lines) replaces
# the file source (OBJECT is then unused); ADMIN_ADDR (IP:PORT) enables the
# admin listener there, with its unix socket at ADMIN_SOCKET (default
# $TMP/admin.sock; set it empty for none), the credential for changes
# (admin_post); ADMIN_EXTRA (indented lines) adds admin keys.
gate_config() {
  local file=$1 mode=$2 object=$3 extra=${4:-}
  cat >"$file" <<YAML
workers: ${GATE_WORKERS:-2}
listeners:
  - address: "127.0.0.1:0"
    tls:
      certificate: $TMP/pki/tls.crt
      key: $TMP/pki/tls.key
${LISTENER_EXTRA:-}
  - address: "127.0.0.1:0"
${LISTENER_EXTRA:-}
upstream:
  address: "127.0.0.1:$MCS_PORT"
${UPSTREAM_EXTRA:-}
reject:
  mode: $mode
enforcement:
${GATE_ENFORCEMENT:-  source: file
  file:
    path: $object}
admin:
$(if [ -n "${ADMIN_ADDR:-}" ]; then printf '  enabled: true\n  address: "%s"' "$ADMIN_ADDR"; else printf '  enabled: false'; fi)
$(if [ -n "${ADMIN_ADDR:-}" ] && [ -n "${ADMIN_SOCKET-$TMP/admin.sock}" ]; then printf '  socket: %s' "${ADMIN_SOCKET-$TMP/admin.sock}"; fi)
${ADMIN_EXTRA:-}
$extra
YAML
}

# admin_post PATH FORM [CURL_ARGS...]: POST to the admin API over its unix
# socket (ADMIN_SOCKET, default $TMP/admin.sock); prints the status code,
# the body goes to $TMP/answer.
admin_post() {
  curl -s -o "$TMP/answer" -w '%{http_code}' --max-time 10 --unix-socket "${ADMIN_SOCKET:-$TMP/admin.sock}" \
    -d "$2" "${@:3}" "http://localhost$1"
}

# gate_start CONFIG: runs skewgate (in the network namespace GATE_NETNS if
# set), waits for both listeners; sets GATE_PID, GATE_LOG, TLS_PORT, PLAIN_PORT.
gate_start() {
  local in_ns=()
  [ -z "${GATE_NETNS:-}" ] || in_ns=(ip netns exec "$GATE_NETNS")   # which execs: the PID is the gate's
  GATE_LOG="$TMP/gate.log"
  : >"$GATE_LOG"
  "${in_ns[@]}" "$SKEWGATE_BIN" run -c "$1" 2>>"$GATE_LOG" &
  GATE_PID=$!
  PIDS+=($GATE_PID)
  wait_until "${GATE_START_WAIT:-10}" gate_listening || { cat "$GATE_LOG" >&2; fail "skewgate did not start"; }
  TLS_PORT=$(gate_port true)
  PLAIN_PORT=$(gate_port false)
}

gate_listening() {
  kill -0 "$GATE_PID" 2>/dev/null || return 1
  [ "$(grep -c '"event":"listening"' "$GATE_LOG")" -ge 2 ]
}

gate_port() {
  python3 - "$GATE_LOG" "$1" <<'PY'
import json, sys
want = sys.argv[2] == "true"
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "listening" and j.get("tls") == want:
        print(j["port"]); break
PY
}

# gate_rss: the gate's resident memory now, in KiB; gate_rss_peak SAMPLES:
# the highest of SAMPLES readings 50 ms apart (a measurement over a span,
# not a wait for a condition).
gate_rss() { awk '/^VmRSS/ {print $2}' "/proc/$GATE_PID/status"; }
gate_rss_peak() {
  local peak r i
  peak=$(gate_rss)
  for i in $(seq "$1"); do
    r=$(gate_rss); [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.05
  done
  echo "$peak"
}

# access_count FIELD VALUE: access log lines whose FIELD equals VALUE.
access_count() {
  python3 - "$GATE_LOG" "$1" "$2" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "access" and str(j.get(sys.argv[2])) == sys.argv[3]:
        n += 1
print(n)
PY
}

# Objects for the file source, from the shared fixtures copied in the repo.
FIXTURES="$ROOT/tests/fixtures/machineconfiguration"
set_object() { cp "$FIXTURES/$1" "$2.tmp" && mv "$2.tmp" "$2"; }

# ign_run NAME: Debian's Ignition (fetch stage) against the gate's TLS
# listener for /config/worker (or IGN_URL), in the network namespace
# IGN_NETNS if set, bounded by IGN_TIMEOUT (30 s), with the request headers
# of IGN_HEADERS (JSON: [{"name": ..., "value": ...}]) in the pointer
# config's httpHeaders when set; its output is in
# $TMP/NAME/out, the config it fetched in $TMP/NAME/cache.json.
IGNITION=/usr/lib/dracut/modules.d/30ignition/ignition
ign_run() {
  local dir="$TMP/$1" in_ns=()
  [ -z "${IGN_NETNS:-}" ] || in_ns=(ip netns exec "$IGN_NETNS")
  mkdir -p "$dir"
  python3 - "$dir/pointer.ign" "${IGN_URL:-https://127.0.0.1:$TLS_PORT/config/worker}" "$CA" "${IGN_HEADERS:-}" <<'PY'
import base64, json, sys
path, url, ca, headers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
ca64 = base64.b64encode(open(ca, "rb").read()).decode()
merge = {"source": url}
if headers:
    merge["httpHeaders"] = json.loads(headers)
json.dump({"ignition": {"version": "3.3.0",
           "config": {"merge": [merge]},
           "security": {"tls": {"certificateAuthorities": [{"source": "data:;base64," + ca64}]}}}},
          open(path, "w"))
PY
  IGNITION_CONFIG_FILE="$dir/pointer.ign" timeout "${IGN_TIMEOUT:-30}" "${in_ns[@]}" "$IGNITION" --platform file --stage fetch \
    --log-to-stdout --config-cache "$dir/cache.json" --state-file "$dir/state" --neednet "$dir/neednet" \
    >"$dir/out" 2>&1
}

IGNITION_ACCEPT='application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1'
