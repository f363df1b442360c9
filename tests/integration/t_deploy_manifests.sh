#!/usr/bin/env bash
# deploy/kubernetes: each overlay renders offline (`kubectl kustomize`),
# kubectl's client-side dry-run apply takes every object, and the rendered
# objects say what the deployment promises: exactly get/list/watch on
# machineconfigurations and on the machine-config ClusterOperator for the
# gate, as `skewgate check` prints them (and only its sidecars' few rights
# beside), hostNetwork on control-plane nodes, non-root containers without
# capabilities (NET_ADMIN for the redirect init container alone, in the
# redirect overlay alone), probes on the admin port over loopback,
# resources, the metrics path to the cluster's Prometheus, and a shipped
# config that passes `skewgate check`.
#
# The dry run: kubectl (1.32) needs the API's discovery to map kinds to
# resources, and `apply` GETs each object to choose between create and
# patch, even with --dry-run=client; no cluster is reachable here. So the
# apply goes to tests/fakeapi, which answers 404 for every object (apply
# then reports "created (dry run)"), with kubectl's discovery cache written
# beforehand for the kinds these manifests use (with their real scope),
# and --validate=false, since nothing here serves the built-in kinds'
# OpenAPI schemas. That checks what kubectl checks on the client: YAML,
# apiVersion and kind, metadata types (e.g. an unquoted label value), the
# kind's mapping and scope; the Python check below checks the rest.
. "$(dirname "$0")/lib_kube.sh"
need_kubectl

K="$ROOT/deploy/kubernetes"
OVERLAYS=(node-local-redirect load-balancer)
export KUBECONFIG="$TMP/no-cluster"   # kustomize needs none; make sure no real one is used
: >"$KUBECONFIG"

note "each overlay renders offline"
for o in base "${OVERLAYS[@]}"; do
  kubectl kustomize "$K/$o" >"$TMP/$o.yaml" 2>"$TMP/$o.err" || fail "kubectl kustomize $o: $(cat "$TMP/$o.err")"
  [ -s "$TMP/$o.yaml" ] || fail "$o rendered nothing"
done

note "kubectl apply --dry-run=client takes every object (against the fake API)"
fa_start
cache="$FA_DIR/kube-cache/discovery/127.0.0.1_$FA_PORT"
python3 - "$cache" <<'PY'
import json, os, sys
# group/version -> [(kind, plural, namespaced)], as a real OpenShift API server has them.
RES = {
    "v1": [("Namespace", "namespaces", False), ("ServiceAccount", "serviceaccounts", True),
           ("ConfigMap", "configmaps", True), ("Service", "services", True)],
    "apps/v1": [("DaemonSet", "daemonsets", True)],
    "rbac.authorization.k8s.io/v1": [("ClusterRole", "clusterroles", False),
                                     ("ClusterRoleBinding", "clusterrolebindings", False),
                                     ("Role", "roles", True), ("RoleBinding", "rolebindings", True)],
    "security.openshift.io/v1": [("SecurityContextConstraints", "securitycontextconstraints", False)],
    "monitoring.coreos.com/v1": [("ServiceMonitor", "servicemonitors", True),
                                 ("PrometheusRule", "prometheusrules", True)],
}
root = sys.argv[1]
groups = []
for gv, kinds in RES.items():
    group, _, version = gv.rpartition("/")
    ver = {"groupVersion": gv, "version": version}
    groups.append({"name": group, "versions": [ver], "preferredVersion": ver})
    d = os.path.join(root, gv)
    os.makedirs(d, exist_ok=True)
    json.dump({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": [
        {"name": plural, "singularName": kind.lower(), "namespaced": ns, "kind": kind,
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
        for kind, plural, ns in kinds]}, open(os.path.join(d, "serverresources.json"), "w"))
json.dump({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups},
          open(os.path.join(root, "servergroups.json"), "w"))
PY
for o in "${OVERLAYS[@]}"; do
  FA_KUBECONFIG="$FA_DIR/kubeconfig" fa_kubectl apply --dry-run=client --validate=false -f "$TMP/$o.yaml" \
    >"$TMP/$o.apply" 2>"$TMP/$o.apply.err" || fail "dry-run apply of $o: $(cat "$TMP/$o.apply.err")"
  python3 - "$TMP/$o.yaml" "$TMP/$o.apply" <<'PY' || fail "dry-run apply of $o did not take every object: $(cat "$TMP/$o.apply")"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
