#!/usr/bin/env bash
# Fail closed across a control-plane reboot (components/fail-closed-at-boot),
# in two network namespaces joined by a veth pair as in t_redirect_netns.sh:
# "master" boots with the MCS stand-in on 22623 (TLS) and 22624 (plain) on
# all addresses and no gate; "boot" is the unit's ExecStart= commands run
# there as systemd runs them (unit_exec.py) on the very file the
# MachineConfig carries (from the rendered manifest), which loads it and
# not the unit's fallback (the fallback's cases: t_boot_fail_closed_netns.sh).
# Then the node's connections to 22623/22624 are refused, the MCS sees none
# of them, and Ignition retries; once the gate runs, the same Ignition gets
# its config through the gate, which reaches the MCS over loopback. The
# file is exactly the table `skewgate redirect install` writes for the
# node-local-redirect config: status says so, and the init container's
# install over it needs no --force. Addresses: 10.232.X.0/30, loopback.
# Its namespaces, addresses and rulesets are its own (names and 10.232.X from the PID): it runs beside the others.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "network namespaces need root (uid $(id -u))"
[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
command -v nft >/dev/null || fail "nft is not installed (package nftables)"
K="$ROOT/deploy/kubernetes"
C="$K/components/fail-closed-at-boot"

# The manifest: rendered as an operator would, or, without a kubectl that
# renders components, the component's own MachineConfig file (what
# t_deploy_fail_closed.sh proves kustomize passes through unchanged).
manifest="$TMP/rendered.yaml"
if (need_kubectl) >"$TMP/kubectl.skip"; then
  cp -r "$K" "$TMP/k"
  mkdir "$TMP/k/fail-closed"
  printf 'resources: [../node-local-redirect]\ncomponents: [../components/fail-closed-at-boot]\n' \
    >"$TMP/k/fail-closed/kustomization.yaml"
  KUBECONFIG=/dev/null kubectl kustomize "$TMP/k/fail-closed" >"$manifest" 2>"$TMP/kustomize.err" ||
    fail "kustomize: $(cat "$TMP/kustomize.err")"
  note "the file and the unit from the rendered manifest"
else
  cp "$C/machineconfig.yaml" "$manifest"
  note "the file and the unit from $C/machineconfig.yaml ($(cut -c7- "$TMP/kubectl.skip"))"
fi
python3 "$ROOT/tests/integration/mc_extract.py" "$manifest" unit skewgate-redirect-boot.service >"$TMP/boot.service"
python3 "$ROOT/tests/integration/mc_extract.py" "$manifest" file /etc/skewgate/redirect.nft >"$TMP/redirect.nft"
# boot: the unit's ExecStart= commands in the master namespace as systemd
# runs them (unit_exec.py), on $TMP/redirect.nft; the journal in boot.err.
boot() {
  python3 "$ROOT/tests/integration/unit_exec.py" "$TMP/boot.service" "/etc/skewgate/redirect.nft=$TMP/redirect.nft" -- \
    ip netns exec "$master" 2>"$TMP/boot.err" || fail "the unit would fail: $(cat "$TMP/boot.err")"
  ! grep -q "^skewgate-redirect-boot: .*built-in fallback" "$TMP/boot.err" ||
    fail "the unit loaded its fallback over the shipped file: $(cat "$TMP/boot.err")"
}

master=sg-bmaster-$$-$RANDOM
node=sg-bnode-$$-$RANDOM
ip netns add "$master" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $master")
ip netns add "$node" 2>"$TMP/netns.err" || skip "ip netns add failed: $(cat "$TMP/netns.err")"
CLEANUPS+=("ip netns delete $node")
in_master() { ip netns exec "$master" "$@"; }
in_node() { ip netns exec "$node" "$@"; }
net=10.232.$(( ($$ + RANDOM) % 250 + 1 ))
MASTER_IP=$net.1 NODE_IP=$net.2
ip -n "$master" link add sg0 type veth peer name sg1 netns "$node"
ip -n "$master" addr add "$MASTER_IP/30" dev sg0
ip -n "$node" addr add "$NODE_IP/30" dev sg1
for ns in "$master" "$node"; do ip -n "$ns" link set lo up; done
ip -n "$master" link set sg0 up
ip -n "$node" link set sg1 up
note "master $master ($MASTER_IP), node $node ($NODE_IP)"

note "boot: the unit loads the table before anything listens"
boot
in_master nft list table inet skewgate >"$TMP/booted.nft"
grep -qF 'iifname != "lo" tcp dport 22623 redirect to :22643' "$TMP/booted.nft" || fail "booted: $(cat "$TMP/booted.nft")"
# Run again (a restarted unit): the same table, once.
boot
[ "$(in_master nft list table inet skewgate)" = "$(cat "$TMP/booted.nft")" ] || fail "a second load changed the table"

# Then the MCS comes up (on a real master, the kubelet starts it), on all addresses.
certs ecdsa "IP:$MASTER_IP"
mcs_cmd=$(MCS_ADDR=0.0.0.0 "$ROOT/tools/mcs-standin.sh" "$TMP/mcs" 22624 307200 22623 "$TMP/pki/tls.crt" "$TMP/pki/tls.key")
MCS_LOG="$TMP/mcs/access.log"
# shellcheck disable=SC2086  # the command line mcs-standin.sh printed
ip netns exec "$master" $mcs_cmd >"$TMP/mcs/stdout" 2>&1 &
PIDS+=($!)
wait_until 10 in_master curl -sf -o /dev/null http://127.0.0.1:22624/healthz || fail "MCS stand-in did not start"
mcs_from_node() { awk -v a="$NODE_IP" '$1 == a' "$MCS_LOG" 2>/dev/null | wc -l; }

note "no gate yet: the node's connections are refused and never reach the MCS"
for url in "https://$MASTER_IP:22623/config/worker" "http://$MASTER_IP:22624/config/worker"; do
  rc=0
  in_node curl -sS --connect-timeout 5 --max-time 10 --cacert "$CA" -o /dev/null "$url" 2>"$TMP/refused.err" || rc=$?
  [ "$rc" = 7 ] || fail "$url with no gate: curl exit $rc, expected 7 (connection refused): $(cat "$TMP/refused.err")"
done
[ "$(mcs_from_node)" = 0 ] || fail "the node reached the MCS before the gate ran: $(cat "$MCS_LOG")"

note "Ignition retries the refused connection"
export IGN_NETNS=$node IGN_URL="https://$MASTER_IP:22623/config/worker"
IGN_TIMEOUT=60 ign_run boot &
ign=$!
PIDS+=($ign)
ign_refused() { [ "$(grep -ci 'connection refused' "$TMP/boot/out" 2>/dev/null)" -ge 2 ]; }
wait_until 20 ign_refused || { cat "$TMP/boot/out"; fail "Ignition did not retry a refused connection"; }
! grep -q "Ignition finished successfully" "$TMP/boot/out" || fail "Ignition finished with no gate"

note "the gate starts (the DaemonSet's pod): Ignition gets its config through it"
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
# node-local-redirect/skewgate.yaml's listeners, upstream and redirect;
# the test's certificate and the file source instead of the cluster's.
cat >"$TMP/gate.yaml" <<YAML
workers: 2
listeners:
  - address: "0.0.0.0:22643"
    tls:
      certificate: $TMP/pki/tls.crt
      key: $TMP/pki/tls.key
  - address: "0.0.0.0:22644"
upstream:
  address: "127.0.0.1:22624"
enforcement:
  source: file
  file:
    path: $object
admin:
  enabled: false
$(sed -n '/^redirect:/,$p' "$K/node-local-redirect/skewgate.yaml")
YAML
GATE_NETNS=$master gate_start "$TMP/gate.yaml"
wait "$ign" || { cat "$TMP/boot/out"; fail "Ignition did not finish once the gate ran"; }
grep -q "Ignition finished successfully" "$TMP/boot/out" || fail "Ignition: no success line"
[ "$(access_count client "$NODE_IP")" -ge 1 ] || fail "the gate did not log the node's request"
[ "$(mcs_from_node)" = 0 ] || fail "the node reached the MCS directly"
awk '$1 == "127.0.0.1" && $7 == "/config/worker"' "$MCS_LOG" | has . || fail "the MCS did not see the gate's request"

note "the booted table is the gate's own: status exact, the init container's install needs no --force"
redirect() { in_master "$SKEWGATE_BIN" redirect "$1" -c "$K/node-local-redirect/skewgate.yaml" >"$TMP/r.out" 2>&1; }
redirect status || fail "status against the booted table: $(cat "$TMP/r.out")"
redirect install || fail "install over the booted table: $(cat "$TMP/r.out")"
! grep -q -- "--force" "$TMP/r.out" || fail "install over the booted table spoke of --force: $(cat "$TMP/r.out")"
[ "$(in_master nft list table inet skewgate)" = "$(cat "$TMP/booted.nft")" ] || fail "install changed the booted table"
echo PASS
