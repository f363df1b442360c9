#!/usr/bin/env python3
"""trickle.py PORT [--conns N] [--gap S] [--limit S] [--tls CA]: opens N
connections to 127.0.0.1:PORT and sends each the same endless request head
("GET /healthz HTTP/1.1", then one header byte after another), one byte per
connection every --gap seconds, until the server closes it or --limit
seconds pass. Prints one line of JSON: how many the server closed, how many
were still open at the limit, and the seconds from connect to close (min,
max). A slowloris, bounded in connections and time."""
import argparse, json, selectors, socket, ssl, time

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--conns", type=int, default=1)
ap.add_argument("--gap", type=float, default=0.2)
ap.add_argument("--limit", type=float, default=5.0)
ap.add_argument("--tls")
a = ap.parse_args()
assert 1 <= a.conns <= 5000 and 0 < a.limit <= 120

head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
ctx = ssl.create_default_context(cafile=a.tls) if a.tls else None
sel = selectors.DefaultSelector()
conns = []
for _ in range(a.conns):
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    if ctx:
        s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    s.setblocking(False)
    c = {"sock": s, "sent": 0, "opened": time.monotonic(), "closed": None}
    conns.append(c)
    sel.register(s, selectors.EVENT_READ, c)

def close(c):
    if c["closed"] is None:
        c["closed"] = time.monotonic() - c["opened"]
        sel.unregister(c["sock"])
        c["sock"].close()

start = time.monotonic()
next_send = start
while time.monotonic() - start < a.limit and any(c["closed"] is None for c in conns):
    now = time.monotonic()
    if now >= next_send:
        for c in conns:
            if c["closed"] is not None:
                continue
            byte = head[c["sent"]:c["sent"] + 1] if c["sent"] < len(head) else b"x"
            try:
                c["sock"].send(byte)
                c["sent"] += 1
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, BlockingIOError, OSError):
                close(c)
        next_send = now + a.gap
    for key, _ in sel.select(timeout=max(0.0, min(next_send - time.monotonic(), 0.05))):
        c = key.data
        try:
            data = c["sock"].recv(4096)
        except (ssl.SSLWantReadError, BlockingIOError):
            continue
        except (ConnectionResetError, ssl.SSLError, OSError):
            data = b""
        if not data:
            close(c)
times = [c["closed"] for c in conns if c["closed"] is not None]
print(json.dumps({"closed": len(times), "open": len(conns) - len(times),
                  "min": round(min(times), 3) if times else None,
                  "max": round(max(times), 3) if times else None,
                  "bytes_max": max(c["sent"] for c in conns)}))
for c in conns:
    if c["closed"] is None:
        c["sock"].close()
