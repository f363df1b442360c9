#!/usr/bin/env python3
"""rawhttp.py PORT REQUEST [--tls CA] [--timeout S]: sends REQUEST (Python
escapes such as \\r\\n are decoded) to 127.0.0.1:PORT and prints one line per
response status seen, then CLOSED if the server closed the connection, or
OPEN if it was still open when the timeout passed."""
import argparse, socket, ssl, sys

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("request")
ap.add_argument("--tls")
ap.add_argument("--timeout", type=float, default=3.0)
a = ap.parse_args()
raw = a.request.encode("latin-1").decode("unicode_escape").encode("latin-1")
s = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
if a.tls:
    ctx = ssl.create_default_context(cafile=a.tls)
    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
s.sendall(raw)
buf = b""
closed = False
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            closed = True
            break
        buf += chunk
except (socket.timeout, TimeoutError):
    pass
except (ConnectionResetError, ssl.SSLError):
    closed = True
# Status lines of the responses, framed by Content-Length.
pos = 0
while pos < len(buf):
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        print("PARTIAL")
        break
    head = buf[pos:end].decode("latin-1").split("\r\n")
    print(head[0])
    length = 0
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    pos = end + 4 + length
print("CLOSED" if closed else "OPEN")
