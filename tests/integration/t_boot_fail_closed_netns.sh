#!/usr/bin/env bash
# The fail-closed-at-boot unit cannot fail open (issue 33, item 5). In two
# network namespaces joined by a veth pair, "master" runs the unit's
# ExecStart= commands as systemd runs them (unit_exec.py, on the unit taken
# from the rendered MachineConfig, the file's path moved into $TMP) with
# the gate's file (c) as shipped, (a) missing, (b) malformed (a syntax
# error), (b') loading but holding no table (comments only) and (b'') a
# valid script that deletes the table. A stand-in MCS in "master" counts
# the connections it accepts on 22623/22624, per peer. Each time: the unit
# ends active; a client in "node" dialling 22623/22624 is refused (curl
# exit 7, bounded) and the MCS accepts nothing from it; a client in
# "master" (127.0.0.1 and the master's own address, both over loopback)
# still reaches the MCS; and in (a), (b), (b'), (b'') the table is the
# built-in fallback, which lists exactly as the shipped file does, which
# `skewgate redirect status` takes as installed. Then the gate's ports
# listen (a stand-in of the gate's listeners): the node reaches them
# through the fallback; `redirect install` with another config replaces it
# without --force; the unit run again with the file missing keeps that
# table; `redirect remove` deletes it and the node reaches the MCS directly
# (the rollback). Addresses: 10.233.X.0/30, loopback. Its namespaces,
# addresses and rulesets are its own (names and 10.233.X from the PID).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "network namespaces need root (uid $(id -u))"
command -v nft >/dev/null || fail "nft is not installed (package nftables)"
K="$ROOT/deploy/kubernetes"
C="$K/components/fail-closed-at-boot"

# The unit and the file as the MachineConfig carries them: rendered, or
# without a kubectl that renders components, the component's own file.
manifest="$TMP/rendered.yaml"
if (need_kubectl) >"$TMP/kubectl.skip"; then
  cp -r "$K" "$TMP/k"
  mkdir "$TMP/k/fail-closed"
  printf 'resources: [../node-local-redirect]\ncomponents: [../components/fail-closed-at-boot]\n' \
    >"$TMP/k/fail-closed/kustomization.yaml"
  KUBECONFIG=/dev/null kubectl kustomize "$TMP/k/fail-closed" >"$manifest" 2>"$TMP/kustomize.err" ||
    fail "kustomize: $(cat "$TMP/kustomize.err")"
  note "the unit and the file from the rendered manifest"
else
  cp "$C/machineconfig.yaml" "$manifest"
  note "the unit and the file from $C/machineconfig.yaml ($(cut -c7- "$TMP/kubectl.skip"))"
fi
python3 "$ROOT/tests/integration/mc_extract.py" "$manifest" unit skewgate-redirect-boot.service >"$TMP/boot.service"
python3 "$ROOT/tests/integration/mc_extract.py" "$manifest" file /etc/skewgate/redirect.nft >"$TMP/good.nft"

master=sg-fmaster-$$-$RANDOM
node=sg-fnode-$$-$RANDOM
ip netns add "$master" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $master")
ip netns add "$node" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $node")
in_master() { ip netns exec "$master" "$@"; }
in_node() { ip netns exec "$node" "$@"; }
net=10.233.$(( ($$ + RANDOM) % 250 + 1 ))
MASTER_IP=$net.1 NODE_IP=$net.2
ip -n "$master" link add sg0 type veth peer name sg1 netns "$node"
ip -n "$master" addr add "$MASTER_IP/30" dev sg0
ip -n "$node" addr add "$NODE_IP/30" dev sg1
for ns in "$master" "$node"; do ip -n "$ns" link set lo up; done
ip -n "$master" link set sg0 up
ip -n "$node" link set sg1 up
note "master $master ($MASTER_IP), node $node ($NODE_IP)"

# listen.py LOG READY PORT...: accepts on 0.0.0.0:PORT..., appends
# "PORT PEER" to LOG for each connection before answering it (HTTP/1.0,
# body: the port), then closes it; writes READY once all are bound.
cat >"$TMP/listen.py" <<'PY'
import selectors, socket, sys
log, ready, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
sel = selectors.DefaultSelector()
for p in ports:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", p))
    s.listen(64)
    sel.register(s, selectors.EVENT_READ, p)
open(ready, "w").write("ok\n")
out = open(log, "a", buffering=1)
while True:
    for key, _ in sel.select():
        c, peer = key.fileobj.accept()
        out.write("%d %s\n" % (key.data, peer[0]))
        body = b"%d\n" % key.data
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        c.close()
PY
# listen NAME PORT...: that listener in the master namespace, as NAME.
listen() {
  local name=$1
  shift
  in_master python3 "$TMP/listen.py" "$TMP/$name.log" "$TMP/$name.ready" "$@" 2>"$TMP/$name.err" &
  PIDS+=($!)
  wait_until 10 test -s "$TMP/$name.ready" || fail "$name did not listen on $*: $(cat "$TMP/$name.err")"
}
# accepted NAME PORT PEER: how many connections NAME accepted on PORT from PEER.
accepted() { awk -v p="$2" -v a="$3" '$1 == p && $2 == a' "$TMP/$1.log" 2>/dev/null | wc -l; }

