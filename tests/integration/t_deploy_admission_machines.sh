#!/usr/bin/env bash
# deploy/kubernetes/components/admission-machines: an overlay that adds it
# renders offline (`kubectl kustomize`), adds to the gate's service account
# exactly get/list/watch on nodes (cluster-wide) and on machines of both
# API groups in their namespaces, and those are the rules `skewgate check`
# prints for a config with admission.machines (and cluster_api) on.
. "$(dirname "$0")/lib.sh"
need_kubectl
export KUBECONFIG="$TMP/no-cluster"
: >"$KUBECONFIG"

note "an overlay with the component renders offline"
cp -r "$ROOT/deploy/kubernetes" "$TMP/k"
mkdir "$TMP/k/with-machines"
cat >"$TMP/k/with-machines/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../load-balancer
components:
  - ../components/admission-machines
YAML
kubectl kustomize "$TMP/k/with-machines" >"$TMP/with.yaml" 2>"$TMP/with.err" || fail "kustomize: $(cat "$TMP/with.err")"
kubectl kustomize "$TMP/k/load-balancer" >"$TMP/without.yaml" || fail "kustomize load-balancer"

note "check prints the rules the config needs"
cat >"$TMP/gate.yaml" <<'YAML'
listeners:
  - address: "127.0.0.1:0"
admission:
  machines:
    enabled: true
    cluster_api:
      enabled: true
YAML
"$SKEWGATE_BIN" check -c "$TMP/gate.yaml" >"$TMP/check.out" || fail "check refused the config"
plain=$(printf 'listeners:\n  - address: "127.0.0.1:0"\n' >"$TMP/plain.yaml"; "$SKEWGATE_BIN" check -c "$TMP/plain.yaml")
[ "$plain" = "$TMP/plain.yaml: ok" ] || fail "check printed RBAC for a config without admission.machines: $plain"

note "the component grants exactly those rules, and nothing else is changed"
python3 - "$TMP/with.yaml" "$TMP/without.yaml" "$TMP/check.out" <<'PY' || fail "the component's rules"
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
    m = re.match(r'^  (ClusterRole|Role in (\S+)): apiGroups \[(.*?)\] resources \[(\S+)\] verbs \[(.*?)\] \((admission[^)]*)\)$', line)
    if m:
        group = m.group(3).strip('"')
        want.add(("ClusterRole" if m.group(1) == "ClusterRole" else "Role", m.group(2) or "", group, m.group(4),
                  tuple(m.group(5).split())))
assert len(want) == 3, want
assert rights == want, (sorted(rights), sorted(want))
PY
echo PASS
