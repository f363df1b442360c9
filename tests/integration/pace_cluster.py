#!/usr/bin/env python3
"""pace_cluster.py: a scale-up through several gates that share one cluster,
simulated against the fake API server, checking the cluster-wide bound.

N nodes (NET.1 .. NET.N; a node is its address) ask for /config/worker, each
time at a gate picked at random (ports), until admitted. An admitted node then
joins as a real one does, on the fake API: after a moment its kubelet files a
client CSR (signer kube-apiserver-client-kubelet, pending), which is approved
a moment later as its Node appears not Ready; a moment after that the Node is
Ready. After every admission and every Node turning Ready the script checks
that the nodes admitted and not Ready yet (cluster-wide, as it knows them:
it makes them Ready itself) are at most BOUND, and records the highest count.

Writes a JSON summary to --out: admitted, ready, max_joining_seen, bound,
seconds, violations. Exit 0 when every node is Ready within --limit seconds
and no check failed. Bounded: N <= 250, limit <= 120 s, 10 s an answer."""
import argparse, http.client, json, os, random, ssl, sys, time
from pace_node import fetch

ap = argparse.ArgumentParser()
ap.add_argument("--ports", required=True, help="the gates' plain ports, comma-separated")
ap.add_argument("--nodes", type=int, default=60)
ap.add_argument("--net", default="127.3.0")
ap.add_argument("--fake-port", type=int, required=True)
ap.add_argument("--ca", required=True)
ap.add_argument("--bound", type=int, required=True)
ap.add_argument("--limit", type=float, default=50)
ap.add_argument("--seed", type=int, default=26)
ap.add_argument("--out", required=True)
# The shared line (t_pace_shared.sh): a gate may be down a moment (killed and
# restarted: its refused connections are retried elsewhere, not errors); the
# admitted count goes to --progress after every step (the Ready count to
# PROGRESS.ready); with --leases NS the
# joining Lease is read at every check too: no address twice in it, and its
# entries whose node is not Ready within the bound.
ap.add_argument("--tolerate-down", action="store_true")
ap.add_argument("--progress")
ap.add_argument("--leases")
# The order (issue 34: admitted in the order first asked any gate, within one
# retry interval): with --retry S each waiting node asks once every S seconds
# (as Ignition retries, not 8 at random every 50 ms), its first ask at a time
# drawn in [0, --arrive) after the start; the summary's "order" compares the
# first asks with the admissions: for every pair i, j with i first asking
# more than S before j, i admitted more than S after j is a violation; with
# Kendall's tau (tau-a) of the two orders and the most places a node is out.
ap.add_argument("--retry", type=float, default=0)
ap.add_argument("--arrive", type=float, default=0)
# The load balancer's choice moved mid-run (t_pace_shared_outage.sh: every
# node at one gate, then at all three): --ports-file names a file of the
# ports, comma-separated, read again whenever it changes (it overrides
# --ports once it exists). --join-scale F: every delay of a join (to the
# CSR, the Node, Ready) times F, so more nodes are joining at once; or
# F1,F2,...: by the gate that admitted the node, in --ports' order (one
# replica's nodes registering and turning Ready first).
ap.add_argument("--ports-file")
ap.add_argument("--join-scale", default="1")
a = ap.parse_args()
assert 1 <= a.nodes <= 250 and 0 < a.limit <= 120 and 0 <= a.retry <= 10 and 0 <= a.arrive <= 30
ports = [int(p) for p in a.ports.split(",")]
scales = [float(f) for f in a.join_scale.split(",")]
assert len(scales) in (1, len(ports)) and all(0.1 <= f <= 10 for f in scales)
join_scale = {p: scales[k if len(scales) > 1 else 0] for k, p in enumerate(ports)}
ports_stamp = None


def reread_ports():
    global ports, ports_stamp
    try:
        st = os.stat(a.ports_file)
    except OSError:
        return
    if (st.st_mtime_ns, st.st_size) != ports_stamp:
        ports_stamp = (st.st_mtime_ns, st.st_size)
        text = open(a.ports_file).read().strip()
        if text:
            ports = [int(p) for p in text.split(",")]
rnd = random.Random(a.seed)

ctx = ssl.create_default_context(cafile=a.ca)
fake = http.client.HTTPSConnection("127.0.0.1", a.fake_port, context=ctx, timeout=10)


def ctl(fault):
    fake.request("POST", "/_fake/fault", body=json.dumps(fault).encode(), headers={"Content-Type": "application/json"})
    r = fake.getresponse()
    body = r.read()
    if r.status // 100 != 2:
        sys.exit("control API: %d %s" % (r.status, body[:300]))


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def ask(i, port):
    return fetch("%s.%d" % (a.net, i), port)


def csr(i, approved):
    st = {"conditions": [{"type": "Approved", "status": "True", "reason": "NodeCSRApprove"}]} if approved else {}
    ctl({"fault": "set_resource", "resource": "certificatesigningrequests.certificates.k8s.io",
         "object": {"metadata": {"name": "csr-node-%d" % i, "creationTimestamp": now_rfc3339()},
                    "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet"}, "status": st}})