lines = [l for l in open(sys.argv[2]).read().splitlines() if l.strip()]
assert len(lines) == len(docs), (len(lines), len(docs))
assert all(l.endswith(" created (dry run)") for l in lines), lines
names = sorted(l.split()[0].split("/", 1)[1] for l in lines)
assert names == sorted(d["metadata"]["name"] for d in docs), names
PY
done
# A broken manifest is refused: the dry run is a check, not a formality.
sed 's/openshift.io\/cluster-monitoring: "true"/openshift.io\/cluster-monitoring: true/' "$TMP/load-balancer.yaml" >"$TMP/broken.yaml"
! cmp -s "$TMP/broken.yaml" "$TMP/load-balancer.yaml" || fail "the broken copy is not broken"
if FA_KUBECONFIG="$FA_DIR/kubeconfig" fa_kubectl apply --dry-run=client --validate=false -f "$TMP/broken.yaml" \
  >/dev/null 2>"$TMP/broken.err"; then fail "dry-run apply took a label that is not a string"; fi
grep -q "cannot unmarshal bool" "$TMP/broken.err" || fail "broken manifest: $(cat "$TMP/broken.err")"

note "the rendered objects, overlay by overlay"
for o in "${OVERLAYS[@]}"; do
  python3 - "$o" "$TMP/$o.yaml" "$K" "$TMP" <<'PY' || fail "rendered $o"
import os, re, sys, yaml

overlay, rendered, kdir, tmp = sys.argv[1:5]
redirect = overlay == "node-local-redirect"
docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
def one(kind, name=None, ns=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
             and (ns is None or d["metadata"].get("namespace") == ns)]
    assert len(found) == 1, (kind, name, ns, len(found))
    return found[0]
def by_kind(kind):
    return [d for d in docs if d["kind"] == kind]

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "SecurityContextConstraints"}
for d in docs:
    md = d["metadata"]
    if d["kind"] in CLUSTER_SCOPED:
        assert "namespace" not in md, (d["kind"], md)
    else:
        assert md.get("namespace"), ("no namespace", d["kind"], md["name"])
    assert md.get("labels", {}).get("app.kubernetes.io/part-of") == "skewgate", (d["kind"], md["name"])

ns = one("Namespace")
NS = ns["metadata"]["name"]
assert ns["metadata"]["labels"]["openshift.io/cluster-monitoring"] == "true"
assert ns["metadata"]["annotations"]["openshift.io/node-selector"] == ""
for d in docs:
    if d["kind"] not in CLUSTER_SCOPED:
        assert d["metadata"]["namespace"] in (NS, "openshift-machine-config-operator"), d["metadata"]
# The only objects in the MCO's namespace: the Role to read its secret, and its binding.
assert sorted((d["kind"], d["metadata"]["name"]) for d in docs
              if d["metadata"].get("namespace") == "openshift-machine-config-operator") == \
    [("Role", "skewgate-read-mcs-tls"), ("RoleBinding", "skewgate-read-mcs-tls")]

# --- RBAC: the gate's ClusterRole is exactly what it was; the
# ServiceAccount's rights, summed over every binding, are exactly these.
ds = one("DaemonSet", "skewgate", NS)
pod = ds["spec"]["template"]["spec"]
sa = one("ServiceAccount", pod["serviceAccountName"], NS)
SA = ("ServiceAccount", sa["metadata"]["name"], NS)
assert one("ClusterRole", "skewgate")["rules"] == [
    {"apiGroups": ["operator.openshift.io"], "resources": ["machineconfigurations"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["config.openshift.io"], "resources": ["clusteroperators"], "resourceNames": ["machine-config"],
     "verbs": ["get", "list", "watch"]}]
gate_binding = one("ClusterRoleBinding", "skewgate")
assert gate_binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "skewgate"}
def rights(subject):
    got = set()
    for b in by_kind("ClusterRoleBinding") + by_kind("RoleBinding"):
        subjects = [(s["kind"], s["name"], s.get("namespace")) for s in b["subjects"]]
        if subject not in subjects:
            continue
        ref = b["roleRef"]
        where = b["metadata"].get("namespace", "*")
        role = one(ref["kind"], ref["name"], None if ref["kind"] == "ClusterRole" else where)
        for r in role["rules"]:
            for verb in r["verbs"]:
                if "nonResourceURLs" in r:
                    for u in r["nonResourceURLs"]:
                        got.add((where, "url", u, "", verb))
                    continue
                for g in r["apiGroups"]:
                    for res in r["resources"]:
                        for n in r.get("resourceNames", ["*"]):
                            got.add((where, g, res, n, verb))
    return got
