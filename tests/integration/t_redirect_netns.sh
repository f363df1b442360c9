#!/usr/bin/env bash
# The node-local redirect for real (DESIGN 1.1), in two network namespaces
# joined by a veth pair: "master" runs the MCS stand-in on 22623 (TLS) and
# 22624 (plain) on all addresses, as the real MCS does, and the gate on
# 22643/22644 with `skewgate redirect install`; "node" dials the master's
# 22623/22624 with curl and with Debian's Ignition. It shows that the
# redirect wins over the MCS listening there, that the MCS sees only
# admitted requests and those over loopback from the gate, that a held
# Ignition boots once the verdict admits, that traffic made on the master
# is not redirected, that install is idempotent and status exact, and that
# after `redirect remove` the node reaches the MCS directly and the
# master's ruleset is what it was. Also that pairs which cannot work and
# a well-known table name are refused by check and install alike, and that
# a hand-made table of the gate's name is left alone without --force.
# Skips only where namespaces cannot be made. Addresses: 10.231.X.0/30 inside the namespaces, and loopback.
# Its namespaces, addresses and rulesets are its own (names and 10.231.X from the PID): it runs beside the others.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "network namespaces need root (uid $(id -u))"
master=sg-master-$$-$RANDOM
node=sg-node-$$-$RANDOM
ip netns add "$master" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $master")
ip netns add "$node" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $node")