def node(i, ready):
    ctl({"fault": "set_resource", "resource": "nodes",
         "object": {"metadata": {"name": "node-%d" % i},
                    "status": {"addresses": [{"type": "InternalIP", "address": "%s.%d" % (a.net, i)}],
                               "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}})


waiting = set(range(1, a.nodes + 1))
admitted, ready = {}, set()
first_ask = {}      # node: the time of its first ask (any gate)
next_ask = {}       # with --retry: node: when it asks next
events = []         # (due, seq, kind, node): csr, register, ready
seq = 0
max_seen, violations, errors = 0, [], []
start = time.monotonic()
if a.retry:
    for i in sorted(waiting):
        next_ask[i] = start + rnd.uniform(0, a.arrive)


lease_max, lease_samples = 0, 0


def joining_lease():
    """The joining Lease's entries (addresses), from the fake's store."""
    fake.request("GET", "/_fake/leases")
    r = fake.getresponse()
    items = json.loads(r.read())["items"]
    for o in items:
        md = o["metadata"]
        if md.get("namespace") == a.leases and md["name"] == "skewgate-pace-joining":
            text = md.get("annotations", {}).get("skewgate.openshift.io/joining", "")
            return [l.split()[0] for l in text.split("\n") if l.strip()]
    return []


def check(what):
    global max_seen, lease_max, lease_samples
    joining = len(admitted) - len(ready)
    max_seen = max(max_seen, joining)
    if joining > a.bound:
        violations.append({"t": round(time.monotonic() - start, 2), "after": what, "joining": joining})
    if a.leases:
        entries = joining_lease()
        lease_samples += 1
        if len(entries) != len(set(entries)):
            violations.append({"t": round(time.monotonic() - start, 2), "after": what, "twice": entries})
        not_ready = [e for e in entries if int(e.rsplit(".", 1)[1]) not in ready]
        lease_max = max(lease_max, len(not_ready))
        if len(not_ready) > a.bound:
            violations.append({"t": round(time.monotonic() - start, 2), "after": what, "lease": not_ready})


while len(ready) < a.nodes and time.monotonic() - start < a.limit:
    t = time.monotonic()
    # The joins under way, in time order.
    events.sort()
    while events and events[0][0] <= t:
        _, _, kind, i = events.pop(0)
        if kind == "csr":
            csr(i, False)
        elif kind == "register":
            csr(i, True)
            node(i, False)
        else:
            node(i, True)
            ready.add(i)
            check("node %d Ready" % i)
    # A few of the waiting nodes ask, each at a gate picked at random: 8 at
    # random, or (--retry) those whose retry is due, the earliest first.
    if a.retry:
        askers = sorted((next_ask[i], i) for i in waiting if next_ask[i] <= t)
        askers = [i for _, i in askers]
    else:
        askers = rnd.sample(sorted(waiting), min(len(waiting), 8))
    if a.ports_file:
        reread_ports()
    for i in askers:
        asked = time.monotonic()
        first_ask.setdefault(i, asked)
        if a.retry:
            next_ask[i] = max(next_ask[i] + a.retry, asked)
        port = rnd.choice(ports)
        try:
            status, reason = ask(i, port)
        except OSError:
            if not a.tolerate_down:
                raise
            continue
        if status == 200:
            waiting.discard(i)
            admitted[i] = asked
            check("node %d admitted" % i)
            # boot + kubelet, minutes in a real cluster, here 0.2-0.6 s to
            # its CSR, 0.3-1.2 s more to its Node, 0.3-1.2 s more to Ready
            f = join_scale.get(port, scales[0])
            d1 = rnd.uniform(0.2, 0.6) * f
            d2 = d1 + rnd.uniform(0.3, 1.2) * f
            d3 = d2 + rnd.uniform(0.3, 1.2) * f
            for d, kind in ((d1, "csr"), (d2, "register"), (d3, "ready")):
                seq += 1
                events.append((t + d, seq, kind, i))
        elif not (status == 503 and reason == "Paced"):
            errors.append([i, status, reason])
    if a.progress:
        for path, count in ((a.progress, len(admitted)), (a.progress + ".ready", len(ready))):
            with open(path + ".new", "w") as f:
                f.write("%d\n" % count)
            os.replace(path + ".new", path)
    time.sleep(0.05)

def order_stats():
    """The admissions against the first asks (see --retry)."""
    w = a.retry
    nodes = [i for i in admitted if i in first_ask]
    pairs = bad = conc = disc = 0
    worst = []
    for x in range(len(nodes)):
        for y in range(x + 1, len(nodes)):
            i, j = nodes[x], nodes[y]
            if first_ask[i] > first_ask[j]:
                i, j = j, i
            fa, ad = first_ask[j] - first_ask[i], admitted[j] - admitted[i]
            if fa > 0 and ad != 0:
                if ad > 0:
                    conc += 1
                else:
                    disc += 1
            if fa > w:
                pairs += 1
                if admitted[i] > admitted[j] + w:
                    bad += 1
                    worst.append({"first": i, "then": j, "asked_apart": round(fa, 2),
                                  "admitted_after": round(-ad, 2)})
    by_ask = sorted(nodes, key=lambda i: first_ask[i])
    by_adm = sorted(nodes, key=lambda i: admitted[i])
    out = max((abs(by_ask.index(i) - by_adm.index(i)) for i in nodes), default=0)
    n = len(nodes)
    tau = (conc - disc) / (n * (n - 1) / 2) if n > 1 else 1.0
    worst.sort(key=lambda v: -v["admitted_after"])
    return {"retry": w, "nodes": n, "pairs_apart": pairs, "violations": bad, "tau": round(tau, 3),
            "max_places_out": out, "worst": worst[:5],
            "first_ask_spread": round(max(first_ask.values()) - min(first_ask.values()), 2) if first_ask else 0}


summary = {"nodes": a.nodes, "admitted": len(admitted), "ready": len(ready), "max_joining_seen": max_seen,
           "bound": a.bound, "seconds": round(time.monotonic() - start, 1), "violations": violations[:10],
           "errors": errors[:10], "lease_max_not_ready": lease_max, "lease_samples": lease_samples,
           "order": order_stats()}
json.dump(summary, open(a.out, "w"))
print(json.dumps(summary))
sys.exit(0 if len(ready) == a.nodes and not violations and not errors else 1)
