#!/usr/bin/env bash
# skewgate verdict on every fixture object and on bad input: the exit status
# (0 admit, 3 reject, 2 bad input), the verdict JSON on stdout, and one line
# on stderr that names file:line:col.
set -u
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/../fixtures/machineconfiguration
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run WANT_STATUS ARGS...: skewgate verdict ARGS, output kept in $tmp/out and $tmp/err.
run() {
  local want=$1; shift
  "$SKEWGATE_BIN" verdict "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  if [ "$status" -ne "$want" ]; then
    fail "verdict $*: exit $status, want $want; stderr: $(cat "$tmp/err")"
    return 1
  fi
}

# field KEY: the verdict's top-level KEY from the last run's stdout.
field() {
  python3 -c '
import json, sys
try:
    print(json.load(open(sys.argv[1])).get(sys.argv[2], "<absent>"))
except ValueError:
    print("<stdout is not JSON>")' "$tmp/out" "$1"
}

# expect_verdict DECISION REASON ARGS...
expect_verdict() {
  local decision=$1 reason=$2 status=0; shift 2
  [ "$decision" = reject ] && status=3
  run "$status" "$@" || return
  local got
  got="$(field decision) $(field reason)"
  [ "$got" = "$decision $reason" ] || fail "verdict $*: got '$got', want '$decision $reason'"
  [ -s "$tmp/err" ] && fail "verdict $*: unexpected stderr: $(cat "$tmp/err")"
}

# expect_bad_input PATTERN ARGS...: exit 2 and one stderr line matching PATTERN (grep -E).
expect_bad_input() {
  local pattern=$1; shift
  run 2 "$@" || return
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "verdict $*: want one line on stderr, got: $(cat "$tmp/err")"
  grep -qE "$pattern" "$tmp/err" || fail "verdict $*: stderr '$(cat "$tmp/err")' does not match '$pattern'"
  [ -s "$tmp/out" ] && fail "verdict $*: unexpected stdout: $(cat "$tmp/out")"
}

# Every fixture, with the verdict its first line states (JSON has no comments:
# its expectation is in the fixtures' README).
checked=0
for f in "$fixtures"/*.yaml "$fixtures"/*.json; do
  [ -e "$f" ] || continue
  case "$f" in
    *.json) expected="admit Compliant"
            [ "$(basename "$f")" = manual-ocp-compliant.json ] ||
              { fail "$f: no expected verdict known for this JSON fixture"; continue; } ;;
    *) expected=$(sed -n '1s/^# expected: \([a-z]*\), reason \([A-Za-z]*\).*/\1 \2/p' "$f")
       [ -n "$expected" ] || { fail "$f: first line is not '# expected: DECISION, reason REASON'"; continue; } ;;
  esac
  # shellcheck disable=SC2086 # expected is "DECISION REASON"
  expect_verdict $expected "$f"
  checked=$((checked + 1))
done
[ "$checked" -ge 7 ] || fail "only $checked fixtures found in $fixtures"

# stdin, YAML and JSON.
expect_verdict admit EnforcementDisabled - <"$fixtures/none.yaml"
expect_verdict admit Compliant - <"$fixtures/manual-ocp-compliant.json"

# A kubectl get -o yaml List holding the object.
{
  printf 'apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: ""\nitems:\n'
  sed '1d; 2s/^/- /; 3,$s/^/  /' "$fixtures/automatic-out-of-skew.yaml"
} >"$tmp/list.yaml"
expect_verdict reject OutOfSkew "$tmp/list.yaml"
[ "$(field resourceVersion)" = 51240 ] || fail "List: resourceVersion $(field resourceVersion), want 51240"

# The limits are options: a newer OCP limit rejects 4.18.2; a RHEL 8.1 limit admits RHEL 8.4.
expect_verdict reject OutOfSkew --ocp-limit 4.19.0 "$fixtures/automatic-compliant.yaml"
grep -q '"ocpVersion": "4.19.0"' "$tmp/out" || fail "--ocp-limit 4.19.0 not shown in the verdict: $(cat "$tmp/out")"
expect_verdict admit Compliant --rhel-limit 8.1 "$fixtures/manual-rhcos-legacy-old.yaml"
expect_verdict reject StatusUnset --when-unknown reject "$fixtures/status-unset.yaml"
expect_verdict admit EnforcementDisabled --now 2026-11-01T12:00:00+02:00 "$fixtures/none.yaml"
[ "$(field since)" = 2026-11-01T10:00:00Z ] || fail "--now: since $(field since), want 2026-11-01T10:00:00Z"
# RFC 3339 lets the T be lower case.
expect_verdict admit EnforcementDisabled --now 2026-11-01t12:00:00+02:00 "$fixtures/none.yaml"
[ "$(field since)" = 2026-11-01T10:00:00Z ] || fail "--now with t: since $(field since), want 2026-11-01T10:00:00Z"

