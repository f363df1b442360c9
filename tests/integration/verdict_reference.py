#!/usr/bin/env python3
"""Differential check of the verdict (issue 12, item 2).

Generates random MachineConfiguration objects (seeded, reproducible),
computes the verdict with an independent reference written from DESIGN
1.4-1.6 and the API's formats (not from src/verdict), and compares it with
skewgate's verdict_compute run through tests/integration/verdict_batch.c,
one process for all the cases.

usage: verdict_reference.py DRIVER [--cases N] [--seed S] [--keep FILE] [--self-test]
(--self-test spoils the reference on purpose, to show a mismatch is caught)
exit 0 when every case agrees, 1 on any mismatch (each one printed with
its case), 2 on a harness error.

Readings of the table that DESIGN leaves open are taken from the contract
in include/verdict/verdict.h (the comment above verdict_compute) and
include/core/version.h, include/core/time.h; each is marked READING below.
"""
import calendar
import json
import random
import re
import subprocess
import sys
import time

ANNOTATION = "skewgate.openshift.io/override"
NOW = "2026-12-01T10:00:00Z"

# ---------------------------------------------------------------- reference

OCP_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
RHCOS_RE = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]{8}|[0-9]{12})-[0-9]+")
RFC3339_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")
OVERRIDE_RE = re.compile(r"(admit|reject)(?:;until=(.*))?", re.DOTALL)


def parse_ocp(s):
    """DESIGN 1.4: ^[0-9]+\\.[0-9]+\\.[0-9]+$, 5 to 10 characters."""
    if not isinstance(s, str) or not 5 <= len(s) <= 10 or not OCP_RE.fullmatch(s):
        return None
    return tuple(int(x) for x in s.split("."))


def parse_rhcos(s):
    """DESIGN 1.4: the RHEL version an RHCOS build is based on. New scheme
    (8-digit date) major.minor; legacy (12-digit stamp) second field, first
    digit major, the rest minor."""
    if not isinstance(s, str) or not 14 <= len(s) <= 21:
        return None
    m = RHCOS_RE.fullmatch(s)
    if not m:
        return None
    first, second, stamp = m.group(1), m.group(2), m.group(3)
    if len(stamp) == 8:
        return (int(first), int(second))
    # READING: a legacy second field of one digit has no minor: unparseable.
    if len(second) < 2:
        return None
    return (int(second[0]), int(second[1:]))


def parse_rfc3339(s):
    """include/core/time.h's grammar; seconds since the epoch or None."""
    m = RFC3339_RE.fullmatch(s)
    if not m:
        return None
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    if not 1 <= mo <= 12 or h > 23 or mi > 59 or sec > 60:
        return None
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
    if not 1 <= d <= days:
        return None
    # days from the epoch, proleptic Gregorian (calendar.timegm cannot do year 0)
    yy = y - (mo <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    t = (era * 146097 + doe - 719468) * 86400 + h * 3600 + mi * 60
    t += sec
    off = m.group(8)
    if off not in ("Z", "z"):
        oh, om = int(off[1:3]), int(off[4:6])
        if oh > 23 or om > 59:
            return None
        delta = oh * 3600 + om * 60
        t = t - delta if off[0] == "+" else t + delta
    return t


def parse_override(v):
    """"admit|reject[;until=RFC3339]"; until must lie after the epoch.
    (decision, until or 0) or None."""
    if not isinstance(v, str):
        return None
    m = OVERRIDE_RE.fullmatch(v)
    if not m:
        return None
    until = 0
    if m.group(2) is not None:
        until = parse_rfc3339(m.group(2))
        if until is None or until <= 0:
            return None
    return (m.group(1), until)


def condition_status(status, ctype):
    conds = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conds, list):
        return None
    for c in conds:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c.get("status")
    return None


ABSENT = object()


