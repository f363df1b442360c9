#!/usr/bin/env bash
# skewgate override admit|reject|clear [--for D] --cluster (issue 11.5):
# a JSON merge patch of the annotation skewgate.openshift.io/override on
# the MachineConfiguration cluster, against the fake API server, with two
# gate replicas on the Kubernetes source. Both follow within a second of
# the CLI's exit (measured, bound 1 s). The fake's merge patch is the real
# server's: kubectl patch --type merge on the same object is followed the
# same way, and a kubectl watch sees MODIFIED with a new resourceVersion.
# Credentials as kubectl finds them (--kubeconfig, KUBECONFIG,
# ~/.kube/config; certificate-authority or -data, token or tokenFile), or
# the gate's configuration (-c). Clear errors: missing, unreadable or
# malformed kubeconfig, 401, 403, 404, 409, a wrong CA. The optional
# ClusterRole grants patch; the gate's own stays read-only.
# run: alone: measures that both replicas follow within 1 s
. "$(dirname "$0")/lib_kube.sh"
need_kubectl

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml"
cp "$FA_DIR/token" "$GATE_TOKEN"
ANN=skewgate.openshift.io/override
KC="$FA_DIR/kubeconfig"
OUT="$TMP/cli.out"
: >"$OUT"

# replica N: a gate on the Kubernetes source with its own ports and log.
replica() {
  local n=$1
  eval "ADMIN_$n=127.0.0.1:$(free_port)"
  local addr_var="ADMIN_$n"
  GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" ADMIN_ADDR=${!addr_var} ADMIN_SOCKET="$TMP/admin$n.sock" \
    gate_config "$TMP/gate$n.yaml" hold unused
  "$SKEWGATE_BIN" run -c "$TMP/gate$n.yaml" 2>"$TMP/gate$n.log" &
  PIDS+=($!)
}
replica 1
replica 2
ready() { curl -sf -o /dev/null "http://$1/readyz"; }
wait_until 10 ready "$ADMIN_1" || fa_fail "replica 1 not ready: $(tail -5 "$TMP/gate1.log")"
wait_until 10 ready "$ADMIN_2" || fa_fail "replica 2 not ready: $(tail -5 "$TMP/gate2.log")"

# follow_ms DECISION REASON [CMD...]: runs CMD (its output to $OUT), then
# polls both replicas' /verdict every 5 ms (bounded: 5 s) until both show
# DECISION and REASON; prints the ms from CMD's exit to then. The poller
# is started first, so its own start-up (slow on a loaded machine) is not
# counted.
follow_ms() {
  python3 - "$OUT" "$ADMIN_1" "$ADMIN_2" "$@" <<'PY'
import http.client, json, subprocess, sys, time
out, addrs, decision, reason, cmd = sys.argv[1], sys.argv[2:4], sys.argv[4], sys.argv[5], sys.argv[6:]
def shows(addr):
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=2)
    c.request("GET", "/verdict")
    v = json.loads(c.getresponse().read())
    c.close()
    return v["decision"] == decision and v["reason"] == reason
if cmd:
    with open(out, "a") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=f, timeout=30).returncode
    if rc != 0:
        sys.exit("%s exited %d" % (" ".join(cmd), rc))
t0 = time.monotonic_ns()
pending = set(addrs)
deadline = time.monotonic() + 5
while pending and time.monotonic() < deadline:
    pending = {a for a in pending if not shows(a)}
    if pending:
        time.sleep(0.005)
if pending:
    sys.exit("not followed by %s within 5 s" % sorted(pending))
