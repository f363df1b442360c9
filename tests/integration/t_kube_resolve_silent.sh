#!/usr/bin/env bash
# With a resolver that never answers, the main loop keeps serving /healthz
# while the API server's name is resolved (evdns, never a blocking
# getaddrinfo on the loop), and the lookup fails at its deadline. The
# gate runs in a mount namespace whose /etc/resolv.conf points at a
# silent server of the test's (lib_kube.sh).
# run: alone: measures /healthz latency (bound 500 ms)
. "$(dirname "$0")/lib_kube.sh"

unshare -m true 2>/dev/null || skip "needs a mount namespace (unshare -m) to point the resolver at a silent server"
certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
ADMIN_ADDR="127.0.0.1:$(free_port)"
MACHINES="admission:
  machines:
    enabled: true
    namespace: openshift-machine-api"

note "a resolver that never answers: /healthz keeps answering while the name is resolved"
silent_dns_start "$SILENT_DNS_IP"
cp "$FA_DIR/token" "$GATE_TOKEN"
FA_URL="https://api.skewgate.example:$FA_PORT"
GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "$MACHINES"
GATE_LOG="$TMP/gate.log"
: >"$GATE_LOG"
gate_start_resolving "$TMP/gate.yaml"
healthz() { curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$ADMIN_ADDR/healthz" || true; }
up() { [ "$(healthz)" = 200 ]; }
wait_until 10 up || { cat "$GATE_LOG"; die "the admin listener never answered"; }
# Ten probes over about 5 s, each allowed 1 s: a resolution blocking the
# loop (5 s per try) would stall them.
for i in $(seq 10); do
  start=$(date +%s%N)
  [ "$(healthz)" = 200 ] || die "probe $i: /healthz did not answer within 1 s: the main loop is blocked"
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$took" -lt 500 ] || die "probe $i took $took ms"
  sleep 0.5   # the spacing of the probes, not a wait for a condition
done
# The name did go to the silent server: the request fails at its deadline.
unresolved() { grep '"event":"source_error"' "$GATE_LOG" | grep 'api.skewgate.example' | has 'did not resolve\|resolve api'; }
wait_until 30 unresolved || die "no failure to resolve: $(grep source_error "$GATE_LOG" | head -2)"
grep -m1 '"event":"source_error"' "$GATE_LOG" | cut -c1-300
grep -qF "$(cat "$FA_DIR/token")" "$GATE_LOG" && die "the API token is in the gate log"
echo PASS
