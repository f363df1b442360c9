#!/usr/bin/env bash
# The reference documentation keeps up with the code:
# - every key of conf/skewgate.yaml (its full dotted path, lists as [],
#   e.g. listeners[].tls.certificate, redirect.ports[].from), commented-out
#   example keys included (upstream.ca_file, admin.socket,
#   admission.token.files, ...: keys of the schema left at their default),
#   has exactly one row in docs/configuration.md's reference table, and
#   every row is such a key;
# - a row says `restart` exactly when src/conf/reload.c refuses a reload
#   that changes the key (a row of config_restart_needed names it or a
#   mapping above it: admin, metrics, admission.machines);
# - every flag that `skewgate --help` and each subcommand's --help print
#   appears in docs/cli.md;
# - README.md stays a five-minute read (at most 220 lines), and the
#   relative links of README.md and docs/*.md point at files that exist,
#   as does every file README.md names in backquotes (`docs/x.md`,
#   `tools/image.sh`: a name with a '/' or a .md name), so that it sends
#   no reader to a file the repository does not have (DESIGN.md, issue 33).
# The checker is then run on a copy with one key's row removed, which must
# fail naming the key.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/check_docs.py" <<'PY'
import os, re, subprocess, sys
import yaml

root, binary = sys.argv[1], sys.argv[2]
problems = []

# --- The keys of the reference config.
lines = open(os.path.join(root, "conf/skewgate.yaml")).read().split("\n")
# A comment "#<spaces>key: value" is a commented-out key: uncommented at the
# '#' column plus the spaces after it, less one. Prose is told apart by an
# odd indentation or, for "key:" with no value, no deeper key after it.
KEY = re.compile(r"^(\s*)#( +)([a-z_]+):(\s.*)?$")
REAL = re.compile(r"^(\s*)(- )?[a-z_]+:")
def indent_of(i):
    m = KEY.match(lines[i])
    if m:
        return len(m.group(1)) + len(m.group(2)) - 1, m
    m = REAL.match(lines[i])
    return (len(m.group(1)), None) if m else (None, None)
text = list(lines)
for i in range(len(lines)):
    d, m = indent_of(i)
    if not m or d % 2:
        continue
    if not (m.group(4) or "").split(" #")[0].strip():
        deeper = next((indent_of(j)[0] for j in range(i + 1, len(lines)) if indent_of(j)[0] is not None), None)
        if deeper is None or deeper <= d:
            continue
    text[i] = " " * d + m.group(3) + ":" + (m.group(4) or "")
keys = set()
def walk(node, path):
    if isinstance(node, dict):
        for k, v in node.items():
            walk(v, path + [k])
    elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        for x in node:
            walk(x, path[:-1] + [path[-1] + "[]"])
    else:
        keys.add(".".join(path))
walk(yaml.safe_load("\n".join(text)), [])
if len(keys) < 70:
    problems.append("conf/skewgate.yaml: only %d keys found" % len(keys))

# --- The reference table.
conf_doc = open(os.path.join(root, "docs/configuration.md")).read()
m = re.search(r"<!-- keys\b.*?-->(.*?)<!-- /keys -->", conf_doc, re.S)
if not m:
    sys.exit("docs/configuration.md: no <!-- keys --> table")
rows = {}
for row in re.findall(r"^\| `([^`]+)` \|(.*)$", m.group(1), re.M):
    rows.setdefault(row[0], []).append([c.strip() for c in row[1].split("|")])
for k in sorted(keys - rows.keys()):
    problems.append("docs/configuration.md: %s is not in the reference table" % k)
for k in sorted(rows.keys() - keys):
    problems.append("docs/configuration.md: %s is in the reference table but not in conf/skewgate.yaml" % k)
for k, rs in sorted(rows.items()):
    if len(rs) > 1:
        problems.append("docs/configuration.md: %s has %d rows" % (k, len(rs)))

# --- live or restart, as reload.c says.
code = open(os.path.join(root, "src/conf/reload.c")).read()
body = code[code.index("int config_restart_needed("):]
body = body[body.index("rows[] = {"):body.index("};")]
refused = set(re.findall(r'^\s*\{"([a-z_.]+)",', body, re.M))
for k, rs in sorted(rows.items()):
    want = "restart" if any(k == r or k.startswith(r + ".") for r in refused) else "live"
    if rs[0][1] != want:
        problems.append("docs/configuration.md: %s says %r, src/conf/reload.c makes it %r" % (k, rs[0][1], want))
