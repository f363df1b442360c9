#!/usr/bin/env python3
"""The differential against the real Machine Config Server: every generated
request goes to the MCS directly and through the gate (admitting), with
--inflight requests open at once so that the gate's shared fetches happen,
and the two answers are compared: status, the MCS's end-to-end header
fields (all but Date, which is the clock) and the body, byte for byte. With
--explain PORT each Accept also goes to a gate in reject.mode explain, whose
answer must carry the spec the MCS chose for that Accept (its
ignition.version), or be the 400 the MCS gives.

A difference is either none or one that docs/mcs-fidelity.md lists under
"Deliberate differences", with its reason: this reads that section's two
tables (read_doc), so the doc and the test cannot drift. A rule of the
first table is applied only while the doc lists it; each path of the second
is sent to the MCS and to both gates, and must get exactly the statuses the
doc gives. Anything else fails the run.

    differential.py --direct PORT --gate PORT [--explain PORT] [--cases N]
                    [--inflight N] [--seed S] [--report FILE] [--doc FILE]
                    [--release 4.22]
"""
import argparse
import asyncio
import collections
import json
import os
import random
import sys

IGN = "application/vnd.coreos.ignition+json"
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "mcs-fidelity.md")

# The rules this program checks by code of its own; the doc's path table
# checks the others.
CODED_RULES = {"explain-clean-path", "token-stripped"}


