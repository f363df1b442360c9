# shellcheck shell=bash
# Sourced by lib.sh and lib_fakeapi.sh: what a test needs that
# tools/deps.sh cannot install, and the skip that says so; has, which
# every test's pipelines use. A skipped test
# prints one line, "SKIP: why", and exits 77, which tests/integration/run
# counts as skipped, neither passed nor failed.
SKIP_STATUS=77

skip() { echo "SKIP: $*"; exit "$SKIP_STATUS"; }

# has [GREP-OPTION...] PATTERN: grep -q for the end of a pipeline. grep -q
# stops at its first match, and a writer still writing then dies of
# SIGPIPE, which pipefail reports as a failure though the line was there
# (a TSAN run once did not skip t_reload_worker_oom: ldd was the writer).
# grep -c into a command substitution reads to the end.
has() { [ "$(grep -c "$@")" != 0 ]; }

# The oldest kubectl the tests need: 1.24 is the first with
# `kubectl patch --subresource=status` (t_kube_*, t_override_cluster, the
# fake API's tests), and embeds kustomize v4.5, which renders components,
# `labels:` and `replacements:` (t_deploy_*). Proven: Debian 12's
# kubernetes-client 1.20 fails all of them (kustomize: unknown field
# "labels"; no --subresource), 1.32 passes them; none in between was tried.
KUBECTL_MIN_MINOR=24

# need_kubectl: skips the test unless kubectl >= 1.$KUBECTL_MIN_MINOR is on
# PATH. Debian 12 has none (kubernetes-client is 1.20), so tools/deps.sh
# does not install one.
need_kubectl() {
  local minor
  command -v kubectl >/dev/null ||
    skip "needs kubectl >= 1.$KUBECTL_MIN_MINOR, which is not installed (Debian 12 has only kubernetes-client 1.20)"
  minor=$(kubectl version --client -o json 2>/dev/null | python3 -c '
import json, re, sys
v = json.load(sys.stdin)["clientVersion"]
print(int(re.match(r"\d+", v["minor"]).group()) if v["major"] == "1" else 999)' 2>/dev/null) ||
    skip "needs kubectl >= 1.$KUBECTL_MIN_MINOR; $(command -v kubectl) does not say its version (kubectl version --client -o json)"
  [ "$minor" -ge "$KUBECTL_MIN_MINOR" ] ||
    skip "needs kubectl >= 1.$KUBECTL_MIN_MINOR; $(command -v kubectl) is 1.$minor (Debian 12's kubernetes-client is 1.20)"
}