# The MCS comes up later on a real master (the kubelet starts it); here it
# listens throughout, so that any connection let through would reach it.
listen mcs 22623 22624

# boot FILE: the unit's ExecStart= commands in the master namespace, with
# FILE for /etc/skewgate/redirect.nft, on a ruleset emptied as by a reboot;
# their stderr (the journal) in $TMP/boot.err, the unit's fate in BOOT_RC
# (0 active or skipped, 1 failed: checked after the network, since boot
# goes on either way); boot_ok CASE checks it.
boot() {
  in_master nft flush ruleset
  BOOT_RC=0
  python3 "$ROOT/tests/integration/unit_exec.py" "$TMP/boot.service" "/etc/skewgate/redirect.nft=$1" -- \
    ip netns exec "$master" >"$TMP/boot.out" 2>"$TMP/boot.err" || BOOT_RC=$?
  sed 's/^/    journal: /' "$TMP/boot.err"
}
boot_ok() { [ "$BOOT_RC" = 0 ] || fail "$1: the unit would fail: $(cat "$TMP/boot.err")"; }
# curl_from NS ADDR PORT: a plain request to ADDR:PORT from NS; prints the
# body, returns curl's exit status.
curl_from() { ip netns exec "$1" curl -sS --connect-timeout 5 --max-time 10 "http://$2:$3/" 2>"$TMP/curl.err"; }
# closed CASE: the node is refused on both ports and the MCS accepts
# nothing from it; the master itself still reaches the MCS over loopback.
closed() {
  local port rc body
  for port in 22623 22624; do
    rc=0
    curl_from "$node" "$MASTER_IP" "$port" >/dev/null || rc=$?
    [ "$rc" = 7 ] || fail "$1: the node on $MASTER_IP:$port: curl exit $rc, expected 7 (refused): $(cat "$TMP/curl.err")"
    [ "$(accepted mcs "$port" "$NODE_IP")" = 0 ] || fail "$1: the MCS accepted the node on $port"
    for addr in 127.0.0.1 "$MASTER_IP"; do
      body=$(curl_from "$master" "$addr" "$port") || fail "$1: the master on $addr:$port: $(cat "$TMP/curl.err")"
      [ "$body" = "$port" ] || fail "$1: the master on $addr:$port reached '$body', not the MCS"
    done
  done
  [ "$(accepted mcs 22623 127.0.0.1)" -ge 1 ] || fail "$1: the MCS did not count the loopback client"
}
redirect() { in_master "$SKEWGATE_BIN" redirect "$1" -c "$2" >"$TMP/r.out" 2>&1; }
DEFAULT_CONF="$K/node-local-redirect/skewgate.yaml"

note "(c) the file as shipped: the gate's table, as before"
boot "$TMP/good.nft"
boot_ok "(c)"
! grep -q "^skewgate-redirect-boot: .*built-in fallback" "$TMP/boot.err" || fail "(c): the unit loaded the fallback over a good file: $(cat "$TMP/boot.err")"
in_master nft list table inet skewgate >"$TMP/good.list"
grep -qF 'iifname != "lo" tcp dport 22623 redirect to :22643' "$TMP/good.list" || fail "(c): $(cat "$TMP/good.list")"
grep -qF 'iifname != "lo" tcp dport 22624 redirect to :22644' "$TMP/good.list" || fail "(c): $(cat "$TMP/good.list")"
closed "(c) good file"

# The cases where the file cannot be the gate's table.
printf '# nothing but a comment\n' >"$TMP/comment.nft"
head -n -2 "$TMP/good.nft" >"$TMP/malformed.nft"         # cut inside the chain: a syntax error
sed -n '/^add table/p;/^delete table/p' "$TMP/good.nft" | head -n 2 >"$TMP/deletes.nft"
[ "$(cat "$TMP/deletes.nft")" = $'add table inet skewgate\ndelete table inet skewgate' ] ||
  fail "the shipped file no longer starts add, delete: $(cat "$TMP/good.nft")"