def read_doc(path, release):
    """The deliberate differences of docs/mcs-fidelity.md: {rule: what
    differs} from its first table, {path: (mcs status, gate status, rule)}
    from its second, whose MCS column is the one of this release ("MCS
    4.22"). Raises ValueError on a table this cannot read, a release it has
    no column for, a path row naming a rule the first table lacks, or a
    rule nothing checks."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "\n## Deliberate differences\n" not in text:
        raise ValueError("%s: no \"## Deliberate differences\" section" % path)
    section = text.split("\n## Deliberate differences\n", 1)[1].split("\n## ", 1)[0]
    rules, paths, table, column = {}, {}, None, None
    for line in section.splitlines():
        if not line.startswith("|"):
            table = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if table is None:
            if tuple(cells) == ("rule", "what differs", "why"):
                table = "rules"
            elif (len(cells) >= 4 and cells[0] == "path as sent" and cells[-2:] == ["gate", "rule"]
                  and all(c.startswith("MCS ") for c in cells[1:-2])):
                table = "paths"
                if "MCS " + release not in cells:
                    raise ValueError("%s: the path table has no column for MCS %s" % (path, release))
                column = cells.index("MCS " + release)
            else:
                raise ValueError("%s: a table this does not know: %s" % (path, line))
            continue
        if set(line) <= set("|-: "):
            continue
        tick = [c.strip("`") for c in cells]
        if table == "rules":
            rules[tick[0]] = cells[1]
        else:
            if tick[0] in paths:
                raise ValueError("%s: path %s listed twice" % (path, tick[0]))
            paths[tick[0]] = (int(tick[column]), int(tick[-2]), tick[-1])
    for p, (_, _, rule) in paths.items():
        if rule not in rules:
            raise ValueError("%s: path %s names rule %s, which the rules table lacks" % (path, p, rule))
    used = CODED_RULES | {rule for _, _, rule in paths.values()}
    for rule in rules:
        if rule not in used:
            raise ValueError("%s: rule %s is neither checked by the differential nor used by a path row"
                             % (path, rule))
    return rules, paths


VERSIONS = ["2.0.0", "2.1.0", "2.2.0", "2.2.0-rc", "2.2.1", "2.3.0", "2.99.99", "3.0.0", "3.0.0-x", "3.0.1",
            "3.1.0", "3.1.0-rc.1", "3.1.1", "3.2.0", "3.2.0+build.5", "3.2.0-rc+b", "3.3.0", "3.3.0-experimental",
            "3.4.0", "3.4.0-experimental", "3.4.0+meta", "3.4.0-", "3.4.0+", "3.4.0-a..b", "3.4.0-a_b",
            "3.4.0--1", "3.5.0", "3.5.0-experimental", "3.6.0", "3.99.0", "4.0.0", "4.0.0-rc", "1.0.0", "1",
            "3.4", "3.4.0.0", '"3.4.0"', "03.04.00", "-3.4.0", "+3.4.0", "3.4.x", "", "3.4.0 ", " 3.4.0",
            "9223372036854775807.0.0", "9223372036854775808.0.0", "3.9223372036854775807.0", "3.1.0-0.3.7",
            "3.4.0-x.7.z.92", "3.4.0+001", "2.2.0+x", "3.0.0+x", "3.1.0-"]
QS = ["1", "0", "0.1", "0.5", "0.9", "1.0", "0.001", "0.0001", "1.5", "2", "-1", "1e0", "1e-1", ".5", "5.",
      "inf", "+Inf", "-inf", "Infinity", "infinit", "nan", "NaN", "+nan", "0x1p-1", "0x_1p-1", "0x1", "1_0",
      "0.1_0", "1e40", "1e-50", "3.4028235e38", "3.4028236e38", "", "abc", "0.123456789", "0.3333333",
      "0.33333334", "0.5 ", "=0.5", "0.50", "0X1P-2", "1e", "1e+0", "1.e1", "."]
TYPES = [IGN, IGN, IGN, IGN, "Application/vnd.coreos.ignition+json", "application/VND.coreos.ignition+json",
         "application/vnd.coreos.ignition+JSON", "x/vnd.coreos.ignition+json", "/vnd.coreos.ignition+json",
         "application/vnd.coreos.ignition+json/x", "application/vnd.coreos.ignition", "vnd.coreos.ignition+json",
         "application/json", "*/*", "text/html", "", "application/vnd.coreos.ignition+json "]
VKEYS = ["version"] * 8 + ["Version", "VERSION", "version ", " version", "versions", "v"]
QKEYS = ["q"] * 6 + ["Q", "q ", "qs"]
SEPS = [";", ";", ";", "; ", " ;", " ; ", "\t;\t", ";;"]
COMMAS = [",", ", ", ", ", " ,\t", ",,", " , "]
PATHS = ["/config/master", "//config/master", "/config//master", "/config/./master", "/config/../config/master",
         "/%63onfig/master", "/config/%6Daster", "/config/ma%73ter", "/config/master?x=1",
         "/config/master?token=abc", "/config/master?token=abc&x=1", "/config/master/", "/config/master/.",
         "/config/./master?token=", "/config/x/../master", "/config/master%2f", "/config/master%2F",
         "/config/master/%2f"]
EXTRA = ["", "", "", "", ";charset=utf-8", ";level=1", ";foo", ";version", ";=", ";q"]


def ignition_accept(version):
    return "%s;version=%s, */*;q=0.1" % (IGN, version)


def element(rng):
    t = rng.choice(TYPES)
    params = []
    for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3])):
        r = rng.random()
        if r < 0.55:
            params.append("%s=%s" % (rng.choice(VKEYS), rng.choice(VERSIONS)))
        elif r < 0.9:
            params.append("%s=%s" % (rng.choice(QKEYS), rng.choice(QS)))
        else:
            params.append(rng.choice(EXTRA).lstrip(";"))
    e = t + "".join(rng.choice(SEPS) + p for p in params)
    if rng.random() < 0.05:
        e = rng.choice([" ", "\t", "\xa0", "\u2003"]) + e + rng.choice(["", " ", "\xa0"])
    return e


def accept_value(rng):
    r = rng.random()
    if r < 0.12:
        return ignition_accept(rng.choice(VERSIONS[:34]))
    n = rng.choice([1, 1, 2, 2, 2, 3, 3, 4, 6])
    if r < 0.14:
        n = rng.randint(19, 45)  # past Go's stable sort block of 20
    return "".join((rng.choice(COMMAS) if i else "") + element(rng) for i in range(n))


def cases(n, seed, doc_paths=()):
    rng = random.Random(seed)
    out = []
    for p in doc_paths:  # the doc's deliberate differences, with Ignition's Accept and none
        out.append(([ignition_accept("3.4.0")], p, "GET"))
        out.append(([], p, "GET"))
    for v in VERSIONS:  # every version alone and in Ignition's form
        out.append((["%s;version=%s" % (IGN, v)], "/config/master", "GET"))
        out.append(([ignition_accept(v)], "/config/master", "GET"))
    for q in QS:  # every q: an unsupported element at q, a supported one at 0.5
        out.append((["%s;version=3.0.0;q=%s, %s;version=3.3.0;q=0.5" % (IGN, q, IGN)], "/config/master", "GET"))
        out.append((["%s;version=3.1.0;q=%s, %s;version=3.3.0;q=0.5" % (IGN, q, IGN)], "/config/master", "GET"))
    out.append(([], "/config/master", "GET"))
    out.append(([""], "/config/master", "GET"))
    for p in PATHS:
        for v in ["3.4.0", "3.2.0", "1.0.0"]:
            out.append(([ignition_accept(v)], p, "GET"))
        out.append(([], p, "GET"))
    while len(out) < n:
        r = rng.random()
        if r < 0.08:
            fields = [accept_value(rng), accept_value(rng)]  # several Accept fields: the MCS reads the first
        else:
            fields = [accept_value(rng)]
        method = "HEAD" if rng.random() < 0.03 else "GET"
        path = rng.choice(PATHS) if rng.random() < 0.05 else "/config/master"
        out.append((fields, path, method))
        if rng.random() < 0.1:  # identical requests close together: the gate shares them
            for _ in range(rng.randint(2, 8)):
                out.append((fields, path, method))
    return out[:max(n, len(out))]


def request_bytes(fields, path, method, name="Accept"):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: skewgate-e2e-differential\r\n" % (method, path)
    for f in fields:
        head += "%s: %s\r\n" % (name, f)
    head += "Connection: close\r\n\r\n"
    return head.encode("utf-8")


async def fetch(port, data, method):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return {"status": 0, "headers": [], "body": raw}
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = []
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers.append((k.decode("latin-1"), v.strip().decode("latin-1")))
    return {"status": status, "headers": headers, "body": body}


# Not compared: the clock, and the connection's own framing (both sides
# were asked to close).
NOT_COMPARED = {"date", "connection", "keep-alive"}


def end_to_end(headers):
    return [(k.lower(), v) for k, v in headers if k.lower() not in NOT_COMPARED]


def spec_of(body):
    try:
        return json.loads(body)["ignition"]["version"]
    except (ValueError, KeyError, TypeError):
        return None


def without_token(path):
    """The target as the gate forwards it: every token parameter dropped."""
    target, sep, query = path.partition("?")
    if not sep:
        return path
    kept = [p for p in query.split("&") if p.partition("=")[0] != "token"]
    return target + ("?" + "&".join(kept) if kept else "")


def location(response):
    for k, v in response["headers"]:
        if k.lower() == "location":
            return v
    return None


def differ(direct, gate):
    what = []
    if direct["status"] != gate["status"]:
        what.append("status %d vs %d" % (direct["status"], gate["status"]))
    if end_to_end(direct["headers"]) != end_to_end(gate["headers"]):
        what.append("headers %s vs %s" % (end_to_end(direct["headers"]), end_to_end(gate["headers"])))
    if direct["body"] != gate["body"]:
        what.append("body %d bytes vs %d bytes" % (len(direct["body"]), len(gate["body"])))
    return what


async def run(args):
    try:
        rules, doc_paths = read_doc(args.doc, args.release)
    except (OSError, ValueError) as e:
        print("differential: %s" % e, file=sys.stderr)
        return 1
    todo = cases(args.cases, args.seed, doc_paths)
    sem = asyncio.Semaphore(args.inflight)
    peak = {"now": 0, "max": 0}
    results = []

    async def one(i, fields, path, method):
        async with sem:
            peak["now"] += 1
            peak["max"] = max(peak["max"], peak["now"])
            data = request_bytes(fields, path, method)
            jobs = [fetch(args.direct, data, method), fetch(args.gate, data, method)]
            if args.explain:
                jobs.append(fetch(args.explain, data, method))
            got = await asyncio.gather(*jobs)
            peak["now"] -= 1
            results.append((i, fields, path, method, got))

    await asyncio.gather(*(one(i, *c) for i, c in enumerate(todo)))
    diffs = collections.Counter()
    unexplained = []
    statuses = collections.Counter()
    explained = collections.Counter()   # the gate's reading of Accept (explain) against the MCS's
    specs = collections.Counter()
    for i, fields, path, method, got in sorted(results, key=lambda r: r[0]):
        direct, gate = got[0], got[1]
        statuses[direct["status"]] += 1
        if direct["status"] == 200:
            specs[spec_of(direct["body"]) if method == "GET" else "HEAD"] += 1
        if path in doc_paths:
            mcs, want, rule = doc_paths[path]
            got_gate = [gate["status"]] + ([got[2]["status"]] if args.explain else [])
            if direct["status"] == mcs and all(g == want for g in got_gate):
                diffs[rule] += 1
            else:
                unexplained.append({"case": i, "accept": fields, "path": path, "method": method,
                                    "doc": "docs/mcs-fidelity.md says MCS %d, gate %d (%s); got MCS %d, gate %s"
                                    % (mcs, want, rule, direct["status"], got_gate)})
            continue
        what = differ(direct, gate)
        if what and "token-stripped" in rules and without_token(path) != path:
            stripped = await fetch(args.direct, request_bytes(fields, without_token(path), method), method)
            if not differ(stripped, gate):
                diffs["token-stripped"] += 1
                what = []
        if what:
            unexplained.append({"case": i, "accept": fields, "path": path, "method": method, "admit": what})
        if not args.explain:
            continue
        explain = got[2]
        if direct["status"] == 301 and explain["status"] != 301 and "explain-clean-path" in rules:
            # Where the redirect sends Ignition: the explain answer must be that one's.
            direct = await fetch(args.direct, request_bytes(fields, location(direct), method), method)
            diffs["explain-clean-path"] += 1
        want = direct["status"]
        ok = explain["status"] == want
        if ok and want == 200 and method == "GET":
            ok = spec_of(explain["body"]) == spec_of(direct["body"])
        explained["checked"] += 1
        explained["matched"] += ok
        if not ok:
            unexplained.append({"case": i, "accept": fields, "path": path, "method": method,
                                "explain": "MCS %d %s, explain %d %s" % (
                                    direct["status"], spec_of(direct["body"]), explain["status"],
                                    spec_of(explain["body"]))})
    summary = {"release": args.release, "cases": len(todo), "peak_in_flight": peak["max"], "mcs_status": dict(statuses),
               "mcs_spec": {str(k): v for k, v in specs.items()}, "deliberate": dict(diffs),
               "explain_matched": "%d/%d" % (explained["matched"], explained["checked"]),
               "unexplained": len(unexplained)}
    print(json.dumps(summary, sort_keys=True))
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"summary": summary, "unexplained": unexplained}, f, indent=1)
    for u in unexplained[:15]:
        print("UNEXPLAINED", json.dumps(u), file=sys.stderr)
    return 0 if not unexplained and peak["max"] >= min(40, args.inflight) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--direct", type=int, required=True)
    ap.add_argument("--gate", type=int, required=True)
    ap.add_argument("--explain", type=int)
    ap.add_argument("--cases", type=int, default=2400)
    ap.add_argument("--inflight", type=int, default=48)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--report")
    ap.add_argument("--doc", default=DOC, help="the page whose deliberate differences are accepted")
    ap.add_argument("--release", default=os.environ.get("MCS_RELEASE", "4.13"),
                    help="the MCS's release: its column of the doc's path table")
    args = ap.parse_args()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