def version_set(v):
    """READING: an empty version string counts as unset, and so does an
    absent key; anything else is set, JSON null included (a version that
    is not a string: the API server never sends null for these fields)."""
    return not (v is ABSENT or v == "")


def checked(v):
    """The version to compare, or None when it is not a string."""
    return v if isinstance(v, str) else None


def reference(case):
    """DESIGN 1.6, first match wins. Returns (decision, reason, settled)."""
    now = parse_rfc3339(case["now"])
    when_unknown = case.get("whenUnknown", "admit")
    when_unparseable = case.get("whenUnparseable", "admit")
    ocp_limit = parse_ocp(case.get("ocpLimit", "4.13.0"))
    rhel_limit = tuple(int(x) for x in case.get("rhelLimit", "9.2").split("."))
    obj = case.get("object")

    # 2: object absent
    if obj is None:
        return (when_unknown, "NotFound", False)
    # 1: override annotation, active and not expired.
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    ov = parse_override(ann.get(ANNOTATION)) if ANNOTATION in ann else None
    # READING: expired once now has reached until.
    if ov is not None and (ov[1] == 0 or now < ov[1]):
        return (ov[0], "Override", False)
    status = obj.get("status")
    bises = status.get("bootImageSkewEnforcementStatus") if isinstance(status, dict) else None
    # 3: unset; READING: a mode missing or "" counts as unset.
    if not isinstance(bises, dict) or bises.get("mode") in (None, ""):
        return (when_unknown, "StatusUnset", False)
    mode = bises["mode"]
    unparseable = (when_unparseable, "VersionUnparseable", True)
    # 4
    if mode == "None":
        return ("admit", "EnforcementDisabled", True)
    if mode == "Automatic":
        # 5
        if condition_status(status, "BootImageUpdateDegraded") == "True":
            return ("reject", "BootImageControllerDegraded", True)
        # 6: READING: only "False" counts as settled.
        if condition_status(status, "BootImageUpdateProgressing") != "False":
            return (case.get("previous") or "admit", "BootImageControllerProgressing", False)
        auto = bises.get("automatic")
        if not isinstance(auto, dict):
            return unparseable
        ocp, rh = auto.get("ocpVersion", ABSENT), auto.get("rhcosVersion", ABSENT)
        # READING: only the checked version is looked at: ocpVersion when
        # set, whatever rhcosVersion holds (not a string included).
        if version_set(ocp):
            check = ("ocp", ocp)
        elif version_set(rh):
            check = ("rhcos", rh)
        else:
            return unparseable
    elif mode == "Manual":
        man = bises.get("manual")
        if not isinstance(man, dict):
            return unparseable
        ocp, rh = man.get("ocpVersion", ABSENT), man.get("rhcosVersion", ABSENT)
        mm = man.get("mode")
        if mm == "OCPVersion" and version_set(ocp) and not version_set(rh):
            check = ("ocp", ocp)
        elif mm == "RHCOSVersion" and version_set(rh) and not version_set(ocp):
            check = ("rhcos", rh)
        else:
            return unparseable
    else:
        return unparseable
    # 7, 8, 9
    if check[0] == "ocp":
        v = parse_ocp(checked(check[1]))
        if v is None:
            return unparseable
        return ("reject", "OutOfSkew", True) if v < ocp_limit else ("admit", "Compliant", True)
    v = parse_rhcos(checked(check[1]))
    if v is None:
        return unparseable
    return ("reject", "OutOfSkew", True) if v < rhel_limit else ("admit", "Compliant", True)


# ---------------------------------------------------------------- generator