# --now and the annotation's until= are read by the same parser: the
# override holds up to the second before until, and not at until.
sed 's|^metadata:$|metadata:\n  annotations:\n    skewgate.openshift.io/override: reject;until=2026-11-01t12:00:00.9+02:00|' \
  "$fixtures/none.yaml" >"$tmp/override.yaml"
expect_verdict reject Override --now 2026-11-01T09:59:59.999Z "$tmp/override.yaml"
expect_verdict admit EnforcementDisabled --now 2026-11-01T10:00:00Z "$tmp/override.yaml"

# Bad input: exit 2, the problem on one line.
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster\n' >"$tmp/configmap.yaml"
expect_bad_input "^skewgate verdict: $tmp/configmap.yaml:2:7: ConfigMap: expected kind MachineConfiguration" \
  "$tmp/configmap.yaml"
printf 'apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nstatus: {mode: [None}\n' >"$tmp/broken.yaml"
expect_bad_input "^skewgate verdict: $tmp/broken.yaml:[0-9]+:[0-9]+: " "$tmp/broken.yaml"
printf '{"apiVersion": "operator.openshift.io/v1",\n "kind": "MachineConfiguration",}\n' >"$tmp/broken.json"
expect_bad_input "^skewgate verdict: $tmp/broken.json:2:33: " "$tmp/broken.json"
expect_bad_input "^skewgate verdict: <stdin>: empty input$" - </dev/null
expect_bad_input "^skewgate verdict: $tmp/missing.yaml: No such file" "$tmp/missing.yaml"
expect_bad_input "bad --ocp-limit 'x'" --ocp-limit x "$fixtures/none.yaml"
expect_bad_input "bad --rhel-limit '9'" --rhel-limit 9 "$fixtures/none.yaml"
expect_bad_input "bad --when-unknown 'maybe'" --when-unknown maybe "$fixtures/none.yaml"

# The limit options take exactly what enforcement.limits takes: a string
# skewgate check refuses in the configuration is refused here with exit 2,
# and one it takes is taken.
# check_limit KEY VALUE WANT_STATUS: skewgate check on a config setting it.
check_limit() {
  printf 'listeners:\n  - address: "127.0.0.1:0"\nenforcement:\n  limits:\n    %s: "%s"\n' "$1" "$2" >"$tmp/limits.yaml"
  "$SKEWGATE_BIN" check -c "$tmp/limits.yaml" >/dev/null 2>"$tmp/check.err"
  local status=$?
  [ "$status" -eq "$3" ] || fail "check with $1 \"$2\": exit $status, want $3: $(cat "$tmp/check.err")"
}
for v in 4.13.0000000 1234.567.89 +4.13.0 4.13; do
  check_limit ocp_version "$v" 2
  grep -q "enforcement.limits.ocp_version: invalid OCP version" "$tmp/check.err" ||
    fail "check with ocp_version \"$v\": $(cat "$tmp/check.err")"
  expect_bad_input "^skewgate verdict: bad --ocp-limit '" --ocp-limit "$v" "$fixtures/none.yaml"
done
for v in 4294967295.0 9.2.0; do
  check_limit rhel_version "$v" 2
  expect_bad_input "^skewgate verdict: bad --rhel-limit '" --rhel-limit "$v" "$fixtures/none.yaml"
done
check_limit ocp_version 04.13.0 0
expect_verdict admit EnforcementDisabled --ocp-limit 04.13.0 "$fixtures/none.yaml"
check_limit rhel_version 12345678.0 0
expect_verdict admit EnforcementDisabled --rhel-limit 12345678.0 "$fixtures/none.yaml"
expect_bad_input "bad --now" --now yesterday "$fixtures/none.yaml"
# Strings strptime took and RFC 3339 refuses: a day past the month's end
# (read as 2026-03-02), fields short of digits, a space before a number,
# second 61, an offset past 23:59.
for now in 2026-02-30T00:00:00Z 2026-1-1T1:2:3Z "2026-11-01T 10:00:00Z" \
           2026-11-01T23:59:61Z 2026-11-01T10:00:00+24:00; do
  expect_bad_input "^skewgate verdict: bad --now '${now//+/[+]}': expected an RFC 3339 time" \
    --now "$now" "$fixtures/none.yaml"
done
expect_bad_input "bad option '--bogus'" --bogus "$fixtures/none.yaml"
expect_bad_input "missing FILE" --ocp-limit 4.13.0

if run 0 --help; then
  grep -q '^usage: skewgate verdict' "$tmp/out" || fail "--help: no usage on stdout"
fi

echo "t_verdict_cli: $failures failure(s)"
[ "$failures" -eq 0 ]
