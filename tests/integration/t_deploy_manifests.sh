#!/usr/bin/env bash
# deploy/: the Kubernetes manifests parse, grant exactly get/list/watch on
# machineconfigurations, run on control-plane nodes with hostNetwork, and the
# config they ship passes `skewgate check`.
. "$(dirname "$0")/lib.sh"

python3 - "$ROOT/deploy/kubernetes/skewgate.yaml" "$TMP/shipped.yaml" <<'PY' || fail "manifests"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
for k in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"):
    assert k in kinds, "missing " + k
rules = kinds["ClusterRole"]["rules"]
assert rules == [{"apiGroups": ["operator.openshift.io"], "resources": ["machineconfigurations"],
                  "verbs": ["get", "list", "watch"]}], rules
pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
assert pod["hostNetwork"] is True
assert "node-role.kubernetes.io/master" in pod["nodeSelector"]
assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
binding = kinds["ClusterRoleBinding"]
assert binding["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"]
open(sys.argv[2], "w").write(kinds["ConfigMap"]["data"]["skewgate.yaml"])
PY
"$SKEWGATE_BIN" check -c "$TMP/shipped.yaml" >/dev/null || fail "the shipped config does not pass check"
grep -q '^ExecStart=/usr/local/bin/skewgate run -c ' "$ROOT/deploy/systemd/skewgate.service" || fail "systemd unit ExecStart"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID' "$ROOT/deploy/systemd/skewgate.service" || fail "systemd unit ExecReload"
echo PASS