def gen_ocp(r):
    k = r.random()
    if k < 0.15:   # at and around the default limit
        return r.choice(["4.13.0", "4.12.99", "4.13.1", "4.12.0", "4.14.0", "4.16.0", "4.0.0", "3.99.99",
                         "5.0.0", "4.13.00", "04.13.0", "4.013.0", "0.0.0"])
    if k < 0.75:
        return "%d.%d.%d" % (r.choice([3, 4, 4, 4, 5]), r.randint(10, 17), r.randint(0, 12))
    if k < 0.80:   # long numbers up to and past 10 characters
        return "%d.%d.%s" % (4, 13, "0" * r.randint(1, 8))
    return r.choice(["", "4.13", "4.13.0.1", "v4.13.0", "4.13.x", " 4.13.0", "4.13.0 ", "4..0", ".4.13",
                     "4.13.", "4.13.0-rc.1", "4.13.0\n", "4,13,0", "١.١٣.٠", "4.13.0000000", "12345.6.7",
                     "4.1.1", "1.1.1", "1.1.", "4.-1.0", "+4.13.0", "4.13.0x"])


def gen_rhcos(r):
    k = r.random()
    date8 = "%04d%02d%02d" % (r.randint(2019, 2026), r.randint(1, 12), r.randint(1, 28))
    stamp12 = date8 + "%02d%02d" % (r.randint(0, 23), r.randint(0, 59))
    if k < 0.35:   # new scheme: RHEL major.minor around 9.2
        return "%d.%d.%s-%d" % (r.choice([8, 9, 9, 9, 10]), r.randint(0, 10), date8, r.randint(0, 12))
    if k < 0.70:   # legacy: OCP digits, then RHEL as one field
        rhel = r.choice(["92", "91", "90", "94", "96", "86", "88", "810", "100", "9", "8", "99", "912", "02"])
        return "%d.%s.%s-%d" % (r.choice([410, 412, 413, 414, 416, 418, 49]), rhel, stamp12, r.randint(0, 9))
    if k < 0.80:
        return r.choice(["9.2.20230101-0", "9.1.20230101-0", "413.92.202301010000-0", "412.91.202301010000-0",
                         "9.6.20250523-1", "418.94.202410090804-0", "418.810.202410090804-0",
                         "9.02.20250523-1", "09.2.20250523-1"])
    return r.choice(["", "9.6", "9.6.2025052-1", "9.6.202505231-1", "9.6.20250523", "9.6.20250523-",
                     "9.6.20250523-1-1", "9.6.2025052312345-1", "9.6.20250523-12345678", "9.6.20250523_1",
                     "a.6.20250523-1", "9.6.20250523-1 ", " 9.6.20250523-1", "418.94.20241009080-0",
                     "9.6.20250523-1\n", "9.6.2025O523-1", "418.94.2024100908040-0", "1.2.12345678-1",
                     "123456.1234.20250523-1", "9..20250523-1", "9.6.20250523-x"])


def gen_version(r, kind):
    k = r.random()
    if k < 0.02:
        return r.choice([4.13, 413, True, None, ["4.13.0"], {"v": 1}])
    return gen_ocp(r) if kind == "ocp" else gen_rhcos(r)


COND_STATES = [None, "True", "False", "Unknown", "", "true"]


def gen_conditions(r):
    conds = []
    for ctype, weights in (("BootImageUpdateDegraded", [4, 2, 6, 2, 0.3, 0.3]),
                           ("BootImageUpdateProgressing", [3, 3, 8, 2, 0.3, 0.3])):
        st = r.choices(COND_STATES, weights)[0]
        if st is not None:
            conds.append({"type": ctype, "status": st, "reason": "R", "message": "m",
                          "lastTransitionTime": "2026-11-30T10:00:00Z"})
    if r.random() < 0.2:
        conds.append({"type": "Other", "status": r.choice(["True", "False"])})
    r.shuffle(conds)
    return conds


