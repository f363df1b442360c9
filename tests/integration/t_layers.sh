#!/usr/bin/env bash
# tools/check-layers: the tree passes; a copy with an upward include, an
# unknown layer or a bare include of a header that is not beside the file
# fails, naming the file and line.
. "$(dirname "$0")/lib.sh"

"$ROOT/tools/check-layers" "$ROOT" || fail "the tree breaks its own layering"

mkdir -p "$TMP/tree"
cp -r "$ROOT/src" "$ROOT/include" "$TMP/tree/"
printf '#include "proxy/worker.h"\n' >>"$TMP/tree/src/http/path.c"
if "$ROOT/tools/check-layers" "$TMP/tree" 2>"$TMP/err"; then fail "http including proxy passed"; fi
grep -q 'src/http/path.c:[0-9]*: http includes "proxy/worker.h": proxy is not below http' "$TMP/err" ||
  fail "upward include: $(cat "$TMP/err")"

rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"; cp -r "$ROOT/src" "$ROOT/include" "$TMP/tree/"
printf '#include "config.h"\n' >>"$TMP/tree/include/core/log.h"
if "$ROOT/tools/check-layers" "$TMP/tree" 2>"$TMP/err"; then fail "a flat include passed"; fi
grep -q 'include/core/log.h:[0-9]*: "config.h" names no layer' "$TMP/err" || fail "flat include: $(cat "$TMP/err")"

rm -rf "$TMP/tree"; mkdir -p "$TMP/tree"; cp -r "$ROOT/src" "$ROOT/include" "$TMP/tree/"
printf 'int x;\n' >"$TMP/tree/src/stray.c"
if "$ROOT/tools/check-layers" "$TMP/tree" 2>"$TMP/err"; then fail "a file outside the layers passed"; fi
grep -q 'src/stray.c: not inside a layer folder' "$TMP/err" || fail "stray file: $(cat "$TMP/err")"
echo PASS