assert rights(SA) == {
    ("*", "operator.openshift.io", "machineconfigurations", "*", "get"),
    ("*", "operator.openshift.io", "machineconfigurations", "*", "list"),
    ("*", "operator.openshift.io", "machineconfigurations", "*", "watch"),
    ("*", "config.openshift.io", "clusteroperators", "machine-config", "get"),
    ("*", "config.openshift.io", "clusteroperators", "machine-config", "list"),
    ("*", "config.openshift.io", "clusteroperators", "machine-config", "watch"),
    ("*", "authentication.k8s.io", "tokenreviews", "*", "create"),
    ("*", "authorization.k8s.io", "subjectaccessreviews", "*", "create"),
    ("openshift-machine-config-operator", "", "secrets", "machine-config-server-tls", "get"),
    (NS, "security.openshift.io", "securitycontextconstraints", "skewgate", "use"),
}, sorted(rights(SA))
PROM = ("ServiceAccount", "prometheus-k8s", "openshift-monitoring")
assert rights(PROM) == {(NS, g, r, "*", v) for g, r in [("", "services"), ("", "endpoints"), ("", "pods"),
                                                         ("discovery.k8s.io", "endpointslices")]
                        for v in ("get", "list", "watch")} | {("*", "url", "/metrics", "", "get")}, sorted(rights(PROM))

# --- SCC: the host's network and ports, nothing else; NET_ADMIN and UID 0
# only where the redirect init container needs them.
scc = one("SecurityContextConstraints", "skewgate")
assert scc["allowHostNetwork"] is True and scc["allowHostPorts"] is True
for k in ("allowHostPID", "allowHostIPC", "allowHostDirVolumePlugin", "allowPrivilegedContainer",
          "allowPrivilegeEscalation"):
    assert scc[k] is False, k
assert scc["requiredDropCapabilities"] == ["ALL"] and scc["readOnlyRootFilesystem"] is True
assert scc["seccompProfiles"] == ["runtime/default"]
assert (scc["allowedCapabilities"] or []) == (["NET_ADMIN"] if redirect else [])
assert scc["runAsUser"]["type"] == ("RunAsAny" if redirect else "MustRunAsNonRoot")
assert "hostPath" not in scc["volumes"]

# --- The DaemonSet: control-plane nodes, hostNetwork, priority.
assert pod["hostNetwork"] is True
assert pod["nodeSelector"] == {"node-role.kubernetes.io/master": ""}
tol = {(t["key"], t["operator"], t["effect"]) for t in pod["tolerations"]}
assert {("node-role.kubernetes.io/master", "Exists", "NoSchedule"),
        ("node-role.kubernetes.io/control-plane", "Exists", "NoSchedule")} <= tol, tol
assert pod["priorityClassName"] == "system-cluster-critical"
assert pod["shareProcessNamespace"] is True
assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1
labels = ds["spec"]["template"]["metadata"]["labels"]
assert all(labels.get(k) == v for k, v in ds["spec"]["selector"]["matchLabels"].items())

# The images come from the kustomization's images: entries.
kust = yaml.safe_load(open(os.path.join(kdir, "base", "kustomization.yaml")))
images = {i["name"]: "%s:%s" % (i["newName"], i["newTag"]) for i in kust["images"]}
assert set(images) == {"skewgate", "kube-rbac-proxy", "cli"}, images

inits = pod.get("initContainers", [])
containers = pod["containers"]
everyone = inits + containers
assert [c["name"] for c in inits] == (["redirect", "tls-sync"] if redirect else ["tls-sync"]), inits
assert [c["name"] for c in containers] == ["skewgate", "kube-rbac-proxy"], containers
for c in everyone:
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False, c["name"]
    assert sc["readOnlyRootFilesystem"] is True, c["name"]
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, c["name"]
    assert sc["capabilities"]["drop"] == ["ALL"], c["name"]
    assert c["image"] in images.values(), (c["name"], c["image"])
    # Said, not defaulted: for a :latest tag the default is Always, and a
    # podman-loaded image would never be used.
    assert c["imagePullPolicy"] == "IfNotPresent", (c["name"], c.get("imagePullPolicy"))
    r = c["resources"]
    assert r["requests"]["cpu"] and r["requests"]["memory"] and r["limits"]["memory"], c["name"]
    assert "cpu" not in r.get("limits", {}), c["name"]
    if c["name"] == "redirect":
        assert sc["runAsUser"] == 0 and sc["runAsNonRoot"] is False
        assert sc["capabilities"]["add"] == ["NET_ADMIN"], sc
    else:
        assert sc["runAsNonRoot"] is True and isinstance(sc["runAsUser"], int) and sc["runAsUser"] > 0, c["name"]
        assert not sc["capabilities"].get("add"), c["name"]
    assert not sc.get("privileged"), c["name"]