[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
command -v nft >/dev/null || fail "nft is not installed (package nftables)"

in_master() { ip netns exec "$master" "$@"; }
in_node() { ip netns exec "$node" "$@"; }

net=10.231.$(( ($$ + RANDOM) % 250 + 1 ))
MASTER_IP=$net.1 NODE_IP=$net.2
ip -n "$master" link add sg0 type veth peer name sg1 netns "$node"
ip -n "$master" addr add "$MASTER_IP/30" dev sg0
ip -n "$node" addr add "$NODE_IP/30" dev sg1
for ns in "$master" "$node"; do ip -n "$ns" link set lo up; done
ip -n "$master" link set sg0 up
ip -n "$node" link set sg1 up
note "master $master ($MASTER_IP), node $node ($NODE_IP)"

# --- The MCS stand-in on all addresses of the master, 22623 TLS and 22624 plain.
certs ecdsa "IP:$MASTER_IP"
mcs_cmd=$(MCS_ADDR=0.0.0.0 "$ROOT/tools/mcs-standin.sh" "$TMP/mcs" 22624 307200 22623 "$TMP/pki/tls.crt" "$TMP/pki/tls.key")
MCS_DATA="$TMP/mcs/data"
MCS_LOG="$TMP/mcs/access.log"
# Not through in_master: a function run with & is a subshell, whose PID
# the cleanup would kill while nginx, its child, lived on. ip netns exec
# execs, so $! is nginx's own PID.
# shellcheck disable=SC2086  # the command line mcs-standin.sh printed
ip netns exec "$master" $mcs_cmd >"$TMP/mcs/stdout" 2>&1 &
PIDS+=($!)
wait_until 10 in_master curl -sf -o /dev/null http://127.0.0.1:22624/healthz || fail "MCS stand-in did not start"

# mcs_seen ADDR PATH: requests for PATH from ADDR in the stand-in's access log.
mcs_seen() { awk -v a="$1" -v p="$2" '$1 == a && $7 == p' "$MCS_LOG" 2>/dev/null | wc -l; }
mcs_seen_at_least() { [ "$(mcs_seen "$1" "$2")" -ge "$3" ]; }

# gate_seen KEY=VALUE...: the gate's access lines whose fields equal those
# values (user_agent~TEXT: contains TEXT).
gate_seen() {
  python3 - "$GATE_LOG" "$@" <<'PY'
import json, sys
conds = [a.split("~", 1) + ["~"] if "~" in a else a.split("=", 1) + ["="] for a in sys.argv[2:]]
n = 0
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") != "access":
        continue
    if all((v in str(j.get(k, ""))) if op == "~" else str(j.get(k)) == v for k, v, op in conds):
        n += 1
print(n)
PY
}
gate_seen_more_than() { local n=$1; shift; [ "$(gate_seen "$@")" -gt "$n" ]; }

# curl_node URL FILE: the node's request (TLS with the test CA); writes the
# body to FILE and prints the status line and headers.
curl_node() { in_node curl -sS --connect-timeout 5 --max-time 10 --cacert "$CA" -D - -o "$2" "$1"; }

note "before install: the node reaches the MCS directly"
wait_until 10 in_node curl -sf -o /dev/null --max-time 2 "http://$MASTER_IP:22624/healthz" ||
  fail "the node cannot reach the master over the veth pair"
wait_until 5 mcs_seen_at_least "$NODE_IP" /healthz 1 || fail "the stand-in did not log the node's request"
# A table that is not the gate's: it must survive install and remove.
in_master nft add table inet bystander
in_master nft add chain inet bystander input '{ type filter hook input priority 0; policy accept; }'
ruleset_before=$(in_master nft list ruleset)

# --- The gate in the master: 22643 TLS, 22644 plain, the MCS over loopback (TLS, CA-verified).
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
cat >"$TMP/gate.yaml" <<YAML
workers: 2
listeners:
  - address: "0.0.0.0:22643"
    tls:
      certificate: $TMP/pki/tls.crt
      key: $TMP/pki/tls.key
  - address: "0.0.0.0:22644"
upstream:
  address: "127.0.0.1:22623"
  tls: true
  ca_file: $CA
reject:
  mode: hold
enforcement:
  source: file
  file:
    path: $object
admin:
  enabled: false
redirect:
  table: skewgate      # ports: the defaults, 22623 -> 22643 (first TLS listener), 22624 -> 22644
YAML
GATE_NETNS=$master gate_start "$TMP/gate.yaml"
[ "$TLS_PORT" = 22643 ] && [ "$PLAIN_PORT" = 22644 ] || fail "the gate listens on $TLS_PORT/$PLAIN_PORT"
wait_until 5 grep -q '"reason":"OutOfSkew"' "$GATE_LOG" || fail "the gate did not pick up the out-of-skew object"

# redirect ACTION [CONFIG [ARGS...]]: `skewgate redirect` in the master
# namespace; its exit status, its output in $TMP/redirect.out and .err. A
# sanitizer build's report on stderr fails the test.
redirect() {
  local rc=0
  in_master "$SKEWGATE_BIN" redirect "$1" -c "${2:-$TMP/gate.yaml}" "${@:3}" >"$TMP/redirect.out" 2>"$TMP/redirect.err" || rc=$?
  echo "redirect $1 -> $rc: $(cat "$TMP/redirect.out" "$TMP/redirect.err")"
  if grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$TMP/redirect.err"; then
    cat "$TMP/redirect.err" >&2
    fail "sanitizer report from skewgate redirect $1"
  fi
  return "$rc"
}
expect_redirect() {
  local want=$1 rc=0
  shift
  redirect "$@" || rc=$?
  [ "$rc" = "$want" ] || fail "skewgate redirect $*: exit $rc, expected $want"
}

# check_refuses CONFIG TEXT: `skewgate check` and `redirect install` both
# exit 2 naming the file's position and TEXT, and the ruleset is untouched.
check_refuses() {
  local rc=0
  "$SKEWGATE_BIN" check -c "$1" >/dev/null 2>"$TMP/check.err" || rc=$?
  [ "$rc" = 2 ] || fail "check $1: exit $rc, expected 2: $(cat "$TMP/check.err")"
  grep -qF "$1:" "$TMP/check.err" && grep -qE "^$1:[0-9]+:[0-9]+: " "$TMP/check.err" ||
    fail "check $1 gave no file:line:column: $(cat "$TMP/check.err")"
  grep -qF -- "$2" "$TMP/check.err" || fail "check $1 did not say \"$2\": $(cat "$TMP/check.err")"
  expect_redirect 2 install "$1"
  # check lists every error (and a note when the rules across keys wait);
  # redirect names the first, the one error each of these files has
  [ "$(cat "$TMP/redirect.err")" = "skewgate redirect: $(head -1 "$TMP/check.err")" ] &&
    [ "$(grep -cE "^$1:[0-9]+:[0-9]+: " "$TMP/check.err")" = 1 ] ||
    fail "install and check disagree: $(cat "$TMP/redirect.err") / $(cat "$TMP/check.err")"
  [ "$(in_master nft list ruleset)" = "$ruleset_before" ] || fail "install with $1 changed the ruleset"
}
# bad_pairs NAME PAIRS...: the gate's config with redirect.ports PAIRS.
bad_pairs() {
  local f="$TMP/$1.yaml" pair
  shift
  sed '/^redirect:/,$d' "$TMP/gate.yaml" >"$f"
  printf 'redirect:\n  ports:\n' >>"$f"
  for pair in "$@"; do printf '    - {from: %s, to: %s}\n' "${pair%->*}" "${pair#*->}" >>"$f"; done
  echo "$f"
}

note "pairs that cannot work are refused by check and install alike, with their position"
check_refuses "$(bad_pairs tls-to-plain '22623->22644' '22624->22643')" \
  "redirect.ports[0].to: 22623 is the MCS's TLS port, and listeners[1].address \"0.0.0.0:22644\" is plain"
check_refuses "$(bad_pairs plain-to-tls '22623->22643' '22624->22643')" \
  "redirect.ports[1].to: 22624 is the MCS's plain port, and listeners[0].address \"0.0.0.0:22643\" is TLS"
check_refuses "$(bad_pairs from-listener '22623->22643' '22644->22643')" \
  "redirect.ports[1].from: 22644 is the port of listeners[1].address \"0.0.0.0:22644\""
check_refuses "$(bad_pairs from-target '22623->22643' '22624->22644' '22643->22644')" \
  "redirect.ports[2].from: 22643 is where redirect.ports[0] sends 22623"
sed 's/^  table: skewgate.*/  table: nat/' "$TMP/gate.yaml" >"$TMP/table-nat.yaml"
check_refuses "$TMP/table-nat.yaml" 'redirect.table: "nat" is a well-known table name'

note "a hand-made table of that name is neither replaced nor deleted without --force"
in_master nft -f - <<'NFT'
table inet skewgate {
  set blocked { type ipv4_addr; elements = { 192.0.2.7 } }
  chain input { type filter hook input priority 0; policy accept; ip saddr @blocked drop; }
}
NFT
hand_made=$(in_master nft list table inet skewgate)
for action in install remove; do
  expect_redirect 1 "$action"
  grep -qF 'holds 3 objects that install does not write: set "blocked", chain "input", a rule in chain "input"' \
    "$TMP/redirect.err" || fail "$action did not name what the table holds"
  grep -qF -- "--force" "$TMP/redirect.err" || fail "$action did not say how to go on"
  [ "$(in_master nft list table inet skewgate)" = "$hand_made" ] || fail "$action changed the hand-made table"
done
expect_redirect 0 install "$TMP/gate.yaml" --force
grep -qF 'set "blocked"' "$TMP/redirect.err" || fail "install --force did not say what it replaced"
expect_redirect 0 status
expect_redirect 0 remove
expect_redirect 2 status "$TMP/gate.yaml" --force
[ "$(in_master nft list ruleset)" = "$ruleset_before" ] || fail "the ruleset is not as before the hand-made table"

note "redirect: absent, installed as the config says, idempotent, status exact"
expect_redirect 1 status
grep -q "absent" "$TMP/redirect.out" || fail "status did not say absent"
expect_redirect 0 install
expect_redirect 0 status
rules_once=$(in_master nft list table inet skewgate)
grep -qF 'type nat hook prerouting priority dstnat; policy accept;' <<<"$rules_once" || fail "chain: $rules_once"
grep -qF 'iifname != "lo" tcp dport 22623 redirect to :22643' <<<"$rules_once" || fail "22623 rule: $rules_once"
grep -qF 'iifname != "lo" tcp dport 22624 redirect to :22644' <<<"$rules_once" || fail "22624 rule: $rules_once"
[ "$(grep -c redirect <<<"$rules_once")" = 2 ] || fail "expected 2 rules: $rules_once"
expect_redirect 0 install
[ "$(in_master nft list table inet skewgate)" = "$rules_once" ] || fail "a second install changed the table"
[ "$(in_master nft list tables | grep -c 'table inet skewgate')" = 1 ] || fail "a second install added a table"
in_master nft list table inet bystander >/dev/null || fail "install touched another table"
# Changed behind the gate's back, or configured otherwise: status says so.
in_master nft add rule inet skewgate prerouting tcp dport 9 accept
expect_redirect 1 status
grep -q "differs" "$TMP/redirect.out" || fail "status did not say the table differs"
# That rule is not install's: only --force replaces it.
expect_redirect 1 install
grep -qF 'holds 1 object that install does not write: a rule in chain "prerouting"' "$TMP/redirect.err" ||
  fail "install did not name the added rule"
expect_redirect 0 install "$TMP/gate.yaml" --force
expect_redirect 0 status
sed 's/^  table: skewgate.*/  table: skewgate\n  ports: [{from: 22624, to: 22644}]/' "$TMP/gate.yaml" >"$TMP/other-ports.yaml"
expect_redirect 1 status "$TMP/other-ports.yaml"
grep -q "differs" "$TMP/redirect.out" || fail "status with other ports did not say the table differs"

note "rejecting: the node is held by the gate; the MCS sees nothing of it"
hdrs=$(curl_node "https://$MASTER_IP:22623/config/worker" "$TMP/held.body")
grep -q '^HTTP/1.1 503' <<<"$hdrs" || fail "TLS: expected 503, got: $hdrs"
grep -qi '^Skewgate-Reason: OutOfSkew' <<<"$hdrs" || fail "TLS: no Skewgate-Reason: $hdrs"
hdrs=$(curl_node "http://$MASTER_IP:22624/config/worker" "$TMP/held.body")
grep -q '^HTTP/1.1 503' <<<"$hdrs" || fail "plain: expected 503, got: $hdrs"
grep -qi '^Skewgate-Reason: OutOfSkew' <<<"$hdrs" || fail "plain: no Skewgate-Reason: $hdrs"
wait_until 5 gate_seen_more_than 0 client="$NODE_IP" status=503 tls=True ||
  fail "the gate did not log the node's TLS request"
wait_until 5 gate_seen_more_than 0 client="$NODE_IP" status=503 tls=False ||
  fail "the gate did not log the node's plain request"

note "traffic made on the master itself is not redirected (the gate's own, probes)"
in_master curl -sf --max-time 10 -o /dev/null "http://$MASTER_IP:22624/healthz"
wait_until 5 mcs_seen_at_least "$MASTER_IP" /healthz 1 || fail "the master's own request did not reach the MCS directly"
[ "$(gate_seen path=/healthz)" = 0 ] || fail "the master's own request went through the gate"

note "Ignition is held while the verdict rejects"
export IGN_NETNS=$node IGN_URL="https://$MASTER_IP:22623/config/worker"
if IGN_TIMEOUT=8 ign_run held; then cat "$TMP/held/out"; fail "Ignition finished while the verdict rejects"; fi
! grep -q "Ignition finished successfully" "$TMP/held/out" || fail "Ignition says it finished while held"
grep -q "GET result: Service Unavailable" "$TMP/held/out" || { cat "$TMP/held/out"; fail "Ignition never saw the 503"; }
ign_held=$(gate_seen client="$NODE_IP" status=503 user_agent~Ignition)
[ "$ign_held" -ge 2 ] || fail "the gate logged $ign_held held Ignition requests, expected retries"

note "Ignition boots once the verdict flips while it retries"
IGN_TIMEOUT=60 ign_run flip &
ign=$!
PIDS+=($ign)
wait_until 20 gate_seen_more_than "$ign_held" client="$NODE_IP" status=503 user_agent~Ignition ||
  fail "the second Ignition was not held"
set_object automatic-compliant.yaml "$object"
wait "$ign" || { cat "$TMP/flip/out"; fail "Ignition did not finish after the verdict admitted"; }
grep -q "Ignition finished successfully" "$TMP/flip/out" || fail "Ignition: no success line"
grep -q "GET result: Service Unavailable" "$TMP/flip/out" || fail "the second Ignition was never held"
python3 - "$MCS_DATA/spec3/worker" "$TMP/flip/cache.json" <<'PY' || fail "Ignition's config is not the stand-in's"
import json, sys
served = json.load(open(sys.argv[1]))["storage"]["files"]
cached = {f["path"]: f["contents"]["source"] for f in json.load(open(sys.argv[2]))["storage"]["files"]}
assert served, "the stand-in serves no files"
for f in served:
    assert cached.get(f["path"]) == f["contents"]["source"], f["path"]
PY

note "admitting: the node gets the MCS's config through the gate, which reaches the MCS over loopback"
hdrs=$(curl_node "https://$MASTER_IP:22623/config/worker" "$TMP/tls.json")
grep -q '^HTTP/1.1 200' <<<"$hdrs" || fail "TLS: expected 200, got: $hdrs"
cmp -s "$TMP/tls.json" "$MCS_DATA/spec2/worker" || fail "TLS: the body is not the stand-in's config"
hdrs=$(curl_node "http://$MASTER_IP:22624/config/worker" "$TMP/plain.json")
grep -q '^HTTP/1.1 200' <<<"$hdrs" || fail "plain: expected 200, got: $hdrs"
cmp -s "$TMP/plain.json" "$MCS_DATA/spec2/worker" || fail "plain: the body is not the stand-in's config"
# Every /config/ request the MCS saw came over loopback, one per request the
# gate admitted: none of the held ones, none from the node directly.
mcs_matches_gate() {
  local admitted
  admitted=$(gate_seen path=/config/worker status=200)
  [ "$admitted" -ge 3 ] && [ "$(mcs_seen 127.0.0.1 /config/worker)" = "$admitted" ]
}
wait_until 5 mcs_matches_gate ||
  fail "the MCS saw $(mcs_seen 127.0.0.1 /config/worker) requests over loopback, the gate admitted $(gate_seen path=/config/worker status=200)"
[ "$(awk '$7 == "/config/worker"' "$MCS_LOG" | wc -l)" = "$(mcs_seen 127.0.0.1 /config/worker)" ] ||
  fail "the MCS saw /config/worker from elsewhere than loopback: $(grep /config/worker "$MCS_LOG")"
[ "$(gate_seen path=/config/worker decision=admit)" = "$(gate_seen path=/config/worker status=200)" ] || fail "admit/200 mismatch"

note "gate down, redirect in place: connection refused, which Ignition retries; the MCS is not reached"
gate_stop
for url in "https://$MASTER_IP:22623/config/worker" "http://$MASTER_IP:22624/config/worker"; do
  rc=0
  curl_node "$url" /dev/null >/dev/null 2>"$TMP/refused.err" || rc=$?
  [ "$rc" = 7 ] || fail "$url with the gate down: curl exit $rc, expected 7 (connection refused): $(cat "$TMP/refused.err")"
done
[ "$(mcs_seen "$NODE_IP" /config/worker)" = 0 ] || fail "the node reached the MCS while the redirect was installed"

note "remove: the whole rollback; the node reaches the MCS directly, the ruleset is as before"
expect_redirect 0 remove
grep -q "removed" "$TMP/redirect.out" || fail "remove did not say removed"
expect_redirect 1 status
expect_redirect 0 remove
grep -q "was not installed" "$TMP/redirect.out" || fail "a second remove did not say there was nothing to remove"
ruleset_after=$(in_master nft list ruleset)
[ "$ruleset_after" = "$ruleset_before" ] || fail "ruleset after remove differs:
--- before
$ruleset_before
--- after
$ruleset_after"
hdrs=$(curl_node "https://$MASTER_IP:22623/config/worker" "$TMP/direct-tls.json")
grep -q '^HTTP/1.1 200' <<<"$hdrs" || fail "direct TLS: expected 200, got: $hdrs"
! grep -qi '^Skewgate' <<<"$hdrs" || fail "direct TLS answer came from the gate"
cmp -s "$TMP/direct-tls.json" "$MCS_DATA/spec2/worker" || fail "direct TLS: not the stand-in's config"
curl_node "http://$MASTER_IP:22624/config/worker" "$TMP/direct-plain.json" >/dev/null
cmp -s "$TMP/direct-plain.json" "$MCS_DATA/spec2/worker" || fail "direct plain: not the stand-in's config"
wait_until 5 mcs_seen_at_least "$NODE_IP" /config/worker 2 ||
  fail "the MCS did not log the node's address for its direct requests"
echo PASS
