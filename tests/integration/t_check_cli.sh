#!/usr/bin/env bash
# skewgate check: the reference and example configs pass; a typo'd key fails
# naming file:line:column with a suggestion; --help works.
. "$(dirname "$0")/lib.sh"

# A config that talks to the API (the kubernetes source) gets the RBAC
# rules it needs after its ok; upstream.mcs_release auto adds the
# machine-config ClusterOperator's.
rbac_head="rbac: the service account needs get, list and watch on:"
mc_rule="  ClusterRole: apiGroups [operator.openshift.io] resources [machineconfigurations] verbs [get list watch] (enforcement.source: kubernetes)"
co_rule="  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)"
for f in "$ROOT/conf/skewgate.yaml" "$ROOT"/conf/examples/*.yaml; do
  out=$("$SKEWGATE_BIN" check -c "$f") || fail "check rejects $f"
  want="$f: ok"
  if grep -q '^  source: kubernetes' "$f"; then want=$(printf '%s\n%s\n%s\n%s' "$want" "$rbac_head" "$mc_rule" "$co_rule"); fi
  [ "$out" = "$want" ] || fail "unexpected output for $f: $out"
done
printf 'listeners:\n  - address: "0.0.0.0:22623"\nuptream:\n  address: "127.0.0.1:1"\n' >"$TMP/typo.yaml"
if "$SKEWGATE_BIN" check -c "$TMP/typo.yaml" 2>"$TMP/err"; then fail "a typo'd key passed"; fi
[ "$(cat "$TMP/err")" = "$TMP/typo.yaml:3:1: uptream: unknown key; did you mean \"upstream\"?
note: $TMP/typo.yaml: the checks across keys (addresses that overlap, keys that need or exclude others) run once this error is fixed" ] ||
  fail "error: $(cat "$TMP/err")"
printf 'listeners:\n  - address: "0.0.0.0:22623"\nlimits:\n  header_timeout: 10x\n' >"$TMP/dur.yaml"
if "$SKEWGATE_BIN" check -c "$TMP/dur.yaml" 2>"$TMP/err"; then fail "a bad duration passed"; fi
grep -q "^$TMP/dur.yaml:4:19: " "$TMP/err" || fail "bad duration position: $(cat "$TMP/err")"
set +e
"$SKEWGATE_BIN" check -c "$TMP/missing.yaml" 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "missing file: exit $rc, expected 2"
"$SKEWGATE_BIN" check --help | has "usage: skewgate check" || fail "check --help"
"$SKEWGATE_BIN" --help | has "run " || fail "--help lists no run"
echo PASS
