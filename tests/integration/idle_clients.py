#!/usr/bin/env python3
"""idle_clients.py PORT --ready FILE [--source IP] [--http10 N] [--query N]
[--query-bytes B] [--pipeline K] [--path P] [--limit S]: clients that ask for a config and
never read it, from SOURCE (default 127.0.0.2) to 127.0.0.1:PORT, each with
a receive buffer of 4 KiB: N HTTP/1.0 GETs of P, and N HTTP/1.1 GETs of P
with a query of B bytes (over the 4 KiB share key: not coalesced), K of
them pipelined on each of those connections. Once
every socket is readable (its answer began, or it was refused or closed),
or at --limit, writes to FILE how many are readable and how many the gate
has closed; then holds every connection open, reading nothing, until
--limit seconds have passed since the start. Bounded in clients and time."""
import argparse, select, socket, time

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--ready", required=True)
ap.add_argument("--source", default="127.0.0.2")
ap.add_argument("--http10", type=int, default=0)
ap.add_argument("--query", type=int, default=0)
ap.add_argument("--query-bytes", type=int, default=5120)
ap.add_argument("--path", default="/config/worker")
ap.add_argument("--limit", type=float, default=60)
ap.add_argument("--pipeline", type=int, default=1, help="requests sent at once on each connection (distinct queries)")
a = ap.parse_args()
assert a.http10 + a.query <= 1000 and 0 < a.limit <= 300
assert a.source.startswith("127.")

start = time.monotonic()
accept = b"Accept: application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1\r\n"
reqs = [b"GET %s HTTP/1.0\r\nUser-Agent: idle-1.0\r\n%s\r\n" % (a.path.encode(), accept)] * a.http10
reqs += [b"".join(b"GET %s?pad=%s%d HTTP/1.1\r\nHost: x\r\nUser-Agent: idle-query\r\n%s\r\n"
                 % (a.path.encode(), b"q" * a.query_bytes, k, accept) for k in range(a.pipeline))] * a.query
socks = []
for req in reqs:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((a.source, 0))
    s.connect(("127.0.0.1", a.port))
    s.sendall(req)
    socks.append(s)

def readable():
    r, _, _ = select.select(socks, [], [], 0)
    return r

while len(readable()) < len(socks) and time.monotonic() - start < a.limit:
    time.sleep(0.05)
r = readable()
closed = sum(1 for s in r if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"")
with open(a.ready + ".tmp", "w") as f:
    f.write("readable %d of %d, closed %d\n" % (len(r), len(socks), closed))
import os
os.rename(a.ready + ".tmp", a.ready)
time.sleep(max(0, a.limit - (time.monotonic() - start)))
