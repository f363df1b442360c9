#!/usr/bin/env bash
# deploy/kubernetes/base/prometheusrule.yaml (issue 11.6): its spec.groups,
# extracted into a plain rules file, pass `promtool check rules`, and
# `promtool test rules` with tests/alerts/skewgate_test.yaml (series for
# every alert, firing and not firing) passes. Then two mutations per alert
# show the tests bite: without the alert, and with an expression that is
# always true, promtool test must fail. Every alert has the annotations
# summary, description and a runbook_url into docs/operations.md.
. "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || fail "promtool is not installed (Debian's prometheus package)"
RULE="$ROOT/deploy/kubernetes/base/prometheusrule.yaml"
cp "$ROOT/tests/alerts/skewgate_test.yaml" "$TMP/"

# extract [MUTATION ALERT]: spec.groups as $TMP/skewgate.rules.yaml, with
# ALERT dropped (drop) or made always true (always).
extract() {
  python3 - "$RULE" "$TMP/skewgate.rules.yaml" "$@" <<'PY'
import sys, yaml
src, out = sys.argv[1], sys.argv[2]
doc = yaml.safe_load(open(src))
assert doc["kind"] == "PrometheusRule" and doc["apiVersion"] == "monitoring.coreos.com/v1", doc.get("kind")
groups = doc["spec"]["groups"]
if len(sys.argv) > 3:
    how, name = sys.argv[3], sys.argv[4]
    for g in groups:
        for r in list(g["rules"]):
            if r.get("alert") != name:
                continue
            if how == "drop":
                g["rules"].remove(r)
            else:
                r["expr"] = "(%s) or on() vector(1)" % r["expr"]
                r.pop("for", None)
yaml.safe_dump({"groups": groups}, open(out, "w"), sort_keys=False)
PY
}

note "promtool check rules on the extracted spec.groups"
extract
promtool check rules "$TMP/skewgate.rules.yaml" >"$TMP/check.out" 2>&1 || fail "promtool check rules: $(cat "$TMP/check.out")"
cat "$TMP/check.out"

note "each alert has a severity, summary, description and a runbook_url anchor in docs/operations.md"
ALERTS=$(python3 - "$TMP/skewgate.rules.yaml" <<'PY'
import sys, yaml
want = {"SkewgateNodesHeld": "#nodes-held", "SkewgateSourceStale": "#source-stale",
        "SkewgateMachinesWatchNotSynced": "#machines-watch", "SkewgatePacedNodeWaiting": "#paced-node-waiting",
        "SkewgatePacingBlind": "#pacing-blind", "SkewgatePacingLineFull": "#pacing-line-full",
        "SkewgateEnforcementNone": "#enforcement-none", "SkewgateUpstreamErrors": "#upstream-errors",
        "SkewgateConfigReloadFailed": "#reload-failed", "SkewgateDown": "#gate-down"}
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
names = [r["alert"] for r in rules]
assert sorted(names) == sorted(want), names
for r in rules:
    a = r["annotations"]
    assert r["labels"]["severity"] in ("info", "warning", "critical"), r
    assert a["summary"] and len(a["description"]) > 100, r["alert"]
    assert a["runbook_url"] == "docs/operations.md" + want[r["alert"]], (r["alert"], a["runbook_url"])
print(" ".join(names))
PY
) || fail "the rules' labels or annotations"

note "promtool test rules: every alert, firing and not firing"
promtool test rules "$TMP/skewgate_test.yaml" >"$TMP/test.out" 2>&1 || fail "promtool test rules: $(cat "$TMP/test.out")"
for a in $ALERTS; do
  grep -q "alertname: $a\$" "$TMP/skewgate_test.yaml" || fail "no unit test for $a"
done

note "the tests bite: each alert dropped, or made always true, fails them"
for a in $ALERTS; do
  for how in drop always; do
    extract "$how" "$a"
    if promtool test rules "$TMP/skewgate_test.yaml" >"$TMP/mut.out" 2>&1; then
      fail "promtool test still passes with $a ($how)"
    fi
  done
done
echo PASS
