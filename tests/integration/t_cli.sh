#!/usr/bin/env bash
# The command line as people meet it: --version (and -V) print the version
# and the commit the binary was built from; an unknown output format or
# override action says what it is and what to use before the usage (exit 2).
. "$(dirname "$0")/lib.sh"

note "--version and -V"
out=$("$SKEWGATE_BIN" --version) || fail "--version failed"
[ "$("$SKEWGATE_BIN" -V)" = "$out" ] || fail "-V differs from --version"
grep -qE '^skewgate [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]{7,}(-dirty)?\))?$' <<<"$out" || fail "--version: $out"
# A build from this checkout knows its commit; the binary names the HEAD it was built from.
if commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) && [ -z "${SKEWGATE_SAN:-}" ] &&
   [ "$(realpath "$SKEWGATE_BIN")" = "$ROOT/build/skewgate" ]; then
  grep -q "(commit $commit" <<<"$out" || fail "--version names no commit $commit: $out"
fi
"$SKEWGATE_BIN" --help | grep -q -- "--version" || fail "--help does not mention --version"

note "status -o yaml: the format named, exit 2"
set +e
"$SKEWGATE_BIN" status -o yaml --admin 127.0.0.1:1 >"$TMP/out" 2>"$TMP/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "status -o yaml exited $rc"
[ "$(head -1 "$TMP/err")" = "skewgate status: unknown output format 'yaml': use text or json" ] ||
  fail "status -o yaml: $(cat "$TMP/err")"
grep -q "^usage: skewgate status" "$TMP/err" || fail "no usage after the error"

note "override frob: the action named, exit 2"
set +e
"$SKEWGATE_BIN" override frob --admin 127.0.0.1:1 >"$TMP/out" 2>"$TMP/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "override frob exited $rc"
[ "$(head -1 "$TMP/err")" = "skewgate override: unknown override action 'frob': use admit, reject or clear" ] ||
  fail "override frob: $(cat "$TMP/err")"
grep -q "^usage: skewgate override" "$TMP/err" || fail "no usage after the error"
echo PASS
