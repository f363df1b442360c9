#!/usr/bin/env bash
# docs/deploy.md as a user follows it: the blocks it marks (<!-- deploy-overlay -->,
# <!-- deploy-check -->) run as written, for both topologies, with a
# stand-in for `oc adm release info` (no cluster here). The overlay the user
# owns renders with kubectl's built-in kustomize; every container then runs
# its image by digest (the redirect init container the gate's own) with
# imagePullPolicy IfNotPresent; nothing else differs from the repository's
# overlay; the repository is left unchanged (nothing edits the base in
# place). Then the rollback's override step (`oc annotate ... override-`)
# runs against the fake API server: it removes the annotation, and run
# again, where there is none, it still succeeds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_fakeapi.sh"
command -v kubectl >/dev/null || fail "kubectl is not installed"
fa_init
trap 'rc=$?; fa_cleanup; set +e; (exit $rc); cleanup' EXIT   # both cleanups, the test's exit status
export KUBECONFIG="$TMP/no-cluster"
: >"$KUBECONFIG"
DOC="$ROOT/docs/deploy.md"

# block NAME: the shell block after <!-- NAME: ... --> in docs/deploy.md.
block() {
  awk -v tag="<!-- $1:" 'index($0, tag) == 1 { on = 1; next }
    on && /^```sh$/ { code = 1; next }
    code && /^```$/ { exit }
    code { print }' "$DOC"
}
block deploy-overlay >"$TMP/overlay.sh"
block deploy-check >"$TMP/check.sh"
[ -s "$TMP/overlay.sh" ] && [ -s "$TMP/check.sh" ] || fail "docs/deploy.md lost its marked blocks"
grep -q 'kubectl kustomize' "$TMP/overlay.sh" || fail "the overlay block renders nothing"
! grep -q 'kustomize edit' "$DOC" || fail "docs/deploy.md still edits a kustomization in place"

# The stand-in for oc: release images by digest, and annotate through kubectl.
mkdir "$TMP/bin"
ln -s "$SKEWGATE_BIN" "$TMP/bin/skewgate"
cat >"$TMP/bin/oc" <<'SH'
#!/usr/bin/env bash
set -euo pipefail
case "$*" in
  "adm release info --image-for=kube-rbac-proxy") echo "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:$(printf 'b%.0s' {1..64})" ;;
  "adm release info --image-for=cli") echo "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:$(printf 'c%.0s' {1..64})" ;;
  annotate\ *) exec kubectl --request-timeout=20s "$@" ;;
  *) echo "oc stand-in: not for this test: $*" >&2; exit 1 ;;
esac
SH
chmod +x "$TMP/bin/oc"
export PATH="$TMP/bin:$PATH"

repo_sum() { (cd "$ROOT" && find deploy docs -type f -print0 | sort -z | xargs -0 sha256sum); }
repo_sum >"$TMP/before.sum"

GATE_IMAGE="registry.example:5000/ops/skewgate@sha256:$(printf 'a%.0s' {1..64})"
for topology in node-local-redirect load-balancer; do
  note "the documented overlay, $topology"
  work="$TMP/work-$topology"
  mkdir "$work"
  (cd "$work" && src=$ROOT gate=$GATE_IMAGE topology=$topology bash -euo pipefail "$TMP/overlay.sh") \
    >"$work/out" 2>&1 || fail "the overlay block ($topology): $(cat "$work/out")"
  [ -s "$work/skewgate.yaml" ] || fail "the overlay block rendered nothing ($topology)"
  (cd "$work" && bash -euo pipefail "$TMP/check.sh") >"$work/check.out" 2>&1 ||
    fail "the check block ($topology): $(cat "$work/check.out")"
  grep -q '^skewgate-config.yaml: ok$' "$work/check.out" || fail "check ($topology): $(cat "$work/check.out")"
  kubectl kustomize "$ROOT/deploy/kubernetes/$topology" >"$work/repo.yaml"
  python3 - "$work/skewgate.yaml" "$work/repo.yaml" "$GATE_IMAGE" <<'PY' || fail "the rendered overlay ($topology)"
import copy, sys, yaml
mine = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
repo = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
gate = sys.argv[3]
release = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:"
want = {"skewgate": gate, "redirect": gate, "kube-rbac-proxy": release + "b" * 64, "tls-sync": release + "c" * 64}
[ds] = [d for d in mine if d["kind"] == "DaemonSet"]
pod = ds["spec"]["template"]["spec"]
for c in pod.get("initContainers", []) + pod["containers"]:
    assert c["image"] == want[c["name"]], (c["name"], c["image"])
    assert c["imagePullPolicy"] == "IfNotPresent", (c["name"], c.get("imagePullPolicy"))
# Only the images differ from the repository's own overlay.
def images_out(docs):
    docs = copy.deepcopy(docs)
    for d in docs:
        if d["kind"] == "DaemonSet":
            p = d["spec"]["template"]["spec"]
            for c in p.get("initContainers", []) + p["containers"]:
                c["image"] = None
    return docs
assert images_out(mine) == images_out(repo)
PY
done

note "the repository is unchanged"
repo_sum >"$TMP/after.sum"
cmp -s "$TMP/before.sum" "$TMP/after.sum" || fail "following docs/deploy.md changed the repository: $(diff "$TMP/before.sum" "$TMP/after.sum")"

note "rollback: the override annotation goes, and going again is no error"
awk '/^## 5\. Rollback/ { on = 1 } on && /^oc annotate machineconfiguration/ { print; exit }' "$DOC" >"$TMP/unannotate.sh"
grep -q 'skewgate.openshift.io/override-$' "$TMP/unannotate.sh" || fail "the rollback does not remove the override annotation"
cat >"$FA_DIR/seed.yaml" <<'YAML'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
  annotations:
    skewgate.openshift.io/override: admit
    other.example/keep: "yes"
spec: {}
YAML
fa_start --object "$FA_DIR/seed.yaml"
export KUBECONFIG="$FA_DIR/kubeconfig" KUBECACHEDIR="$FA_DIR/kube-cache"
annotations() { kubectl --request-timeout=20s get machineconfiguration cluster -o jsonpath='{.metadata.annotations}'; }
[[ "$(annotations)" == *skewgate.openshift.io/override* ]] || fail "the seed has no override: $(annotations)"
bash -euo pipefail "$TMP/unannotate.sh" >"$TMP/unannotate.out" 2>&1 || fail "rollback step: $(cat "$TMP/unannotate.out")"
got=$(annotations)
[[ "$got" != *skewgate.openshift.io/override* ]] || fail "the override annotation is still there: $got"
[[ "$got" == *other.example/keep* ]] || fail "the rollback removed another annotation: $got"
bash -euo pipefail "$TMP/unannotate.sh" >"$TMP/unannotate.out" 2>&1 ||
  fail "the rollback step fails where there is no override: $(cat "$TMP/unannotate.out")"
echo PASS
