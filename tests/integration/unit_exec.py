"""unit_exec.py UNIT [FROM=TO ...] -- WRAPPER...: runs the ExecStart= lines
of the systemd service UNIT as systemd runs a Type=oneshot service's: one
after another, each split into words as systemd splits it, each behind
WRAPPER (e.g. `ip netns exec NS`), a "-" prefix ignoring that command's
failure, the first other failure ending the run. Each FROM=TO replaces
FROM in every word (a path the unit names, moved into the test's
directory). Exit 0 when the service would end active, 1 when it would
fail; each command's output passes through. Prints each command, and its
status when not 0, on stderr.

It splits as systemd does only for what it accepts: quotes around whole
words and no "$", "%" or backslash (systemd's variables, specifiers and
escapes), nor prefixes other than "-", and of the conditions only
ConditionPathExists= (a false one skips the unit: exit 0, nothing run); it
refuses any other unit rather than run something systemd would not."""
import os, shlex, subprocess, sys

args = sys.argv[1:]
if "--" not in args:
    sys.exit("unit_exec: UNIT [FROM=TO ...] -- WRAPPER...")
sep = args.index("--")
unit, subst, wrapper = args[0], [a.split("=", 1) for a in args[1:sep]], args[sep + 1:]

section, lines, conditions = None, [], []
for raw in open(unit):
    line = raw.strip()
    if not line or line[0] in "#;":
        continue
    if line.startswith("["):
        section = line
    elif section == "[Unit]" and line.startswith("ConditionPathExists="):
        conditions.append(line.split("=", 1)[1])
    elif section == "[Unit]" and line.startswith(("Condition", "Assert")):
        sys.exit("unit_exec: %s: %s, which this runner cannot evaluate" % (unit, line))
    elif section == "[Service]" and line.startswith("ExecStart="):
        lines.append(line[len("ExecStart="):])
    elif section == "[Service]" and line.split("=", 1)[0] == "Type" and line != "Type=oneshot":
        sys.exit("unit_exec: %s: %s, not Type=oneshot" % (unit, line))
if not lines:
    sys.exit("unit_exec: %s has no ExecStart=" % unit)

# ConditionPathExists=[!]PATH, on the moved paths: false skips the unit
# (systemd starts nothing and nothing fails).
for cond in conditions:
    neg, path = cond.startswith("!"), cond.lstrip("!")
    for frm, to in subst:
        path = path.replace(frm, to)
    if os.path.exists(path) == neg:
        print("unit_exec: ConditionPathExists=%s was not met: skipped, nothing run" % cond, file=sys.stderr)
        sys.exit(0)

rc = 0
for i, cmd in enumerate(lines, 1):
    bad = set("$%\\") & set(cmd)
    if bad:
        sys.exit("unit_exec: ExecStart %d holds %s, which systemd would rewrite: %s" % (i, "".join(sorted(bad)), cmd))
    ignore = cmd.startswith("-")
    body = cmd[1:] if ignore else cmd
    if body[:1] in "@:+!":
        sys.exit("unit_exec: ExecStart %d: prefix %r is not supported here" % (i, body[0]))
    words = shlex.split(body)
    # Quotes only around whole words, as systemd takes them.
    for w in shlex.split(body, posix=False):
        if ('"' in w or "'" in w) and not (w[0] in "\"'" and w[-1] == w[0]):
            sys.exit("unit_exec: ExecStart %d: a quote inside a word: %s" % (i, w))
    if not words[0].startswith("/"):
        sys.exit("unit_exec: ExecStart %d: %s is not an absolute path" % (i, words[0]))
    for frm, to in subst:
        words = [w.replace(frm, to) for w in words]
    print("unit_exec: ExecStart %d%s: %s" % (i, " (-)" if ignore else "", shlex.join(words)), file=sys.stderr)
    status = subprocess.run(wrapper + words).returncode
    if status != 0:
        print("unit_exec: ExecStart %d exited %d%s" % (i, status, ", ignored (-)" if ignore else ""), file=sys.stderr)
        if not ignore:
            rc = 1
            break
sys.exit(rc)