def gen_versions(r, d, kind_weights):
    """Puts ocpVersion and/or rhcosVersion into d."""
    k = r.choices(["ocp", "rhcos", "both", "none", "emptyboth"], kind_weights)[0]
    if k in ("ocp", "both"):
        d["ocpVersion"] = gen_version(r, "ocp")
    if k in ("rhcos", "both"):
        d["rhcosVersion"] = gen_version(r, "rhcos")
    if k == "emptyboth":
        d["ocpVersion"] = ""
        d["rhcosVersion"] = ""
    if k == "ocp" and r.random() < 0.1:
        d["rhcosVersion"] = ""
    if k == "rhcos" and r.random() < 0.1:
        d["ocpVersion"] = ""


def gen_bises(r):
    mode = r.choices(["Automatic", "Manual", "None", "", None, "automatic", "Disabled", "MANUAL", 3],
                     [40, 35, 8, 2, 2, 1, 1, 1, 0.3])[0]
    b = {}
    if mode is not None:
        b["mode"] = mode
    want_auto = mode == "Automatic" or r.random() < 0.1
    want_man = mode == "Manual" or r.random() < 0.1
    if want_auto and r.random() < 0.95:
        a = {}
        gen_versions(r, a, [35, 25, 30, 5, 2])
        b["automatic"] = a
    if want_man and r.random() < 0.95:
        m = {}
        mm = r.choices(["OCPVersion", "RHCOSVersion", None, "", "OCP", "ocpversion"], [45, 45, 3, 2, 2, 2])[0]
        if mm is not None:
            m["mode"] = mm
        if r.random() < 0.85:   # the version the mode names, as the API requires
            if mm == "RHCOSVersion":
                m["rhcosVersion"] = gen_version(r, "rhcos")
            else:
                m["ocpVersion"] = gen_version(r, "ocp")
        if r.random() < 0.1:    # and sometimes the other one too, or empty
            other = "ocpVersion" if mm == "RHCOSVersion" else "rhcosVersion"
            m[other] = r.choice(["", gen_version(r, "ocp" if other == "ocpVersion" else "rhcos")])
        b["manual"] = m
    return b


