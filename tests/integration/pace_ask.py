#!/usr/bin/env python3
"""pace_ask.py PORT FIRST LAST [--net 127.2.0] [--reverse]: nodes FIRST..LAST
(a node is its address, NET.i) each ask once for /config/worker on
127.0.0.1:PORT, one after the other (LAST first with --reverse), each
waiting for its answer. Prints one line a node: "i STATUS REASON". Bounded:
at most 250 nodes, 10 s an answer."""
import argparse
from pace_node import fetch

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("first", type=int)
ap.add_argument("last", type=int)
ap.add_argument("--net", default="127.2.0")
ap.add_argument("--reverse", action="store_true")
a = ap.parse_args()
assert 1 <= a.first <= a.last <= 250


def ask(i):
    status, reason = fetch("%s.%d" % (a.net, i), a.port)
    return status, reason or "-"


nodes = range(a.first, a.last + 1)
for i in (reversed(nodes) if a.reverse else nodes):
    status, reason = ask(i)
    print(i, status, reason, flush=True)