print((time.monotonic_ns() - t0) // 1000000)
PY
}
verdict_of() { curl -sf "http://$1/verdict"; }
annotation() { fa_kubectl get machineconfiguration cluster -o json | fa_json "d['metadata'].get('annotations', {}).get('$ANN', '<none>')"; }
rv() { fa_kubectl get machineconfiguration cluster -o json | fa_json "d['metadata']['resourceVersion']"; }
# cli ARGS...: skewgate override ARGS, output kept for the token check.
cli() { "$SKEWGATE_BIN" override "$@" >>"$OUT" 2>&1; }
# cli_fails RC PATTERN ARGS...: exits RC and prints PATTERN.
cli_fails() {
  local want=$1 pattern=$2 rc=0
  shift 2
  "$SKEWGATE_BIN" override "$@" >"$TMP/fail.out" 2>&1 || rc=$?
  cat "$TMP/fail.out" >>"$OUT"
  [ "$rc" = "$want" ] || fa_fail "override $*: exit $rc, expected $want: $(cat "$TMP/fail.out")"
  grep -qE -- "$pattern" "$TMP/fail.out" || fa_fail "override $*: no '$pattern' in: $(cat "$TMP/fail.out")"
}

note "both replicas admit: Compliant"
follow_ms admit Compliant >/dev/null || fa_fail "replicas not Compliant at start"

note "override reject --cluster: a watch sees MODIFIED with a new resourceVersion; both replicas follow within 1 s"
rv0=$(rv)
fa_spawn "$TMP/watch.json" "$TMP/watch.err" env KUBECONFIG="$KC" KUBECACHEDIR="$FA_DIR/kube-cache" \
  kubectl --request-timeout=30s get machineconfiguration cluster --watch --output-watch-events -o json
watching() { [ "$(fa_stats | fa_json 'd["currentWatchers"]')" -ge 3 ]; }   # two gates and kubectl
wait_until 10 watching || fa_fail "kubectl's watch did not start"
ms=$(follow_ms reject Override "$SKEWGATE_BIN" override reject --cluster --kubeconfig "$KC") ||
  fa_fail "replicas did not follow the reject: $(tail -3 "$OUT")"
echo "both replicas rejecting ${ms} ms after the CLI exited"
[ "$ms" -lt 1000 ] || fa_fail "replicas followed after ${ms} ms (bound 1000)"
grep -q "machineconfiguration cluster: $ANN=reject (resourceVersion" "$OUT" || fa_fail "CLI output: $(cat "$OUT")"
[ "$(annotation)" = reject ] || fa_fail "annotation: $(annotation)"
rv1=$(rv)
[ "$rv1" -gt "$rv0" ] || fa_fail "resourceVersion not bumped: $rv0 -> $rv1"
has_modified() { fa_json_stream_has "$TMP/watch.json" "d['type'] == 'MODIFIED' and d['object']['metadata']['resourceVersion'] == '$rv1' and d['object']['metadata']['annotations']['$ANN'] == 'reject'"; }
wait_until 5 has_modified || fa_fail "kubectl's watch saw no MODIFIED event with rv $rv1: $(cat "$TMP/watch.json" | tail -c 600)"
# One PATCH from skewgate on the object itself (not /status), answered 200.
fa_stats | fa_json '[r for r in d["recentRequests"] if r["method"] == "PATCH" and r["userAgent"] == "skewgate"]' >"$TMP/patches.json"
fa_json '[(r["path"], r["code"]) for r in d]' "$TMP/patches.json" >"$TMP/patches.txt"
[ "$(cat "$TMP/patches.txt")" = '[["/apis/operator.openshift.io/v1/machineconfigurations/cluster", 200]]' ] ||
  fa_fail "skewgate's PATCH requests: $(cat "$TMP/patches.txt")"

note "kubectl patch --type merge with the same null: the replicas follow it the same way"
fa_kubectl patch machineconfiguration cluster --type merge -p "{\"metadata\":{\"annotations\":{\"$ANN\":null}}}" >/dev/null
follow_ms admit Compliant >/dev/null || fa_fail "replicas did not follow kubectl's merge patch"
[ "$(annotation)" = "<none>" ] || fa_fail "kubectl's null did not remove the annotation"