def gen_until(r, now):
    k = r.random()
    fmt = lambda t, z="Z": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + z
    if k < 0.25:
        return fmt(now + r.randint(1, 86400))
    if k < 0.5:
        return fmt(now - r.randint(1, 86400))
    if k < 0.6:
        return fmt(now + r.choice([-1, 0, 1]))
    if k < 0.7:   # offsets and fractions
        delta = r.choice([-7200, 0, 3600])
        sign = "+" if delta >= 0 else "-"
        off = "%s%02d:%02d" % (sign, abs(delta) // 3600, 0)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now + delta + r.choice([-5, 0, 5]))) \
            + r.choice(["", ".250", ".9"]) + off
    if k < 0.75:
        return fmt(now + 60).replace("T", "t").replace("Z", "z")
    return r.choice(["", "garbage", "2026-12-01 10:00:00Z", "2026-12-01T10:00:00", "2027-02-29T00:00:00Z",
                     "2028-02-29T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T10:00:60Z",
                     "2026-12-01T10:00:00+24:00", "1970-01-01T00:00:00Z", "1970-01-01T00:00:01Z",
                     "1969-12-31T23:59:59Z", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z",
                     "2026-12-01T10:00:00.Z", "-00:00", "2026-12-01T09:59:59-00:00"])


def gen_override(r, now):
    k = r.random()
    if k < 0.4:
        return r.choice(["admit", "reject"])
    if k < 0.85:
        return r.choice(["admit", "reject"]) + ";until=" + gen_until(r, now)
    return r.choice(["Admit", "REJECT", "admit ", " reject", "admit;", "admit;until=", "reject;until",
                     "deny", "", "admit;reject", "admit; until=2030-01-01T00:00:00Z",
                     "reject;until=2030-01-01T00:00:00Z;x", "reject;Until=2030-01-01T00:00:00Z"])


def gen_case(r):
    now = parse_rfc3339(NOW) + r.randint(-3 * 86400, 3 * 86400)
    case = {"now": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
    if r.random() < 0.7:
        case["previous"] = r.choice(["admit", "reject"])
    if r.random() < 0.3:
        case["ocpLimit"] = r.choice(["4.13.0", "4.14.0", "4.16.3", "4.12.0", "0.0.0", "5.0.0"])
    if r.random() < 0.3:
        case["rhelLimit"] = r.choice(["9.2", "9.4", "9.0", "8.10", "10.0", "0.0", "9.10"])
    if r.random() < 0.3:
        case["whenUnknown"] = r.choice(["admit", "reject"])
    if r.random() < 0.4:
        case["whenUnparseable"] = r.choice(["admit", "reject"])
    if r.random() < 0.01:
        case["object"] = None
        return case
    obj = {"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
           "metadata": {"name": "cluster", "resourceVersion": str(r.randint(1, 10 ** 6))},
           "spec": {"managementState": "Managed"}}
    if r.random() < 0.15:
        obj["metadata"]["annotations"] = {ANNOTATION: gen_override(r, now)}
        if r.random() < 0.2:
            obj["metadata"]["annotations"]["other"] = "x"
    k = r.random()
    if k < 0.04:
        pass                               # status absent
    elif k < 0.08:
        obj["status"] = {"conditions": gen_conditions(r)} if r.random() < 0.5 else {}
    else:
        obj["status"] = {"bootImageSkewEnforcementStatus": gen_bises(r), "conditions": gen_conditions(r)}
        if r.random() < 0.03:
            del obj["status"]["conditions"]
    case["object"] = obj
    return case


# ---------------------------------------------------------------- compare

def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    driver = args[0]
    n, seed, keep, self_test = 100000, 12, None, False
    i = 1
    while i < len(args):
        if args[i] == "--self-test":   # a wrong reference on purpose: must mismatch
            self_test = True
            i += 1
            continue
        if args[i] == "--cases":
            n = int(args[i + 1])
        elif args[i] == "--seed":
            seed = int(args[i + 1])
        elif args[i] == "--keep":
            keep = args[i + 1]
        else:
            print("bad argument %r" % args[i], file=sys.stderr)
            return 2
        i += 2
    r = random.Random(seed)
    t0 = time.monotonic()
    cases = [gen_case(r) for _ in range(n)]
    lines = "".join(json.dumps(c, separators=(",", ":")) + "\n" for c in cases)
    if keep:
        with open(keep, "w") as f:
            f.write(lines)
    t1 = time.monotonic()
    p = subprocess.run([driver], input=lines.encode(), stdout=subprocess.PIPE)
    t2 = time.monotonic()
    if p.returncode != 0:
        print("driver exited %d" % p.returncode, file=sys.stderr)
        return 2
    got = p.stdout.decode().splitlines()
    if len(got) != n:
        print("driver gave %d verdicts for %d cases" % (len(got), n), file=sys.stderr)
        return 2
    mismatches = 0
    by_reason = {}
    for idx, (case, line) in enumerate(zip(cases, got)):
        want = reference(case)
        if self_test and want[1] == "Compliant":
            want = (want[0], "Compliant?", want[2])
        by_reason[want[1]] = by_reason.get(want[1], 0) + 1
        v = json.loads(line)
        have = (v.get("decision"), v.get("reason"), v.get("settled")) if "error" not in v else ("error", v["error"], None)
        if have != want:
            mismatches += 1
            if mismatches <= 40:
                print("MISMATCH case %d (seed %d): skewgate %s, reference %s\n  case: %s"
                      % (idx, seed, have, want, json.dumps(case, sort_keys=True)))
    t3 = time.monotonic()
    print("verdict differential: %d cases, seed %d, %d mismatches; generate %.1fs, skewgate %.1fs, reference %.1fs"
          % (n, seed, mismatches, t1 - t0, t2 - t1, t3 - t2))
    print("reference reasons: " + ", ".join("%s=%d" % kv for kv in sorted(by_reason.items())))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
