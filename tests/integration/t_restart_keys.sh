#!/usr/bin/env bash
# docs/configuration.md's "Needs a restart" list is exactly the set of keys a SIGHUP
# refuses to change (the rows of config_restart_needed in
# src/conf/reload.c): each key the code refuses is listed, and each key
# listed is refused. (tests/unit/test_reload.c refuses each of them for
# real.)
. "$(dirname "$0")/lib.sh"

python3 - "$ROOT/src/conf/reload.c" "$ROOT/docs/configuration.md" <<'PY' || fail "docs/configuration.md and reload.c disagree"
import re, sys
code = open(sys.argv[1]).read()
body = code[code.index("int config_restart_needed("):]
body = body[:body.index("\n}\n")]
rows = body[body.index("rows[] = {"):body.index("};")]
refused = set(re.findall(r'^\s*\{"([a-z_.]+)",', rows, re.M))
assert len(refused) >= 11, refused
doc = open(sys.argv[2]).read()
m = re.search(r"^- \*\*Needs a restart\*\*(.*?)^- \*\*", doc, re.S | re.M)
assert m, "no Needs a restart bullet in docs/configuration.md"
# Every backticked key of the bullet; the quoted message has spaces, a path has a slash.
listed = {k for k in re.findall(r"`([^`]+)`", m.group(1)) if " " not in k and "/" not in k}
assert listed == refused, ("docs/configuration.md only: %s; reload.c only: %s" % (sorted(listed - refused), sorted(refused - listed)))
PY

echo PASS
