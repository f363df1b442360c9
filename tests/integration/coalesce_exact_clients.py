#!/usr/bin/env python3
"""Clients for t_coalesce_exact: every request of --cases (a JSON list of
requests, each a list of [name, value] header fields, optionally with a
"target") is sent at once on its own connection to 127.0.0.1:PORT, before
any answer is read. The upstream is bad_upstream.py's echo mode, so each
body is the request head the MCS stand-in received for it, or (shared) for
whichever request led the fetch. A client got what the MCS would have
given it when that head holds its own request line and its own Accept
lines, byte for byte, as the gate forwards them (the MCS renders from
nothing else). Prints one JSON line: the answers, the mismatches (with
what was sent and got) and the number of distinct forwarded keys."""
import argparse, json, socket, sys, threading

def forwarded_accepts(fields):
    """The Accept lines the gate forwards: all, unless a Connection field lists Accept."""
    listed = set()
    for n, v in fields:
        if n.lower() == "connection":
            listed |= {t.strip().lower() for t in v.split(",")}
    if "accept" in listed:
        return []
    return ["%s: %s" % (n, v.strip(" \t")) for n, v in fields if n.lower() == "accept"]

def read_answer(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None, None
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    length = 0
    for l in head.split(b"\r\n")[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split(b" ")[1]), body

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cases", required=True)
    a = ap.parse_args()
    cases = json.load(open(a.cases))
    socks = []
    for c in cases:
        s = socket.create_connection(("127.0.0.1", a.port), timeout=60)
        target = c.get("target", "/config/hold")
        head = "GET %s HTTP/1.1\r\nHost: x\r\n" % target
        head += "".join("%s: %s\r\n" % (n, v) for n, v in c["fields"]) + "\r\n"
        s.sendall(head.encode())
        socks.append(s)
    results = [None] * len(cases)
    def read(i):
        results[i] = read_answer(socks[i])
    ts = [threading.Thread(target=read, args=(i,)) for i in range(len(cases))]
    for t in ts: t.start()
    for t in ts: t.join()
    bad, keys = [], set()
    for c, (status, body) in zip(cases, results):
        want_line = "GET %s HTTP/1.1" % c.get("want_target", c.get("target", "/config/hold"))
        want = [want_line] + forwarded_accepts(c["fields"])
        keys.add("\n".join(want))
        got = None
        if status == 200 and body:
            lines = body.decode("latin-1").split("\r\n")
            got = [lines[0]] + [l for l in lines[1:] if l.split(":", 1)[0].lower() == "accept"]
        if got != want:
            bad.append({"sent": c, "want": want, "got": got, "status": status})
    print(json.dumps({"answers": sum(r[0] is not None for r in results), "mismatches": len(bad),
                      "bad": bad[:5], "keys": len(keys)}))

main()