assert pod["securityContext"]["runAsNonRoot"] is True
gate = containers[0]
rbac_proxy = containers[1]
sync = inits[-1]
assert gate["image"] == images["skewgate"] and rbac_proxy["image"] == images["kube-rbac-proxy"]
assert sync["image"] == images["cli"]
assert gate["securityContext"]["runAsUser"] == sync["securityContext"]["runAsUser"]   # it signals the gate
assert rbac_proxy["securityContext"]["runAsUser"] != gate["securityContext"]["runAsUser"]

# --- The config the gate runs with: the ConfigMap it mounts, at the path its command names.
vols = {v["name"]: v for v in pod["volumes"]}
def mount(c, vol):
    ms = [m for m in c.get("volumeMounts", []) if m["name"] == vol]
    assert len(ms) == 1, (c["name"], vol)
    return ms[0]
cm = one("ConfigMap", vols["config"]["configMap"]["name"], NS)
assert set(cm["data"]) == {"skewgate.yaml"}
config_path = mount(gate, "config")["mountPath"] + "/skewgate.yaml"
assert gate["command"] == ["skewgate", "run", "-c", config_path], gate["command"]
text = cm["data"]["skewgate.yaml"]
cfg = yaml.safe_load(text)
open(os.path.join(tmp, overlay + ".config.yaml"), "w").write(text)
def port(addr):
    return int(addr.rsplit(":", 1)[1])
def host(addr):
    return addr.rsplit(":", 1)[0]

# Listeners 22643 (TLS, the MCS certificate from tls-sync) and 22644; the
# MCS over loopback; admin and metrics on loopback.
lst = {port(l["address"]): l for l in cfg["listeners"]}
assert set(lst) == {22643, 22644}, lst
assert "tls" in lst[22643] and "tls" not in lst[22644]
assert host(cfg["upstream"]["address"]) == "127.0.0.1" and port(cfg["upstream"]["address"]) == 22624
assert not cfg["upstream"].get("tls")
assert cfg["admin"]["enabled"] is True and host(cfg["admin"]["address"]) == "127.0.0.1"
assert cfg["metrics"]["enabled"] is True and host(cfg["metrics"]["address"]) == "127.0.0.1"
admin_port, metrics_port = port(cfg["admin"]["address"]), port(cfg["metrics"]["address"])
host_ports = {p["containerPort"]: p for p in gate["ports"]}
assert set(host_ports) == set(lst) and all(p["hostPort"] == p["containerPort"] for p in gate["ports"])

# Probes: httpGet on the node's loopback (hostNetwork), the admin port.
for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
    g = gate[probe]["httpGet"]
    assert g == {"host": "127.0.0.1", "port": admin_port, "path": path}, (probe, g)

# The MCS certificate: tls-sync writes where the config reads, the gate
# mounts it read-only, in memory.
tls_dir = mount(sync, "mcs-tls")["mountPath"]
assert mount(gate, "mcs-tls")["mountPath"] == tls_dir and mount(gate, "mcs-tls").get("readOnly") is True
assert vols["mcs-tls"]["emptyDir"]["medium"] == "Memory"
env = {e["name"]: e["value"] for e in sync["env"]}
assert env["TLS_DIR"] == tls_dir and env["GATE_CONFIG"] == config_path
assert env["SECRET_NAMESPACE"] == "openshift-machine-config-operator" and env["SECRET_NAME"] == "machine-config-server-tls"
assert lst[22643]["tls"] == {"certificate": tls_dir + "/current/tls.crt", "key": tls_dir + "/current/tls.key"}
assert sync["restartPolicy"] == "Always"
assert sync["startupProbe"]["exec"]["command"][-1] == tls_dir + "/current/tls.key"
script_cm = one("ConfigMap", vols["tls-sync"]["configMap"]["name"], NS)
assert script_cm["data"]["tls-sync.sh"] == open(os.path.join(kdir, "base", "tls-sync.sh")).read()
assert sync["command"] == ["/bin/bash", mount(sync, "tls-sync")["mountPath"] + "/tls-sync.sh", "watch"]

