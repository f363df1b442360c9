#!/usr/bin/env python3
"""pace_swarm.py PORT FIRST COUNT [--jobs 64] [--net 127.3]: COUNT nodes, the
FIRST-th to the (FIRST+COUNT-1)-th, each from an address of its own
(swarm_addr: NET.X.Y, 250 a /24 from NET.1.1), ask once for /config/worker
on 127.0.0.1:PORT, at most JOBS at a time, each reading its answer to the
close. Prints one line a node, in node order: "ADDRESS STATUS REASON"
(REASON "-" when the answer has no Skewgate-Reason, "error:..." when the
request failed). Bounded: at most 20,000 nodes, 10 s an answer, 120 s in
all."""
import argparse
import concurrent.futures
import sys
import time

from pace_node import fetch


def swarm_addr(net, i):
    """The i-th node's address (from 0): 250 a /24, never .0 or .255."""
    return "%s.%d.%d" % (net, 1 + i // 250, 1 + i % 250)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("first", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--jobs", type=int, default=64)
    ap.add_argument("--net", default="127.3")
    a = ap.parse_args()
    assert 0 <= a.first and 0 <= a.count and a.first + a.count <= 20000 and 1 <= a.jobs <= 256
    deadline = time.monotonic() + 120

    def ask(i):
        addr = swarm_addr(a.net, i)
        if time.monotonic() > deadline:
            return addr, 0, "error:deadline"
        try:
            status, reason = fetch(addr, a.port)
        except OSError as e:
            return addr, 0, "error:%s" % type(e).__name__
        return addr, status, reason or "-"

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        # map keeps at most JOBS requests in flight and yields in node order
        for addr, status, reason in pool.map(ask, range(a.first, a.first + a.count)):
            print(addr, status, reason)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