! in_master nft -c -f "$TMP/malformed.nft" 2>/dev/null || fail "the malformed file is accepted by nft"
for c in "(a) missing:$TMP/absent/redirect.nft" "(b) malformed:$TMP/malformed.nft" \
         "(b') comments only:$TMP/comment.nft" "(b'') deletes the table:$TMP/deletes.nft"; do
  name=${c%%:*} file=${c#*:}
  note "$name: the built-in fallback"
  boot "$file"
  closed "$name"
  boot_ok "$name"
  grep -q "^skewgate-redirect-boot: .*loading the built-in fallback" "$TMP/boot.err" || fail "$name: no word of the fallback: $(cat "$TMP/boot.err")"
  in_master nft list table inet skewgate >"$TMP/fallback.list" || fail "$name: no table inet skewgate"
  cmp -s "$TMP/fallback.list" "$TMP/good.list" ||
    fail "$name: the fallback differs from the shipped table: $(diff "$TMP/good.list" "$TMP/fallback.list")"
  redirect status "$DEFAULT_CONF" || fail "$name: status against the fallback: $(cat "$TMP/r.out")"
done

note "the gate's ports listen: the node reaches them through the fallback, never the MCS"
listen gate 22643 22644 22653 22654
for port in 22623 22624; do
  body=$(curl_from "$node" "$MASTER_IP" "$port") || fail "the node on $port with the gate up: $(cat "$TMP/curl.err")"
  [ "$body" = $((port + 20)) ] || fail "the node on $port reached '$body', not the gate's $((port + 20))"
  [ "$(accepted gate $((port + 20)) "$NODE_IP")" = 1 ] || fail "the gate's $((port + 20)) did not count the node"
  [ "$(accepted mcs "$port" "$NODE_IP")" = 0 ] || fail "the MCS accepted the node on $port"
done

note "the init container's install over the fallback: no --force, no change"
redirect install "$DEFAULT_CONF" || fail "install over the fallback: $(cat "$TMP/r.out")"
! grep -q -- "--force" "$TMP/r.out" || fail "install over the fallback spoke of --force: $(cat "$TMP/r.out")"
cmp -s <(in_master nft list table inet skewgate) "$TMP/good.list" || fail "install changed the fallback table"

note "install with other ports replaces the fallback, in one transaction, without --force"
certs ecdsa
cat >"$TMP/other.yaml" <<YAML
listeners:
  - address: "0.0.0.0:22653"
    tls:
      certificate: $TMP/pki/tls.crt
      key: $TMP/pki/tls.key
  - address: "0.0.0.0:22654"
upstream:
  address: "127.0.0.1:22624"
redirect:
  table: skewgate
YAML
boot "$TMP/absent/redirect.nft"           # the fallback again
boot_ok "the fallback again"
if redirect status "$TMP/other.yaml"; then fail "status took the fallback for the other config's table"; fi
grep -q "differs from the configuration" "$TMP/r.out" || fail "status against the fallback, other ports: $(cat "$TMP/r.out")"
redirect install "$TMP/other.yaml" || fail "install of other ports over the fallback: $(cat "$TMP/r.out")"
! grep -q -- "--force" "$TMP/r.out" || fail "install spoke of --force: $(cat "$TMP/r.out")"
redirect status "$TMP/other.yaml" || fail "status after install: $(cat "$TMP/r.out")"
for port in 22623 22624; do
  body=$(curl_from "$node" "$MASTER_IP" "$port") || fail "the node on $port: $(cat "$TMP/curl.err")"
  [ "$body" = $((port + 30)) ] || fail "the node on $port reached '$body', not the gate's $((port + 30))"
done
in_master nft list table inet skewgate >"$TMP/other.list"

note "the unit run again (a restart), the file missing: the gate's table stays"
python3 "$ROOT/tests/integration/unit_exec.py" "$TMP/boot.service" "/etc/skewgate/redirect.nft=$TMP/absent/redirect.nft" -- \
  ip netns exec "$master" 2>"$TMP/boot.err" || fail "the unit would fail: $(cat "$TMP/boot.err")"
! grep -q "^skewgate-redirect-boot: .*built-in fallback" "$TMP/boot.err" || fail "the unit replaced the gate's table: $(cat "$TMP/boot.err")"
cmp -s <(in_master nft list table inet skewgate) "$TMP/other.list" || fail "the unit changed the gate's table"

note "redirect remove with the fallback in place: gone, the node reaches the MCS directly (the rollback)"
boot "$TMP/absent/redirect.nft"
boot_ok "the fallback for remove"
redirect remove "$DEFAULT_CONF" || fail "remove: $(cat "$TMP/r.out")"
grep -q "table inet skewgate removed" "$TMP/r.out" || fail "remove: $(cat "$TMP/r.out")"
! in_master nft list table inet skewgate >/dev/null 2>&1 || fail "the table is still there"
body=$(curl_from "$node" "$MASTER_IP" 22623) || fail "the node after remove: $(cat "$TMP/curl.err")"
[ "$body" = 22623 ] && [ "$(accepted mcs 22623 "$NODE_IP")" = 1 ] || fail "after remove the node reached '$body', not the MCS"
echo PASS
