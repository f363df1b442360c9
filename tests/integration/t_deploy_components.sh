#!/usr/bin/env bash
# The RBAC components of deploy/kubernetes/components: an overlay that adds
# them renders offline (`kubectl kustomize`) and adds to the gate's service
# account exactly the rules `skewgate check` prints for the config that
# needs them, nothing more:
# - admission-machines (and admission-machines-cluster-api beside it):
#   get/list/watch on nodes (cluster-wide) and on machines in their
#   namespaces, for admission.machines (and its cluster_api). The first
#   names no namespace but openshift-machine-api: a Role in
#   openshift-cluster-api, which only clusters running the Cluster API
#   have, would fail the whole `oc apply` everywhere else.
# - pacing: get/list/watch on nodes and certificatesigningrequests, for
#   pace.enabled with the kubernetes source; no other set grants CSRs; and
#   the shared line's Leases (get, list, watch, create, update, delete) in
#   the gate's namespace (pace.line, auto with replicas > 1).
. "$(dirname "$0")/lib.sh"
need_kubectl
export KUBECONFIG="$TMP/no-cluster"
: >"$KUBECONFIG"

note "overlays with the components render offline"
cp -r "$ROOT/deploy/kubernetes" "$TMP/k"
# overlay NAME COMPONENT...: an overlay of load-balancer with those components.
overlay() {
  local name=$1 c
  shift
  mkdir "$TMP/k/$name"
  { printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../load-balancer\ncomponents:\n'
    for c in "$@"; do printf '  - ../components/%s\n' "$c"; done; } >"$TMP/k/$name/kustomization.yaml"
  kubectl kustomize "$TMP/k/$name" >"$TMP/$name.yaml" 2>"$TMP/$name.err" || fail "kustomize $name: $(cat "$TMP/$name.err")"
}
overlay machines admission-machines
overlay machines-capi admission-machines admission-machines-cluster-api
overlay pacing pacing
kubectl kustomize "$TMP/k/load-balancer" >"$TMP/without.yaml" || fail "kustomize load-balancer"

note "check prints the rules the config needs"
printf 'listeners:\n  - address: "127.0.0.1:0"\nadmission:\n  machines:\n    enabled: true\n' >"$TMP/gate.yaml"
printf '    cluster_api:\n      enabled: true\n' | cat "$TMP/gate.yaml" - >"$TMP/gate-capi.yaml"
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" >"$TMP/check.out" || fail "check refused the config"
"$SKEWGATE_BIN" check -c "$TMP/gate-capi.yaml" >"$TMP/check-capi.out" || fail "check refused the cluster_api config"
cat >"$TMP/gate-pace.yaml" <<EOF
listeners:
  - address: "127.0.0.1:0"
enforcement:
  source: kubernetes
  kubernetes:
    server: https://127.0.0.1:6443
    ca_file: $TMP/ca.crt
    token_file: $TMP/token
pace:
  enabled: true
  replicas: 3
EOF
"$SKEWGATE_BIN" check -c "$TMP/gate-pace.yaml" >"$TMP/check-pace.out" || fail "check refused the pacing config"
# The shared line (pace.line auto, three replicas) writes Leases in the
# gate's namespace; with pace.line local it needs none of them.
grep -qx '  Role in skewgate: apiGroups \[coordination.k8s.io\] resources \[leases\] verbs \[get list watch create update delete\] (pace.line)' "$TMP/check-pace.out" ||
  fail "check does not print the shared line's rule: $(cat "$TMP/check-pace.out")"
printf '  line: local\n' | cat "$TMP/gate-pace.yaml" - >"$TMP/gate-pace-local.yaml"
"$SKEWGATE_BIN" check -c "$TMP/gate-pace-local.yaml" >"$TMP/check-pace-local.out" || fail "check refused pace.line local"
if grep -q leases "$TMP/check-pace-local.out"; then fail "pace.line local asks for Leases: $(cat "$TMP/check-pace-local.out")"; fi
# Without admission.machines or pace, only the base ClusterRole's rules
# (the verdict source's, and the ClusterOperator's of upstream.mcs_release
# auto), which no component adds.
plain=$(printf 'listeners:\n  - address: "127.0.0.1:0"\n' >"$TMP/plain.yaml"; "$SKEWGATE_BIN" check -c "$TMP/plain.yaml")
[ "$plain" = "$TMP/plain.yaml: ok
rbac: the service account needs get, list and watch on:
  ClusterRole: apiGroups [operator.openshift.io] resources [machineconfigurations] verbs [get list watch] (enforcement.source: kubernetes)
  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)" ] ||
  fail "check printed more than the base's rules for a config without admission.machines or pace: $plain"

note "each set of components grants exactly those rules, and nothing else is changed"
rules() {   # RENDERED CHECK_OUTPUT N_RULES NAMESPACES...: the added objects' namespaces, exactly
python3 - "$@" <<'PY'
import re, sys, yaml
with_docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
without = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
key = lambda d: (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
base = {key(d): d for d in without}
added = [d for d in with_docs if key(d) not in base]
assert all(d == base[key(d)] for d in with_docs if key(d) in base), "the component changed a base object"
assert len(with_docs) == len(without) + len(added)
SA = ("ServiceAccount", "skewgate", "skewgate")
rights = set()
for b in added:
    if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
        continue
    assert [(s["kind"], s["name"], s["namespace"]) for s in b["subjects"]] == [SA], b
    ref = b["roleRef"]
    ns = b["metadata"].get("namespace")
    role = [d for d in added if d["kind"] == ref["kind"] and d["metadata"]["name"] == ref["name"]
            and d["metadata"].get("namespace") == ns]
    assert len(role) == 1, ref
    for r in role[0]["rules"]:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                rights.add((ref["kind"], ns or "", g, res, tuple(r["verbs"])))
for d in added:
    assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "skewgate", key(d)
# check's lines: "  ClusterRole: apiGroups [G] ..." or "  Role in NS: apiGroups [G] ...", admission ones only
want = set()
for line in open(sys.argv[3]):
    m = re.match(r'^  (ClusterRole|Role in (\S+)): apiGroups \[(.*?)\] resources \[(\S+)\] verbs \[(.*?)\] \(((?:admission|pace)[^)]*)\)$', line)
    if m:
        group = m.group(3).strip('"')
        want.add(("ClusterRole" if m.group(1) == "ClusterRole" else "Role", m.group(2) or "", group, m.group(4),
                  tuple(m.group(5).split())))
assert len(want) == int(sys.argv[4]), want
assert rights == want, (sorted(rights), sorted(want))
namespaces = {d["metadata"]["namespace"] for d in added if "namespace" in d["metadata"]}
assert namespaces == set(sys.argv[5:]), namespaces
PY
}
rules "$TMP/machines.yaml" "$TMP/without.yaml" "$TMP/check.out" 2 openshift-machine-api ||
  fail "the admission-machines component's rules"
rules "$TMP/machines-capi.yaml" "$TMP/without.yaml" "$TMP/check-capi.out" 3 openshift-machine-api openshift-cluster-api ||
  fail "the rules of both admission-machines components"
rules "$TMP/pacing.yaml" "$TMP/without.yaml" "$TMP/check-pace.out" 3 skewgate ||
  fail "the pacing component's rules"
for f in "$TMP/without.yaml" "$TMP/machines.yaml" "$TMP/machines-capi.yaml"; do
  if has certificatesigningrequests "$f"; then fail "$(basename "$f") grants CSRs"; fi
done
echo PASS