note "override admit --for 30m --cluster via KUBECONFIG: admit;until=RFC3339, about 30 minutes ahead"
fa_kubectl patch machineconfiguration cluster --subresource=status --type merge -p "$STATUS_OUT_OF_SKEW" >/dev/null
follow_ms reject OutOfSkew >/dev/null || fa_fail "replicas not OutOfSkew"
ms=$(KUBECONFIG="$KC:/nonexistent/second" follow_ms admit Override "$SKEWGATE_BIN" override admit --for 30m --cluster) ||
  fa_fail "replicas did not follow the admit: $(tail -3 "$OUT")"
echo "both replicas admitting ${ms} ms after the CLI exited"
[ "$ms" -lt 1000 ] || fa_fail "replicas followed after ${ms} ms (bound 1000)"
python3 - "$(annotation)" <<'PY' || fa_fail "annotation $(annotation)"
import datetime, sys
v = sys.argv[1]
action, until = v.split(";until=")
assert action == "admit", v
t = datetime.datetime.strptime(until, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
left = (t - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
assert 29 * 60 < left <= 30 * 60 + 1, left
PY

note "override clear --cluster via ~/.kube/config: annotation removed, both back to OutOfSkew"
mkdir -p "$TMP/home/.kube" && cp "$KC" "$TMP/home/.kube/config"
ms=$(HOME="$TMP/home" KUBECONFIG= follow_ms reject OutOfSkew "$SKEWGATE_BIN" override clear --cluster) ||
  fa_fail "replicas did not follow the clear: $(tail -3 "$OUT")"
echo "both replicas back to OutOfSkew ${ms} ms after the CLI exited"
[ "$ms" -lt 1000 ] || fa_fail "clear followed after ${ms} ms"
[ "$(annotation)" = "<none>" ] || fa_fail "clear left $(annotation)"
grep -q "machineconfiguration cluster: override cleared" "$OUT" || fa_fail "clear output: $(tail -2 "$OUT")"

note "certificate-authority-data and tokenFile, and the gate's own configuration (-c)"
python3 - "$KC" "$FA_DIR/pki/ca.crt" "$TMP/kc-data" "$GATE_TOKEN" <<'PY'
import base64, sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
c = kc["clusters"][0]["cluster"]
del c["certificate-authority"]
c["certificate-authority-data"] = base64.b64encode(open(sys.argv[2], "rb").read()).decode()
kc["users"][0]["user"] = {"tokenFile": sys.argv[4]}
yaml.safe_dump(kc, open(sys.argv[3], "w"))
PY
cli reject --cluster --kubeconfig "$TMP/kc-data" || fa_fail "CA data + tokenFile: $(tail -3 "$OUT")"
[ "$(annotation)" = reject ] || fa_fail "CA data + tokenFile did not patch"
cli clear --cluster -c "$TMP/gate1.yaml" || fa_fail "-c gate config: $(tail -3 "$OUT")"
[ "$(annotation)" = "<none>" ] || fa_fail "-c did not clear"

note "clear errors: kubeconfig missing, unreadable, malformed, incomplete; wrong CA"
cli_fails 2 "/nonexistent/kc: cannot open: No such file" reject --cluster --kubeconfig /nonexistent/kc
cli_fails 2 "$TMP/home: cannot read: Is a directory" reject --cluster --kubeconfig "$TMP/home"
printf 'apiVersion: v1\nclusters: [\n' >"$TMP/kc-bad"
cli_fails 2 "kc-bad:[0-9]+:[0-9]+:" reject --cluster --kubeconfig "$TMP/kc-bad"
sed 's/^current-context: .*/current-context: elsewhere/' "$KC" >"$TMP/kc-ctx"
cli_fails 2 'kc-ctx:[0-9]+:[0-9]+: no entry named "elsewhere" in contexts' reject --cluster --kubeconfig "$TMP/kc-ctx"
sed '/^current-context:/d' "$KC" >"$TMP/kc-noctx"
cli_fails 2 'current-context is not set' reject --cluster --kubeconfig "$TMP/kc-noctx"
python3 - "$KC" "$TMP/kc-cert" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
kc["users"][0]["user"] = {"client-certificate": "/x.crt", "client-key": "/x.key"}
yaml.safe_dump(kc, open(sys.argv[2], "w"))
PY
cli_fails 2 'authenticates with client-certificate, which skewgate does not support' reject --cluster --kubeconfig "$TMP/kc-cert"
tools_ca="$TMP/other-ca"
"$ROOT/tools/mkcert.sh" "$tools_ca" ecdsa >/dev/null 2>&1
sed "s|certificate-authority: .*|certificate-authority: $tools_ca/ca.crt|" "$KC" >"$TMP/kc-wrongca"
cli_fails 1 'certificate verify failed|verify' reject --cluster --kubeconfig "$TMP/kc-wrongca"
[ "$(annotation)" = "<none>" ] || fa_fail "a failed override changed the annotation"

note "the API server's refusals, each in words: 401, 403, 404, 409"
fa_kubeconfig "$TMP/kc-wrongtoken" "not-the-token"
cli_fails 1 'answered 401 .*Unauthorized.*log in again' reject --cluster --kubeconfig "$TMP/kc-wrongtoken"
fa_ctl '{"fault":"fail","count":1,"code":403,"kinds":["patch"],"message":"machineconfigurations.operator.openshift.io \"cluster\" is forbidden"}' >/dev/null
cli_fails 1 'answered 403 .*forbidden.*ClusterRole skewgate-override' reject --cluster --kubeconfig "$KC"
fa_ctl '{"fault":"fail","count":1,"code":409,"kinds":["patch"]}' >/dev/null
cli_fails 1 'answered 409 .*run it again' reject --cluster --kubeconfig "$KC"
fa_ctl '{"fault":"delete_object","name":"cluster"}' >/dev/null
cli_fails 1 'answered 404 .*not found.*OpenShift cluster' reject --cluster --kubeconfig "$KC"
fa_ctl "{\"fault\":\"set_object\",\"file\":\"$FIXTURES/automatic-compliant.yaml\"}" >/dev/null
cli_fails 2 '^usage: skewgate override' reject --cluster --admin 127.0.0.1:1   # usage: --admin is for one gate
cli_fails 2 '^usage: skewgate override' reject --kubeconfig "$KC"                   # --kubeconfig needs --cluster

note "RBAC: the optional ClusterRole grants get+patch on machineconfigurations/cluster; the gate's stays read-only"
kubectl kustomize "$ROOT/deploy/kubernetes/override-rbac" >"$TMP/override-rbac.yaml" || fa_fail "override-rbac does not build"
kubectl kustomize "$ROOT/deploy/kubernetes/node-local-redirect" >"$TMP/gate.yaml"
python3 - "$TMP/override-rbac.yaml" "$TMP/gate.yaml" <<'PY' || fa_fail "RBAC"
import sys, yaml
extra = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
role = [d for d in extra if d["kind"] == "ClusterRole"]
assert len(role) == 1 and role[0]["metadata"]["name"] == "skewgate-override", extra
assert role[0]["rules"] == [{"apiGroups": ["operator.openshift.io"], "resources": ["machineconfigurations"],
                             "resourceNames": ["cluster"], "verbs": ["get", "patch"]}], role[0]["rules"]
for b in (d for d in extra if d["kind"] == "ClusterRoleBinding"):
    assert all(s.get("kind") != "ServiceAccount" for s in b["subjects"]), b
gate = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
for d in gate:
    if d["kind"] in ("ClusterRole", "Role"):
        for r in d.get("rules", []):
            if "machineconfigurations" in r.get("resources", []):
                assert not set(r["verbs"]) - {"get", "list", "watch"}, (d["metadata"]["name"], r)
PY

note "no token in any output, and both replicas' logs are clean"
for f in "$TMP/gate1.log" "$TMP/gate2.log"; do
  if grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$f"; then fa_fail "sanitizer report in $f"; fi
done
for t in "$FA_TOKEN" not-the-token; do
  if grep -qF "$t" "$OUT" "$TMP/gate1.log" "$TMP/gate2.log"; then fa_fail "a token appears in the output"; fi
done
echo PASS
