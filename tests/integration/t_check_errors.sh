#!/usr/bin/env bash
# skewgate check names every error of a file in one run, one
# FILE:LINE:COL: line each (at most 50, then how many more), and the rules
# across keys once the keys read without errors; run refuses with the first
# and how many more. YAML syntax errors say what is wrong in words, at the line.
. "$(dirname "$0")/lib.sh"

# three typos: an unknown key, a bad duration, a bad enum value
f=$TMP/three.yaml
printf '%s\n' 'listeners:' '  - address: "0.0.0.0:22623"' '    proxy_protocl: true' 'limits:' \
  '  header_timeout: 10x' '  idle_timeout: 5s' 'reject:' '  mode: hodl' >"$f"
rc=0; "$SKEWGATE_BIN" check -c "$f" >"$TMP/out" 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] || fail "three typos: exit $rc, expected 2: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "three typos: stdout: $(cat "$TMP/out")"
expected="$f:3:5: listeners[0].proxy_protocl: unknown key; did you mean \"proxy_protocol\"?
$f:5:19: limits.header_timeout: invalid duration \"10x\": $(grep -o 'expected a whole number.*' "$TMP/err" | head -1)
$f:8:9: reject.mode: invalid value \"hodl\": expected one of hold, deny, explain
note: $f: the checks across keys (addresses that overlap, keys that need or exclude others) run once these are fixed"
[ "$(cat "$TMP/err")" = "$expected" ] || fail "three typos: got:
$(cat "$TMP/err")
expected:
$expected"
[ "$(grep -cE "^$f:[0-9]+:[0-9]+: " "$TMP/err")" = 3 ] || fail "three typos: not three error lines"

# run (and so a reload, which loads the same way) refuses on the first, saying there are more
rc=0; "$SKEWGATE_BIN" run -c "$f" >/dev/null 2>"$TMP/run.err" || rc=$?
[ "$rc" = 2 ] || fail "run with three typos: exit $rc, expected 2"
[ "$(cat "$TMP/run.err")" = "skewgate run: $f:3:5: listeners[0].proxy_protocl: unknown key; did you mean \"proxy_protocol\"? (and 2 more: skewgate check -c $f)" ] ||
  fail "run: $(cat "$TMP/run.err")"

# errors in every listener, under nested mappings and in list items
f=$TMP/nested.yaml
printf '%s\n' 'listeners:' '  - address: "0.0.0.0:99999"' '  - address: "0.0.0.0:22624"' '    tls:' \
  '      certificate: /x.crt' '      key: /x.key' '      min_version: "1.1"' '  - adress: "0.0.0.0:22625"' \
  'gate:' '  prefixes: ["/config/", "config", "/a/../b"]' 'upstream:' '  tls: yes' >"$f"
rc=0; "$SKEWGATE_BIN" check -c "$f" 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] || fail "nested: exit $rc"
for at in "2:14: listeners\[0\].address: invalid address" "7:20: listeners\[1\].tls.min_version: invalid value" \
          "8:5: listeners\[2\].adress: unknown key" "10:26: gate.prefixes\[1\]: prefix \"config\"" \
          "10:36: gate.prefixes\[2\]: prefix \"/a/../b\"" "12:8: upstream.tls: expected true or false"; do
  grep -q "^$f:$at" "$TMP/err" || fail "nested: no $at in: $(cat "$TMP/err")"
done
[ "$(grep -cE "^$f:[0-9]+:[0-9]+: " "$TMP/err")" = 6 ] || fail "nested: not six errors: $(cat "$TMP/err")"

# the rules across keys run once the keys are right
f=$TMP/rules.yaml
printf '%s\n' 'listeners:' '  - address: "127.0.0.1:22623"' '  - address: "127.0.0.1:22623"' 'log:' '  levle: info' >"$f"
rc=0; "$SKEWGATE_BIN" check -c "$f" 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && [ "$(head -1 "$TMP/err")" = "$f:5:3: log.levle: unknown key; did you mean \"level\"?" ] &&
  [ "$(sed -n 2p "$TMP/err")" = "note: $f: the checks across keys (addresses that overlap, keys that need or exclude others) run once this error is fixed" ] &&
  [ "$(wc -l <"$TMP/err")" = 2 ] || fail "rules skipped: exit $rc: $(cat "$TMP/err")"
sed -i '/^log:/,$d' "$f"
rc=0; "$SKEWGATE_BIN" check -c "$f" 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q "^$f:3:14: listeners\[1\].address \"127.0.0.1:22623\" and listeners\[0\].address" "$TMP/err" &&
  ! grep -q '^note:' "$TMP/err" || fail "rules: exit $rc: $(cat "$TMP/err")"

# at most 50 lines, then how many more
f=$TMP/many.yaml
{ echo 'listeners:'; echo '  - address: "0.0.0.0:22623"'; echo 'limits:'
  for i in $(seq 1 60); do echo "  typo$i: 1"; done; } >"$f"
rc=0; "$SKEWGATE_BIN" check -c "$f" 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] || fail "many: exit $rc"
[ "$(grep -cE "^$f:[0-9]+:[0-9]+: limits.typo" "$TMP/err")" = 50 ] || fail "many: not 50 lines"
grep -qx "$f: and 10 more errors" "$TMP/err" || fail "many: no count of the rest: $(tail -2 "$TMP/err")"
grep -q "^$f:53:3: limits.typo50: " "$TMP/err" && ! grep -q "typo51:" "$TMP/err" || fail "many: the wrong 50"

# YAML syntax errors in words, at the line
syntax() {   # syntax NAME TEXT EXPECTED
  local f=$TMP/$1.yaml rc=0
  printf '%b' "$2" >"$f"
  "$SKEWGATE_BIN" check -c "$f" >/dev/null 2>"$TMP/err" || rc=$?
  [ "$rc" = 2 ] && [ "$(cat "$TMP/err")" = "$f:$3" ] || fail "$1: exit $rc: $(cat "$TMP/err"), expected $f:$3"
}
syntax tab 'listeners:\n\t- address: "0.0.0.0:22623"\n' "2:1: a tab character: YAML indents with spaces only"
syntax indent 'listeners:\n  - address: "0.0.0.0:22623"\nlimits:\n    header_timeout: 10s\n  idle_timeout: 5s\n' \
  "5:3: bad indentation: this line starts at column 3, and the lines above start at column 5 (line 4) or column 1 (line 3)"
syntax deeper 'listeners:\n  - address: "0.0.0.0:22623"\nlimits:\n  header_timeout: 10s\n   idle_timeout: 5s\n' \
  "5:4: bad indentation: this line is indented deeper than the line above (line 4), so it reads as the rest of that line's value; align its key with the keys above"
syntax quote 'listeners:\n  - address: "0.0.0.0:22623\nlimits:\n  header_timeout: 10s\n' \
  '2:14: unclosed quote: the string that starts here has no closing "'
syntax colon 'listeners:\n  - address: "0.0.0.0:22623"\nlimits\n' \
  "3:1: this line has no ':': a mapping's lines are KEY: VALUE (or indent the line deeper to continue the value above)"
echo PASS
