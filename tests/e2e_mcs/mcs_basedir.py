#!/usr/bin/env python3
"""Writes a bootstrap base directory for the real Machine Config Server:
machine-pools/master.yaml (a MachineConfigPool whose status names the
rendered config), machine-configs/rendered-master-e2e.yaml (a MachineConfig
carrying an Ignition 3.2.0 config of about SIZE bytes of file contents),
kubeconfig (a cluster with certificate-authority-data, as the MCS's
bootstrap mode reads it) and controller-config/machine-config-controller.yaml
(a ControllerConfig whose spec.kubeAPIServerServingCAData is the CA: the
4.22 bootstrap server reads it for every config and appends the bundle; 4.13
does not read it).

    mcs_basedir.py DIR SIZE CA_PEM
"""
import base64
import json
import os
import sys


def main():
    out, size, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(os.path.join(out, "machine-pools"), exist_ok=True)
    os.makedirs(os.path.join(out, "machine-configs"), exist_ok=True)
    os.makedirs(os.path.join(out, "controller-config"), exist_ok=True)
    # Contents the MCS cannot shrink: distinct lines, so every file is real text.
    files, left, n = [], size, 0
    while left > 0:
        chunk = min(left, 64 * 1024)
        text = "".join("line %d of file %d\n" % (i, n) for i in range(chunk // 20 + 1))[:chunk]
        files.append({"path": "/etc/skewgate-e2e/file%d" % n, "mode": 420, "overwrite": True,
                      "contents": {"source": "data:," + text.replace("%", "%25").replace("\n", "%0A")
                                   .replace(" ", "%20")}})
        left -= chunk
        n += 1
    ign = {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}
    with open(os.path.join(out, "machine-configs", "rendered-master-e2e.yaml"), "w") as f:
        json.dump({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                   "metadata": {"name": "rendered-master-e2e"},
                   "spec": {"config": ign, "osImageURL": ""}}, f)
    with open(os.path.join(out, "machine-pools", "master.yaml"), "w") as f:
        json.dump({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                   "metadata": {"name": "master"},
                   "spec": {"configuration": {"name": "rendered-master-e2e"}},
                   "status": {"configuration": {"name": "rendered-master-e2e"}}}, f)
    ca64 = base64.b64encode(open(ca, "rb").read()).decode()
    with open(os.path.join(out, "controller-config", "machine-config-controller.yaml"), "w") as f:
        json.dump({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
                   "metadata": {"name": "machine-config-controller"},
                   "spec": {"kubeAPIServerServingCAData": ca64}}, f)
    with open(os.path.join(out, "kubeconfig"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config",
                   "clusters": [{"name": "local", "cluster": {"server": "https://api-int.e2e.invalid:6443",
                                                              "certificate-authority-data": ca64}}],
                   "users": [{"name": "kubelet", "user": {"token": "e2e-bootstrap-token"}}],
                   "contexts": [{"name": "kubelet", "context": {"cluster": "local", "user": "kubelet"}}],
                   "current-context": "kubelet"}, f)


if __name__ == "__main__":
    main()
