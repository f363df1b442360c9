#!/usr/bin/env bash
# A reload that replaces the Kubernetes source while the API server's name
# is being resolved (evdns, against a resolver that never answers), then a
# stop while the new source's name is being resolved. libevent 2.1.12 runs
# a cancelled lookup's callback a loop turn after the cancel, and that
# callback reads the evdns_base; a lookup still in flight when the loop
# stops is never called back. Before the fix the old client's evdns_base
# was freed at once, so the reload had libevent read it after free, and the
# lookup in flight at the stop was lost (1,824 bytes, LeakSanitizer). The
# read after free is inside libevent, which ASan does not instrument: so a
# plain build runs under valgrind memcheck here, a sanitizer build
# (SKEWGATE_SAN=1) as it is, its reports checked at exit by lib.sh.
. "$(dirname "$0")/lib_kube.sh"

unshare -m true 2>/dev/null || skip "needs a mount namespace (unshare -m) to point the resolver at a silent server"
wrapper=()
if [ -z "${SKEWGATE_SAN:-}" ]; then
  wrapper=(valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite,indirect
           --track-fds=no --num-callers=30)
fi

certs
mcs_start 4096
silent_dns_start "$SILENT_DNS_IP"
printf 'not-a-real-token\n' >"$GATE_TOKEN"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
kube_config() {
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: https://$1:6443
    ca_file: $TMP/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused
}
# asked_since NAME: the resolver got a query for NAME after the last
# source_error naming it (or at all, if none): a lookup is in flight, and
# its request's 10 s deadline is about as far away.
asked_since() {
  python3 - "$GATE_LOG" "$TMP/dns.queries" "$1" <<'PY'
import datetime, json, sys
log, queries, name = sys.argv[1:]
last_error = 0.0
for line in open(log):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "source_error" and name in line:
        last_error = datetime.datetime.strptime(j["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
try:
    asked = [float(l.split()[0]) for l in open(queries) if l.split()[1:] == [name]]
except FileNotFoundError:
    asked = []
sys.exit(0 if asked and asked[-1] > last_error else 1)
PY
}
reloads_are() {
  [ "$(curl -sf --max-time 5 "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"][sys.argv[1]])' "$1")" = "$2" ]
}
up() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$ADMIN/healthz" || true)" = 200 ]; }
errors_for() { grep '"event":"source_error"' "$GATE_LOG" | grep -cF "$1" || true; }

note "the source resolves api.skewgate.example; the resolver never answers"
kube_config api.skewgate.example
GATE_LOG="$TMP/gate.log"
: >"$GATE_LOG"
gate_start_resolving "$TMP/gate.yaml" "${wrapper[@]}"
wait_until 120 up || die "the admin listener never answered"   # valgrind's start on a loaded 2-core machine
wait_until 60 asked_since api.skewgate.example || die "no query for api.skewgate.example"

note "SIGHUP: a source for api2.skewgate.example replaces it, its lookup still in flight"
old_errors=$(errors_for api.skewgate.example)
kube_config api2.skewgate.example
kill -HUP "$GATE_PID"
wait_until 30 reloads_are success 1 || die "the reload was not taken"
grep -q '"event":"reload".*verdict source now kubernetes' "$GATE_LOG" || die "the reload did not replace the source"
[ "$(errors_for api.skewgate.example)" = "$old_errors" ] ||
  die "the old lookup reached its deadline before the reload: it was not in flight"
wait_until 60 asked_since api2.skewgate.example || die "the new source did not resolve its name"
up || die "the gate stopped answering after the reload"

note "SIGTERM with the new source's lookup in flight"
gate_stop
if [ ${#wrapper[@]} -gt 0 ]; then
  grep -E 'ERROR SUMMARY|definitely lost|indirectly lost' "$GATE_LOG" | sed 's/^==[0-9]*== *//'
  grep -q 'ERROR SUMMARY: 0 errors' "$GATE_LOG" || {
    grep -B2 -A25 -E 'Invalid (read|write)|are definitely lost|are indirectly lost' "$GATE_LOG" | head -80 >&2
    fail "memcheck found errors"
  }
fi
echo PASS