for r in sorted(refused):
    if not any(k == r or k.startswith(r + ".") for k in rows):
        problems.append("src/conf/reload.c refuses %s, which no row of the reference names" % r)

# --- Every flag of every --help in docs/cli.md.
def helptext(*args):
    return subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True).stdout
FLAG = re.compile(r"(?<![\w/-])(--[a-z][a-z-]*[a-z]|-[a-zA-Z])(?![\w-])")
top = helptext()
subs = re.findall(r"^  ([a-z]+) ", top.split("subcommands:", 1)[1], re.M)
if len(subs) < 6:
    problems.append("skewgate --help: only %s subcommands found" % subs)
cli_doc = open(os.path.join(root, "docs/cli.md")).read()
documented = set(FLAG.findall(cli_doc))
for name, out in [("skewgate --help", top)] + [("skewgate %s --help" % s, helptext(s)) for s in subs]:
    for flag in sorted(set(FLAG.findall(out)) - documented):
        problems.append("docs/cli.md: %s (from %s) is not documented" % (flag, name))
for s in subs:
    if "skewgate " + s not in cli_doc:
        problems.append("docs/cli.md: the subcommand %s is not documented" % s)

# --- The README's length; relative links.
readme = os.path.join(root, "README.md")
n = sum(1 for _ in open(readme))
if n > 220:
    problems.append("README.md: %d lines, more than 220" % n)
docs = [readme] + [os.path.join(root, "docs", f) for f in sorted(os.listdir(os.path.join(root, "docs"))) if f.endswith(".md")]
for path in docs:
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", open(path).read()):
        if "://" in target:
            continue
        if not os.path.exists(os.path.join(os.path.dirname(path), target)):
            problems.append("%s: the link %s points at nothing" % (os.path.relpath(path, root), target))

# Files the README names in backquotes: a path (with a '/'; not absolute,
# not under build/, which make writes) or a .md file, relative to the
# repository.
readme_text = open(readme).read()
for name in sorted(set(re.findall(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*)`", readme_text))):
    if not (name.endswith(".md") or "/" in name) or name.startswith(("/", "build/")) or "://" in name:
        continue
    if not os.path.exists(os.path.join(root, name)) and not os.path.exists(os.path.join(root, name.rstrip("/"))):
        problems.append("README.md: `%s` is not a file of the repository" % name)

for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

note "the real tree: keys, restart column, flags, README length, links"
python3 "$TMP/check_docs.py" "$ROOT" "$SKEWGATE_BIN" || fail "the docs disagree with the code (above)"

note "a copy without limits.max_buffered's row fails, naming the key"
mkdir -p "$TMP/tree/docs" "$TMP/tree/conf" "$TMP/tree/src/conf"
cp "$ROOT/README.md" "$TMP/tree/"
cp "$ROOT"/docs/*.md "$TMP/tree/docs/"
cp "$ROOT/conf/skewgate.yaml" "$TMP/tree/conf/"
cp "$ROOT/src/conf/reload.c" "$TMP/tree/src/conf/"
sed -i '/^| `limits.max_buffered` |/d' "$TMP/tree/docs/configuration.md"
if python3 "$TMP/check_docs.py" "$TMP/tree" "$SKEWGATE_BIN" 2>"$TMP/err"; then fail "a missing key passed"; fi
grep -qx 'docs/configuration.md: limits.max_buffered is not in the reference table' "$TMP/err" ||
  fail "missing key: $(cat "$TMP/err")"

note "a copy whose README names a file the repository lacks fails, naming it"
cp "$ROOT"/docs/* "$TMP/tree/docs/"
for d in bench tests tools deploy; do ln -sfn "$ROOT/$d" "$TMP/tree/$d"; done
python3 "$TMP/check_docs.py" "$TMP/tree" "$SKEWGATE_BIN" || fail "the unchanged copy fails"
printf 'The design is in `DESIGN.md`.\n' >>"$TMP/tree/README.md"
if python3 "$TMP/check_docs.py" "$TMP/tree" "$SKEWGATE_BIN" 2>"$TMP/err"; then fail "a README naming DESIGN.md passed"; fi
grep -qx 'README.md: `DESIGN.md` is not a file of the repository' "$TMP/err" || fail "DESIGN.md: $(cat "$TMP/err")"
echo PASS