# --- Metrics: kube-rbac-proxy on the node (TLS from the service CA) in
# front of the loopback metrics listener; the Service and the ServiceMonitor
# point at its port.
args = dict(a[2:].split("=", 1) for a in rbac_proxy["args"])
assert args["upstream"] == "http://127.0.0.1:%d/" % metrics_port, args
assert args["allow-paths"] == "/metrics"
proxy_port = port(args["secure-listen-address"])
assert rbac_proxy["ports"] == [{"name": "metrics", "containerPort": proxy_port, "hostPort": proxy_port}]
# Not in a range OpenShift or Kubernetes keep for themselves on the hosts
# (installation docs, "Network connectivity requirements": 9000-9999 host
# services, 10250-10259 Kubernetes, 30000-32767 NodePorts), nor in the
# kernel's ephemeral range, nor one of the gate's own.
assert not (9000 <= proxy_port <= 9999 or 10250 <= proxy_port <= 10259 or 30000 <= proxy_port), proxy_port
assert proxy_port not in set(lst) | {admin_port, metrics_port, 22623, 22624}, proxy_port
tls_mount = mount(rbac_proxy, "metrics-tls")["mountPath"]
assert args["tls-cert-file"] == tls_mount + "/tls.crt" and args["tls-private-key-file"] == tls_mount + "/tls.key"
svc = one("Service", None, NS)
assert svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"] == \
    vols["metrics-tls"]["secret"]["secretName"]
assert svc["spec"]["clusterIP"] == "None"
assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
assert svc["spec"]["ports"] == [{"name": "metrics", "port": proxy_port, "targetPort": "metrics"}]
sm = one("ServiceMonitor", None, NS)
assert sm["apiVersion"] == "monitoring.coreos.com/v1"
assert all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
assert NS in sm["spec"]["namespaceSelector"]["matchNames"]
[ep] = sm["spec"]["endpoints"]
assert ep["port"] == "metrics" and ep["scheme"] == "https" and ep["path"] == "/metrics"
assert ep.get("bearerTokenFile") or ep.get("authorization"), ep
assert ep["tlsConfig"]["serverName"] == "%s.%s.svc" % (svc["metadata"]["name"], NS)
assert ep["tlsConfig"]["caFile"]

# --- The topology.
topo = ds["metadata"]["annotations"]["skewgate.openshift.io/topology"]
assert topo == overlay, topo
if redirect:
    r = inits[0]
    assert r["image"] == images["skewgate"]
    assert r["command"] == ["skewgate", "redirect", "install", "-c", config_path], r["command"]
    assert mount(r, "config")["mountPath"] + "/skewgate.yaml" == config_path
    # The redirect: nodes' 22623 to the TLS listener, 22624 to the plain one.
    red = cfg["redirect"]
    assert red["table"] == "skewgate"
    assert {(p["from"], p["to"]) for p in red["ports"]} == {(22623, 22643), (22624, 22644)}, red
    # Its config is the base's plus the redirect section, nothing else.
    base = yaml.safe_load(open(os.path.join(kdir, "base", "skewgate.yaml")))
    assert {k: v for k, v in cfg.items() if k != "redirect"} == base
    assert open(os.path.join(kdir, "base", "skewgate.yaml")).read() in text
else:
    assert "redirect" not in cfg
    assert not any("NET_ADMIN" in str(c.get("securityContext")) for c in everyone)
PY
done

note "the shipped configs pass skewgate check, which asks for exactly the gate's ClusterRole"
"$SKEWGATE_BIN" check -c "$K/base/skewgate.yaml" >/dev/null || fail "base/skewgate.yaml does not pass check"
"$SKEWGATE_BIN" check -c "$TMP/load-balancer.config.yaml" >"$TMP/check-lb.out" || fail "the load-balancer config does not pass check"
"$SKEWGATE_BIN" check -c "$TMP/node-local-redirect.config.yaml" >"$TMP/check-redirect.out" ||
  fail "the node-local-redirect config (with its redirect: section) does not pass check"
want_rules=$(printf '%s\n' \
  '  ClusterRole: apiGroups [operator.openshift.io] resources [machineconfigurations] verbs [get list watch] (enforcement.source: kubernetes)' \
  '  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)')
for o in lb redirect; do
  [ "$(grep '^  ClusterRole' "$TMP/check-$o.out")" = "$want_rules" ] || fail "check's rules for the $o config: $(cat "$TMP/check-$o.out")"
done

grep -q '^ExecStart=/usr/local/bin/skewgate run -c ' "$ROOT/deploy/systemd/skewgate.service" || fail "systemd unit ExecStart"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID' "$ROOT/deploy/systemd/skewgate.service" || fail "systemd unit ExecReload"
echo PASS
