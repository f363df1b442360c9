#!/usr/bin/env bash
# deploy/kubernetes/components/fail-closed-at-boot: an overlay adding it to
# node-local-redirect renders offline (`kubectl kustomize`) with one object
# more, a MachineConfig for the master pool whose Ignition config Debian's
# ignition-validate takes; it writes the component's redirect.nft byte for
# byte at the path its unit loads, and the unit (verbatim the component's
# .service, which systemd-analyze verify takes) runs before the network and
# the kubelet, after nftables.service and firewalld.service, with no
# condition that could skip it, nothing that ties the kubelet to it and no
# stop action; it loads the file, then its fallback unless the file left
# a redirect. That the file is the gate's own table, loaded at "boot" in a
# network namespace, is t_redirect_boot_netns.sh's; that the fallback
# closes 22623/22624 when the file is missing or malformed,
# t_boot_fail_closed_netns.sh's.
. "$(dirname "$0")/lib.sh"
need_kubectl
export KUBECONFIG="$TMP/no-cluster"
: >"$KUBECONFIG"
C="$ROOT/deploy/kubernetes/components/fail-closed-at-boot"

note "an overlay with the component renders offline"
cp -r "$ROOT/deploy/kubernetes" "$TMP/k"
mkdir "$TMP/k/fail-closed"
cat >"$TMP/k/fail-closed/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../node-local-redirect
components:
  - ../components/fail-closed-at-boot
YAML
kubectl kustomize "$TMP/k/fail-closed" >"$TMP/with.yaml" 2>"$TMP/with.err" || fail "kustomize: $(cat "$TMP/with.err")"
kubectl kustomize "$TMP/k/node-local-redirect" >"$TMP/without.yaml" || fail "kustomize node-local-redirect"

note "the MachineConfig: master pool, Ignition 3.2.0, the file and the unit"
python3 - "$TMP/with.yaml" "$TMP/without.yaml" "$TMP/mc.ign" <<'PY' || fail "the rendered MachineConfig"
import json, sys, yaml
with_, without = ([d for d in yaml.safe_load_all(open(p)) if d] for p in sys.argv[1:3])
key = lambda d: (d["kind"], d["metadata"]["name"])
extra = [d for d in with_ if key(d) not in {key(o) for o in without}]
assert [key(d) for d in extra] == [("MachineConfig", "99-master-skewgate-redirect-boot")], [key(d) for d in extra]
assert sorted(map(key, with_)) == sorted(map(key, without + extra))   # nothing else added or lost
mc = extra[0]
assert mc["apiVersion"] == "machineconfiguration.openshift.io/v1"
assert "namespace" not in mc["metadata"]                                # cluster-scoped
assert mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"] == "master"
cfg = mc["spec"]["config"]
assert set(mc["spec"]) == {"config"}, mc["spec"]                        # no kernel args, no extensions
assert set(cfg) == {"ignition", "storage", "systemd"}, set(cfg)
assert cfg["ignition"] == {"version": "3.2.0"}, cfg["ignition"]
[f] = cfg["storage"]["files"]
assert set(cfg["storage"]) == {"files"}
assert f["path"] == "/etc/skewgate/redirect.nft" and f["mode"] == 0o644 and f["overwrite"] is True, f
assert f["contents"]["source"].startswith("data:text/plain;charset=utf-8;base64,")
[u] = cfg["systemd"]["units"]
assert u["name"] == "skewgate-redirect-boot.service" and u["enabled"] is True, u
json.dump(cfg, open(sys.argv[3], "w"))
PY
ignition-validate "$TMP/mc.ign" || fail "ignition-validate rejects the MachineConfig's Ignition config"

python3 "$ROOT/tests/integration/mc_extract.py" "$TMP/with.yaml" file /etc/skewgate/redirect.nft >"$TMP/redirect.nft"
cmp -s "$TMP/redirect.nft" "$C/redirect.nft" ||
  fail "machineconfig.yaml does not carry redirect.nft (regenerate its base64: base64 -w0 redirect.nft)"
python3 "$ROOT/tests/integration/mc_extract.py" "$TMP/with.yaml" unit skewgate-redirect-boot.service >"$TMP/unit.service"
cmp -s "$TMP/unit.service" "$C/skewgate-redirect-boot.service" ||
  fail "machineconfig.yaml's unit is not skewgate-redirect-boot.service"

note "the unit: loads that file, or its fallback, before the network and the kubelet, after nftables and firewalld, never removes it"
python3 - "$TMP/unit.service" <<'PY' || fail "the unit's ordering"
import sys
sections, lines, cur = {}, {}, None
for line in open(sys.argv[1]):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    if line.startswith("["):
        cur = line.strip("[]")
        sections.setdefault(cur, {})
        continue
    k, _, v = line.partition("=")
    sections[cur].setdefault(k, []).extend(v.split())
    lines.setdefault((cur, k), []).append(v)
unit, svc, inst = sections["Unit"], sections["Service"], sections["Install"]
# Early boot: no default dependencies (which would order it after
# sysinit/basic, and so after the network could be up), before
# network-pre (pulled in, so that the network waits for it) and the kubelet.
assert unit["DefaultDependencies"] == ["no"], unit
assert {"network-pre.target", "kubelet.service"} <= set(unit["Before"]), unit["Before"]
assert "network-pre.target" in unit["Wants"], unit
assert not {"network.target", "network-online.target", "kubelet.service"} & set(unit.get("After", [])), unit
# After the services that may flush the ruleset as they start.
assert {"nftables.service", "firewalld.service"} <= set(unit["After"]), unit["After"]
# Nothing that could skip it (a condition: fail open), nor tie the kubelet
# to it (Requires, BindsTo, RequiredBy...: a failure would stop or hold the
# kubelet, which on a master runs etcd and the API server).
assert set(unit) <= {"Description", "DefaultDependencies", "After", "Wants", "Before", "Conflicts"}, set(unit)
assert unit["Conflicts"] == ["shutdown.target"], unit
assert inst == {"WantedBy": ["multi-user.target"]}, inst
assert svc["Type"] == ["oneshot"] and svc["RemainAfterExit"] == ["yes"]
# The gate's file, its failure ignored ("-"), then the check and fallback.
load, fallback = lines[("Service", "ExecStart")]
assert load == "-/usr/sbin/nft -f /etc/skewgate/redirect.nft", load
assert fallback.startswith("/bin/sh -c '") and fallback.endswith("'") and fallback.count("'") == 2, fallback
assert not set("$%\\") & set(fallback), fallback      # systemd passes it as written
assert "add table inet skewgate; delete table inet skewgate; add table inet skewgate {" in fallback, fallback
assert set(svc) == {"Type", "RemainAfterExit", "ExecStart"}, set(svc)   # no stop action: stopping never opens the MCS
PY
cp "$TMP/unit.service" "$TMP/skewgate-redirect-boot.service"
systemd-analyze verify "$TMP/skewgate-redirect-boot.service" 2>"$TMP/verify.err" ||
  fail "systemd-analyze verify: $(cat "$TMP/verify.err")"
echo PASS
