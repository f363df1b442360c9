"""inventory: the read-only resources fakeapi serves beside the MachineConfiguration,
for skewgate's admission.machines policy: Nodes (core v1, cluster-scoped) and
Machines of machine.openshift.io/v1beta1 and cluster.x-k8s.io/v1beta1
(namespaced); for pacing, CertificateSigningRequests; for
upstream.mcs_release auto, ClusterOperators (config.openshift.io/v1,
cluster-scoped).  Get, list (paged with limit/continue) and watch, as a
kube-apiserver serves them; tests write them through the control API
(set_resource, delete_resource, generate_nodes).

Deviation: a page after the first is cut from the current objects, not from a
snapshot at the list's resourceVersion as etcd does; it still carries the
first page's resourceVersion, so a client that watches from there sees every
change made meanwhile as an event.
"""

import base64
import json

RESOURCES = {
    "nodes": {"prefix": "/api/v1", "group": "", "version": "v1", "plural": "nodes", "singular": "node",
              "kind": "Node", "namespaced": False, "short": ["no"]},
    "machines.machine.openshift.io": {
        "prefix": "/apis/machine.openshift.io/v1beta1", "group": "machine.openshift.io",
        "version": "v1beta1", "plural": "machines", "singular": "machine", "kind": "Machine",
        "namespaced": True, "short": ["ma"]},
    "machines.cluster.x-k8s.io": {
        "prefix": "/apis/cluster.x-k8s.io/v1beta1", "group": "cluster.x-k8s.io",
        "version": "v1beta1", "plural": "machines", "singular": "machine", "kind": "Machine",
        "namespaced": True, "short": ["ma"]},
    # Node CSRs: what pacing counts (the cluster-machine-approver's limit).
    "certificatesigningrequests.certificates.k8s.io": {
        "prefix": "/apis/certificates.k8s.io/v1", "group": "certificates.k8s.io",
        "version": "v1", "plural": "certificatesigningrequests", "singular": "certificatesigningrequest",
        "kind": "CertificateSigningRequest", "namespaced": False, "short": ["csr"]},
    # The machine-config ClusterOperator: the MCS release upstream.mcs_release auto follows.
    "clusteroperators.config.openshift.io": {
        "prefix": "/apis/config.openshift.io/v1", "group": "config.openshift.io",
        "version": "v1", "plural": "clusteroperators", "singular": "clusteroperator",
        "kind": "ClusterOperator", "namespaced": False, "short": ["co"]},
}


DISCOVERY_PATHS = {"/api/v1"} | {"/apis/" + r["group"] for r in RESOURCES.values() if r["group"]} | \
    {r["prefix"] for r in RESOURCES.values()}


def gv(res):
    r = RESOURCES[res]
    return r["group"] + "/" + r["version"] if r["group"] else r["version"]


def key_of(obj):
    md = obj.get("metadata") or {}
    return "%s/%s" % (md.get("namespace", ""), md.get("name", ""))


def parse_path(path):
    """(res, namespace|None, name|None, legacy_watch) for a path of an inventory resource, else None."""
    for res, r in RESOURCES.items():
        p = r["prefix"]
        legacy = False
        if path.startswith(p + "/watch/"):
            legacy = True
            rest = path[len(p) + len("/watch/"):]
        elif path.startswith(p + "/"):
            rest = path[len(p) + 1:]
        else:
            continue
        parts = rest.split("/")
        ns = None
        if r["namespaced"] and len(parts) >= 3 and parts[0] == "namespaces" and parts[1]:
            ns = parts[1]
            parts = parts[2:]
        if not parts or parts[0] != r["plural"]:
            continue
        if len(parts) == 1:
            return res, ns, None, legacy
        if len(parts) == 2 and parts[1]:
            return res, ns, parts[1], legacy
    return None


def normalize(res, obj):
    r = RESOURCES[res]
    md = obj.setdefault("metadata", {})
    if not md.get("name"):
        raise ValueError("object has no metadata.name")
    if r["namespaced"]:
        if not md.get("namespace"):
            raise ValueError("a %s needs metadata.namespace" % r["kind"])
    else:
        md.pop("namespace", None)
    obj["apiVersion"] = gv(res)
    obj["kind"] = r["kind"]
    return obj


def encode_continue(rv, after_key):
    raw = json.dumps({"v": "fakeapi/1", "rv": rv, "start": after_key}, separators=(",", ":"))
    return base64.b64encode(raw.encode()).decode()


def decode_continue(token):
    """(rv, after_key), or None when the token is not one of ours."""
    try:
        d = json.loads(base64.b64decode(token.encode(), validate=True).decode())
        return int(d["rv"]), str(d["start"])
    except (ValueError, KeyError, TypeError):
        return None


def page(objects, pred, limit, after_key):
    """The next page of sorted objects after after_key: (items, last_key, more)."""
    keys = sorted(k for k in objects if (after_key is None or k > after_key) and pred(objects[k]))
    if limit and len(keys) > limit:
        return [objects[k] for k in keys[:limit]], keys[limit - 1], True
    return [objects[k] for k in keys], None, False


def generated_node(i, prefix, base_octets, pad_bytes=0):
    """Node i of a generated fleet: name PREFIX-i, InternalIP base + i (IPv4), a nodeRef-free status;
    pad_bytes of annotation to reach a busy Node's size."""
    a, b = base_octets
    ip = "%d.%d.%d.%d" % (a, b, (i >> 8) & 255, i & 255)
    md = {"name": "%s-%05d" % (prefix, i), "labels": {"node-role.kubernetes.io/worker": ""}}
    if pad_bytes:
        md["annotations"] = {"fakeapi.skewgate.test/padding": "p" * pad_bytes}
    return {"metadata": md,
            "status": {"addresses": [{"type": "InternalIP", "address": ip},
                                     {"type": "Hostname", "address": "%s-%05d" % (prefix, i)}],
                       # bulk a real Node carries, so that pages have a realistic size
                       "images": [{"names": ["quay.io/openshift/image-%d@sha256:%064x" % (j, i * 64 + j)],
                                   "sizeBytes": 100000000 + j} for j in range(24)]}}
